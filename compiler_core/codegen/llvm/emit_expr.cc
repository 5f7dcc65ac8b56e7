// Expression emission: immediates, variables, arithmetic, comparisons, selects and casts. Every
// operation works on scalars or <W x T> vectors (inside a vectorized loop); uniform operands
// stay scalar and are splatted only when combined with a lane-varying one.
#include "absl/strings/str_cat.h"
#include "compiler_core/codegen/llvm/emitter.h"

namespace kiln::codegen {

using loop::BinaryOp;
using loop::Expr;
using loop::ExprKind;

llvm::Type* KernelEmitter::RegType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return b_.getFloatTy();
    case DType::kFloat64: return b_.getDoubleTy();
    case DType::kFloat16: return b_.getHalfTy();
    case DType::kBFloat16: return b_.getBFloatTy();
    case DType::kBool: return b_.getInt1Ty();
    default: return b_.getIntNTy(static_cast<unsigned>(DTypeSize(dtype) * 8));
  }
}

llvm::Type* KernelEmitter::MemType(DType dtype) {
  return dtype == DType::kBool ? b_.getInt8Ty() : RegType(dtype);
}

llvm::Type* KernelEmitter::WithLanes(llvm::Type* scalar, llvm::Value* like) {
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(like->getType())) {
    return llvm::FixedVectorType::get(scalar, vt->getNumElements());
  }
  return scalar;
}

llvm::Value* KernelEmitter::Splat(llvm::Value* v) {
  if (vs_.lanes <= 1 || v->getType()->isVectorTy()) return v;
  return b_.CreateVectorSplat(vs_.lanes, v);
}

void KernelEmitter::Unify(llvm::Value*& a, llvm::Value*& b) {
  if (a->getType()->isVectorTy() || b->getType()->isVectorTy()) {
    a = Splat(a);
    b = Splat(b);
  }
}

llvm::Value* KernelEmitter::Fail(const std::string& message, llvm::Type* type) {
  if (status_.ok()) {
    status_ = absl::InvalidArgumentError(absl::StrCat("codegen of ", func_.name, ": ", message));
  }
  return llvm::PoisonValue::get(type ? type : b_.getInt64Ty());
}

llvm::Value* KernelEmitter::EmitExpr(const Expr& e) {
  switch (e->kind) {
    case ExprKind::kIntImm:
      if (IsFloat(e->dtype)) {
        return llvm::ConstantFP::get(RegType(e->dtype), static_cast<double>(e->int_value));
      }
      return llvm::ConstantInt::get(RegType(e->dtype), static_cast<uint64_t>(e->int_value),
                                    IsSigned(e->dtype));
    case ExprKind::kFloatImm:
      if (!IsFloat(e->dtype)) {
        return EmitCast(e->dtype, DType::kFloat64,
                        llvm::ConstantFP::get(b_.getDoubleTy(), e->float_value));
      }
      return llvm::ConstantFP::get(RegType(e->dtype), e->float_value);
    case ExprKind::kVar: {
      if (vs_.var != nullptr && e->var.get() == vs_.var) {
        std::vector<llvm::Constant*> lanes;
        for (int i = 0; i < vs_.lanes; ++i) lanes.push_back(b_.getInt64(i));
        llvm::Value* step = llvm::ConstantVector::get(lanes);
        if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(vs_.base); c && c->isZero()) return step;
        return b_.CreateAdd(Splat(vs_.base), step, "", /*HasNUW=*/true, /*HasNSW=*/true);
      }
      auto it = fs_.vars.find(e->var.get());
      if (it == fs_.vars.end()) {
        return Fail(absl::StrCat("variable ", e->var ? e->var->name : "<null>", " is not bound"));
      }
      return it->second;
    }
    case ExprKind::kBinary:
      return EmitBinary(*e);
    case ExprKind::kUnary:
      return EmitUnary(*e);
    case ExprKind::kSelect:
      return EmitSelect(*e);
    case ExprKind::kLoad:
      return EmitLoad(*e);
    case ExprKind::kCast:
      return EmitCast(e->dtype, e->operands[0]->dtype, EmitExpr(e->operands[0]));
  }
  return Fail("unknown expression kind");
}

