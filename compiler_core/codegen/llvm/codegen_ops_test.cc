// End-to-end codegen tests for individual operations: floor division on negatives, integer and
// bool dtypes, f16 and bf16 casts, gathers/scatters in vectorized loops, stack buffers, branches,
// unrolled loops and error reporting.
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "compiler_core/codegen/llvm/codegen.h"
#include "compiler_core/codegen/llvm/test_util.h"
#include "compiler_core/ir/graph/tensor.h"
#include "compiler_core/ir/loop/interpreter.h"
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
using loop::Var;
using testing::CallKernel;
using testing::CompileAndLoad;
using testing::HostTarget;

Expr V(const Var& v) { return loop::VarRef(v); }
Expr I(int64_t v, DType t = DType::kInt64) { return loop::IntImm(v, t); }

int64_t RefFloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t RefFloorMod(int64_t a, int64_t b) { return a - RefFloorDiv(a, b) * b; }

// A kernel `name`(a, b, out) over a, b: `dtype`[n] storing out[kind, k, j] = ops(a[j], b[j])[k],
// with j vectorized (kind 0) and serial (kind 1).
Func BinaryOpsKernel(const std::string& name, DType dtype, int64_t n,
                     const std::function<std::vector<Expr>(Expr, Expr)>& ops) {
  auto a = MakeBuffer("a", dtype, {n});
  auto b = MakeBuffer("b", dtype, {n});
  const int64_t count = static_cast<int64_t>(ops(I(0), I(1)).size());
  auto out = MakeBuffer("out", dtype, {2, count, n});
  std::vector<Stmt> stmts;
  for (int kind = 0; kind < 2; ++kind) {
    Var j = MakeVar(kind == 0 ? "jv" : "js");
    std::vector<Expr> vals = ops(loop::Load(a, {V(j)}), loop::Load(b, {V(j)}));
    std::vector<Stmt> stores;
    for (int64_t k = 0; k < count; ++k) {
      stores.push_back(loop::Store(out, {I(kind), I(k), V(j)}, vals[k]));
    }
    stmts.push_back(
        loop::For(j, n, loop::Block(stores), kind == 0 ? ForKind::kVectorized : ForKind::kSerial));
  }
  Func f;
  f.name = name;
  f.params = {a, b, out};
  f.body = loop::Block(stmts);
  return f;
}

// out[k, j] for k = 0: a floordiv b, 1: a floormod b, 2: a floordiv 3, 3: a floormod 3,
// 4: a / b (truncating); j vectorized (kind 0) or serial (kind 1).
TEST(CodegenOpsTest, FloorDivModOnNegatives) {
  constexpr int64_t N = 14;
  Func f = BinaryOpsKernel("floordiv", DType::kInt64, N, [](Expr x, Expr y) {
    return std::vector<Expr>{
        loop::Binary(BinaryOp::kFloorDiv, x, y), loop::Binary(BinaryOp::kFloorMod, x, y),
        loop::Binary(BinaryOp::kFloorDiv, x, I(3)), loop::Binary(BinaryOp::kFloorMod, x, I(3)),
        loop::Binary(BinaryOp::kDiv, x, y)};
  });
  auto lib = CompileAndLoad({f});
  ASSERT_TRUE(lib.ok()) << lib.status();
  std::vector<int64_t> av = {-7, -6, -5, -1, 0, 1, 5, 6, 7, -7, -3, 3, 7, -8};
  std::vector<int64_t> bv = {3, 3, 3, 3, 3, 3, -3, -3, -3, -3, -3, 2, -2, 5};
  std::vector<int64_t> ov(2 * 5 * N, 99);
  CallKernel((*lib)->Get("floordiv"), {av.data(), bv.data(), ov.data()});
  for (int kind = 0; kind < 2; ++kind) {
    for (int64_t j = 0; j < N; ++j) {
      const int64_t* o = &ov[kind * 5 * N];
      EXPECT_EQ(o[0 * N + j], RefFloorDiv(av[j], bv[j])) << av[j] << "//" << bv[j];
      EXPECT_EQ(o[1 * N + j], RefFloorMod(av[j], bv[j])) << av[j] << "%" << bv[j];
      EXPECT_EQ(o[2 * N + j], RefFloorDiv(av[j], 3)) << av[j];
      EXPECT_EQ(o[3 * N + j], RefFloorMod(av[j], 3)) << av[j];
      EXPECT_EQ(o[4 * N + j], av[j] / bv[j]);
    }
  }
  EXPECT_EQ(RefFloorDiv(-7, 3), -3);  // the reference itself
  EXPECT_EQ(RefFloorMod(-7, 3), 2);
}

