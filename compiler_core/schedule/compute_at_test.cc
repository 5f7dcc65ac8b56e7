// compute_at through the interpreter: the moved nests compute the same values as the unmoved
// ones (a matmul's bias init and ReLU in its register block, split tail included; a padded
// input computed per band of outputs into a local buffer), and the workspace leaves the func.
// The printed IR of both cases is in tests/golden/loop_compute_at.kloop.
#include <vector>

#include "compiler_core/ir/loop/interpreter.h"
#include "compiler_core/ir/loop/parser.h"
#include "compiler_core/schedule/schedule.h"
#include "compiler_core/schedule/schedule_parser.h"
#include "gtest/gtest.h"

namespace kiln::schedule {
namespace {

constexpr char kMatMul[] = R"(func @mm(%a: f32[4,12], %b: f32[12,20], %bias: f32[20], %c: f32[4,20]) anchor=MatMul {
  for init.i in 0..4 {
    for init.j in 0..20 {
      %c[init.i, init.j] = %bias[init.j]
    }
  }
  for i in 0..4 {
    for j in 0..20 {
      for k in 0..12 reduce {
        %c[i, j] = (%c[i, j] + (%a[i, k] * %b[k, j]))
      }
    }
  }
  for epi.i in 0..4 {
    for epi.j in 0..20 {
      %c[epi.i, epi.j] = max(%c[epi.i, epi.j], 0.0)
    }
  }
})";

constexpr char kConv1d[] = R"(func @conv1d(%x: f32[3,10], %w: f32[3] const, %out: f32[3,10]) workspace(%xpad: f32[3,12]) anchor=Conv {
  for pad.c in 0..3 {
    for pad.w in 0..12 {
      %xpad[pad.c, pad.w] = select((((pad.w - 1) >= 0) && ((pad.w - 1) < 10)), %x[pad.c, min(max((pad.w - 1), 0), 9)], 0.0)
    }
  }
  for c in 0..3 {
    for o in 0..10 {
      for k in 0..3 reduce {
        %out[c, o] = (%out[c, o] + (%xpad[c, (o + k)] * %w[k]))
      }
    }
  }
})";

// kMatMul over a symbolic number of rows (the kernel's dims[0]): loops with run-time limits.
constexpr char kSymbolicMatMul[] = R"(func @smm(%dims: i64[1], %a: f32[%dims[0],12], %b: f32[12,20], %bias: f32[20], %c: f32[%dims[0],20]) anchor=MatMul {
  for init.i in 0..1099511627776 limit %dims[0] {
    for init.j in 0..20 {
      %c[init.i, init.j] = %bias[init.j]
    }
  }
  for i in 0..1099511627776 limit %dims[0] {
    for j in 0..20 {
      for k in 0..12 reduce {
        %c[i, j] = (%c[i, j] + (%a[i, k] * %b[k, j]))
      }
    }
  }
  for epi.i in 0..1099511627776 limit %dims[0] {
    for epi.j in 0..20 {
      %c[epi.i, epi.j] = max(%c[epi.i, epi.j], 0.0)
    }
  }
})";

// Its columns in two contractions (16, then the last 4), as a packed B's tail is lowered.
constexpr char kSymbolicMatMulTwoNests[] = R"(func @smm2(%dims: i64[1], %a: f32[%dims[0],12], %b: f32[12,20], %bias: f32[20], %c: f32[%dims[0],20]) anchor=MatMul {
  for init.i in 0..1099511627776 limit %dims[0] {
    for init.j in 0..20 {
      %c[init.i, init.j] = %bias[init.j]
    }
  }
  for i in 0..1099511627776 limit %dims[0] {
    for j in 0..16 {
      for k in 0..12 reduce {
        %c[i, j] = (%c[i, j] + (%a[i, k] * %b[k, j]))
      }
    }
  }
  for i2 in 0..1099511627776 limit %dims[0] {
    for jt in 0..4 {
      for k2 in 0..12 reduce {
        %c[i2, (jt + 16)] = (%c[i2, (jt + 16)] + (%a[i2, k2] * %b[k2, (jt + 16)]))
      }
    }
  }
})";

/// Element `n` of input param `p`: a fixed pattern in [-1.5, 2.2].
float InputValue(size_t n, size_t p) {
  return 0.37f * static_cast<float>((n * 7 + p) % 11) - 1.5f;
}

/// Runs symbolic `f` (params dims, a, b, bias, c as in kSymbolicMatMul) for `rows` rows on
/// deterministic inputs and returns c.
std::vector<float> InterpretRows(const loop::Func& f, int64_t rows) {
  std::vector<int64_t> dims = {rows};
  std::vector<std::vector<float>> buffers = {std::vector<float>(rows * 12),
                                             std::vector<float>(12 * 20), std::vector<float>(20),
                                             std::vector<float>(rows * 20, 0.0f)};
  for (size_t p = 0; p + 1 < buffers.size(); ++p) {
    for (size_t n = 0; n < buffers[p].size(); ++n) buffers[p][n] = InputValue(n, p);
  }
  std::vector<void*> args = {dims.data()};
  for (std::vector<float>& b : buffers) args.push_back(b.data());
  absl::Status s = loop::InterpretFunc(f, args);
  EXPECT_TRUE(s.ok()) << s;
  return buffers.back();
}

