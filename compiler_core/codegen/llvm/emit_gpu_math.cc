// The GPU math library: f32 elementary functions as inline LLVM IR (NVPTX has no libm, and LLVM
// 19 cannot lower llvm.exp/log/pow for it). Polynomials and reductions follow Cephes' single
// precision library (S. L. Moshier, "Methods and Programs for Mathematical Functions", 1989):
// expf (emit_intrinsics.cc), logf, sinf/cosf, atanf; erf for |x| >= 0.5 is Numerical Recipes'
// erfc Chebyshev fit (Press et al., 3rd ed., 6.2.2, relative error < 1.2e-7) and below it the
// Maclaurin series; the others follow from these by their identities, with series near 0 where
// the identity cancels. f16 is computed in f32; f64 is refused.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "compiler_core/codegen/llvm/emitter.h"
#include "compiler_core/ir/loop/printer.h"

namespace kiln::codegen {

using loop::UnaryOp;

llvm::Value* KernelEmitter::EmitLogF32(llvm::Value* x) {
  llvm::Type* ft = x->getType();
  llvm::Type* it = WithLanes(b_.getInt32Ty(), x);
  auto c = [&](double v) { return llvm::ConstantFP::get(ft, v); };
  auto ci = [&](int64_t v) { return llvm::ConstantInt::get(it, static_cast<uint64_t>(v)); };
  // Subnormals: scale by 2^23 first.
  llvm::Value* tiny = b_.CreateFCmpOLT(x, c(1.17549435e-38));
  llvm::Value* xs = b_.CreateSelect(tiny, b_.CreateFMul(x, c(8388608.0)), x);
  llvm::Value* bits = b_.CreateBitCast(xs, it);
  // x = m 2^e with m in [0.5, 1).
  llvm::Value* e = b_.CreateSub(b_.CreateAnd(b_.CreateLShr(bits, 23), ci(0xff)), ci(126));
  e = b_.CreateSub(e, b_.CreateSelect(tiny, ci(23), ci(0)));
  llvm::Value* m = b_.CreateBitCast(b_.CreateOr(b_.CreateAnd(bits, ci(0x807fffff)), ci(0x3f000000)),
                                    ft);
  // m < sqrt(1/2): use 2m - 1 and e - 1, so the polynomial's argument is in [-0.29, 0.41].
  llvm::Value* low = b_.CreateFCmpOLT(m, c(0.707106781186547524));
  e = b_.CreateSub(e, b_.CreateSelect(low, ci(1), ci(0)));
  llvm::Value* mm = b_.CreateFSub(b_.CreateSelect(low, b_.CreateFAdd(m, m), m), c(1.0));
  llvm::Value* fe = b_.CreateSIToFP(e, ft);
  llvm::Value* z = b_.CreateFMul(mm, mm);
  llvm::Value* p = EmitPolynomial(mm, {7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1,
                                       -1.2420140846e-1, 1.4249322787e-1, -1.6668057665e-1,
                                       2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1});
  llvm::Value* y = b_.CreateFMul(b_.CreateFMul(mm, z), p);
  auto fmuladd = [&](llvm::Value* a, llvm::Value* b, llvm::Value* d) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {ft}, {a, b, d});
  };
  y = fmuladd(fe, c(-2.12194440e-4), y);
  y = fmuladd(z, c(-0.5), y);
  llvm::Value* r = fmuladd(fe, c(0.693359375), b_.CreateFAdd(mm, y));
  // log(+inf) = +inf, log(0) = -inf, log(x < 0) = NaN, NaN stays NaN.
  r = b_.CreateSelect(b_.CreateFCmpOEQ(x, c(INFINITY)), x, r);
  r = b_.CreateSelect(b_.CreateFCmpOEQ(x, c(0.0)), c(-INFINITY), r);
  return b_.CreateSelect(b_.CreateFCmpULT(x, c(0.0)), c(NAN), r);
}

