// vectorize / unroll / parallel / bind: set a loop's ForKind after checking that the kind is
// legal for it (innermost non-reduction for SIMD, no nested or reduction parallelism, GPU
// indices bound once per nest, blocks outside threads).
#include "absl/strings/str_cat.h"
#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/schedule/loop_utils.h"
#include "compiler_core/schedule/primitives.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::schedule {

using loop::ForKind;
using loop::Stmt;

absl::StatusOr<Stmt> AnnotateLoop(const Stmt& body, const std::string& name, ForKind kind) {
  auto annotate = [&](const Stmt& s,
                      const std::vector<const loop::StmtNode*>& enclosing) -> absl::StatusOr<Stmt> {
    auto fail = [&](const std::string& why) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot make loop '", name, "' ", ForKindName(kind), ": ", why));
    };
    if (s->for_kind != ForKind::kSerial && s->for_kind != kind) {
      return fail(absl::StrCat("it is already ", ForKindName(s->for_kind)));
    }
    if (s->limit && kind != ForKind::kParallel) {
      return fail("it has a run-time limit (a symbolic extent: split it first)");
    }
    if (kind == ForKind::kVectorized) {
      if (s->is_reduction) return fail("it is a reduction loop");
      if (ContainsFor(s->body)) return fail("it is not innermost");
      if (s->extent < 1) return fail("its extent is empty");
    }
    if (kind == ForKind::kParallel) {
      if (s->is_reduction) return fail("it is a reduction loop");
      for (const loop::StmtNode* e : enclosing) {
        if (e->for_kind == ForKind::kParallel) {
          return fail(absl::StrCat("it is inside parallel loop '", e->loop_var->name, "'"));
        }
      }
      if (ContainsForKind(s->body, ForKind::kParallel)) return fail("it contains a parallel loop");
    }
    if (loop::IsThreadBound(kind)) {
      // The loop IR verifier's binding rules, checked before the rewrite.
      if (s->is_reduction) return fail("it is a reduction loop");
      for (const loop::StmtNode* e : enclosing) {
        if (e->for_kind == ForKind::kParallel || e->for_kind == kind ||
            (loop::IsBlockBound(kind) && loop::IsThreadBound(e->for_kind) &&
             !loop::IsBlockBound(e->for_kind))) {
          return fail(absl::StrCat("it is inside ", ForKindName(e->for_kind), " loop '",
                                   e->loop_var->name, "'"));
        }
      }
      if (ContainsForKind(s->body, kind)) return fail("a loop inside it is bound the same");
    }
    return WithKind(s, kind);
  };
  int count = 0;
  KILN_ASSIGN_OR_RETURN(
      Stmt result,
      RewriteLoops(body, [&](const std::string& n) { return n == name; }, annotate, &count));
  if (count == 0) return absl::FailedPreconditionError(absl::StrCat("no loop named '", name, "'"));
  return result;
}

}  // namespace kiln::schedule
