// Loop-IR analyses for vectorized codegen: linear coefficients, vectorization legality and
// non-negativity (which lets index division use unsigned instructions).
#include "compiler_core/codegen/llvm/vector_analysis.h"

#include <map>

#include "compiler_core/ir/loop/visitor.h"

namespace kiln::codegen {
namespace {

using loop::BinaryOp;
using loop::Expr;
using loop::ExprKind;
using loop::Stmt;
using loop::StmtKind;

bool IsIntType(DType t) { return !IsFloat(t) && t != DType::kBool; }

// One access to a buffer in a vectorized body.
struct Access {
  bool is_store;
  const std::vector<Expr>* indices;
};
using AccessMap = std::map<const loop::Buffer*, std::vector<Access>>;

void CollectLoads(const Expr& e, AccessMap& accesses) {
  loop::VisitExprs(e, [&](const Expr& x) {
    if (x->kind == ExprKind::kLoad) accesses[x->buffer.get()].push_back({false, &x->operands});
  });
}

// Returns false if the statement holds something a SIMD body cannot (loops, allocations,
// lane-dependent branches).
bool CollectAccesses(const Stmt& s, const loop::VarNode* var, AccessMap& accesses) {
  if (!s) return true;
  switch (s->kind) {
    case StmtKind::kAsyncCopy:
    case StmtKind::kAsyncWait:
      return false;
    case StmtKind::kMma:
    case StmtKind::kStore:
      for (const Expr& i : s->indices) CollectLoads(i, accesses);
      CollectLoads(s->value, accesses);
      accesses[s->buffer.get()].push_back({true, &s->indices});
      return true;
    case StmtKind::kBlock:
      for (const Stmt& c : s->stmts) {
        if (!CollectAccesses(c, var, accesses)) return false;
      }
      return true;
    case StmtKind::kIf:
      if (DependsOn(s->cond, var)) return false;
      CollectLoads(s->cond, accesses);
      return CollectAccesses(s->then_body, var, accesses) &&
             CollectAccesses(s->else_body, var, accesses);
    case StmtKind::kFor:
    case StmtKind::kAllocate:
      return false;
  }
  return false;
}

bool SameIndices(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!SameExpr(a[i], b[i])) return false;
  }
  return true;
}

// Several index patterns, still lane-private: one dimension carries the lane with the same
// index expression (affine in var, nonzero coefficient) in every access, and no other dimension
// depends on var. Lanes then touch disjoint elements, and each lane reads only elements that the
// same lane writes (e.g. a local tile[i, j, lane] written and read at many constant i, j).
bool LanePrivateByDimension(const std::vector<Access>& list, const loop::VarNode* var) {
  const std::vector<Expr>& first = *list[0].indices;
  size_t lane_dim = first.size();
  for (size_t d = 0; d < first.size(); ++d) {
    if (!DependsOn(first[d], var)) continue;
    if (lane_dim != first.size()) return false;  // two dimensions depend on the lane
    lane_dim = d;
  }
  if (lane_dim == first.size()) return false;
  std::optional<int64_t> c = LinearCoefficient(first[lane_dim], var);
  if (!c || *c == 0) return false;
  for (const Access& a : list) {
    const std::vector<Expr>& idx = *a.indices;
    if (idx.size() != first.size() || !SameExpr(idx[lane_dim], first[lane_dim])) return false;
    for (size_t d = 0; d < idx.size(); ++d) {
      if (d != lane_dim && DependsOn(idx[d], var)) return false;
    }
  }
  return true;
}

}  // namespace

bool DependsOn(const Expr& expr, const loop::VarNode* var) {
  return loop::AnyExpr(
      expr, [&](const Expr& e) { return e->kind == ExprKind::kVar && e->var.get() == var; });
}

