// Math emission: unary math through LLVM intrinsics (exp, log, sqrt, fabs, floor, ceil), tanh and
// erf through libm calls (left undefined in the .so), NaN-propagating float min/max, and floor
// division/modulo with Python/ONNX index semantics. exp and tanh on <W x float> use inline
// Cephes-style polynomials (rel. error < 1e-6) instead of one libm call per lane.
#include <optional>

#include "compiler_core/codegen/llvm/emitter.h"
#include "compiler_core/codegen/llvm/vector_analysis.h"
#include "llvm/IR/IntrinsicsX86.h"

namespace kiln::codegen {

using loop::UnaryOp;

llvm::Value* KernelEmitter::EmitIntrinsic(llvm::Intrinsic::ID id, llvm::Value* a,
                                          llvm::Value* b) {
  if (b == nullptr) return b_.CreateUnaryIntrinsic(id, a);
  return b_.CreateBinaryIntrinsic(id, a, b);
}

llvm::Value* KernelEmitter::EmitUnary(const loop::ExprNode& e) {
  DType t = e.dtype;
  llvm::Value* a = EmitExpr(e.operands[0]);
  bool f = IsFloat(t);
  auto float_only = [&](llvm::Intrinsic::ID id) -> llvm::Value* {
    if (!f) return Fail("float math on a non-float dtype", a->getType());
    return EmitIntrinsic(id, a);
  };
  if (UsesGpuMathLibrary()) {
    switch (e.unary_op) {
      case UnaryOp::kExp:
      case UnaryOp::kLog:
      case UnaryOp::kTanh:
      case UnaryOp::kErf:
      case UnaryOp::kSin:
      case UnaryOp::kCos:
      case UnaryOp::kTan:
      case UnaryOp::kAsin:
      case UnaryOp::kAcos:
      case UnaryOp::kAtan:
      case UnaryOp::kSinh:
      case UnaryOp::kCosh:
      case UnaryOp::kAsinh:
      case UnaryOp::kAcosh:
      case UnaryOp::kAtanh:
        return EmitGpuMath(e.unary_op, t, a);
      default:
        break;
    }
  }
  switch (e.unary_op) {
    case UnaryOp::kNeg:
      if (f) return b_.CreateFNeg(a);
      return t == DType::kBool ? a : b_.CreateNeg(a);
    case UnaryOp::kAbs:
      if (f) return EmitIntrinsic(llvm::Intrinsic::fabs, a);
      if (!IsSigned(t)) return a;
      return b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, a, b_.getFalse());
    case UnaryOp::kExp:
      if (IsF32Vector(a)) return EmitVectorExpF32(a);
      return float_only(llvm::Intrinsic::exp);
    case UnaryOp::kLog:
      return float_only(llvm::Intrinsic::log);
    case UnaryOp::kSqrt:
      return float_only(llvm::Intrinsic::sqrt);
    case UnaryOp::kFloor:
      return f ? EmitIntrinsic(llvm::Intrinsic::floor, a) : a;
    case UnaryOp::kCeil:
      return f ? EmitIntrinsic(llvm::Intrinsic::ceil, a) : a;
    case UnaryOp::kTanh:
      if (IsF32Vector(a)) return EmitVectorTanhF32(a);
      return EmitLibmCall("tanhf", "tanh", t, a);
    case UnaryOp::kErf:
      return EmitLibmCall("erff", "erf", t, a);
    case UnaryOp::kNot:
      return b_.CreateNot(a);
    case UnaryOp::kRound:
      return f ? EmitIntrinsic(llvm::Intrinsic::roundeven, a) : a;
    case UnaryOp::kSin: return EmitLibmCall("sinf", "sin", t, a);
    case UnaryOp::kCos: return EmitLibmCall("cosf", "cos", t, a);
    case UnaryOp::kTan: return EmitLibmCall("tanf", "tan", t, a);
    case UnaryOp::kAsin: return EmitLibmCall("asinf", "asin", t, a);
    case UnaryOp::kAcos: return EmitLibmCall("acosf", "acos", t, a);
    case UnaryOp::kAtan: return EmitLibmCall("atanf", "atan", t, a);
    case UnaryOp::kSinh: return EmitLibmCall("sinhf", "sinh", t, a);
    case UnaryOp::kCosh: return EmitLibmCall("coshf", "cosh", t, a);
    case UnaryOp::kAsinh: return EmitLibmCall("asinhf", "asinh", t, a);
    case UnaryOp::kAcosh: return EmitLibmCall("acoshf", "acosh", t, a);
    case UnaryOp::kAtanh: return EmitLibmCall("atanhf", "atanh", t, a);
  }
  return Fail("unknown unary op", a->getType());
}