llvm::Value* KernelEmitter::EmitSinCosF32(llvm::Value* x, bool cosine) {
  llvm::Type* ft = x->getType();
  llvm::Type* it = WithLanes(b_.getInt32Ty(), x);
  auto c = [&](double v) { return llvm::ConstantFP::get(ft, v); };
  auto ci = [&](int64_t v) { return llvm::ConstantInt::get(it, static_cast<uint64_t>(v)); };
  auto fmuladd = [&](llvm::Value* a, llvm::Value* b, llvm::Value* d) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {ft}, {a, b, d});
  };
  // k = round(x 2/pi); r = x - k pi/2 in three parts (exact products for |k| < 2^13).
  llvm::Value* k = EmitIntrinsic(llvm::Intrinsic::roundeven,
                                 b_.CreateFMul(x, c(0.636619772367581343)));
  llvm::Value* r = fmuladd(k, c(-1.5703125), x);
  r = fmuladd(k, c(-4.837512969970703125e-4), r);
  r = fmuladd(k, c(-7.54978995489188216e-8), r);
  llvm::Value* z = b_.CreateFMul(r, r);
  llvm::Value* s = fmuladd(b_.CreateFMul(EmitPolynomial(z, {-1.9515295891e-4, 8.3321608736e-3,
                                                            -1.6666654611e-1}),
                                         z),
                           r, r);
  llvm::Value* cpoly = EmitPolynomial(z, {2.443315711809948e-5, -1.388731625493765e-3,
                                          4.166664568298827e-2});
  llvm::Value* co = fmuladd(b_.CreateFMul(cpoly, z), z, fmuladd(z, c(-0.5), c(1.0)));
  // Quadrant q = k mod 4: sin = s, c, -s, -c; cos = c, -s, -c, s.
  llvm::Value* q = b_.CreateAnd(b_.CreateFPToSI(k, it), ci(3));
  if (cosine) q = b_.CreateAnd(b_.CreateAdd(q, ci(1)), ci(3));
  llvm::Value* odd = b_.CreateICmpEQ(b_.CreateAnd(q, ci(1)), ci(1));
  llvm::Value* v = b_.CreateSelect(odd, co, s);
  llvm::Value* negate = b_.CreateICmpUGE(q, ci(2));
  v = b_.CreateSelect(negate, b_.CreateFNeg(v), v);
  // Beyond 2^24 the reduction has no precision left; inf gives NaN, as libm does.
  return b_.CreateSelect(
      b_.CreateFCmpUGT(EmitIntrinsic(llvm::Intrinsic::fabs, x), c(16777216.0)), c(NAN), v);
}

llvm::Value* KernelEmitter::EmitAtanF32(llvm::Value* x) {
  llvm::Type* ft = x->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(ft, v); };
  llvm::Value* ax = EmitIntrinsic(llvm::Intrinsic::fabs, x);
  // |x| > tan(3pi/8): pi/2 + atan(-1/|x|); |x| > tan(pi/8): pi/4 + atan((|x|-1)/(|x|+1)).
  llvm::Value* big = b_.CreateFCmpOGT(ax, c(2.414213562373095));
  llvm::Value* mid = b_.CreateFCmpOGT(ax, c(0.4142135623730950));
  llvm::Value* t = b_.CreateSelect(
      big, b_.CreateFDiv(c(-1.0), ax),
      b_.CreateSelect(mid, b_.CreateFDiv(b_.CreateFSub(ax, c(1.0)), b_.CreateFAdd(ax, c(1.0))),
                      ax));
  llvm::Value* y0 = b_.CreateSelect(big, c(1.5707963267948966),
                                    b_.CreateSelect(mid, c(0.7853981633974483), c(0.0)));
  llvm::Value* z = b_.CreateFMul(t, t);
  llvm::Value* p = EmitPolynomial(z, {8.05374449538e-2, -1.38776856032e-1, 1.99777106478e-1,
                                      -3.33329491539e-1});
  llvm::Value* y = b_.CreateFAdd(
      y0, b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {ft}, {b_.CreateFMul(p, z), t, t}));
  return b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, y, x);
}

