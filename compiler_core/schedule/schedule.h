// Schedules as data: a list of primitives (split, reorder, vectorize, unroll, parallel, fuse)
// over a loop IR Func's named loops. A schedule replays deterministically, so a tuning record can
// store it and a compile can re-apply it (TVM's trace).
#ifndef KILN_COMPILER_CORE_SCHEDULE_SCHEDULE_H_
#define KILN_COMPILER_CORE_SCHEDULE_SCHEDULE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler_core/ir/loop/loop_ir.h"
#include "compiler_core/support/target.h"

namespace kiln::schedule {

/// One schedule step.
struct Primitive {
  enum class Kind : uint8_t {
    kSplit,
    kReorder,
    kFuse,
    kVectorize,
    kUnroll,
    kParallel,
    kWinograd,    // rewrites a conv update nest (winograd.h); names no loop
    kComputeAt,   // moves a pointwise nest into a contraction's register block (primitives.h)
    kBind,        // binds a loop to a GPU block or thread index (primitives.h AnnotateLoop)
    kGpuTile,     // rewrites a contraction nest into a shared-memory tiled GEMM (gpu_tile.h)
    kGpuTileMma,  // the same on tensor cores: gpu_tile_mma(nest, tf32|f16|bf16) (gpu_tile.h)
  };
  Kind kind;
  /// kSplit/kVectorize/kUnroll/kParallel: one loop; kReorder: the new order, outermost first;
  /// kFuse: two directly nested loops, outer first; kWinograd: none; kComputeAt: the pointwise
  /// nest's outermost loop, then the reduction loop it moves to; kBind: the loop, then the index
  /// ("blockIdx.x" .. "threadIdx.z"), printed bind(i, blockIdx.x).
  std::vector<std::string> loops;
  int64_t factor = 0;  // kSplit: inner extent; kWinograd: the output tile m
  /// kGpuTile: tm, tn, bk (accumulators per thread along M and N, the K tile), printed
  /// gpu_tile(nest, tm, tn, bk). kGpuTileMma: none (the defaults) or block, stages, printed
  /// gpu_tile_mma(nest, fp16, 128, 2).
  std::vector<int64_t> factors = {};
};

/// The primitive's name as printed: "split", "reorder", "fuse", "vectorize", "unroll",
/// "parallel", "winograd", "compute_at", "bind", "gpu_tile", "gpu_tile_mma".
const char* PrimitiveKindName(Primitive::Kind kind);

/// An ordered list of primitives. Printed one per line, e.g. "split(ow, 16)".
struct Schedule {
  std::vector<Primitive> steps;
  std::string ToString() const;
};

/// Applies `schedule` to `func` in order. A step names loops; it applies to every loop with that
/// name (a split tail duplicates the loops below it under the same names). Semantics:
/// split(x, f): x → x.o { x.i } with x = x.o*f + x.i, plus a tail loop x.t of extent n % f
/// after x.o when f does not divide n (f >= n: x.o of extent 1, x.i of extent n);
/// reorder(a, b, ...): permutes the named loops on each chain of perfectly nested loops into
/// the given relative order; at least one chain must hold all of them (a split tail's copy
/// holds only some);
/// fuse(a, b): b must be the only statement of a, giving "a.b"; vectorize(x): innermost,
/// non-reduction; parallel(x): non-reduction, no parallel loop around or inside it;
/// winograd(m): the conv update nest becomes Winograd F(m×m, 3×3) nests (winograd.h), adding
/// workspaces; compute_at(nest, r): the pointwise nest starting with loop `nest` runs inside
/// the nest holding loop `r`: a bias init or epilogue in the contraction's block at every
/// reduction root `r`, or a workspace's producer (a padded input) per iteration of `r` into a
/// local buffer of the region it reads (ComputeAt, primitives.h). Errors: kFailedPrecondition naming the step and why
/// it is illegal (unknown loop, vectorizing a reduction or non-innermost loop, reordering loops
/// that are not one perfect nest, ...); `func` is unchanged on error. After the last step,
/// nests that depend only on const params move to func.init (HoistConstantNests, hoist.h), so
/// e.g. winograd's weight transform runs once at load time, not every call.
absl::Status ApplySchedule(const Schedule& schedule, loop::Func& func);

/// Nests with at least this many leaf statements (loop iterations) run their outer loop in
/// parallel under the default schedule; in a kernel of symbolic dims, codegen runs a parallel
/// loop inline when its work at the run's sizes is below it.
inline constexpr int64_t kParallelThreshold = 16384;

/// The default schedule for a lowered kernel on `target`: on a CPU, tiles and vectorizes the
/// innermost spatial loops to the target's f32 lanes, and parallelizes the outermost spatial
/// loop; on a GPU, binds each nest's leading spatial loops to blocks and threads
/// (PlanGpuSchedule, knobs.h).
Schedule DefaultSchedule(const loop::Func& func, const Target& target);

}  // namespace kiln::schedule

#endif  // KILN_COMPILER_CORE_SCHEDULE_SCHEDULE_H_