bool KernelEmitter::IsF32Vector(llvm::Value* v) {
  return v->getType()->isVectorTy() && v->getType()->getScalarType()->isFloatTy();
}

llvm::Value* KernelEmitter::EmitPolynomial(llvm::Value* x, std::initializer_list<double> coeffs) {
  // Horner with fmuladd: ((c0 * x + c1) * x + c2) ...
  auto it = coeffs.begin();
  llvm::Value* p = llvm::ConstantFP::get(x->getType(), *it++);
  for (; it != coeffs.end(); ++it) {
    p = b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {x->getType()},
                           {p, x, llvm::ConstantFP::get(x->getType(), *it)});
  }
  return p;
}

llvm::Value* KernelEmitter::EmitVectorExpF32(llvm::Value* x) {
  llvm::Type* ft = x->getType();
  llvm::Type* it = WithLanes(b_.getInt32Ty(), x);
  auto c = [&](double v) { return llvm::ConstantFP::get(ft, v); };
  auto fmuladd = [&](llvm::Value* a, llvm::Value* b, llvm::Value* d) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {ft}, {a, b, d});
  };
  // Beyond [-104, 88.8] the result is 0 or +inf anyway; the scaling below saturates correctly.
  llvm::Value* xc = b_.CreateBinaryIntrinsic(
      llvm::Intrinsic::maxnum, b_.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, x, c(88.8)),
      c(-104.0));
  // n = round(x / ln 2); r = x - n ln 2 (Cody-Waite, two parts).
  llvm::Value* fx = EmitIntrinsic(llvm::Intrinsic::floor, fmuladd(xc, c(1.44269504088896341),
                                                                  c(0.5)));
  llvm::Value* r = fmuladd(fx, c(-0.693359375), xc);
  r = fmuladd(fx, c(2.12194440e-4), r);
  llvm::Value* p = EmitPolynomial(r, {1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3,
                                      4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1});
  llvm::Value* y = b_.CreateFAdd(fmuladd(p, b_.CreateFMul(r, r), r), c(1.0));
  // y * 2^n as y * 2^n1 * 2^n2 with n1 = n >> 1, so both factors are normal floats and results
  // underflow gradually / overflow to inf.
  llvm::Value* n = b_.CreateFPToSI(fx, it);
  llvm::Value* n1 = b_.CreateAShr(n, 1);
  llvm::Value* n2 = b_.CreateSub(n, n1);
  auto pow2 = [&](llvm::Value* k) {
    llvm::Value* bits = b_.CreateShl(b_.CreateAdd(k, llvm::ConstantInt::get(it, 127)), 23);
    return b_.CreateBitCast(bits, ft);
  };
  llvm::Value* result = b_.CreateFMul(b_.CreateFMul(y, pow2(n1)), pow2(n2));
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, result);
}

llvm::Value* KernelEmitter::EmitVectorTanhF32(llvm::Value* x) {
  llvm::Type* ft = x->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(ft, v); };
  llvm::Value* ax = EmitIntrinsic(llvm::Intrinsic::fabs, x);
  // |x| < 0.625: x + x^3 P(x^2).
  llvm::Value* z = b_.CreateFMul(x, x);
  llvm::Value* p = EmitPolynomial(z, {-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2,
                                      1.33314422036e-1, -3.33332819422e-1});
  llvm::Value* small = b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {ft},
                                          {b_.CreateFMul(p, z), x, x});
  // Otherwise: sign(x) (1 - 2 / (exp(2|x|) + 1)).
  llvm::Value* e = EmitVectorExpF32(b_.CreateFAdd(ax, ax));
  llvm::Value* large = b_.CreateFSub(c(1.0), b_.CreateFDiv(c(2.0), b_.CreateFAdd(e, c(1.0))));
  large = b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, large, x);
  return b_.CreateSelect(b_.CreateFCmpOLT(ax, c(0.625)), small, large);
}