llvm::Value* KernelEmitter::EmitErfF32(llvm::Value* x) {
  llvm::Type* ft = x->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(ft, v); };
  llvm::Value* ax = EmitIntrinsic(llvm::Intrinsic::fabs, x);
  // |x| >= 0.5: 1 - erfc(|x|), erfc = t exp(-x^2 + P(t)) with t = 1 / (1 + |x|/2).
  llvm::Value* t = b_.CreateFDiv(c(1.0), b_.CreateFAdd(c(1.0), b_.CreateFMul(ax, c(0.5))));
  llvm::Value* p = EmitPolynomial(t, {0.17087277, -0.82215223, 1.48851587, -1.13520398,
                                      0.27886807, -0.18628806, 0.09678418, 0.37409196,
                                      1.00002368, -1.26551223});
  llvm::Value* erfc = b_.CreateFMul(
      t, EmitVectorExpF32(b_.CreateFAdd(b_.CreateFNeg(b_.CreateFMul(ax, ax)), p)));
  llvm::Value* large = b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign,
                                                b_.CreateFSub(c(1.0), erfc), x);
  // |x| < 0.5: 2/sqrt(pi) (x - x^3/3 + x^5/10 - x^7/42 + x^9/216 - x^11/1320).
  llvm::Value* z = b_.CreateFMul(x, x);
  llvm::Value* series = EmitPolynomial(z, {-1.0 / 1320, 1.0 / 216, -1.0 / 42, 1.0 / 10,
                                           -1.0 / 3, 1.0});
  llvm::Value* small = b_.CreateFMul(b_.CreateFMul(series, x), c(1.1283791670955126));
  return b_.CreateSelect(b_.CreateFCmpOLT(ax, c(0.5)), small, large);
}

llvm::Value* KernelEmitter::EmitGpuMath(UnaryOp op, DType dtype, llvm::Value* a) {
  if (!IsFloat(dtype)) return Fail("float math on a non-float dtype", a->getType());
  if (dtype == DType::kFloat16) {
    llvm::Value* wide = b_.CreateFPExt(a, WithLanes(b_.getFloatTy(), a));
    return b_.CreateFPTrunc(EmitGpuMath(op, DType::kFloat32, wide), a->getType());
  }
  if (dtype != DType::kFloat32) {
    return Fail(absl::StrCat(loop::UnaryOpName(op), " on ", DTypeName(dtype),
                             ": the GPU math library has f32 and f16 only"),
                a->getType());
  }
  llvm::Type* ft = a->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(ft, v); };
  auto sqrt = [&](llvm::Value* v) { return EmitIntrinsic(llvm::Intrinsic::sqrt, v); };
  auto odd_series = [&](llvm::Value* x, std::initializer_list<double> coeffs) {
    // x (c0 z^k + ... + 1) with z = x^2: the Maclaurin series of an odd function.
    return b_.CreateFMul(EmitPolynomial(b_.CreateFMul(x, x), coeffs), x);
  };
  llvm::Value* ax = EmitIntrinsic(llvm::Intrinsic::fabs, a);
  llvm::Value* near0 = b_.CreateFCmpOLT(ax, c(0.5));
  switch (op) {
    case UnaryOp::kExp:
      return EmitVectorExpF32(a);
    case UnaryOp::kLog:
      return EmitLogF32(a);
    case UnaryOp::kTanh:
      return EmitVectorTanhF32(a);
    case UnaryOp::kErf:
      return EmitErfF32(a);
    case UnaryOp::kSin:
      return EmitSinCosF32(a, false);
    case UnaryOp::kCos:
      return EmitSinCosF32(a, true);
    case UnaryOp::kTan:
      return b_.CreateFDiv(EmitSinCosF32(a, false), EmitSinCosF32(a, true));
    case UnaryOp::kAtan:
      return EmitAtanF32(a);
    case UnaryOp::kAsin:
      // atan(x / sqrt(1 - x^2)); |x| > 1 gives NaN through the sqrt.
      return EmitAtanF32(b_.CreateFDiv(a, sqrt(b_.CreateFSub(c(1.0), b_.CreateFMul(a, a)))));
    case UnaryOp::kAcos:
      // 2 atan(sqrt((1 - x) / (1 + x))), accurate near x = 1 where pi/2 - asin cancels.
      return b_.CreateFMul(
          c(2.0), EmitAtanF32(sqrt(b_.CreateFDiv(b_.CreateFSub(c(1.0), a),
                                                 b_.CreateFAdd(c(1.0), a)))));
    case UnaryOp::kSinh: {
      llvm::Value* e = EmitVectorExpF32(ax);
      llvm::Value* big = b_.CreateFMul(b_.CreateFSub(e, b_.CreateFDiv(c(1.0), e)), c(0.5));
      big = b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, big, a);
      llvm::Value* small =
          odd_series(a, {1.0 / 39916800, 1.0 / 362880, 1.0 / 5040, 1.0 / 120, 1.0 / 6, 1.0});
      return b_.CreateSelect(near0, small, big);
    }
    case UnaryOp::kCosh: {
      llvm::Value* e = EmitVectorExpF32(ax);
      return b_.CreateFMul(b_.CreateFAdd(e, b_.CreateFDiv(c(1.0), e)), c(0.5));
    }
    case UnaryOp::kAsinh: {
      llvm::Value* big = EmitLogF32(
          b_.CreateFAdd(ax, sqrt(b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {ft},
                                                    {ax, ax, c(1.0)}))));
      big = b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, big, a);
      llvm::Value* small = odd_series(a, {-0.01396484375, 0.017352764423, -0.022372159091,
                                          0.030381944444, -0.044642857143, 0.075, -1.0 / 6,
                                          1.0});
      return b_.CreateSelect(near0, small, big);
    }
    case UnaryOp::kAcosh:
      return EmitLogF32(b_.CreateFAdd(
          a, sqrt(b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {ft}, {a, a, c(-1.0)}))));
    case UnaryOp::kAtanh: {
      llvm::Value* big = b_.CreateFMul(
          c(0.5), EmitLogF32(b_.CreateFDiv(b_.CreateFAdd(c(1.0), a), b_.CreateFSub(c(1.0), a))));
      llvm::Value* small = odd_series(a, {1.0 / 19, 1.0 / 17, 1.0 / 15, 1.0 / 13, 1.0 / 11,
                                          1.0 / 9, 1.0 / 7, 1.0 / 5, 1.0 / 3, 1.0});
      return b_.CreateSelect(near0, small, big);
    }
    default:
      return Fail(absl::StrCat(loop::UnaryOpName(op), " is not in the GPU math library"), ft);
  }
}

