// Pieces shared by compute_at's two cases (compute_at.cc: a pointwise nest over a
// contraction's output; compute_at_producer.cc: a producer of a workspace the nest reads).
#ifndef KILN_COMPILER_CORE_SCHEDULE_COMPUTE_AT_INTERNAL_H_
#define KILN_COMPILER_CORE_SCHEDULE_COMPUTE_AT_INTERNAL_H_

#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler_core/ir/loop/loop_ir.h"

namespace kiln::schedule::compute_at_internal {

/// kFailedPrecondition with `why`.
absl::Status Fail(const std::string& why);

/// True if `e` is a reference to `var`.
bool IsVarRef(const loop::Expr& e, const loop::VarNode* var);

/// Adds the buffers `s` loads from to `loads` and those it stores to to `stores`.
void CollectAccesses(const loop::Stmt& s, std::set<const loop::Buffer*>* loads,
                     std::set<const loop::Buffer*>* stores);

/// A pointwise nest: serial non-reduction loops over exactly the stored buffer's shape, one
/// store at the loop variables, every load of that buffer at the same indices.
struct Pointwise {
  std::vector<loop::Stmt> loops;  // outermost first, one per dimension of store->buffer
  loop::Stmt store;
};

/// `nest` as a Pointwise, or kFailedPrecondition saying why it is not one.
absl::StatusOr<Pointwise> MatchPointwise(const loop::Stmt& nest);

/// The producer case of ComputeAt: `nests[to]` reads the workspace `pw` stores; every loop
/// named `at` in it gets a local buffer of the region one iteration reads, computed first.
/// Returns the rewritten nest. Errors: kFailedPrecondition.
absl::StatusOr<loop::Stmt> PlaceProducer(const loop::Stmt& consumer, const Pointwise& pw,
                                         const std::string& at);

}  // namespace kiln::schedule::compute_at_internal

#endif  // KILN_COMPILER_CORE_SCHEDULE_COMPUTE_AT_INTERNAL_H_
