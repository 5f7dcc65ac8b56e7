// split: loop partitioning into an outer/inner pair plus a separate tail loop, so that no
// guard is ever needed inside the inner (typically vectorized) loop.
#include "absl/strings/str_cat.h"
#include "compiler_core/schedule/loop_utils.h"
#include "compiler_core/schedule/primitives.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::schedule {

using loop::Stmt;

absl::StatusOr<Stmt> SplitLoop(const Stmt& body, const std::string& name, int64_t factor) {
  if (factor <= 0) {
    return absl::FailedPreconditionError(absl::StrCat("factor ", factor, " is not positive"));
  }
  std::set<std::string> names;
  CollectLoopNames(body, names);
  for (const char* suffix : {".o", ".i", ".t"}) {
    if (names.count(name + suffix) != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("a loop named '", name, suffix, "' already exists"));
    }
  }
  auto split = [&](const Stmt& s, const std::vector<const loop::StmtNode*>&) -> absl::StatusOr<Stmt> {
    const int64_t n = s->extent;
    const int64_t inner = factor >= n ? n : factor;
    const int64_t outer = factor >= n ? 1 : n / factor;
    const int64_t tail = factor >= n ? 0 : n % factor;
    loop::Var xo = loop::MakeVar(name + ".o"), xi = loop::MakeVar(name + ".i");
    loop::Expr x = loop::VarRef(xo) * loop::IntImm(inner) + loop::VarRef(xi);
    Stmt main = loop::For(
        xo, outer,
        loop::For(xi, inner, Substitute(s->body, s->loop_var.get(), x), loop::ForKind::kSerial,
                  s->is_reduction),
        loop::ForKind::kSerial, s->is_reduction);
    if (tail == 0) return main;
    loop::Var xt = loop::MakeVar(name + ".t");
    loop::Expr xt_value = loop::IntImm(outer * inner) + loop::VarRef(xt);
    Stmt rest = loop::For(xt, tail, FreshenVars(Substitute(s->body, s->loop_var.get(), xt_value)),
                          loop::ForKind::kSerial, s->is_reduction);
    return loop::Block({main, rest});
  };
  int count = 0;
  KILN_ASSIGN_OR_RETURN(
      Stmt result,
      RewriteLoops(body, [&](const std::string& n) { return n == name; }, split, &count));
  if (count == 0) return absl::FailedPreconditionError(absl::StrCat("no loop named '", name, "'"));
  return result;
}

}  // namespace kiln::schedule
