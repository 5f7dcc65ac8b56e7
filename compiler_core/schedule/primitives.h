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
/// kUnrolled any loop; a GPU binding (blockIdx.x .. threadIdx.z) a non-reduction loop not
/// inside a parallel loop, a loop bound the same, or (for a block index) a thread-bound loop,
/// with no loop inside bound the same. The loop must be serial (or already of `kind`).
absl::StatusOr<loop::Stmt> AnnotateLoop(const loop::Stmt& body, const std::string& name,
                                        loop::ForKind kind);

/// compute_at(nest, at): the top-level pointwise nest whose outermost loop is `nest` (serial
/// loops over exactly the shape of the buffer B it stores, storing B at its loop variables and
/// reading B only there) is computed inside the nest that holds loop `at`. Two cases:
/// - That nest stores B (a contraction; `nest` is its bias init or fused epilogue): every loop
///   named `at` must be a reduction with only spatial loops around it, over a perfect chain of
///   reductions, then spatial loops, then one store to B not indexed by the reductions. Each
///   becomes {copy; at} when the pointwise nest came first, else {at; copy}, the copy
///   iterating fresh copies of the block's spatial loops (same names, extents and kinds) with
///   B's indices taken from the contraction's store. The blocks must cover all of B.
/// - That nest reads B, a workspace computed before it (a zero-padded input): inside every
///   loop named `at`, a local buffer "<B>_at" holds the region of B one iteration reads
///   (per dimension: when every load's index is the same expression of the enclosing loops
///   plus an affine, non-negative combination of the loops inside, the range of that
///   combination; else the whole dimension), computed first by the producer over that region;
///   the loads read it instead, and B leaves func.workspaces. The region must be smaller than
///   B and at most 1 MiB; B may be read only under `at` and used by no other nest.
/// No nest in between may use B or write what the pointwise nest reads. On error
/// (kFailedPrecondition, saying why) `func` is unchanged.
absl::Status ComputeAt(loop::Func& func, const std::string& nest, const std::string& at);

}  // namespace kiln::schedule

#endif  // KILN_COMPILER_CORE_SCHEDULE_PRIMITIVES_H_
