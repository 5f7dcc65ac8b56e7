// Loop-IR tree utilities shared by the schedule primitives: finding loops by name, rebuilding
// nodes with changed fields, variable substitution and perfect-nest chains.
#ifndef KILN_COMPILER_CORE_SCHEDULE_LOOP_UTILS_H_
#define KILN_COMPILER_CORE_SCHEDULE_LOOP_UTILS_H_

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/ir/loop/loop_ir.h"

namespace kiln::schedule {

/// Called on each matching loop with the loops enclosing it (outermost first); returns the
/// statement that replaces it.
using LoopRewrite = std::function<absl::StatusOr<loop::Stmt>(
    const loop::Stmt& loop, const std::vector<const loop::StmtNode*>& enclosing)>;

/// Replaces every For (pre-order, not descending into a replaced loop) whose name satisfies
/// `match` by `rewrite(loop)`. Sets `*count` to the number of loops rewritten.
absl::StatusOr<loop::Stmt> RewriteLoops(const loop::Stmt& root,
                                        const std::function<bool(const std::string&)>& match,
                                        const LoopRewrite& rewrite, int* count);

/// A copy of `s` (any kind) with its body replaced.
loop::Stmt WithBody(const loop::Stmt& s, loop::Stmt body);
/// A copy of For `s` with a new kind.
loop::Stmt WithKind(const loop::Stmt& s, loop::ForKind kind);

/// `e` / `s` with every reference to `var` replaced by `value`.
loop::Expr Substitute(const loop::Expr& e, const loop::VarNode* var, const loop::Expr& value);
loop::Stmt Substitute(const loop::Stmt& s, const loop::VarNode* var, const loop::Expr& value);
/// `s` with every loop rebound to a fresh variable of the same name (for duplicated bodies).
loop::Stmt FreshenVars(const loop::Stmt& s);

/// The single statement of a one-statement Block (recursively), or `s` itself.
loop::Stmt Unwrap(const loop::Stmt& s);
/// True if `s` contains a For.
bool ContainsFor(const loop::Stmt& s);
/// Whether some loop of `s` has a run-time limit (a symbolic extent).
bool HasLimitedLoop(const loop::Stmt& s);
/// True if `s` contains a For of kind `kind`.
bool ContainsForKind(const loop::Stmt& s, loop::ForKind kind);
/// Names of all loops in `s`.
void CollectLoopNames(const loop::Stmt& s, std::set<std::string>& names);
/// The chain of perfectly nested loops starting at `s` (empty if `s` is not a For).
std::vector<loop::Stmt> PerfectChain(const loop::Stmt& s);

}  // namespace kiln::schedule

#endif  // KILN_COMPILER_CORE_SCHEDULE_LOOP_UTILS_H_