llvm::Value* KernelEmitter::EmitBinary(const loop::ExprNode& e) {
  DType t = e.operands[0]->dtype;
  // acc + dot4_u8s8(a, b) is one accumulating dot product (VPDPBUSD).
  auto is_dot4 = [](const Expr& x) {
    return x->kind == ExprKind::kBinary && x->binary_op == BinaryOp::kDot4U8S8;
  };
  if (e.binary_op == BinaryOp::kAdd && t == DType::kInt32) {
    for (int d = 0; d < 2; ++d) {
      if (!is_dot4(e.operands[1 - d])) continue;
      llvm::Value* acc = EmitExpr(e.operands[d]);
      const loop::ExprNode& dot = *e.operands[1 - d];
      return EmitDot4U8S8(acc, EmitExpr(dot.operands[0]), EmitExpr(dot.operands[1]));
    }
  }
  llvm::Value* a = EmitExpr(e.operands[0]);
  llvm::Value* b = EmitExpr(e.operands[1]);
  Unify(a, b);
  bool f = IsFloat(t);
  bool s = IsSigned(t);
  // Index arithmetic never overflows i64 for in-bounds accesses; data arithmetic wraps.
  bool nsw = index_mode_ && t == DType::kInt64;
  llvm::FastMathFlags contract;
  contract.setAllowContract(true);
  auto with_contract = [&](llvm::Value* v) {
    if (auto* inst = llvm::dyn_cast<llvm::Instruction>(v)) inst->setFastMathFlags(contract);
    return v;
  };
  switch (e.binary_op) {
    case BinaryOp::kAdd:
      return f ? with_contract(b_.CreateFAdd(a, b)) : b_.CreateAdd(a, b, "", false, nsw);
    case BinaryOp::kSub:
      return f ? with_contract(b_.CreateFSub(a, b)) : b_.CreateSub(a, b, "", false, nsw);
    case BinaryOp::kMul:
      return f ? with_contract(b_.CreateFMul(a, b)) : b_.CreateMul(a, b, "", false, nsw);
    case BinaryOp::kDiv:
      if (f) return b_.CreateFDiv(a, b);
      return EmitTotalDivision(e.operands[1], s, a, b, [&](llvm::Value* x, llvm::Value* y) {
        return s ? b_.CreateSDiv(x, y) : b_.CreateUDiv(x, y);
      });
    case BinaryOp::kFloorDiv:
      return EmitFloorDivMod(false, e, a, b);
    case BinaryOp::kFloorMod:
      return EmitFloorDivMod(true, e, a, b);
    case BinaryOp::kMin:
      return EmitMinMax(false, t, a, b);
    case BinaryOp::kMax:
      return EmitMinMax(true, t, a, b);
    case BinaryOp::kPow:
      if (!f) return Fail("pow on a non-float dtype");
      if (UsesGpuMathLibrary()) return EmitGpuPow(t, a, b);
      return EmitIntrinsic(llvm::Intrinsic::pow, a, b);
    case BinaryOp::kAnd:
      return b_.CreateAnd(a, b);
    case BinaryOp::kOr:
      return b_.CreateOr(a, b);
    case BinaryOp::kShl:
      if (f) return Fail("shift on a float dtype");
      return b_.CreateShl(a, b);
    case BinaryOp::kShr:
      if (f) return Fail("shift on a float dtype");
      return s ? b_.CreateAShr(a, b) : b_.CreateLShr(a, b);
    case BinaryOp::kLt: case BinaryOp::kLe: case BinaryOp::kGt: case BinaryOp::kGe:
    case BinaryOp::kEq: case BinaryOp::kNe:
      return EmitCompare(e.binary_op, t, a, b);
    case BinaryOp::kDot4U8S8:
      if (t != DType::kInt32) return Fail("dot4_u8s8 on a non-i32 dtype");
      return EmitDot4U8S8(nullptr, a, b);
  }
  return Fail("unknown binary op");
}