llvm::Value* KernelEmitter::EmitGpuPow(DType dtype, llvm::Value* a, llvm::Value* b) {
  if (dtype == DType::kFloat16) {
    llvm::Type* wide = WithLanes(b_.getFloatTy(), a);
    return b_.CreateFPTrunc(
        EmitGpuPow(DType::kFloat32, b_.CreateFPExt(a, wide), b_.CreateFPExt(b, wide)),
        a->getType());
  }
  if (dtype != DType::kFloat32) {
    return Fail(absl::StrCat("pow on ", DTypeName(dtype),
                             ": the GPU math library has f32 and f16 only"),
                a->getType());
  }
  Unify(a, b);
  llvm::Type* ft = a->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(ft, v); };
  // |a|^b = exp(b log|a|); a negative base keeps the sign of (-1)^b for an integer b and is
  // NaN otherwise; b = 0 gives 1 (even for a NaN base), a = 1 gives 1 (even for a NaN b).
  llvm::Value* ax = EmitIntrinsic(llvm::Intrinsic::fabs, a);
  llvm::Value* mag = EmitVectorExpF32(b_.CreateFMul(b, EmitLogF32(ax)));
  llvm::Value* b_int = b_.CreateFCmpOEQ(EmitIntrinsic(llvm::Intrinsic::floor, b), b);
  llvm::Value* half_b = b_.CreateFMul(b, c(0.5));
  llvm::Value* b_odd = b_.CreateAnd(
      b_int, b_.CreateFCmpONE(EmitIntrinsic(llvm::Intrinsic::floor, half_b), half_b));
  llvm::Value* negative = b_.CreateFCmpOLT(a, c(0.0));
  llvm::Value* signed_mag = b_.CreateSelect(b_odd, b_.CreateFNeg(mag), mag);
  llvm::Value* r = b_.CreateSelect(
      negative, b_.CreateSelect(b_int, signed_mag, c(NAN)), mag);
  // 0^b: 0 for b > 0 (-0 for an odd b and a = -0 aside), inf for b < 0.
  llvm::Value* zero = b_.CreateFCmpOEQ(a, c(0.0));
  r = b_.CreateSelect(zero, b_.CreateSelect(b_.CreateFCmpOGT(b, c(0.0)), c(0.0), c(INFINITY)),
                      r);
  llvm::Value* one = b_.CreateOr(b_.CreateFCmpOEQ(b, c(0.0)), b_.CreateFCmpOEQ(a, c(1.0)));
  return b_.CreateSelect(one, c(1.0), r);
}

}  // namespace kiln::codegen
