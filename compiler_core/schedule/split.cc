// split: loop partitioning into an outer/inner pair plus a separate tail loop, so that no
// guard is ever needed inside the inner (typically vectorized) loop.
#include "absl/strings/str_cat.h"
#include "compiler_core/schedule/loop_utils.h"
#include "compiler_core/schedule/primitives.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::schedule {

using loop::Stmt;

namespace {

// A loop with a run-time limit L (a symbolic dim; extent E its upper bound) →
// x.o (ceil(E / f), limit floordiv(L, f)) { x.i (f) } with x = x.o*f + x.i, then the tail
// x.t (f - 1, limit L - floordiv(L, f)*f) with x = floordiv(L, f)*f + x.t: the inner loop
// keeps a static extent (it can be vectorized) and the remainder runs once, after.
absl::StatusOr<Stmt> SplitLimited(const Stmt& s, const std::string& name, int64_t factor) {
  using loop::BinaryOp;
  const int64_t n = s->extent;
  if (factor == 1) return s;
  const int64_t outer = (n + factor - 1) / factor;
  loop::Var xo = loop::MakeVar(name + ".o"), xi = loop::MakeVar(name + ".i");
  loop::Expr x = loop::VarRef(xo) * loop::IntImm(factor) + loop::VarRef(xi);
  // The loop runs min(E, L) times; with no static bound, L alone.
  loop::Expr count = n >= loop::kUnboundedExtent ? s->limit : loop::Min(s->limit, loop::IntImm(n));
  loop::Expr full = loop::Binary(BinaryOp::kFloorDiv, count, loop::IntImm(factor));
  auto main = std::make_shared<loop::StmtNode>(*loop::For(
      xo, outer,
      loop::For(xi, factor, Substitute(s->body, s->loop_var.get(), x), loop::ForKind::kSerial,
                s->is_reduction),
      loop::ForKind::kSerial, s->is_reduction));
  main->limit = full;
  loop::Var xt = loop::MakeVar(name + ".t");
  loop::Expr base = full * loop::IntImm(factor);
  auto rest = std::make_shared<loop::StmtNode>(*loop::For(
      xt, factor - 1,
      FreshenVars(Substitute(s->body, s->loop_var.get(), base + loop::VarRef(xt))),
      loop::ForKind::kSerial, s->is_reduction));
  rest->limit = count - base;
  return loop::Block({Stmt(main), Stmt(rest)});
}

}  // namespace

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
    if (s->limit) return SplitLimited(s, name, factor);
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