llvm::Value* KernelEmitter::EmitCompare(BinaryOp op, DType dtype, llvm::Value* a,
                                        llvm::Value* b) {
  using P = llvm::CmpInst::Predicate;
  if (IsFloat(dtype)) {
    // Ordered comparisons (false on NaN) except !=, which is true on NaN, as in C.
    P p = op == BinaryOp::kLt   ? P::FCMP_OLT
          : op == BinaryOp::kLe ? P::FCMP_OLE
          : op == BinaryOp::kGt ? P::FCMP_OGT
          : op == BinaryOp::kGe ? P::FCMP_OGE
          : op == BinaryOp::kEq ? P::FCMP_OEQ
                                : P::FCMP_UNE;
    return b_.CreateFCmp(p, a, b);
  }
  bool s = IsSigned(dtype);
  P p = op == BinaryOp::kLt   ? (s ? P::ICMP_SLT : P::ICMP_ULT)
        : op == BinaryOp::kLe ? (s ? P::ICMP_SLE : P::ICMP_ULE)
        : op == BinaryOp::kGt ? (s ? P::ICMP_SGT : P::ICMP_UGT)
        : op == BinaryOp::kGe ? (s ? P::ICMP_SGE : P::ICMP_UGE)
        : op == BinaryOp::kEq ? P::ICMP_EQ
                              : P::ICMP_NE;
  return b_.CreateICmp(p, a, b);
}

llvm::Value* KernelEmitter::EmitSelect(const loop::ExprNode& e) {
  llvm::Value* c = EmitExpr(e.operands[0]);
  llvm::Value* t = EmitExpr(e.operands[1]);
  llvm::Value* f = EmitExpr(e.operands[2]);
  Unify(t, f);
  if (c->getType()->isVectorTy()) {
    t = Splat(t);
    f = Splat(f);
  }
  return b_.CreateSelect(c, t, f);
}

llvm::Value* KernelEmitter::EmitCast(DType to, DType from, llvm::Value* v) {
  if (to == from) return v;
  // bf16 through f32 with integer bit operations (no libcalls, truncating as FloatToBFloat16).
  if (from == DType::kBFloat16) {
    llvm::Value* bits = b_.CreateZExt(b_.CreateBitCast(v, WithLanes(b_.getInt16Ty(), v)),
                                      WithLanes(b_.getInt32Ty(), v));
    llvm::Value* wide = b_.CreateShl(bits, 16);
    return EmitCast(to, DType::kFloat32, b_.CreateBitCast(wide, WithLanes(b_.getFloatTy(), v)));
  }
  if (to == DType::kBFloat16) {
    llvm::Value* f = EmitCast(DType::kFloat32, from, v);
    llvm::Value* bits = b_.CreateBitCast(f, WithLanes(b_.getInt32Ty(), f));
    llvm::Value* high = b_.CreateLShr(bits, 16);
    llvm::Value* nan = b_.CreateFCmpUNO(f, f);
    high = b_.CreateSelect(nan, b_.CreateOr(high, llvm::ConstantInt::get(high->getType(), 0x40)),
                           high);
    llvm::Value* half = b_.CreateTrunc(high, WithLanes(b_.getInt16Ty(), f));
    return b_.CreateBitCast(half, WithLanes(b_.getBFloatTy(), f));
  }
  llvm::Type* dst = WithLanes(RegType(to), v);
  if (to == DType::kBool) {
    if (IsFloat(from)) return b_.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()));
    return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  }
  if (IsFloat(to) && IsFloat(from)) return b_.CreateFPCast(v, dst);
  if (IsFloat(to)) {
    return IsSigned(from) ? b_.CreateSIToFP(v, dst) : b_.CreateUIToFP(v, dst);  // bool: 0/1
  }
  if (IsFloat(from)) return IsSigned(to) ? b_.CreateFPToSI(v, dst) : b_.CreateFPToUI(v, dst);
  // Integer to integer (bool zero-extends to 0/1).
  return b_.CreateIntCast(v, dst, IsSigned(from) && from != DType::kBool);
}

}  // namespace kiln::codegen