/// Runs `f` on deterministic inputs (every param but the last, then zeroed workspaces) and
/// returns its last param.
std::vector<float> Interpret(const loop::Func& f) {
  std::vector<std::vector<float>> buffers;
  for (size_t p = 0; p < f.params.size(); ++p) {
    std::vector<float> v(f.params[p]->NumElements());
    for (size_t n = 0; n < v.size(); ++n) {
      v[n] = p + 1 == f.params.size() ? 0.0f : InputValue(n, p);
    }
    buffers.push_back(std::move(v));
  }
  for (const loop::BufferRef& w : f.workspaces) buffers.emplace_back(w->NumElements(), 0.0f);
  std::vector<void*> args;
  for (std::vector<float>& b : buffers) args.push_back(b.data());
  absl::Status s = loop::InterpretFunc(f, args);
  EXPECT_TRUE(s.ok()) << s;
  return buffers[f.params.size() - 1];
}

loop::Func Scheduled(const char* text, const char* steps) {
  absl::StatusOr<loop::Func> f = loop::ParseFunc(text);
  EXPECT_TRUE(f.ok()) << f.status();
  absl::StatusOr<Schedule> s = ParseSchedule(steps);
  EXPECT_TRUE(s.ok()) << s.status();
  absl::Status st = ApplySchedule(*s, *f);
  EXPECT_TRUE(st.ok()) << st;
  return *f;
}

TEST(ComputeAtTest, InitAndEpilogueInTheRegisterBlockMatch) {
  const loop::Func plain = *loop::ParseFunc(kMatMul);
  const loop::Func moved = Scheduled(
      kMatMul, "split(j, 8); reorder(j.o, k, j.i); reorder(k, j.t); vectorize(j.i); "
               "vectorize(j.t); compute_at(init.i, k); compute_at(epi.i, k)");
  const std::vector<float> want = Interpret(plain), got = Interpret(moved);
  int negative = 0;
  for (float v : want) negative += v == 0.0f;
  EXPECT_GT(negative, 0);  // the ReLU clamps some outputs: the epilogue ran
  EXPECT_EQ(got, want);
}

TEST(ComputeAtTest, PaddedInputPerBandMatchesAndLeavesTheWorkspaces) {
  const loop::Func plain = *loop::ParseFunc(kConv1d);
  for (const char* steps : {"split(o, 5); compute_at(pad.c, o.o)",
                            "split(o, 2); compute_at(pad.c, o.o)",
                            "compute_at(pad.c, c)"}) {
    SCOPED_TRACE(steps);
    const loop::Func moved = Scheduled(kConv1d, steps);
    EXPECT_TRUE(moved.workspaces.empty());
    EXPECT_EQ(Interpret(moved), Interpret(plain));
  }
}

TEST(ComputeAtTest, AReadOutsideTheLoopIsRefused) {
  // A split of 10 by 4 leaves a tail loop o.t outside o.o that also reads the padded input.
  loop::Func f = *loop::ParseFunc(kConv1d);
  absl::Status st = ApplySchedule(*ParseSchedule("split(o, 4); compute_at(pad.c, o.o)"), f);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(st.message(), "func 'conv1d' step 1 compute_at(pad.c, o.o): %xpad is read outside "
                          "loop 'o.o'");
  EXPECT_EQ(f.workspaces.size(), 1u);
}

// Loops over a symbolic dim (run-time limits): the init and the ReLU move into every register
// block, the row tail's included, and compute what the unmoved nests do at any row count.
TEST(ComputeAtTest, SymbolicRowsInitAndEpilogueInEveryBlockMatch) {
  const loop::Func plain = *loop::ParseFunc(kSymbolicMatMul);
  const loop::Func moved = Scheduled(
      kSymbolicMatMul, "split(i, 4); reorder(i.o, k, i.i, j); reorder(i.t, k, j); unroll(i.i); "
                       "compute_at(init.i, k); compute_at(epi.i, k)");
  ASSERT_EQ(moved.body->stmts.size(), 1u) << "the init and the epilogue are still nests";
  for (int64_t rows : {1, 4, 7, 9}) {
    SCOPED_TRACE(rows);
    const std::vector<float> want = InterpretRows(plain, rows);
    EXPECT_EQ(InterpretRows(moved, rows), want);
    int clamped = 0;
    for (float v : want) clamped += v == 0.0f;
    EXPECT_GT(clamped, 0);  // the ReLU ran
  }
}

// With run-time limits the blocks cannot be counted: a second contraction that computes part of
// the output (a packed B's tail columns) must refuse the move, which would leave its columns
// without the bias.
TEST(ComputeAtTest, SymbolicSecondContractionIsRefused) {
  loop::Func f = *loop::ParseFunc(kSymbolicMatMulTwoNests);
  absl::Status st = ApplySchedule(*ParseSchedule("compute_at(init.i, k)"), f);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(st.message(), "func 'smm2' step 0 compute_at(init.i, k): another nest computes part "
                          "of %c (with run-time limits the blocks at 'k' cannot be counted)");
}

}  // namespace
}  // namespace kiln::schedule
