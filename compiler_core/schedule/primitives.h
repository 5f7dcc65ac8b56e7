// The schedule primitives as functions over a Func body. Each applies to every loop with the
// given name (a split tail duplicates the loops inside it under the same names) and fails with
// kFailedPrecondition, without side effects, when the step is illegal.
#ifndef KILN_COMPILER_CORE_SCHEDULE_PRIMITIVES_H_
#define KILN_COMPILER_CORE_SCHEDULE_PRIMITIVES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/ir/loop/loop_ir.h"

namespace kiln::schedule {

/// Loop x (extent n) → x.o (n / f) { x.i (f) } with x = x.o*f + x.i, followed by a tail loop
/// x.t (n % f) with x = (n/f)*f + x.t when f does not divide n. f >= n gives x.o of extent 1
/// and x.i of extent n. The new loops are serial and inherit is_reduction.
absl::StatusOr<loop::Stmt> SplitLoop(const loop::Stmt& body, const std::string& name,
                                     int64_t factor);
/// Permutes the named loops on every chain of perfectly nested loops that holds any of them so
/// that they appear in `order` (outermost first); other loops on the chain keep their
/// positions. A chain may hold only some of the names (a split tail copies the loops below the
/// split loop, not its pieces); at least one chain must hold all of them.
absl::StatusOr<loop::Stmt> ReorderLoops(const loop::Stmt& body,
                                        const std::vector<std::string>& order);
/// Directly nested loops outer { inner } → one loop "outer.inner" of the product extent.
absl::StatusOr<loop::Stmt> FuseLoops(const loop::Stmt& body, const std::string& outer,
                                     const std::string& inner);
/// Sets the loop kind after checking legality: kVectorized needs an innermost non-reduction
/// loop; kParallel a non-reduction loop with no parallel loop around or inside it;
/// kUnrolled any loop. The loop must be serial (or already of `kind`).
absl::StatusOr<loop::Stmt> AnnotateLoop(const loop::Stmt& body, const std::string& name,
                                        loop::ForKind kind);

}  // namespace kiln::schedule

#endif  // KILN_COMPILER_CORE_SCHEDULE_PRIMITIVES_H_
