// BoundLoops on hand-written loop IR: the printed limits, the loops it must leave alone, and
// the interpreter's results inside the lengths against the unbounded kernel.
#include "compiler_core/schedule/bound_loops.h"

#include <algorithm>
#include <string>
#include <vector>

#include "compiler_core/ir/loop/interpreter.h"
#include "compiler_core/ir/loop/parser.h"
#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/ir/loop/verifier.h"
#include "gtest/gtest.h"

namespace kiln::schedule {
namespace {

using loop::Func;

Func Parse(const std::string& text) {
  absl::StatusOr<Func> f = loop::ParseFunc(text);
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? *f : Func{};
}

const loop::BufferRef& Param(const Func& f, const std::string& name) {
  for (const loop::BufferRef& p : f.params) {
    if (p->name == name) return p;
  }
  ADD_FAILURE() << "no param " << name;
  return f.params.front();
}

/// `f` with BoundLoops applied, `out`'s dim `dim` of length %dims[0] * mul.
Func Bound(Func f, int dim, int64_t mul = 1) {
  const loop::BufferRef& out = Param(f, "out");
  loop::Expr len = loop::Load(Param(f, "dims"), {loop::IntImm(0)});
  if (mul != 1) len = len * loop::IntImm(mul);
  std::vector<loop::Expr> dims(out->shape.size());
  dims[dim] = len;
  f.body = BoundLoops(f, {{out.get(), dims}});
  EXPECT_TRUE(loop::VerifyFunc(f).ok()) << loop::VerifyFunc(f);
  return f;
}

TEST(BoundLoopsTest, SplitLoopsStopAtTheLength) {
  Func f = Bound(Parse(R"(func @k(%dims: i64[1], %x: f32[64,8], %out: f32[64,8]) anchor=Relu {
  parallel for i.o in 0..8 {
    for i.i in 0..8 {
      vectorized for j in 0..8 {
        %out[((i.o * 8) + i.i), j] = max(%x[((i.o * 8) + i.i), j], 0.0)
      }
    }
  }
}
)"),
                 0);
  EXPECT_EQ(loop::PrintFunc(f),
            R"(func @k(%dims: i64[1], %x: f32[64,8], %out: f32[64,8]) anchor=Relu {
  parallel for i.o in 0..8 limit ((%dims[0] + 7) // 8) {
    for i.i in 0..8 limit (%dims[0] - (i.o * 8)) {
      vectorized for j in 0..8 {
        %out[((i.o * 8) + i.i), j] = max(%x[((i.o * 8) + i.i), j], 0.0)
      }
    }
  }
}
)");
  // Parsing the printed limits gives the same func.
  EXPECT_EQ(loop::PrintFunc(Parse(loop::PrintFunc(f))), loop::PrintFunc(f));

  // Inside the length the results are the unbounded kernel's; past it nothing is written.
  for (int64_t n : {1, 13, 64}) {
    std::vector<int64_t> dims = {n};
    std::vector<float> x(512), out(512, -1.0f), want(512, -1.0f);
    for (int i = 0; i < 512; ++i) x[i] = static_cast<float>(i % 7) - 3.0f;
    for (int i = 0; i < 512; ++i) want[i] = i < n * 8 ? std::max(x[i], 0.0f) : -1.0f;
    ASSERT_TRUE(loop::InterpretFunc(f, {dims.data(), x.data(), out.data()}).ok());
    EXPECT_EQ(out, want) << "length " << n;
  }
}