llvm::Value* KernelEmitter::EmitLibmCall(const char* f32_name, const char* f64_name, DType dtype,
                                         llvm::Value* a) {
  if (!IsFloat(dtype)) return Fail("libm call on a non-float dtype", a->getType());
  if (dtype == DType::kFloat16) {
    llvm::Value* wide = b_.CreateFPExt(a, WithLanes(b_.getFloatTy(), a));
    return b_.CreateFPTrunc(EmitLibmCall(f32_name, f64_name, DType::kFloat32, wide),
                            a->getType());
  }
  llvm::Type* scalar = RegType(dtype);
  const char* name = dtype == DType::kFloat64 ? f64_name : f32_name;
  llvm::FunctionCallee callee =
      module_.getOrInsertFunction(name, llvm::FunctionType::get(scalar, {scalar}, false));
  if (auto* fn = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    // As with -fno-math-errno: pure, so calls can be hoisted and deduplicated.
    fn->setDoesNotThrow();
    fn->setWillReturn();
    fn->setDoesNotAccessMemory();
  }
  auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(a->getType());
  if (vt == nullptr) return b_.CreateCall(callee, {a});
  llvm::Value* result = llvm::PoisonValue::get(vt);
  for (unsigned i = 0; i < vt->getNumElements(); ++i) {
    llvm::Value* lane = b_.CreateCall(callee, {b_.CreateExtractElement(a, i)});
    result = b_.CreateInsertElement(result, lane, i);
  }
  return result;
}

llvm::Value* KernelEmitter::EmitMinMax(bool is_max, DType dtype, llvm::Value* a,
                                       llvm::Value* b) {
  if (IsFloat(dtype)) {
    // ONNX Min/Max propagate NaN: llvm.minimum/maximum, not minnum/maxnum.
    return EmitIntrinsic(is_max ? llvm::Intrinsic::maximum : llvm::Intrinsic::minimum, a, b);
  }
  if (dtype == DType::kBool) return is_max ? b_.CreateOr(a, b) : b_.CreateAnd(a, b);
  if (IsSigned(dtype)) {
    return EmitIntrinsic(is_max ? llvm::Intrinsic::smax : llvm::Intrinsic::smin, a, b);
  }
  return EmitIntrinsic(is_max ? llvm::Intrinsic::umax : llvm::Intrinsic::umin, a, b);
}

llvm::Value* KernelEmitter::EmitFloorDivMod(bool is_mod, const loop::ExprNode& e, llvm::Value* a,
                                            llvm::Value* b) {
  DType t = e.operands[0]->dtype;
  if (IsFloat(t)) {
    llvm::Value* q = EmitIntrinsic(llvm::Intrinsic::floor, b_.CreateFDiv(a, b));
    return is_mod ? b_.CreateFSub(a, b_.CreateFMul(q, b)) : q;
  }
  if (t == DType::kBool) return Fail("floor div/mod on bool", a->getType());
  bool nonneg = IsNonNegative(e.operands[0]) && IsNonNegative(e.operands[1]);
  const loop::Expr& divisor = e.operands[1];
  if (!IsSigned(t) || nonneg) {
    return EmitTotalDivision(divisor, false, a, b, [&](llvm::Value* x, llvm::Value* y) {
      return is_mod ? b_.CreateURem(x, y) : b_.CreateUDiv(x, y);
    });
  }
  return EmitTotalDivision(divisor, true, a, b, [&](llvm::Value* x, llvm::Value* y) {
    // Truncating division, then step toward -inf when the remainder's sign differs from y's.
    llvm::Value* q = b_.CreateSDiv(x, y);
    llvm::Value* r = b_.CreateSRem(x, y);
    llvm::Value* zero = llvm::Constant::getNullValue(x->getType());
    llvm::Value* adjust;
    if (divisor->kind == loop::ExprKind::kIntImm && divisor->int_value > 0) {
      adjust = b_.CreateICmpSLT(r, zero);
    } else {
      adjust = b_.CreateAnd(b_.CreateICmpNE(r, zero), b_.CreateICmpSLT(b_.CreateXor(r, y), zero));
    }
    if (is_mod) return b_.CreateSelect(adjust, b_.CreateAdd(r, y), r);
    return b_.CreateSelect(adjust, b_.CreateSub(q, llvm::ConstantInt::get(x->getType(), 1)), q);
  });
}

llvm::Value* KernelEmitter::EmitTotalDivision(
    const loop::Expr& divisor, bool is_signed, llvm::Value* a, llvm::Value* b,
    const std::function<llvm::Value*(llvm::Value*, llvm::Value*)>& op) {
  if (divisor->kind == loop::ExprKind::kIntImm && divisor->int_value != 0 &&
      !(is_signed && divisor->int_value == -1)) {
    return op(a, b);
  }
  llvm::Type* type = a->getType();
  llvm::Value* zero = llvm::Constant::getNullValue(type);
  llvm::Value* is_zero = b_.CreateICmpEQ(b, zero);
  llvm::Value* unsafe = is_zero;
  if (is_signed) {
    llvm::Value* min =
        llvm::ConstantInt::get(type, llvm::APInt::getSignedMinValue(type->getScalarSizeInBits()));
    llvm::Value* overflow = b_.CreateAnd(b_.CreateICmpEQ(a, min),
                                         b_.CreateICmpEQ(b, llvm::Constant::getAllOnesValue(type)));
    unsafe = b_.CreateOr(is_zero, overflow);
  }
  llvm::Value* safe = b_.CreateSelect(unsafe, llvm::ConstantInt::get(type, 1), b);
  return b_.CreateSelect(is_zero, zero, op(a, safe));
}

