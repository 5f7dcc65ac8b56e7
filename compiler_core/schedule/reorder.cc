// reorder: permutes named loops along chains of perfectly nested loops. Loops are independent
// of one another (static extents from 0), so any permutation of a perfect nest is legal;
// reduction loops only change the order in which terms are accumulated. A split tail copies
// the loops inside the split loop but not the split loop's own pieces, so a chain may hold only
// some of the named loops: those are permuted into the requested relative order, and the step
// is legal as long as at least one chain holds all of them.
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/ir/loop/visitor.h"
#include "compiler_core/schedule/loop_utils.h"
#include "compiler_core/schedule/primitives.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::schedule {
namespace {

using loop::Stmt;
using loop::StmtKind;

class Reorderer {
 public:
  explicit Reorderer(const std::vector<std::string>& order)
      : order_(order), wanted_(order.begin(), order.end()) {}

  /// Number of chains that held every named loop.
  int complete() const { return complete_; }
  /// Number of named loops found on any chain.
  int found() const { return found_; }
  /// Why the permutation is illegal, or "".
  const std::string& error() const { return error_; }

  Stmt Rewrite(const Stmt& s) {
    if (!s) return s;
    switch (s->kind) {
      case StmtKind::kFor:
        if (wanted_.count(s->loop_var->name) != 0) return RewriteChain(s);
        return WithBodyIfChanged(s, Rewrite(s->body));
      case StmtKind::kAllocate:
        return WithBodyIfChanged(s, Rewrite(s->body));
      case StmtKind::kBlock: {
        std::vector<Stmt> stmts;
        bool changed = false;
        for (const Stmt& c : s->stmts) {
          stmts.push_back(Rewrite(c));
          changed |= stmts.back() != c;
        }
        return changed ? loop::Block(std::move(stmts)) : s;
      }
      case StmtKind::kIf: {
        Stmt t = Rewrite(s->then_body), e = Rewrite(s->else_body);
        if (t == s->then_body && e == s->else_body) return s;
        return loop::IfThenElse(s->cond, t, e);
      }
      case StmtKind::kMma:
      case StmtKind::kStore:
      case StmtKind::kAsyncCopy:
      case StmtKind::kAsyncWait:
        return s;
    }
    return s;
  }

 private:
  static Stmt WithBodyIfChanged(const Stmt& s, const Stmt& body) {
    return body == s->body ? s : WithBody(s, body);
  }

  /// Permutes the named loops on the perfect chain starting at `top` (a named loop), then
  /// continues below the chain.
  Stmt RewriteChain(const Stmt& top) {
    std::vector<Stmt> chain = PerfectChain(top);
    std::map<std::string, Stmt> by_name;
    for (const Stmt& s : chain) {
      if (wanted_.count(s->loop_var->name) != 0) by_name[s->loop_var->name] = s;
    }
    found_ += static_cast<int>(by_name.size());
    if (by_name.size() == order_.size()) ++complete_;
    std::vector<Stmt> in_order;  // the named loops present, in the requested order
    for (const std::string& name : order_) {
      if (auto it = by_name.find(name); it != by_name.end()) in_order.push_back(it->second);
    }
    std::vector<Stmt> permuted = chain;
    size_t next = 0;
    for (Stmt& s : permuted) {
      if (wanted_.count(s->loop_var->name) != 0) s = in_order[next++];
    }
    // A run-time limit may read only the variables of loops that stay above it.
    std::set<const loop::VarNode*> below;
    for (const Stmt& s : chain) below.insert(s->loop_var.get());
    for (const Stmt& s : permuted) {
      below.erase(s->loop_var.get());
      if (s->limit && loop::AnyExpr(s->limit, [&](const loop::Expr& e) {
            return e->kind == loop::ExprKind::kVar && below.count(e->var.get()) != 0;
          })) {
        if (error_.empty()) {
          error_ = absl::StrCat("loop '", s->loop_var->name,
                                "' has a run-time limit that reads a loop it would move above");
        }
      }
    }
    Stmt inner = Rewrite(chain.back()->body);
    for (auto it = permuted.rbegin(); it != permuted.rend(); ++it) inner = WithBody(*it, inner);
    return inner;
  }

  const std::vector<std::string>& order_;
  const std::set<std::string> wanted_;
  int complete_ = 0;
  int found_ = 0;
  std::string error_;
};

}  // namespace

absl::StatusOr<Stmt> ReorderLoops(const Stmt& body, const std::vector<std::string>& order) {
  std::set<std::string> wanted(order.begin(), order.end());
  if (wanted.size() != order.size() || order.empty()) {
    return absl::FailedPreconditionError("loop names must be distinct and non-empty");
  }
  Reorderer reorderer(order);
  Stmt result = reorderer.Rewrite(body);
  if (!reorderer.error().empty()) return absl::FailedPreconditionError(reorderer.error());
  if (reorderer.found() == 0) {
    return absl::FailedPreconditionError(absl::StrCat("no loop named '", order[0], "'"));
  }
  if (reorderer.complete() == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("loops (", absl::StrJoin(order, ", "), ") are not one perfect nest"));
  }
  return result;
}

}  // namespace kiln::schedule
