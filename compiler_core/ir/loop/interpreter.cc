// Tree-walking interpreter of the loop IR: scalars are carried as (double, int64) pairs tagged
// by the expression's dtype and rounded to that dtype after every operation.
#include "compiler_core/ir/loop/interpreter.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/ir/graph/tensor.h"
#include "compiler_core/ir/loop/printer.h"

namespace kiln::loop {
namespace {

/// One scalar value: `f` for float dtypes, `i` for integer and bool dtypes.
struct Scalar {
  double f = 0;
  int64_t i = 0;
};

bool IsUnsignedInt(DType t) {
  return t == DType::kUInt8 || t == DType::kUInt16 || t == DType::kUInt32 ||
         t == DType::kUInt64 || t == DType::kBool;
}

/// Wraps an integer to the width of `t` (two's complement), as LLVM integer ops do.
int64_t WrapInt(int64_t v, DType t) {
  switch (t) {
    case DType::kInt8: return static_cast<int8_t>(v);
    case DType::kInt16: return static_cast<int16_t>(v);
    case DType::kInt32: return static_cast<int32_t>(v);
    case DType::kUInt8: return static_cast<uint8_t>(v);
    case DType::kUInt16: return static_cast<uint16_t>(v);
    case DType::kUInt32: return static_cast<uint32_t>(v);
    case DType::kBool: return v != 0;
    default: return v;
  }
}

/// Rounds a float result to the precision of `t`.
double RoundFloat(double v, DType t) {
  if (t == DType::kFloat32) return static_cast<float>(v);
  if (t == DType::kFloat16) return HalfToFloat(FloatToHalf(static_cast<float>(v)));
  if (t == DType::kBFloat16) return BFloat16ToFloat(FloatToBFloat16(static_cast<float>(v)));
  return v;
}

Scalar Normalize(Scalar s, DType t) {
  if (IsFloat(t)) {
    s.f = RoundFloat(s.f, t);
  } else {
    s.i = WrapInt(s.i, t);
  }
  return s;
}

Scalar ReadElement(const uint8_t* p, DType t) {
  Scalar s;
  switch (t) {
    case DType::kFloat32: { float v; std::memcpy(&v, p, 4); s.f = v; break; }
    case DType::kFloat64: { double v; std::memcpy(&v, p, 8); s.f = v; break; }
    case DType::kFloat16: { uint16_t v; std::memcpy(&v, p, 2); s.f = HalfToFloat(v); break; }
    case DType::kBFloat16: { uint16_t v; std::memcpy(&v, p, 2); s.f = BFloat16ToFloat(v); break; }
    case DType::kInt8: s.i = *reinterpret_cast<const int8_t*>(p); break;
    case DType::kUInt8: s.i = *p; break;
    case DType::kBool: s.i = *p != 0; break;
    case DType::kInt16: { int16_t v; std::memcpy(&v, p, 2); s.i = v; break; }
    case DType::kUInt16: { uint16_t v; std::memcpy(&v, p, 2); s.i = v; break; }
    case DType::kInt32: { int32_t v; std::memcpy(&v, p, 4); s.i = v; break; }
    case DType::kUInt32: { uint32_t v; std::memcpy(&v, p, 4); s.i = v; break; }
    case DType::kInt64:
    case DType::kUInt64: std::memcpy(&s.i, p, 8); break;
  }
  return s;
}

void WriteElement(uint8_t* p, DType t, Scalar s) {
  switch (t) {
    case DType::kFloat32: { float v = static_cast<float>(s.f); std::memcpy(p, &v, 4); break; }
    case DType::kFloat64: std::memcpy(p, &s.f, 8); break;
    case DType::kFloat16: {
      uint16_t v = FloatToHalf(static_cast<float>(s.f));
      std::memcpy(p, &v, 2);
      break;
    }
    case DType::kBFloat16: {
      uint16_t v = FloatToBFloat16(static_cast<float>(s.f));
      std::memcpy(p, &v, 2);
      break;
    }
    case DType::kInt8: case DType::kUInt8: case DType::kBool: {
      uint8_t v = static_cast<uint8_t>(t == DType::kBool ? (s.i != 0) : s.i);
      *p = v;
      break;
    }
    case DType::kInt16: case DType::kUInt16: {
      uint16_t v = static_cast<uint16_t>(s.i);
      std::memcpy(p, &v, 2);
      break;
    }
    case DType::kInt32: case DType::kUInt32: {
      uint32_t v = static_cast<uint32_t>(s.i);
      std::memcpy(p, &v, 4);
      break;
    }
    case DType::kInt64: case DType::kUInt64: std::memcpy(p, &s.i, 8); break;
  }
}

int64_t FloorDivInt(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

class Interpreter {
 public:
  absl::Status Run(const Func& func, const std::vector<void*>& args) {
    size_t expected = func.params.size() + func.workspaces.size();
    if (args.size() != expected) {
      return absl::InvalidArgumentError(absl::StrCat("func '", func.name, "': got ", args.size(),
                                                     " arguments, expected ", expected));
    }
    size_t k = 0;
    for (const BufferRef& b : func.params) Bind(b, static_cast<uint8_t*>(args[k++]));
    for (const BufferRef& b : func.workspaces) Bind(b, static_cast<uint8_t*>(args[k++]));
    if (func.init) Exec(func.init);
    if (func.body && status_.ok()) Exec(func.body);
    return status_;
  }

 private:
  void Bind(const BufferRef& b, uint8_t* data) {
    by_ptr_[b.get()] = data;
    by_name_[b->name] = data;
  }

  void Fail(absl::Status s) {
    if (status_.ok()) status_ = std::move(s);
  }

  uint8_t* Address(const BufferRef& b, const std::vector<Expr>& indices) {
    auto it = by_ptr_.find(b.get());
    uint8_t* base = nullptr;
    if (it != by_ptr_.end()) {
      base = it->second;
    } else if (auto jt = by_name_.find(b->name); jt != by_name_.end()) {
      base = jt->second;
    } else {
      Fail(absl::InvalidArgumentError(absl::StrCat("buffer %", b->name, " is not bound")));
      return nullptr;
    }
    // A symbolic buffer's dims are evaluated at each access (they read only params).
    std::vector<int64_t> shape = b->shape;
    for (size_t d = 0; d < b->sym_shape.size() && d < shape.size(); ++d) {
      if (shape[d] == kSymbolicDim) shape[d] = Eval(b->sym_shape[d]).i;
    }
    int64_t flat = 0;
    std::vector<int64_t> idx;
    for (size_t d = 0; d < indices.size(); ++d) {
      int64_t v = Eval(indices[d]).i;
      idx.push_back(v);
      if (v < 0 || v >= shape[d]) {
        Fail(absl::OutOfRangeError(absl::StrCat("access %", b->name, "[", absl::StrJoin(idx, ", "),
                                                "] out of bounds of shape [",
                                                absl::StrJoin(shape, ","), "]")));
        return nullptr;
      }
      flat = flat * shape[d] + v;
    }
    if (!status_.ok()) return nullptr;
    return base + flat * static_cast<int64_t>(DTypeSize(b->dtype));
  }

  Scalar Eval(const Expr& e) {
    if (!status_.ok()) return {};
    switch (e->kind) {
      case ExprKind::kIntImm: return Scalar{0, e->int_value};
      case ExprKind::kFloatImm: return Scalar{RoundFloat(e->float_value, e->dtype), 0};
      case ExprKind::kVar: {
        auto it = vars_.find(e->var.get());
        if (it == vars_.end()) {
          Fail(absl::InvalidArgumentError(absl::StrCat("variable ", e->var->name, " is unbound")));
          return {};
        }
        return Scalar{0, it->second};
      }
      case ExprKind::kBinary: return EvalBinary(e);
      case ExprKind::kUnary: return EvalUnary(e);
      case ExprKind::kSelect: {
        Scalar c = Eval(e->operands[0]);
        Scalar t = Eval(e->operands[1]);  // both arms, as vector code evaluates them
        Scalar f = Eval(e->operands[2]);
        return c.i != 0 ? t : f;
      }
      case ExprKind::kLoad: {
        uint8_t* p = Address(e->buffer, e->operands);
        if (p == nullptr) return {};
        return ReadElement(p, e->buffer->dtype);
      }
      case ExprKind::kCast: return EvalCast(e);
    }
    return {};
  }

  Scalar EvalCast(const Expr& e) {
    DType from = e->operands[0]->dtype, to = e->dtype;
    Scalar a = Eval(e->operands[0]);
    Scalar r;
    if (to == DType::kBool) {
      r.i = IsFloat(from) ? (a.f != 0) : (a.i != 0);
    } else if (IsFloat(to)) {
      r.f = IsFloat(from) ? a.f
            : (from == DType::kUInt64) ? static_cast<double>(static_cast<uint64_t>(a.i))
                                       : static_cast<double>(a.i);
    } else if (IsFloat(from)) {
      r.i = std::isfinite(a.f) ? static_cast<int64_t>(a.f) : 0;  // truncation (fptosi)
    } else {
      r.i = a.i;
    }
    return Normalize(r, to);
  }

  Scalar EvalBinary(const Expr& e) {
    DType t = e->operands[0]->dtype;
    Scalar a = Eval(e->operands[0]), b = Eval(e->operands[1]);
    Scalar r;
    if (IsFloat(t)) {
      double x = a.f, y = b.f;
      switch (e->binary_op) {
        case BinaryOp::kAdd: r.f = x + y; break;
        case BinaryOp::kSub: r.f = x - y; break;
        case BinaryOp::kMul: r.f = x * y; break;
        case BinaryOp::kDiv: r.f = x / y; break;
        case BinaryOp::kFloorDiv: r.f = std::floor(x / y); break;
        case BinaryOp::kFloorMod: r.f = x - std::floor(x / y) * y; break;
        case BinaryOp::kMin: r.f = x < y ? x : y; break;
        case BinaryOp::kMax: r.f = x > y ? x : y; break;
        case BinaryOp::kPow: r.f = std::pow(x, y); break;
        case BinaryOp::kLt: r.i = x < y; break;
        case BinaryOp::kLe: r.i = x <= y; break;
        case BinaryOp::kGt: r.i = x > y; break;
        case BinaryOp::kGe: r.i = x >= y; break;
        case BinaryOp::kEq: r.i = x == y; break;
        case BinaryOp::kNe: r.i = x != y; break;
        case BinaryOp::kAnd: case BinaryOp::kOr: case BinaryOp::kShl: case BinaryOp::kShr:
        case BinaryOp::kDot4U8S8:
          Fail(absl::InvalidArgumentError("logical operator on float operands"));
          return {};
      }
      return Normalize(r, e->dtype);
    }
    int64_t x = a.i, y = b.i;
    bool u = IsUnsignedInt(t) && t == DType::kUInt64;
    auto lt = [&](int64_t p, int64_t q) {
      return u ? static_cast<uint64_t>(p) < static_cast<uint64_t>(q) : p < q;
    };
    auto ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
    switch (e->binary_op) {
      case BinaryOp::kAdd: r.i = static_cast<int64_t>(ux + uy); break;
      case BinaryOp::kSub: r.i = static_cast<int64_t>(ux - uy); break;
      case BinaryOp::kMul: r.i = static_cast<int64_t>(ux * uy); break;
      case BinaryOp::kDiv:
      case BinaryOp::kFloorDiv:
      case BinaryOp::kFloorMod:
        // Total, as the loop IR defines integer division: x / 0 = 0 (and its remainder 0);
        // MIN / -1 = MIN, remainder 0.
        if (y == 0) {
          r.i = 0;
        } else if (!u && y == -1) {
          r.i = e->binary_op == BinaryOp::kFloorMod ? 0 : static_cast<int64_t>(0 - ux);
        } else if (u) {
          r.i = static_cast<int64_t>(e->binary_op == BinaryOp::kFloorMod ? ux % uy : ux / uy);
        } else if (e->binary_op == BinaryOp::kDiv) {
          r.i = x / y;
        } else if (e->binary_op == BinaryOp::kFloorDiv) {
          r.i = FloorDivInt(x, y);
        } else {
          r.i = x - FloorDivInt(x, y) * y;
        }
        break;
      case BinaryOp::kMin: r.i = lt(x, y) ? x : y; break;
      case BinaryOp::kMax: r.i = lt(y, x) ? x : y; break;
      case BinaryOp::kPow:
        r.i = static_cast<int64_t>(std::pow(static_cast<double>(x), static_cast<double>(y)));
        break;
      case BinaryOp::kLt: r.i = lt(x, y); break;
      case BinaryOp::kLe: r.i = !lt(y, x); break;
      case BinaryOp::kGt: r.i = lt(y, x); break;
      case BinaryOp::kGe: r.i = !lt(x, y); break;
      case BinaryOp::kEq: r.i = x == y; break;
      case BinaryOp::kNe: r.i = x != y; break;
      case BinaryOp::kAnd: r.i = (x != 0) && (y != 0); break;
      case BinaryOp::kOr: r.i = (x != 0) || (y != 0); break;
      case BinaryOp::kShl: r.i = uy >= 64 ? 0 : static_cast<int64_t>(ux << uy); break;
      case BinaryOp::kShr:
        if (IsSigned(t)) {
          r.i = x >> std::min<uint64_t>(uy, 63);
        } else {
          // Unsigned values are held zero-extended, so a logical shift of the i64 is exact.
          r.i = uy >= 64 ? 0 : static_cast<int64_t>(ux >> uy);
        }
        break;
      case BinaryOp::kDot4U8S8:
        r.i = 0;
        for (int k = 0; k < 4; ++k) {
          r.i += static_cast<int64_t>(static_cast<uint8_t>(ux >> (8 * k))) *
                 static_cast<int8_t>(static_cast<uint8_t>(uy >> (8 * k)));
        }
        break;
    }
    return Normalize(r, e->dtype);
  }

  Scalar EvalUnary(const Expr& e) {
    Scalar a = Eval(e->operands[0]);
    Scalar r;
    if (IsFloat(e->dtype)) {
      double x = a.f;
      switch (e->unary_op) {
        case UnaryOp::kNeg: r.f = -x; break;
        case UnaryOp::kAbs: r.f = std::fabs(x); break;
        case UnaryOp::kExp: r.f = std::exp(x); break;
        case UnaryOp::kLog: r.f = std::log(x); break;
        case UnaryOp::kSqrt: r.f = std::sqrt(x); break;
        case UnaryOp::kTanh: r.f = std::tanh(x); break;
        case UnaryOp::kErf: r.f = std::erf(x); break;
        case UnaryOp::kFloor: r.f = std::floor(x); break;
        case UnaryOp::kCeil: r.f = std::ceil(x); break;
        case UnaryOp::kRound: r.f = std::nearbyint(x); break;  // half to even
        case UnaryOp::kSin: r.f = std::sin(x); break;
        case UnaryOp::kCos: r.f = std::cos(x); break;
        case UnaryOp::kTan: r.f = std::tan(x); break;
        case UnaryOp::kAsin: r.f = std::asin(x); break;
        case UnaryOp::kAcos: r.f = std::acos(x); break;
        case UnaryOp::kAtan: r.f = std::atan(x); break;
        case UnaryOp::kSinh: r.f = std::sinh(x); break;
        case UnaryOp::kCosh: r.f = std::cosh(x); break;
        case UnaryOp::kAsinh: r.f = std::asinh(x); break;
        case UnaryOp::kAcosh: r.f = std::acosh(x); break;
        case UnaryOp::kAtanh: r.f = std::atanh(x); break;
        case UnaryOp::kNot:
          Fail(absl::InvalidArgumentError("not on a float operand"));
          return {};
      }
      return Normalize(r, e->dtype);
    }
    int64_t x = a.i;
    switch (e->unary_op) {
      case UnaryOp::kNeg: r.i = static_cast<int64_t>(0 - static_cast<uint64_t>(x)); break;
      case UnaryOp::kAbs: r.i = x < 0 ? -x : x; break;
      case UnaryOp::kFloor: case UnaryOp::kCeil: case UnaryOp::kRound: r.i = x; break;
      case UnaryOp::kNot: r.i = x == 0; break;
      default:
        Fail(absl::InvalidArgumentError(
            absl::StrCat(UnaryOpName(e->unary_op), " on an integer operand")));
        return {};
    }
    return Normalize(r, e->dtype);
  }

  void Exec(const Stmt& s) {
    if (!status_.ok()) return;
    switch (s->kind) {
      case StmtKind::kFor: {
        int64_t& slot = vars_[s->loop_var.get()];
        int64_t saved = slot;
        const int64_t end = s->limit ? std::min(s->extent, Eval(s->limit).i) : s->extent;
        for (int64_t i = 0; i < end && status_.ok(); ++i) {
          vars_[s->loop_var.get()] = i;
          Exec(s->body);
        }
        vars_[s->loop_var.get()] = saved;
        return;
      }
      case StmtKind::kMma:
        return Exec(MmaAsLoops(*s));
      case StmtKind::kAsyncCopy:
        return Exec(AsyncCopyAsLoops(*s));
      case StmtKind::kAsyncWait:
        return;
      case StmtKind::kStore: {
        Scalar v = Eval(s->value);
        uint8_t* p = Address(s->buffer, s->indices);
        if (p != nullptr) WriteElement(p, s->buffer->dtype, v);
        return;
      }
      case StmtKind::kBlock:
        for (const Stmt& c : s->stmts) Exec(c);
        return;
      case StmtKind::kIf:
        if (Eval(s->cond).i != 0) {
          Exec(s->then_body);
        } else if (s->else_body) {
          Exec(s->else_body);
        }
        return;
      case StmtKind::kAllocate: {
        auto storage = std::make_unique<std::vector<uint8_t>>(
            static_cast<size_t>(s->buffer->NumBytes()), 0);
        Bind(s->buffer, storage->data());
        Exec(s->body);
        by_ptr_.erase(s->buffer.get());
        by_name_.erase(s->buffer->name);
        return;
      }
    }
  }

  absl::Status status_;
  std::unordered_map<const VarNode*, int64_t> vars_;
  std::unordered_map<const Buffer*, uint8_t*> by_ptr_;
  std::unordered_map<std::string, uint8_t*> by_name_;
};

}  // namespace

absl::Status InterpretFunc(const Func& func, const std::vector<void*>& args) {
  Interpreter interpreter;
  return interpreter.Run(func, args);
}

}  // namespace kiln::loop