std::optional<int64_t> LinearCoefficient(const Expr& expr, const loop::VarNode* var) {
  if (!DependsOn(expr, var)) return 0;
  switch (expr->kind) {
    case ExprKind::kVar:
      return 1;
    case ExprKind::kCast:
      // Widening or same-width integer casts keep the coefficient for in-range indices.
      if (IsIntType(expr->dtype) && IsIntType(expr->operands[0]->dtype) &&
          DTypeSize(expr->dtype) >= DTypeSize(expr->operands[0]->dtype)) {
        return LinearCoefficient(expr->operands[0], var);
      }
      return std::nullopt;
    case ExprKind::kBinary: {
      if (!IsIntType(expr->dtype)) return std::nullopt;
      const Expr& a = expr->operands[0];
      const Expr& b = expr->operands[1];
      switch (expr->binary_op) {
        case BinaryOp::kAdd:
        case BinaryOp::kSub: {
          auto ca = LinearCoefficient(a, var);
          auto cb = LinearCoefficient(b, var);
          if (!ca || !cb) return std::nullopt;
          return expr->binary_op == BinaryOp::kAdd ? *ca + *cb : *ca - *cb;
        }
        case BinaryOp::kMul: {
          if (a->kind == ExprKind::kIntImm) {
            auto cb = LinearCoefficient(b, var);
            if (cb) return a->int_value * *cb;
          } else if (b->kind == ExprKind::kIntImm) {
            auto ca = LinearCoefficient(a, var);
            if (ca) return b->int_value * *ca;
          }
          return std::nullopt;
        }
        default:
          return std::nullopt;
      }
    }
    case ExprKind::kUnary:
      if (expr->unary_op == loop::UnaryOp::kNeg && IsIntType(expr->dtype)) {
        auto c = LinearCoefficient(expr->operands[0], var);
        if (c) return -*c;
      }
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

std::optional<int64_t> FlatCoefficient(const loop::Buffer& buffer,
                                       const std::vector<Expr>& indices,
                                       const loop::VarNode* var) {
  int64_t coeff = 0;
  int64_t stride = 1;
  bool stride_known = true;  // false past a symbolic dim: the stride is a run-time value
  for (size_t d = indices.size(); d-- > 0;) {
    auto c = LinearCoefficient(indices[d], var);
    if (!c) return std::nullopt;
    if (*c != 0 && !stride_known) return std::nullopt;
    coeff += *c * stride;
    if (d < buffer.shape.size()) {
      if (buffer.shape[d] == loop::kSymbolicDim) {
        stride_known = false;
      } else {
        stride *= buffer.shape[d];
      }
    }
  }
  return coeff;
}

bool CanVectorizeBody(const Stmt& body, const loop::VarNode* var) {
  AccessMap accesses;
  if (!CollectAccesses(body, var, accesses)) return false;
  for (const auto& [buffer, list] : accesses) {
    bool written = false;
    for (const Access& a : list) written |= a.is_store;
    if (!written) continue;
    // Uniform location, written only: the last lane's value wins, as in serial order.
    bool all_uniform_stores = true;
    for (const Access& a : list) {
      auto c = FlatCoefficient(*buffer, *a.indices, var);
      if (!a.is_store || !c || *c != 0) all_uniform_stores = false;
    }
    if (all_uniform_stores) continue;
    // Lane-private: one index pattern, injective in the lane.
    auto c = FlatCoefficient(*buffer, *list[0].indices, var);
    if (!c || *c == 0) return false;
    bool same = true;
    for (const Access& a : list) same &= SameIndices(*a.indices, *list[0].indices);
    if (!same && !LanePrivateByDimension(list, var)) return false;
  }
  return true;
}

bool IsNonNegative(const Expr& expr) {
  switch (expr->kind) {
    case ExprKind::kIntImm:
      return expr->int_value >= 0;
    case ExprKind::kVar:
      return true;  // loop variables run over [0, extent)
    case ExprKind::kSelect:
      return IsNonNegative(expr->operands[1]) && IsNonNegative(expr->operands[2]);
    case ExprKind::kBinary: {
      const Expr& a = expr->operands[0];
      const Expr& b = expr->operands[1];
      bool b_pos_const = b->kind == ExprKind::kIntImm && b->int_value > 0;
      switch (expr->binary_op) {
        case BinaryOp::kAdd:
        case BinaryOp::kMul:
        case BinaryOp::kMin:
        case BinaryOp::kDiv:
          return IsNonNegative(a) && IsNonNegative(b);
        case BinaryOp::kMax:
          return IsNonNegative(a) || IsNonNegative(b);
        case BinaryOp::kFloorDiv:
          return b_pos_const && IsNonNegative(a);
        case BinaryOp::kFloorMod:
          return b_pos_const;
        default:
          return false;
      }
    }
    default:
      return false;
  }
}

namespace {

/// `e` as floor(x / c): (x, c), or (e, 1).
std::pair<loop::Expr, int64_t> AsFloorDiv(const loop::Expr& e) {
  if (e->kind == loop::ExprKind::kBinary && e->binary_op == loop::BinaryOp::kFloorDiv &&
      e->operands[1]->kind == loop::ExprKind::kIntImm && e->operands[1]->int_value > 0) {
    return {e->operands[0], e->operands[1]->int_value};
  }
  return {e, 1};
}

}  // namespace

loop::Expr FoldRowMajor(const std::vector<int64_t>& shape, const std::vector<loop::Expr>& indices) {
  bool folded = false;
  for (const loop::Expr& i : indices) {
    if (i->dtype != DType::kInt64) return nullptr;
  }
  loop::Expr acc = indices.empty() ? loop::IntImm(0) : indices[0];
  for (size_t d = 1; d < indices.size(); ++d) {
    // floor(x / (c * n)) * n + (floor(x / c) mod n) == floor(x / c) for every integer x.
    const loop::Expr& idx = indices[d];
    if (idx->kind == loop::ExprKind::kBinary && idx->binary_op == loop::BinaryOp::kFloorMod &&
        idx->operands[1]->kind == loop::ExprKind::kIntImm &&
        idx->operands[1]->int_value == shape[d]) {
      auto [x, c] = AsFloorDiv(idx->operands[0]);
      auto [y, c_n] = AsFloorDiv(acc);
      if (c_n == c * shape[d] && loop::SameExpr(x, y)) {
        acc = c == 1 ? x : loop::Binary(loop::BinaryOp::kFloorDiv, x, loop::IntImm(c));
        folded = true;
        continue;
      }
    }
    acc = acc * loop::IntImm(shape[d]) + idx;
  }
  return folded ? acc : nullptr;
}

}  // namespace kiln::codegen