TEST(BoundLoopsTest, AFlattenedIndexBoundsTheRowsItDivides) {
  // out [4, 16] indexed by a flattened row r = i.o * 8 + i.i: dim 0 is r // 16.
  Func f = Bound(Parse(R"(func @k(%dims: i64[1], %out: f32[4,16]) anchor=MatMul {
  for i.o in 0..8 {
    for i.i in 0..8 {
      %out[(((i.o * 8) + i.i) // 16), (((i.o * 8) + i.i) % 16)] = 1.0
    }
  }
}
)"),
                 0);
  EXPECT_EQ(loop::PrintFunc(f), R"(func @k(%dims: i64[1], %out: f32[4,16]) anchor=MatMul {
  for i.o in 0..8 limit (((%dims[0] * 16) + 7) // 8) {
    for i.i in 0..8 limit ((%dims[0] * 16) - (i.o * 8)) {
      %out[(((i.o * 8) + i.i) // 16), (((i.o * 8) + i.i) % 16)] = 1.0
    }
  }
}
)");
}

TEST(BoundLoopsTest, TilesOfAnInnerBoundedDimAreSkipped) {
  // out [4, 16] indexed by a flattened row r = i.o * 4 + i.i, dim 1 (r mod 16) bounded: a tile
  // of 4 rows whose first row mod 16 is at or past the length, and which does not wrap, is
  // skipped by a guard; dim 0 (r // 16) is unbounded, so there is no limit.
  Func f = Bound(Parse(R"(func @k(%dims: i64[1], %out: f32[4,16]) anchor=MatMul {
  for i.o in 0..16 {
    for i.i in 0..4 {
      %out[(((i.o * 4) + i.i) // 16), (((i.o * 4) + i.i) % 16)] = 1.0
    }
  }
}
)"),
                 1);
  const std::string printed = loop::PrintFunc(f);
  EXPECT_NE(printed.find("for i.o in 0..16 {\n    if not("), std::string::npos) << printed;
  // The inner loop's body is one store: no guard per row.
  EXPECT_NE(printed.find("      for i.i in 0..4 {\n        %out["), std::string::npos) << printed;
  EXPECT_EQ(printed.find("limit"), std::string::npos) << printed;
  for (int64_t n : {1, 5, 16}) {
    std::vector<int64_t> dims = {n};
    std::vector<float> out(64, 0.0f);
    ASSERT_TRUE(loop::InterpretFunc(f, {dims.data(), out.data()}).ok());
    for (int64_t r = 0; r < 64; ++r) {
      // Valid rows are written; rows of a tile that starts past the length are not.
      const bool valid = r % 16 < n;
      const bool tile_dead = (r / 4 * 4) % 16 >= n;
      EXPECT_EQ(out[r], valid ? 1.0f : (tile_dead ? 0.0f : 1.0f)) << "length " << n << " row " << r;
    }
  }
}

TEST(BoundLoopsTest, ALoopWhosePaddingIsReadBackKeepsItsExtent) {
  // A softmax row: the sum reads every exponential the j loop wrote, so only the row loop stops
  // at the length (dim 0); along dim 1 nothing is bounded.
  const std::string text =
      R"(func @k(%dims: i64[1], %x: f32[8,8], %out: f32[8,8]) workspace(%sum: f32[8]) anchor=Softmax {
  parallel for i in 0..8 {
    for j in 0..8 {
      %out[i, j] = exp(%x[i, j])
    }
    %sum[i] = 0.0
    for k in 0..8 reduce {
      %sum[i] = (%sum[i] + %out[i, k])
    }
    for j2 in 0..8 {
      %out[i, j2] = (%out[i, j2] / %sum[i])
    }
  }
}
)";
  Func rows = Bound(Parse(text), 0);
  EXPECT_NE(loop::PrintFunc(rows).find("parallel for i in 0..8 limit %dims[0] {"),
            std::string::npos)
      << loop::PrintFunc(rows);
  EXPECT_NE(loop::PrintFunc(rows).find("for j in 0..8 {"), std::string::npos);
  // Bounding dim 1 instead: the sum reads the columns the j loop writes and, for all this
  // pass knows, those the j2 loop wrote in an earlier row, so no loop is bounded.
  Func cols = Bound(Parse(text), 1);
  EXPECT_EQ(loop::PrintFunc(cols).find("limit"), std::string::npos) << loop::PrintFunc(cols);
}

TEST(BoundLoopsTest, LoopsItCannotBoundAreUnchanged) {
  // A reduction, a store without the loop in its bounded index, a local buffer kept past the
  // loop, and a mod index.
  for (const std::string& text :
       {std::string(R"(func @k(%dims: i64[1], %x: f32[8], %out: f32[1,8]) anchor=ReduceSum {
  for i in 0..8 reduce {
    %out[0, i] = (%out[0, i] + %x[i])
  }
}
)"),
        std::string(R"(func @k(%dims: i64[1], %out: f32[8,8]) anchor=Relu {
  alloc %t: f32[8] {
    for i in 0..8 {
      %t[i] = 1.0
    }
    for j in 0..8 {
      %out[j, 0] = %t[j]
    }
  }
}
)"),
        std::string(R"(func @k(%dims: i64[1], %out: f32[8,8]) anchor=Relu {
  for i in 0..64 {
    %out[(i % 8), (i // 8)] = 1.0
  }
}
)")}) {
    Func f = Bound(Parse(text), 0);
    const std::string printed = loop::PrintFunc(f);
    if (printed.find("for j in 0..8 limit") != std::string::npos) {
      // The copy loop stores %out[j, 0] only: bounded. The fill of the local %t is not.
      EXPECT_EQ(printed.find("for i in 0..8 limit"), std::string::npos) << printed;
      continue;
    }
    EXPECT_EQ(printed.find("limit"), std::string::npos) << printed;
  }
}

}  // namespace
}  // namespace kiln::schedule