// Integer division is total (loop_ir.h): by 0 it gives 0, and MIN / -1 gives MIN with remainder
// 0, vectorized and serial, i32 and i64, equal to the interpreter; x86's idiv would trap.
TEST(CodegenOpsTest, IntegerDivisionByZeroAndMinByMinusOneDoNotTrap) {
  for (DType t : {DType::kInt32, DType::kInt64}) {
    SCOPED_TRACE(DTypeName(t));
    constexpr int64_t N = 8;
    Func f = BinaryOpsKernel("total_div", t, N, [](Expr x, Expr y) {
      return std::vector<Expr>{loop::Binary(BinaryOp::kDiv, x, y),
                               loop::Binary(BinaryOp::kFloorDiv, x, y),
                               loop::Binary(BinaryOp::kFloorMod, x, y)};
    });
    auto lib = CompileAndLoad({f});
    ASSERT_TRUE(lib.ok()) << lib.status();
    const int64_t min = t == DType::kInt32 ? INT32_MIN : INT64_MIN;
    const std::vector<int64_t> av = {7, -7, 0, min, min, min, 5, -9};
    const std::vector<int64_t> bv = {0, 0, 0, -1, 0, 1, -1, 2};
    // Expected: div, floordiv, floormod per element.
    const std::vector<std::array<int64_t, 3>> want = {{0, 0, 0},     {0, 0, 0},  {0, 0, 0},
                                                      {min, min, 0}, {0, 0, 0},  {min, min, 0},
                                                      {-5, -5, 0},   {-4, -5, 1}};
    auto run = [&](auto zero) {
      using T = decltype(zero);
      std::vector<T> as(av.begin(), av.end()), bs(bv.begin(), bv.end()), os(2 * 3 * N, 99);
      CallKernel((*lib)->Get("total_div"), {as.data(), bs.data(), os.data()});
      std::vector<T> is(2 * 3 * N, 99);
      absl::Status interpreted = loop::InterpretFunc(f, {as.data(), bs.data(), is.data()});
      EXPECT_TRUE(interpreted.ok()) << interpreted;
      EXPECT_EQ(is, os);
      for (int kind = 0; kind < 2; ++kind) {
        for (int k = 0; k < 3; ++k) {
          for (int64_t j = 0; j < N; ++j) {
            EXPECT_EQ(static_cast<int64_t>(os[(kind * 3 + k) * N + j]), want[j][k])
                << "kind " << kind << " op " << k << ": " << av[j] << ", " << bv[j];
          }
        }
      }
    };
    if (t == DType::kInt32) {
      run(int32_t{0});
    } else {
      run(int64_t{0});
    }
  }
}