llvm::Value* KernelEmitter::EmitDot4U8S8(llvm::Value* acc, llvm::Value* a, llvm::Value* b) {
  Unify(a, b);
  if (acc != nullptr && (acc->getType()->isVectorTy() || a->getType()->isVectorTy())) {
    acc = Splat(acc);
    a = Splat(a);
    b = Splat(b);
  }
  auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(a->getType());
  const unsigned lanes = vt != nullptr ? vt->getNumElements() : 1;
  // The widest VPDPBUSD that divides the lanes; wider vectors (a matmul's 2-vector panel) go
  // through it in chunks.
  unsigned width = 0;
  std::optional<llvm::Intrinsic::ID> id;
  if (lanes % 16 == 0 && target_.HasInt8Dot4(512)) {
    width = 16;
    id = llvm::Intrinsic::x86_avx512_vpdpbusd_512;
  } else if (lanes % 8 == 0 && target_.HasInt8Dot4(256)) {
    width = 8;
    id = llvm::Intrinsic::x86_avx512_vpdpbusd_256;
  } else if (lanes % 4 == 0 && target_.HasInt8Dot4(128)) {
    width = 4;
    id = llvm::Intrinsic::x86_avx512_vpdpbusd_128;
  }
  // Chunks are joined pairwise, so their count must be a power of two.
  if (id && ((lanes / width) & (lanes / width - 1)) != 0) id.reset();
  if (id) {
    if (acc == nullptr) acc = llvm::Constant::getNullValue(a->getType());
    if (width == lanes) return b_.CreateIntrinsic(*id, {}, {acc, a, b});
    auto chunk = [&](llvm::Value* v, unsigned c) {
      llvm::SmallVector<int, 16> mask;
      for (unsigned l = 0; l < width; ++l) mask.push_back(static_cast<int>(c * width + l));
      return b_.CreateShuffleVector(v, mask);
    };
    std::vector<llvm::Value*> parts;
    for (unsigned c = 0; c < lanes / width; ++c) {
      parts.push_back(b_.CreateIntrinsic(*id, {}, {chunk(acc, c), chunk(a, c), chunk(b, c)}));
    }
    // Concatenate pairwise back to `lanes` lanes.
    while (parts.size() > 1) {
      std::vector<llvm::Value*> joined;
      for (size_t p = 0; p + 1 < parts.size(); p += 2) {
        const auto* vt = llvm::cast<llvm::FixedVectorType>(parts[p]->getType());
        llvm::SmallVector<int, 64> mask;
        for (unsigned l = 0; l < 2 * vt->getNumElements(); ++l) mask.push_back(static_cast<int>(l));
        joined.push_back(b_.CreateShuffleVector(parts[p], parts[p + 1], mask));
      }
      parts = std::move(joined);
    }
    return parts[0];
  }
  // Portable form: widen the bytes (a zero-, b sign-extended), multiply, add each word's four.
  auto* bytes = llvm::FixedVectorType::get(b_.getInt8Ty(), 4 * lanes);
  auto* wide = llvm::FixedVectorType::get(b_.getInt32Ty(), 4 * lanes);
  llvm::Value* p = b_.CreateMul(b_.CreateZExt(b_.CreateBitCast(a, bytes), wide),
                                b_.CreateSExt(b_.CreateBitCast(b, bytes), wide));
  llvm::Value* sum = nullptr;
  if (lanes == 1) {
    sum = b_.CreateAddReduce(p);
  } else {
    for (unsigned k = 0; k < 4; ++k) {
      llvm::SmallVector<int, 64> mask;
      for (unsigned l = 0; l < lanes; ++l) mask.push_back(static_cast<int>(4 * l + k));
      llvm::Value* part = b_.CreateShuffleVector(p, mask);
      sum = sum == nullptr ? part : b_.CreateAdd(sum, part);
    }
  }
  return acc != nullptr ? b_.CreateAdd(acc, sum) : sum;
}

}  // namespace kiln::codegen
