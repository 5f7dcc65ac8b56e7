// fuse: two directly nested loops become one loop over the product of their extents, the old
// variables recovered with floor division and modulo.
#include "absl/strings/str_cat.h"
#include "compiler_core/schedule/loop_utils.h"
#include "compiler_core/schedule/primitives.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::schedule {

using loop::BinaryOp;
using loop::Stmt;

absl::StatusOr<Stmt> FuseLoops(const Stmt& body, const std::string& outer,
                               const std::string& inner) {
  const std::string fused_name = absl::StrCat(outer, ".", inner);
  std::set<std::string> names;
  CollectLoopNames(body, names);
  if (names.count(fused_name) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("a loop named '", fused_name, "' already exists"));
  }
  auto fuse = [&](const Stmt& o, const std::vector<const loop::StmtNode*>&) -> absl::StatusOr<Stmt> {
    Stmt i = Unwrap(o->body);
    if (!i || i->kind != loop::StmtKind::kFor || i->loop_var->name != inner) {
      return absl::FailedPreconditionError(
          absl::StrCat("loop '", inner, "' is not the only statement in loop '", outer, "'"));
    }
    if (i->limit) {
      return absl::FailedPreconditionError(
          absl::StrCat("loop '", inner, "' has a run-time limit (the fused loop would not be a "
                       "rectangle)"));
    }
    loop::Var v = loop::MakeVar(fused_name);
    loop::Expr ei = loop::IntImm(i->extent);
    Stmt b = Substitute(i->body, o->loop_var.get(),
                        loop::Binary(BinaryOp::kFloorDiv, loop::VarRef(v), ei));
    b = Substitute(b, i->loop_var.get(), loop::Binary(BinaryOp::kFloorMod, loop::VarRef(v), ei));
    Stmt fused = loop::For(v, o->extent * i->extent, b, loop::ForKind::kSerial,
                           o->is_reduction || i->is_reduction);
    if (!o->limit) return fused;
    // The outer loop's run-time limit covers whole rows of the inner one.
    auto limited = std::make_shared<loop::StmtNode>(*fused);
    limited->limit = o->limit * ei;
    return Stmt(limited);
  };
  int count = 0;
  KILN_ASSIGN_OR_RETURN(
      Stmt result,
      RewriteLoops(body, [&](const std::string& n) { return n == outer; }, fuse, &count));
  if (count == 0) return absl::FailedPreconditionError(absl::StrCat("no loop named '", outer, "'"));
  return result;
}

}  // namespace kiln::schedule
