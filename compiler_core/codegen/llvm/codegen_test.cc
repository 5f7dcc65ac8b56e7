// End-to-end codegen tests: hand-built loop IR compiled for the host, loaded with dlopen and run;
// results are checked against C++ references. Covers SIMD loops, parallel outlining, reductions,
// math functions and per-target IR differences.
#include "compiler_core/codegen/llvm/codegen.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "compiler_core/codegen/llvm/test_util.h"
#include "compiler_core/codegen/llvm/vector_analysis.h"
#include "compiler_core/ir/loop/parser.h"
#include "compiler_core/schedule/schedule.h"
#include "gtest/gtest.h"

namespace kiln::codegen {
namespace {

using loop::BinaryOp;
using loop::Buffer;
using loop::Expr;
using loop::ForKind;
using loop::Func;
using loop::MakeBuffer;
using loop::MakeVar;
using loop::Stmt;
using loop::UnaryOp;
using loop::Var;
using testing::CallKernel;
using testing::CompileAndLoad;
using testing::HostTarget;
using testing::LoadedKernels;

Expr V(const Var& v) { return loop::VarRef(v); }
Expr I(int64_t v) { return loop::IntImm(v); }

std::vector<float> RandomFloats(size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// y[i, j] = a[i, j] + b[i, j] with j vectorized at `width` lanes.
Func ElementwiseAdd(const std::string& name, int64_t rows, int64_t width) {
  auto a = MakeBuffer("a", DType::kFloat32, {rows, width});
  auto b = MakeBuffer("b", DType::kFloat32, {rows, width});
  auto y = MakeBuffer("y", DType::kFloat32, {rows, width});
  Var i = MakeVar("i"), j = MakeVar("j");
  Stmt body = loop::Store(y, {V(i), V(j)},
                          loop::Load(a, {V(i), V(j)}) + loop::Load(b, {V(i), V(j)}));
  Func f;
  f.name = name;
  f.params = {a, b, y};
  f.body = loop::For(i, rows, loop::For(j, width, body, ForKind::kVectorized));
  return f;
}

void CheckElementwiseAdd(int64_t rows, int64_t width) {
  auto lib = CompileAndLoad({ElementwiseAdd("add", rows, width)});
  ASSERT_TRUE(lib.ok()) << lib.status();
  auto fn = (*lib)->Get("add");
  ASSERT_NE(fn, nullptr);
  size_t n = static_cast<size_t>(rows * width);
  auto a = RandomFloats(n, -10, 10, 1), b = RandomFloats(n, -10, 10, 2);
  std::vector<float> y(n, -1);
  CallKernel(fn, {a.data(), b.data(), y.data()});
  for (size_t k = 0; k < n; ++k) ASSERT_EQ(y[k], a[k] + b[k]) << "at " << k;
}

TEST(CodegenTest, ElementwiseAddVectorizedAtTargetWidth) {
  int lanes = HostTarget().f32_lanes();
  CheckElementwiseAdd(37, lanes);
  auto ir = EmitLlvmIr({ElementwiseAdd("add", 37, lanes)}, HostTarget());
  ASSERT_TRUE(ir.ok()) << ir.status();
  EXPECT_TRUE(absl::StrContains(*ir, absl::StrCat("<", lanes, " x float>"))) << *ir;
  EXPECT_TRUE(absl::StrContains(*ir, "define void @add(ptr"));
  EXPECT_TRUE(absl::StrContains(*ir, absl::StrCat("\"target-cpu\"=\"", HostTarget().cpu, "\"")));
}

TEST(CodegenTest, ElementwiseAddOddAndLongWidths) {
  CheckElementwiseAdd(5, 7);
  CheckElementwiseAdd(3, 3);
  CheckElementwiseAdd(2, 200);  // strip-mined into chunks plus a tail
  CheckElementwiseAdd(2, 65);   // tail of one lane
}

// C[i, j] = sum_k A[i, k] * B[k, j] for 37x53x29, j split 53 = 3*16 + 5, i parallel.
TEST(CodegenTest, MatmulSplitParallelVectorized) {
  constexpr int64_t M = 37, N = 53, K = 29;
  auto A = MakeBuffer("A", DType::kFloat32, {M, K});
  auto B = MakeBuffer("B", DType::kFloat32, {K, N});
  auto C = MakeBuffer("C", DType::kFloat32, {M, N});
  Var i = MakeVar("i"), jo = MakeVar("jo"), ji = MakeVar("ji"), k = MakeVar("k");
  Var k2 = MakeVar("k2"), jt = MakeVar("jt"), ji0 = MakeVar("ji0"), jt0 = MakeVar("jt0");
  Expr j_main = V(jo) * I(16) + V(ji);
  Expr j_tail = I(48) + V(jt);
  auto update = [&](const Var& kv, Expr j) {
    return loop::Store(C, {V(i), j},
                       loop::Load(C, {V(i), j}) + loop::Load(A, {V(i), V(kv)}) *
                                                      loop::Load(B, {V(kv), j}));
  };
  Expr j_main0 = V(jo) * I(16) + V(ji0);
  Expr j_tail0 = I(48) + V(jt0);
  Stmt main_part = loop::For(
      jo, 3,
      loop::Block({loop::For(ji0, 16, loop::Store(C, {V(i), j_main0}, loop::FloatImm(0)),
                             ForKind::kVectorized),
                   loop::For(k, K, loop::For(ji, 16, update(k, j_main), ForKind::kVectorized),
                             ForKind::kSerial, /*is_reduction=*/true)}));
  Stmt tail_part = loop::Block(
      {loop::For(jt0, 5, loop::Store(C, {V(i), j_tail0}, loop::FloatImm(0)), ForKind::kVectorized),
       loop::For(k2, K, loop::For(jt, 5, update(k2, j_tail), ForKind::kVectorized),
                 ForKind::kSerial, true)});
  Func f;
  f.name = "matmul";
  f.params = {A, B, C};
  f.body = loop::For(i, M, loop::Block({main_part, tail_part}), ForKind::kParallel);

  auto lib = CompileAndLoad({f});
  ASSERT_TRUE(lib.ok()) << lib.status();
  auto fn = (*lib)->Get("matmul");
  ASSERT_NE(fn, nullptr);
  auto a = RandomFloats(M * K, -1, 1, 3), b = RandomFloats(K * N, -1, 1, 4);
  std::vector<float> c(M * N, 123.0f);
  int calls_before = testing::parallel_for_calls.load();
  CallKernel(fn, {a.data(), b.data(), c.data()});
  EXPECT_EQ(testing::parallel_for_calls.load(), calls_before + 1);
  for (int64_t r = 0; r < M; ++r) {
    for (int64_t col = 0; col < N; ++col) {
      double ref = 0;
      for (int64_t x = 0; x < K; ++x) ref += double(a[r * K + x]) * double(b[x * N + col]);
      ASSERT_NEAR(c[r * N + col], ref, 1e-4) << r << "," << col;
    }
  }
}

// A parallel loop over a symbolic dim decides at run time: below schedule::kParallelThreshold
// leaf statements the task runs inline (no parallel_for call), above it the pool gets it; the
// result is the same either way. A static parallel loop always launches (its schedule decided).
TEST(CodegenTest, SymbolicParallelLoopLaunchesOnlyWithEnoughWork) {
  absl::StatusOr<Func> f = loop::ParseFunc(R"(func @scale(%dims: i64[1], %in0: f32[%dims[0],4], %out: f32[%dims[0],4]) anchor=Mul {
  parallel for i in 0..1099511627776 limit %dims[0] {
    for j in 0..4 {
      %out[i, j] = (%in0[i, j] * 2.0)
    }
  }
})");
  ASSERT_TRUE(f.ok()) << f.status();
  absl::StatusOr<Func> fixed = loop::ParseFunc(R"(func @fixed(%in0: f32[3,4], %out: f32[3,4]) anchor=Mul {
  parallel for i in 0..3 {
    for j in 0..4 {
      %out[i, j] = (%in0[i, j] * 2.0)
    }
  }
})");
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  auto lib = CompileAndLoad({*f, *fixed});
  ASSERT_TRUE(lib.ok()) << lib.status();
  // 4 * rows leaf stores: 3 and 4095 rows stay below the threshold, 4096 and 10000 reach it.
  for (int64_t rows : {int64_t{3}, int64_t{4095}, int64_t{4096}, int64_t{10000}}) {
    SCOPED_TRACE(rows);
    std::vector<int64_t> dims = {rows};
    std::vector<float> in = RandomFloats(rows * 4, -1, 1, 7);
    std::vector<float> out(static_cast<size_t>(rows * 4), 0.0f);
    const int before = testing::parallel_for_calls.load();
    CallKernel((*lib)->Get("scale"), {dims.data(), in.data(), out.data()});
    EXPECT_EQ(testing::parallel_for_calls.load() - before,
              4 * rows >= schedule::kParallelThreshold ? 1 : 0);
    for (size_t e = 0; e < out.size(); ++e) ASSERT_EQ(out[e], 2 * in[e]) << e;
  }
  std::vector<float> in = RandomFloats(12, -1, 1, 8), out(12, 0.0f);
  const int before = testing::parallel_for_calls.load();
  CallKernel((*lib)->Get("fixed"), {in.data(), out.data()});
  EXPECT_EQ(testing::parallel_for_calls.load() - before, 1);
  for (size_t e = 0; e < out.size(); ++e) ASSERT_EQ(out[e], 2 * in[e]) << e;
}

// out[i] = sum_j x[i, j] through a stack accumulator; the row loop is parallel.
TEST(CodegenTest, RowSumReductionWithLocalAccumulator) {
  constexpr int64_t R = 13, L = 100;
  auto x = MakeBuffer("x", DType::kFloat32, {R, L});
  auto out = MakeBuffer("out", DType::kFloat32, {R});
  auto acc = MakeBuffer("acc", DType::kFloat32, {1}, Buffer::Scope::kLocal);
  Var i = MakeVar("i"), j = MakeVar("j");
  Stmt body = loop::Allocate(
      acc, loop::Block({loop::Store(acc, {I(0)}, loop::FloatImm(0)),
                        loop::For(j, L,
                                  loop::Store(acc, {I(0)},
                                              loop::Load(acc, {I(0)}) + loop::Load(x, {V(i), V(j)})),
                                  ForKind::kSerial, true),
                        loop::Store(out, {V(i)}, loop::Load(acc, {I(0)}))}));
  Func f;
  f.name = "rowsum";
  f.params = {x, out};
  f.body = loop::For(i, R, body, ForKind::kParallel);
  auto lib = CompileAndLoad({f});
  ASSERT_TRUE(lib.ok()) << lib.status();
  auto xs = RandomFloats(R * L, 0, 1, 5);
  std::vector<float> o(R, -1);
  CallKernel((*lib)->Get("rowsum"), {xs.data(), o.data()});
  for (int64_t r = 0; r < R; ++r) {
    float ref = 0;
    for (int64_t c = 0; c < L; ++c) ref += xs[r * L + c];
    EXPECT_NEAR(o[r], ref, 1e-4) << r;
  }
}

// y[op][j] = op(x[j]) for each unary math op, vectorized (40 lanes: strip-mined) and serial.
TEST(CodegenTest, MathFunctionsMatchStd) {
  constexpr int64_t N = 40;
  const std::vector<std::pair<UnaryOp, double (*)(double)>> ops = {
      {UnaryOp::kExp, [](double v) { return std::exp(v); }},
      {UnaryOp::kTanh, [](double v) { return std::tanh(v); }},
      {UnaryOp::kErf, [](double v) { return std::erf(v); }},
      {UnaryOp::kLog, [](double v) { return std::log(std::fabs(v) + 0.5); }},
      {UnaryOp::kSqrt, [](double v) { return std::sqrt(std::fabs(v)); }},
      {UnaryOp::kAbs, [](double v) { return std::fabs(v); }},
      {UnaryOp::kFloor, [](double v) { return std::floor(v); }},
      {UnaryOp::kCeil, [](double v) { return std::ceil(v); }},
      {UnaryOp::kNeg, [](double v) { return -v; }},
  };
  auto x = MakeBuffer("x", DType::kFloat32, {N});
  auto y = MakeBuffer("y", DType::kFloat32, {2, static_cast<int64_t>(ops.size()), N});
  std::vector<Stmt> stmts;
  for (int kind = 0; kind < 2; ++kind) {
    for (size_t o = 0; o < ops.size(); ++o) {
      Var j = MakeVar(absl::StrCat("j", kind, "_", o));
      Expr in = loop::Load(x, {V(j)});
      if (ops[o].first == UnaryOp::kLog) in = loop::Unary(UnaryOp::kAbs, in) + loop::FloatImm(0.5);
      if (ops[o].first == UnaryOp::kSqrt) in = loop::Unary(UnaryOp::kAbs, in);
      stmts.push_back(loop::For(
          j, N, loop::Store(y, {I(kind), I(static_cast<int64_t>(o)), V(j)}, loop::Unary(ops[o].first, in)),
          kind == 0 ? ForKind::kVectorized : ForKind::kSerial));
    }
  }
  Func f;
  f.name = "math";
  f.params = {x, y};
  f.body = loop::Block(stmts);
  auto lib = CompileAndLoad({f});
  ASSERT_TRUE(lib.ok()) << lib.status();
  auto xs = RandomFloats(N, -3, 3, 6);
  std::vector<float> ys(2 * ops.size() * N, -1);
  CallKernel((*lib)->Get("math"), {xs.data(), ys.data()});
  for (int kind = 0; kind < 2; ++kind) {
    for (size_t o = 0; o < ops.size(); ++o) {
      for (int64_t j = 0; j < N; ++j) {
        double ref = ops[o].second(xs[j]);
        float got = ys[(kind * ops.size() + o) * N + j];
        EXPECT_NEAR(got, ref, 1e-6 * std::fabs(ref) + 1e-7)
            << "op " << o << " kind " << kind << " x=" << xs[j];
      }
    }
  }
}

// exp and tanh at the edges of their ranges, vectorized (inline polynomials) and serial (libm).
TEST(CodegenTest, ExpTanhEdgeCases) {
  const std::vector<float> xs = {-200.0f, -104.5f, -100.0f, -90.0f, -87.5f, -20.0f, -0.7f,
                                 -0.625f, -1e-5f, 0.0f,    1e-8f,   0.3f,   0.6249f, 0.626f,
                                 1.0f,    9.0f,   20.0f,  88.0f,   88.7f,  88.73f,  100.0f,
                                 INFINITY, -INFINITY, NAN};
  const int64_t n = static_cast<int64_t>(xs.size());
  auto x = MakeBuffer("x", DType::kFloat32, {n});
  auto y = MakeBuffer("y", DType::kFloat32, {4, n});
  std::vector<Stmt> stmts;
  for (int k = 0; k < 4; ++k) {
    Var j = MakeVar(absl::StrCat("j", k));
    UnaryOp op = k % 2 == 0 ? UnaryOp::kExp : UnaryOp::kTanh;
    stmts.push_back(loop::For(j, n, loop::Store(y, {I(k), V(j)}, loop::Unary(op, loop::Load(x, {V(j)}))),
                              k < 2 ? ForKind::kVectorized : ForKind::kSerial));
  }
  Func f;
  f.name = "edges";
  f.params = {x, y};
  f.body = loop::Block(stmts);
  auto lib = CompileAndLoad({f});
  ASSERT_TRUE(lib.ok()) << lib.status();
  std::vector<float> ys(4 * n, -1);
  std::vector<float> in = xs;
  CallKernel((*lib)->Get("edges"), {in.data(), ys.data()});
  for (int k = 0; k < 4; ++k) {
    for (int64_t j = 0; j < n; ++j) {
      double ref = k % 2 == 0 ? std::exp(double(xs[j])) : std::tanh(double(xs[j]));
      float got = ys[k * n + j];
      if (std::isnan(ref)) {
        EXPECT_TRUE(std::isnan(got)) << k << " x=" << xs[j];
      } else if (std::isinf(float(ref))) {
        EXPECT_EQ(got, float(ref)) << k << " x=" << xs[j];
      } else {
        EXPECT_NEAR(got, ref, 1e-6 * std::fabs(ref) + 1e-44) << k << " x=" << xs[j];
      }
    }
  }
}

// A serial loop over 1024 floats: LLVM's own vectorizer picks the width from the target.
TEST(CodegenTest, NonHostTargetsGetDifferentIr) {
  auto x = MakeBuffer("x", DType::kFloat32, {1024});
  auto y = MakeBuffer("y", DType::kFloat32, {1024});
  Var i = MakeVar("i");
  Func f;
  f.name = "scale";
  f.params = {x, y};
  f.body = loop::For(i, 1024, loop::Store(y, {V(i)}, loop::Load(x, {V(i)}) * loop::FloatImm(3)));
  auto base = ResolveTarget("cpu:x86-64");
  auto skx = ResolveTarget("cpu:skylake-avx512");
  ASSERT_TRUE(base.ok() && skx.ok());
  auto ir_base = EmitLlvmIr({f}, *base);
  auto ir_skx = EmitLlvmIr({f}, *skx);
  ASSERT_TRUE(ir_base.ok()) << ir_base.status();
  ASSERT_TRUE(ir_skx.ok()) << ir_skx.status();
  EXPECT_NE(*ir_base, *ir_skx);
  EXPECT_TRUE(absl::StrContains(*ir_base, "<4 x float>")) << *ir_base;
  EXPECT_FALSE(absl::StrContains(*ir_base, "<16 x float>"));
  EXPECT_TRUE(absl::StrContains(*ir_skx, "<16 x float>")) << *ir_skx;
  EXPECT_TRUE(absl::StrContains(*ir_skx, "\"target-cpu\"=\"skylake-avx512\""));
  // Both compile to objects and link.
  EXPECT_TRUE(CompileToSharedObject({f}, *base).ok());
  EXPECT_TRUE(CompileToSharedObject({f}, *skx).ok());
}

TEST(CodegenTest, IrHasNoaliasAndContract) {
  auto ir = EmitLlvmIr({ElementwiseAdd("add2", 4, 8)}, HostTarget());
  ASSERT_TRUE(ir.ok()) << ir.status();
  // The always-inlined body's noalias params become alias scopes in the kernel.
  EXPECT_TRUE(absl::StrContains(*ir, "!alias.scope")) << *ir;
  EXPECT_TRUE(absl::StrContains(*ir, "fadd contract")) << *ir;
}

// Kernels split over several shards (one module and object each, compiled on 3 threads) link
// into one library whose every kernel computes its own result, and the bytes do not depend on
// the thread count.
TEST(CodegenTest, ShardedCompileLinksEveryKernel) {
  std::vector<Func> funcs;
  for (int k = 0; k < 6; ++k) {
    auto x = MakeBuffer("x", DType::kFloat32, {64});
    auto y = MakeBuffer("y", DType::kFloat32, {64});
    Var i = MakeVar("i");
    Func f;
    f.name = absl::StrCat("scale", k);
    f.params = {x, y};
    f.body = loop::For(i, 64, loop::Store(y, {V(i)}, loop::Load(x, {V(i)}) * loop::FloatImm(k)));
    funcs.push_back(f);
  }
  std::vector<std::vector<size_t>> shards = PartitionIntoShards(funcs, 1);
  ASSERT_EQ(shards.size(), 6u);
  EXPECT_EQ(shards[5], std::vector<size_t>{5});
  EXPECT_EQ(PartitionIntoShards(funcs).size(), 1u);  // small kernels share one shard by default

  std::vector<std::string> stages;
  auto three = CompileToSharedObject(
      funcs, HostTarget(), [&](const std::string& s, double) { stages.push_back(s); }, 3, 1);
  auto one = CompileToSharedObject(funcs, HostTarget(), {}, 1, 1);
  ASSERT_TRUE(three.ok()) << three.status();
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(*three, *one);
  EXPECT_NE(std::find(stages.begin(), stages.end(), "codegen: object file shard 6/6 (1 kernels)"),
            stages.end());

  auto lib = LoadedKernels::Load(*three);
  ASSERT_TRUE(lib.ok()) << lib.status();
  std::vector<float> x(64), y(64);
  for (int i = 0; i < 64; ++i) x[i] = static_cast<float>(i) - 7.5f;
  for (int k = 0; k < 6; ++k) {
    kiln_kernel_fn fn = (*lib)->Get(absl::StrCat("scale", k));
    ASSERT_NE(fn, nullptr) << k;
    CallKernel(fn, {x.data(), y.data()});
    for (int i = 0; i < 64; ++i) ASSERT_EQ(y[i], x[i] * static_cast<float>(k)) << k << " " << i;
  }
}

// A flattened row index split back into dims (the matmul lowering's rows of [3, 40, K]) folds
// into the row index itself, so the address has no division; the kernel still reads and writes
// the right elements, and its optimized IR has no division or remainder.
TEST(CodegenTest, FlattenedRowIndicesFoldIntoOneAddress) {
  Var i = MakeVar("i"), k = MakeVar("k");
  Expr row = V(i);
  auto div = [](Expr x, int64_t c) { return loop::Binary(loop::BinaryOp::kFloorDiv, x, I(c)); };
  auto mod = [](Expr x, int64_t c) { return loop::Binary(loop::BinaryOp::kFloorMod, x, I(c)); };
  Expr folded = FoldRowMajor({3, 40, 8}, {div(row, 40), mod(row, 40), V(k)});
  ASSERT_NE(folded, nullptr);
  EXPECT_TRUE(loop::SameExpr(folded, row * I(8) + V(k)));
  // Three dims from one row: [2, 3, 40].
  folded = FoldRowMajor({2, 3, 40, 8}, {div(row, 120), mod(div(row, 40), 3), mod(row, 40), V(k)});
  ASSERT_NE(folded, nullptr);
  EXPECT_TRUE(loop::SameExpr(folded, row * I(8) + V(k)));
  // Remainders of another value, or by another extent, do not fold.
  EXPECT_EQ(FoldRowMajor({3, 40}, {div(row, 40), mod(V(k), 40)}), nullptr);
  EXPECT_EQ(FoldRowMajor({3, 40}, {div(row, 20), mod(row, 20)}), nullptr);

  auto x = MakeBuffer("x", DType::kFloat32, {3, 40, 8});
  auto y = MakeBuffer("y", DType::kFloat32, {3, 40, 8});
  Stmt body = loop::Store(y, {div(row, 40), mod(row, 40), V(k)},
                          loop::Load(x, {div(row, 40), mod(row, 40), V(k)}) * loop::FloatImm(2));
  Func f;
  f.name = "rows";
  f.params = {x, y};
  f.body = loop::For(i, 120, loop::For(k, 8, body, ForKind::kVectorized));
  auto ir = EmitLlvmIr({f}, HostTarget());
  ASSERT_TRUE(ir.ok()) << ir.status();
  EXPECT_FALSE(absl::StrContains(*ir, "sdiv")) << *ir;
  EXPECT_FALSE(absl::StrContains(*ir, "srem")) << *ir;
  auto lib = CompileAndLoad({f});
  ASSERT_TRUE(lib.ok()) << lib.status();
  std::vector<float> in = RandomFloats(960, -1, 1, 3), out(960, 0);
  CallKernel((*lib)->Get("rows"), {in.data(), out.data()});
  for (size_t n = 0; n < in.size(); ++n) ASSERT_EQ(out[n], 2 * in[n]) << n;
}

// The symbolic counterpart: a loop over the pixels of a symbolic image addresses (p // W,
// p % W) of dims (H, W) as element p, with no division and no remainder, at any H and W.
TEST(CodegenTest, SymbolicPixelIndicesFoldIntoOneAddress) {
  absl::StatusOr<Func> f = loop::ParseFunc(R"(func @pixels(%dims: i64[2], %x: f32[%dims[0],%dims[1],8], %y: f32[%dims[0],%dims[1],8]) anchor=Mul {
  for p in 0..1099511627776 limit (%dims[0] * %dims[1]) {
    vectorized for k in 0..8 {
      %y[(p // %dims[1]), (p % %dims[1]), k] = (%x[(p // %dims[1]), (p % %dims[1]), k] * 2.0)
    }
  }
})");
  ASSERT_TRUE(f.ok()) << f.status();
  auto ir = EmitLlvmIr({*f}, HostTarget());
  ASSERT_TRUE(ir.ok()) << ir.status();
  EXPECT_FALSE(absl::StrContains(*ir, "sdiv")) << *ir;
  EXPECT_FALSE(absl::StrContains(*ir, "srem")) << *ir;
  auto lib = CompileAndLoad({*f});
  ASSERT_TRUE(lib.ok()) << lib.status();
  for (auto [h, w] : {std::pair<int64_t, int64_t>{3, 5}, {1, 7}, {4, 1}}) {
    std::vector<int64_t> dims = {h, w};
    std::vector<float> in = RandomFloats(h * w * 8, -1, 1, 5), out(h * w * 8, 0);
    CallKernel((*lib)->Get("pixels"), {dims.data(), in.data(), out.data()});
    for (size_t n = 0; n < in.size(); ++n) ASSERT_EQ(out[n], 2 * in[n]) << h << "x" << w << " " << n;
  }
}

}  // namespace
}  // namespace kiln::codegen
