// compute_at's shared pieces (compute_at_internal.h).
#include "compiler_core/schedule/compute_at_internal.h"

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/loop/visitor.h"
#include "compiler_core/schedule/loop_utils.h"

namespace kiln::schedule::compute_at_internal {

using loop::Expr;
using loop::Stmt;
using loop::StmtKind;

absl::Status Fail(const std::string& why) { return absl::FailedPreconditionError(why); }

bool IsVarRef(const Expr& e, const loop::VarNode* var) {
  return e && e->kind == loop::ExprKind::kVar && e->var.get() == var;
}

void CollectAccesses(const Stmt& s, std::set<const loop::Buffer*>* loads,
                     std::set<const loop::Buffer*>* stores) {
  loop::VisitStmts(s, [&](const Stmt& st) {
    if (st->kind == StmtKind::kStore) stores->insert(st->buffer.get());
  });
  loop::VisitExprs(s, [&](const Expr& e) {
    if (e->kind == loop::ExprKind::kLoad) loads->insert(e->buffer.get());
  });
}

absl::StatusOr<Pointwise> MatchPointwise(const Stmt& nest) {
  Pointwise p;
  p.loops = PerfectChain(nest);
  if (p.loops.empty()) return Fail("it is not a loop nest");
  p.store = Unwrap(p.loops.back()->body);
  if (!p.store || p.store->kind != StmtKind::kStore) {
    return Fail("its innermost body is not a single store");
  }
  const loop::BufferRef& buf = p.store->buffer;
  if (p.loops.size() != buf->shape.size()) {
    return Fail(absl::StrCat("its loops are not one per dimension of %", buf->name));
  }
  for (size_t d = 0; d < p.loops.size(); ++d) {
    const Stmt& l = p.loops[d];
    if (l->for_kind != loop::ForKind::kSerial || l->is_reduction) {
      return Fail(absl::StrCat("loop '", l->loop_var->name, "' is scheduled or a reduction"));
    }
    // A symbolic dim: a loop limited to exactly that dim's expression.
    const bool covers = buf->shape[d] == loop::kSymbolicDim
                            ? l->limit != nullptr && SameExpr(l->limit, buf->sym_shape[d])
                            : l->extent == buf->shape[d] && l->limit == nullptr;
    if (!covers || !IsVarRef(p.store->indices[d], l->loop_var.get())) {
      return Fail(absl::StrCat("it does not store %", buf->name, " at its loop variables"));
    }
  }
  const bool same_indices = !loop::AnyExpr(p.store->value, [&](const Expr& e) {
    return e->kind == loop::ExprKind::kLoad && e->buffer == buf &&
           [&] {
             for (size_t d = 0; d < e->operands.size(); ++d) {
               if (!IsVarRef(e->operands[d], p.loops[d]->loop_var.get())) return true;
             }
             return false;
           }();
  });
  if (!same_indices) return Fail(absl::StrCat("it reads %", buf->name, " at other elements"));
  return p;
}

}  // namespace kiln::schedule::compute_at_internal
