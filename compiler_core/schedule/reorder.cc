// reorder: permutes named loops along one chain of perfectly nested loops. Loops are
// independent of one another (static extents from 0), so any permutation of a perfect nest is
// legal; reduction loops only change the order in which terms are accumulated.
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/schedule/loop_utils.h"
#include "compiler_core/schedule/primitives.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::schedule {

using loop::Stmt;

absl::StatusOr<Stmt> ReorderLoops(const Stmt& body, const std::vector<std::string>& order) {
  std::set<std::string> wanted(order.begin(), order.end());
  if (wanted.size() != order.size() || order.empty()) {
    return absl::FailedPreconditionError("loop names must be distinct and non-empty");
  }
  const std::string list = absl::StrJoin(order, ", ");
  auto reorder = [&](const Stmt& top,
                     const std::vector<const loop::StmtNode*>&) -> absl::StatusOr<Stmt> {
    // Walk the perfect chain from `top` until every named loop is found.
    std::vector<Stmt> chain;
    size_t found = 0;
    for (Stmt cur = top;; cur = Unwrap(cur->body)) {
      if (!cur || cur->kind != loop::StmtKind::kFor) {
        return absl::FailedPreconditionError(
            absl::StrCat("loops (", list, ") are not one perfect nest"));
      }
      chain.push_back(cur);
      if (wanted.count(cur->loop_var->name) != 0 && ++found == order.size()) break;
    }
    std::map<std::string, Stmt> by_name;
    for (const Stmt& s : chain) by_name[s->loop_var->name] = s;
    std::vector<Stmt> permuted = chain;
    size_t next = 0;
    for (Stmt& s : permuted) {
      if (wanted.count(s->loop_var->name) != 0) s = by_name[order[next++]];
    }
    Stmt inner = chain.back()->body;
    for (auto it = permuted.rbegin(); it != permuted.rend(); ++it) inner = WithBody(*it, inner);
    return inner;
  };
  int count = 0;
  KILN_ASSIGN_OR_RETURN(
      Stmt result,
      RewriteLoops(body, [&](const std::string& n) { return wanted.count(n) != 0; }, reorder,
                   &count));
  if (count == 0) {
    return absl::FailedPreconditionError(absl::StrCat("no loop named '", order[0], "'"));
  }
  return result;
}

}  // namespace kiln::schedule