// A loop bound to a GPU block or thread index is a clear error for a CPU target, naming the loop.
TEST(CodegenOpsTest, ThreadBoundLoopNeedsAGpuTarget) {
  auto x = MakeBuffer("x", DType::kFloat32, {4});
  Var i = MakeVar("i");
  Func f;
  f.name = "bound";
  f.params = {x};
  f.body = loop::For(i, 4, loop::Store(x, {V(i)}, loop::FloatImm(1.0)), ForKind::kBlockIdxX);
  absl::StatusOr<std::string> ir = EmitLlvmIr({f}, HostTarget());
  ASSERT_FALSE(ir.ok());
  EXPECT_EQ(ir.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(ir.status().message().find(
                "loop 'i' is bound to blockIdx.x; thread-bound loops need a GPU target"),
            std::string::npos)
      << ir.status();
}

// Index arithmetic with floordiv/floormod: y[j] = x[j // 4, j % 4] (a reshape).
TEST(CodegenOpsTest, FloorDivModInIndices) {
  auto x = MakeBuffer("x", DType::kFloat32, {3, 4});
  auto y = MakeBuffer("y", DType::kFloat32, {12});
  Var j = MakeVar("j");
  Func f;
  f.name = "reshape";
  f.params = {x, y};
  f.body = loop::For(
      j, 12,
      loop::Store(y, {V(j)},
                  loop::Load(x, {loop::Binary(BinaryOp::kFloorDiv, V(j), I(4)),
                                 loop::Binary(BinaryOp::kFloorMod, V(j), I(4))})),
      ForKind::kVectorized);
  auto lib = CompileAndLoad({f});
  ASSERT_TRUE(lib.ok()) << lib.status();
  std::vector<float> xs(12), ys(12, -1);
  for (int k = 0; k < 12; ++k) xs[k] = 1.5f * k;
  CallKernel((*lib)->Get("reshape"), {xs.data(), ys.data()});
  EXPECT_EQ(ys, xs);
}

// Strided and indirect loads, and a strided store, in vectorized loops:
//   out[0, j] = in[2j] (stride 2: span load + shuffle), out[1, j] = in[15 - j] (reversed),
//   out[2, j < 5] = in[3j], out[3, j < 4] = in[5j] (gather), out[4, j] = in[idx[j]] (indirect),
//   sc[2k + 1] = in[k] (scatter).
TEST(CodegenOpsTest, StridedGatherAndScatter) {
  auto in = MakeBuffer("in", DType::kFloat32, {16});
  auto idx = MakeBuffer("idx", DType::kInt32, {8});
  auto out = MakeBuffer("out", DType::kFloat32, {5, 8});
  auto sc = MakeBuffer("sc", DType::kFloat32, {16});
  Var j0 = MakeVar("j0"), j1 = MakeVar("j1"), j2 = MakeVar("j2"), j3 = MakeVar("j3");
  Var j4 = MakeVar("j4"), k = MakeVar("k");
  auto vec = [](const Var& v, int64_t n, Stmt s) { return loop::For(v, n, s, ForKind::kVectorized); };
  Func f;
  f.name = "gather";
  f.params = {in, idx, out, sc};
  f.body = loop::Block({
      vec(j0, 8, loop::Store(out, {I(0), V(j0)}, loop::Load(in, {I(2) * V(j0)}))),
      vec(j1, 8, loop::Store(out, {I(1), V(j1)}, loop::Load(in, {I(15) - V(j1)}))),
      vec(j2, 5, loop::Store(out, {I(2), V(j2)}, loop::Load(in, {V(j2) * I(3)}))),
      vec(j3, 4, loop::Store(out, {I(3), V(j3)}, loop::Load(in, {V(j3) * I(5)}))),
      vec(j4, 8, loop::Store(out, {I(4), V(j4)},
                             loop::Load(in, {loop::Cast(DType::kInt64, loop::Load(idx, {V(j4)}))}))),
      vec(k, 8, loop::Store(sc, {V(k) * I(2) + I(1)}, loop::Load(in, {V(k)}))),
  });
  auto lib = CompileAndLoad({f});
  ASSERT_TRUE(lib.ok()) << lib.status();
  std::vector<float> iv(16), ov(40, -1), sv(16, -1);
  std::vector<int32_t> xv = {3, 3, 0, 15, 7, 1, 9, 2};
  for (int n = 0; n < 16; ++n) iv[n] = 10.0f + n;
  CallKernel((*lib)->Get("gather"), {iv.data(), xv.data(), ov.data(), sv.data()});
  for (int n = 0; n < 8; ++n) {
    EXPECT_EQ(ov[n], 10.0f + 2 * n);
    EXPECT_EQ(ov[8 + n], 10.0f + 15 - n);
    EXPECT_EQ(ov[16 + n], n < 5 ? 10.0f + 3 * n : -1.0f);
    EXPECT_EQ(ov[24 + n], n < 4 ? 10.0f + 5 * n : -1.0f);
    EXPECT_EQ(ov[32 + n], 10.0f + xv[n]);
    EXPECT_EQ(sv[2 * n], -1.0f);
    EXPECT_EQ(sv[2 * n + 1], 10.0f + n);
  }
}

// i8 wrap-around add, i32 mul and min, u8 max, u16 sub, casts i32→f32, f32→i32, u32→f64.
TEST(CodegenOpsTest, IntegerDtypes) {
  constexpr int64_t N = 8;
  auto a8 = MakeBuffer("a8", DType::kInt8, {N});
  auto o8 = MakeBuffer("o8", DType::kInt8, {N});
  auto a32 = MakeBuffer("a32", DType::kInt32, {N});
  auto o32 = MakeBuffer("o32", DType::kInt32, {2, N});
  auto u8 = MakeBuffer("u8", DType::kUInt8, {N});
  auto ou8 = MakeBuffer("ou8", DType::kUInt8, {N});
  auto u16 = MakeBuffer("u16", DType::kUInt16, {N});
  auto u32 = MakeBuffer("u32", DType::kUInt32, {N});
  auto of = MakeBuffer("of", DType::kFloat32, {N});
  auto od = MakeBuffer("od", DType::kFloat64, {N});
  auto oi = MakeBuffer("oi", DType::kInt32, {N});
  Var j = MakeVar("j");
  auto L = [&](const loop::BufferRef& b) { return loop::Load(b, {V(j)}); };
  Stmt body = loop::Block({
      loop::Store(o8, {V(j)}, L(a8) + I(100, DType::kInt8)),
      loop::Store(o32, {I(0), V(j)}, L(a32) * I(-3, DType::kInt32)),
      loop::Store(o32, {I(1), V(j)}, loop::Min(L(a32), I(2, DType::kInt32))),
      loop::Store(ou8, {V(j)}, loop::Max(L(u8), I(128, DType::kUInt8))),
      loop::Store(u16, {V(j)}, L(u16) - I(1, DType::kUInt16)),
      loop::Store(of, {V(j)}, loop::Cast(DType::kFloat32, L(a32))),
      loop::Store(od, {V(j)}, loop::Cast(DType::kFloat64, L(u32))),
      loop::Store(oi, {V(j)}, loop::Cast(DType::kInt32, loop::Cast(DType::kFloat32, L(a8)) *
                                                          loop::FloatImm(2.5))),
  });
  Func f;
  f.name = "ints";
  f.params = {a8, o8, a32, o32, u8, ou8, u16, u32, of, od, oi};
  f.body = loop::For(j, N, body, ForKind::kVectorized);
  auto lib = CompileAndLoad({f});
  ASSERT_TRUE(lib.ok()) << lib.status();
  std::vector<int8_t> va8 = {-128, -1, 0, 1, 27, 28, 100, 127}, vo8(N);
  std::vector<int32_t> va32 = {-5, -1, 0, 1, 2, 3, 1000000, -1000000}, vo32(2 * N), voi(N);
  std::vector<uint8_t> vu8 = {0, 1, 127, 128, 129, 200, 255, 3}, vou8(N);
  std::vector<uint16_t> vu16 = {0, 1, 2, 65535, 100, 7, 8, 9};
  std::vector<uint32_t> vu32 = {0, 1, 4000000000u, 4294967295u, 5, 6, 7, 8};
  std::vector<float> vof(N);
  std::vector<double> vod(N);
  CallKernel((*lib)->Get("ints"), {va8.data(), vo8.data(), va32.data(), vo32.data(), vu8.data(),
                                   vou8.data(), vu16.data(), vu32.data(), vof.data(), vod.data(),
                                   voi.data()});
  for (int64_t n = 0; n < N; ++n) {
    EXPECT_EQ(vo8[n], static_cast<int8_t>(static_cast<uint8_t>(va8[n]) + 100)) << n;
    EXPECT_EQ(vo32[n], va32[n] * -3);
    EXPECT_EQ(vo32[N + n], std::min(va32[n], 2));
    EXPECT_EQ(vou8[n], std::max<uint8_t>(vu8[n], 128));
    EXPECT_EQ(vof[n], static_cast<float>(va32[n]));
    EXPECT_EQ(vod[n], static_cast<double>(vu32[n]));
    EXPECT_EQ(voi[n], static_cast<int32_t>(static_cast<float>(va8[n]) * 2.5f));
  }
  EXPECT_EQ(vu16[0], 65535);
  EXPECT_EQ(vu16[3], 65534);
  EXPECT_EQ(vo8[6], static_cast<int8_t>(-56));
}

// mask[j] = x[j] > 0 (bool buffer); y[j] = mask[j] && !(x[j] > 5) ? x[j] : -x[j] * 0.5.
TEST(CodegenOpsTest, BoolSelectAndLogic) {
  constexpr int64_t N = 11;
  auto x = MakeBuffer("x", DType::kFloat32, {N});
  auto mask = MakeBuffer("mask", DType::kBool, {N});
  auto y = MakeBuffer("y", DType::kFloat32, {2, N});
  std::vector<Stmt> stmts;
  for (int kind = 0; kind < 2; ++kind) {
    Var j = MakeVar(kind ? "js" : "jv");
    Expr xj = loop::Load(x, {V(j)});
    Expr cond = loop::Binary(
        BinaryOp::kAnd, loop::Load(mask, {V(j)}),
        loop::Unary(loop::UnaryOp::kNot, loop::Binary(BinaryOp::kGt, xj, loop::FloatImm(5))));
    stmts.push_back(loop::For(
        j, N,
        loop::Block({loop::Store(mask, {V(j)}, loop::Binary(BinaryOp::kGt, xj, loop::FloatImm(0))),
                     loop::Store(y, {I(kind), V(j)},
                                 loop::Select(cond, xj,
                                              loop::Unary(loop::UnaryOp::kNeg, xj) *
                                                  loop::FloatImm(0.5)))}),
        kind == 0 ? ForKind::kVectorized : ForKind::kSerial));
  }
  Func f;
  f.name = "boolsel";
  f.params = {x, mask, y};
  f.body = loop::Block(stmts);
  auto lib = CompileAndLoad({f});
  ASSERT_TRUE(lib.ok()) << lib.status();
  std::vector<float> xs = {-3, -1, 0, 0.5, 1, 2, 4.5, 5, 5.5, 9, -0.25};
  std::vector<uint8_t> ms(N, 7);
  std::vector<float> ys(2 * N, 0);
  CallKernel((*lib)->Get("boolsel"), {xs.data(), ms.data(), ys.data()});
  for (int64_t n = 0; n < N; ++n) {
    EXPECT_EQ(ms[n], xs[n] > 0 ? 1 : 0) << n;
    float ref = (xs[n] > 0 && !(xs[n] > 5)) ? xs[n] : -xs[n] * 0.5f;
    EXPECT_EQ(ys[n], ref) << n;
    EXPECT_EQ(ys[N + n], ref) << n;
  }
}

// A 16-float stack tile filled with a vectorized loop, then summed into out[i] (parallel i).
TEST(CodegenOpsTest, LocalTileBuffer) {
  constexpr int64_t R = 6, W = 16;
  auto x = MakeBuffer("x", DType::kFloat32, {R, W});
  auto out = MakeBuffer("out", DType::kFloat32, {R});
  auto tile = MakeBuffer("tile", DType::kFloat32, {W}, Buffer::Scope::kLocal);
  Var i = MakeVar("i"), j = MakeVar("j"), k = MakeVar("k");
  Stmt body = loop::Allocate(
      tile,
      loop::Block({loop::For(j, W,
                             loop::Store(tile, {V(j)}, loop::Load(x, {V(i), V(j)}) *
                                                           loop::Load(x, {V(i), V(j)})),
                             ForKind::kVectorized),
                   loop::Store(out, {V(i)}, loop::FloatImm(0)),
                   loop::For(k, W,
                             loop::Store(out, {V(i)},
                                         loop::Load(out, {V(i)}) + loop::Load(tile, {V(k)})),
                             ForKind::kUnrolled, true)}));
  Func f;
  f.name = "tile";
  f.params = {x, out};
  f.body = loop::For(i, R, body, ForKind::kParallel);
  auto lib = CompileAndLoad({f});
  ASSERT_TRUE(lib.ok()) << lib.status();
  std::vector<float> xs(R * W), os(R, -1);
  for (int64_t n = 0; n < R * W; ++n) xs[n] = 0.25f * static_cast<float>(n % 7) - 0.5f;
  CallKernel((*lib)->Get("tile"), {xs.data(), os.data()});
  for (int64_t r = 0; r < R; ++r) {
    float ref = 0;
    for (int64_t c = 0; c < W; ++c) ref += xs[r * W + c] * xs[r * W + c];
    EXPECT_NEAR(os[r], ref, 1e-5) << r;
  }
}

// f16 buffers: y = f16(f32(x) * 2 + 0.5), plus an If on the loop variable and a workspace.
TEST(CodegenOpsTest, HalfCastsIfAndWorkspace) {
  constexpr int64_t N = 8;
  auto x = MakeBuffer("x", DType::kFloat16, {N});
  auto y = MakeBuffer("y", DType::kFloat16, {N});
  auto ws = MakeBuffer("ws", DType::kFloat32, {N});
  Var j = MakeVar("j"), k = MakeVar("k");
  Stmt s1 = loop::For(
      j, N,
      loop::Store(ws, {V(j)},
                  loop::Cast(DType::kFloat32, loop::Load(x, {V(j)})) * loop::FloatImm(2) +
                      loop::FloatImm(0.5)),
      ForKind::kVectorized);
  Stmt s2 = loop::For(
      k, N,
      loop::IfThenElse(loop::Binary(BinaryOp::kLt, V(k), I(4)),
                       loop::Store(y, {V(k)}, loop::Cast(DType::kFloat16, loop::Load(ws, {V(k)}))),
                       loop::Store(y, {V(k)}, loop::Load(x, {V(k)}))));
  Func f;
  f.name = "half";
  f.params = {x, y};
  f.workspaces = {ws};
  f.body = loop::Block({s1, s2});
  auto lib = CompileAndLoad({f});
  ASSERT_TRUE(lib.ok()) << lib.status();
  // 1.0, 2.0, 0.5, -1.5, 0, 3.0, -2.0, 1.0 as IEEE half bits.
  std::vector<uint16_t> xs = {0x3C00, 0x4000, 0x3800, 0xBE00, 0x0000, 0x4200, 0xC000, 0x3C00};
  std::vector<uint16_t> ys(N, 0xFFFF);
  std::vector<float> wss(N, 0);
  CallKernel((*lib)->Get("half"), {xs.data(), ys.data(), wss.data()});
  std::vector<float> ref_ws = {2.5f, 4.5f, 1.5f, -2.5f, 0.5f, 6.5f, -3.5f, 2.5f};
  EXPECT_EQ(wss, ref_ws);
  // 2.5 = 0x4100, 4.5 = 0x4480, 1.5 = 0x3E00, -2.5 = 0xC100; then x copied.
  std::vector<uint16_t> ref_y = {0x4100, 0x4480, 0x3E00, 0xC100, 0x0000, 0x4200, 0xC000, 0x3C00};
  EXPECT_EQ(ys, ref_y);
}

// bf16 casts both ways, vectorized and serial: f32 → bf16 truncates (as FloatToBFloat16 and the
// ONNX Cast conformance data), a NaN stays NaN, bf16 → f32 and bf16 → i32 are exact.
TEST(CodegenOpsTest, BFloat16Casts) {
  constexpr int64_t N = 8;
  auto x = MakeBuffer("x", DType::kFloat32, {N});
  auto b = MakeBuffer("b", DType::kBFloat16, {2, N});
  auto y = MakeBuffer("y", DType::kFloat32, {N});
  auto yi = MakeBuffer("yi", DType::kInt32, {N});
  Var j = MakeVar("j"), k = MakeVar("k");
  Stmt to_bf16 = loop::For(
      j, N, loop::Store(b, {I(0), V(j)}, loop::Cast(DType::kBFloat16, loop::Load(x, {V(j)}))),
      ForKind::kVectorized);
  Stmt back = loop::For(
      k, N,
      loop::Block({
          loop::Store(b, {I(1), V(k)}, loop::Cast(DType::kBFloat16, loop::Load(x, {V(k)}))),
          loop::Store(y, {V(k)}, loop::Cast(DType::kFloat32, loop::Load(b, {I(0), V(k)}))),
          loop::Store(yi, {V(k)}, loop::Cast(DType::kInt32, loop::Load(b, {I(1), V(k)}))),
      }));
  Func f;
  f.name = "bf16";
  f.params = {x, b, y, yi};
  f.body = loop::Block({to_bf16, back});
  auto lib = CompileAndLoad({f});
  ASSERT_TRUE(lib.ok()) << lib.status();
  std::vector<float> xs = {0.48033667f, -2.0f, 1.0f + 1.0f / 256, 300.7f, 0.0f,
                           std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::quiet_NaN(), -0.81910545f};
  std::vector<uint16_t> bs(2 * N, 0);
  std::vector<float> ys(N, 0);
  std::vector<int32_t> yis(N, 0);
  CallKernel((*lib)->Get("bf16"), {xs.data(), bs.data(), ys.data(), yis.data()});
  for (int64_t n = 0; n < N; ++n) {
    EXPECT_EQ(bs[n], FloatToBFloat16(xs[n])) << n;
    EXPECT_EQ(bs[N + n], bs[n]) << n;
    if (n == 6) {
      EXPECT_TRUE(std::isnan(ys[n]));
      continue;
    }
    EXPECT_EQ(ys[n], BFloat16ToFloat(bs[n])) << n;
    if (n != 5) EXPECT_EQ(yis[n], static_cast<int32_t>(BFloat16ToFloat(bs[n]))) << n;
  }
  EXPECT_EQ(bs[0], 16117);  // truncated (round to nearest even would give 16118)
  EXPECT_EQ(ys[3], 300.0f);
}

// Two kernels in one module; a vectorized loop whose body cannot be SIMD (a reduction into one
// location that is also read) falls back to a serial loop and stays correct.
TEST(CodegenOpsTest, MultipleKernelsAndVectorizeFallback) {
  auto x = MakeBuffer("x", DType::kFloat32, {10});
  auto s = MakeBuffer("s", DType::kFloat32, {1});
  Var j = MakeVar("j");
  Func sum;
  sum.name = "sum";
  sum.params = {x, s};
  sum.body = loop::Block(
      {loop::Store(s, {I(0)}, loop::FloatImm(0)),
       loop::For(j, 10, loop::Store(s, {I(0)}, loop::Load(s, {I(0)}) + loop::Load(x, {V(j)})),
                 ForKind::kVectorized)});
  auto y = MakeBuffer("y", DType::kFloat32, {10});
  Var k = MakeVar("k");
  Func last;
  last.name = "last";
  last.params = {x, y};
  // Uniform store location, written only: the last lane's value survives, as in serial order.
  last.body = loop::For(k, 10, loop::Store(y, {I(3)}, loop::Load(x, {V(k)})), ForKind::kVectorized);
  auto lib = CompileAndLoad({sum, last});
  ASSERT_TRUE(lib.ok()) << lib.status();
  std::vector<float> xs = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, ss(1, -1), ys(10, 0);
  CallKernel((*lib)->Get("sum"), {xs.data(), ss.data()});
  EXPECT_EQ(ss[0], 55.0f);
  CallKernel((*lib)->Get("last"), {xs.data(), ys.data()});
  EXPECT_EQ(ys[3], 10.0f);
  EXPECT_EQ(ys[2], 0.0f);
}

// acc + dot4_u8s8(a, b) (VPDPBUSD where the target has AVX-512 VNNI) and a bare dot4_u8s8, in
// 16-lane vectorized loops (a lane-varying and a broadcast operand) and a serial loop, against
// the definition: the sum of a's bytes as uint8 times b's bytes as int8.
//   out[0, j] = acc[j] + dot4(a[j], b[j])      (vectorized)
//   out[1, j] = acc[j] + dot4(a[j], b[j])      (serial)
//   out[2, j] = dot4(a[3], b[j]) + acc[j]      (vectorized, a broadcast)
//   out[3, j] = dot4(a[j], b[j])               (vectorized, no accumulator)
TEST(CodegenOpsTest, Dot4U8S8MatchesItsDefinition) {
  constexpr int64_t N = 16;
  auto a = MakeBuffer("a", DType::kInt32, {N});
  auto b = MakeBuffer("b", DType::kInt32, {N});
  auto acc = MakeBuffer("acc", DType::kInt32, {N});
  auto out = MakeBuffer("out", DType::kInt32, {4, N});
  auto dot = [](Expr x, Expr y) { return loop::Binary(BinaryOp::kDot4U8S8, x, y); };
  std::vector<Stmt> stmts;
  for (int k = 0; k < 4; ++k) {
    Var j = MakeVar("j" + std::to_string(k));
    Expr x = loop::Load(a, {k == 2 ? I(3) : V(j)}), y = loop::Load(b, {V(j)});
    Expr z = loop::Load(acc, {V(j)});
    Expr value = k == 2 ? dot(x, y) + z : k == 3 ? dot(x, y) : z + dot(x, y);
    stmts.push_back(loop::For(j, N, loop::Store(out, {I(k), V(j)}, value),
                              k == 1 ? ForKind::kSerial : ForKind::kVectorized));
  }
  Func f;
  f.name = "dot4";
  f.params = {a, b, acc, out};
  f.body = loop::Block(stmts);
  std::vector<uint32_t> av(N), bv(N);
  std::vector<int32_t> accv(N);
  uint32_t seed = 12345;
  auto next = [&] { return seed = seed * 1664525u + 1013904223u; };
  for (int64_t j = 0; j < N; ++j) {
    av[j] = next();
    bv[j] = next();
    accv[j] = static_cast<int32_t>(next() % 200001) - 100000;
  }
  av[0] = 0xffffffffu;  // 255 * -128 in every byte
  bv[0] = 0x80808080u;
  auto ref = [](uint32_t x, uint32_t y) {
    int32_t sum = 0;
    for (int k = 0; k < 4; ++k) {
      sum += static_cast<int32_t>((x >> (8 * k)) & 0xff) *
             static_cast<int8_t>(static_cast<uint8_t>(y >> (8 * k)));
    }
    return sum;
  };
  EXPECT_EQ(ref(av[0], bv[0]), -4 * 255 * 128);
  // The host (VPDPBUSD if it has VNNI) and generic x86-64 (widened byte products).
  for (const Target& target : {HostTarget(), Target{}}) {
    auto lib = CompileAndLoad({f}, target);
    ASSERT_TRUE(lib.ok()) << lib.status();
    std::vector<int32_t> ov(4 * N, 99);
    CallKernel((*lib)->Get("dot4"), {av.data(), bv.data(), accv.data(), ov.data()});
    for (int64_t j = 0; j < N; ++j) {
      const int32_t d = ref(av[j], bv[j]);
      EXPECT_EQ(ov[0 * N + j], accv[j] + d) << target.cpu << " lane " << j;
      EXPECT_EQ(ov[1 * N + j], accv[j] + d) << target.cpu << " lane " << j;
      EXPECT_EQ(ov[2 * N + j], accv[j] + ref(av[3], bv[j])) << target.cpu << " lane " << j;
      EXPECT_EQ(ov[3 * N + j], d) << target.cpu << " lane " << j;
    }
  }
  // VPDPBUSD is emitted exactly where the target has AVX-512 VNNI at 16 lanes.
  auto vnni = ResolveTarget("cpu:icelake-server");
  ASSERT_TRUE(vnni.ok()) << vnni.status();
  ASSERT_TRUE(vnni->HasInt8Dot4());
  auto ir = EmitLlvmIr({f}, *vnni);
  ASSERT_TRUE(ir.ok()) << ir.status();
  EXPECT_TRUE(absl::StrContains(*ir, "llvm.x86.avx512.vpdpbusd.512")) << *ir;
  // 256-bit AVX-VNNI (no AVX-512): the 16-lane loops run as two VPDPBUSD ymm halves.
  auto avx_vnni = ResolveTarget("cpu:alderlake");
  ASSERT_TRUE(avx_vnni.ok()) << avx_vnni.status();
  ASSERT_TRUE(avx_vnni->HasInt8Dot4());
  ir = EmitLlvmIr({f}, *avx_vnni);
  ASSERT_TRUE(ir.ok()) << ir.status();
  EXPECT_TRUE(absl::StrContains(*ir, "llvm.x86.avx512.vpdpbusd.256")) << *ir;
  EXPECT_FALSE(absl::StrContains(*ir, "vpdpbusd.512")) << *ir;
  auto no_vnni = ResolveTarget("cpu:skylake-avx512");
  ASSERT_TRUE(no_vnni.ok()) << no_vnni.status();
  EXPECT_FALSE(no_vnni->HasInt8Dot4());
  ir = EmitLlvmIr({f}, *no_vnni);
  ASSERT_TRUE(ir.ok()) << ir.status();
  EXPECT_FALSE(absl::StrContains(*ir, "vpdpbusd")) << *ir;
}

TEST(CodegenOpsTest, Errors) {
  auto x = MakeBuffer("x", DType::kFloat32, {4});
  auto other = MakeBuffer("other", DType::kFloat32, {4});
  Var j = MakeVar("j"), unbound = MakeVar("u");
  Func f;
  f.name = "bad";
  f.params = {x};
  f.body = loop::For(j, 4, loop::Store(x, {V(unbound)}, loop::FloatImm(1)));
  EXPECT_EQ(EmitLlvmIr({f}, HostTarget()).status().code(), absl::StatusCode::kInvalidArgument);
  f.body = loop::For(j, 4, loop::Store(other, {V(j)}, loop::FloatImm(1)));
  EXPECT_EQ(EmitLlvmIr({f}, HostTarget()).status().code(), absl::StatusCode::kInvalidArgument);
  f.body = loop::For(j, 4, loop::Store(x, {V(j)}, loop::FloatImm(1)));
  f.name = "not-an-identifier";
  EXPECT_EQ(EmitLlvmIr({f}, HostTarget()).status().code(), absl::StatusCode::kInvalidArgument);
  f.name = "dup";
  EXPECT_EQ(EmitLlvmIr({f, f}, HostTarget()).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(EmitLlvmIr({f}, HostTarget()).ok());
  Target gpu;
  gpu.kind = "cuda";  // no SM: not a resolved target
  EXPECT_EQ(EmitLlvmIr({f}, gpu).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(EmitLlvmIr({f}, *ParseCudaTarget("cuda:sm_80")).ok());
  // A shared object needs a CPU target; PTX a GPU one.
  EXPECT_EQ(CompileToSharedObject({f}, *ParseCudaTarget("cuda:sm_80")).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CompileToPtx({f}, HostTarget()).status().code(), absl::StatusCode::kInvalidArgument);
  // A default-constructed CPU target (no triple, no CPU) still compiles: generic x86-64.
  auto so = CompileToSharedObject({f}, Target{});
  EXPECT_TRUE(so.ok()) << so.status();
}

}  // namespace
}  // namespace kiln::codegen
