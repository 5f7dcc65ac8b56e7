// Building candidate batches (measure.h): the default schedule of a workload and candidate
// schedules compiled into one shared object with LLVM. Runs on compile workers; the measure
// worker that runs the batch needs no LLVM.
#ifndef KILN_COMPILER_CORE_TUNING_BUILD_H_
#define KILN_COMPILER_CORE_TUNING_BUILD_H_

#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/ir/loop/loop_ir.h"
#include "compiler_core/schedule/schedule.h"
#include "compiler_core/support/target.h"
#include "compiler_core/tuning/measure.h"

namespace kiln::tuning {

/// Builds the default schedule of `lowered` and each of `candidates` (schedules of
/// `lowered`) into one batch for `target`: a shared object for a CPU, PTX with each kernel's
/// launches for a GPU (CandidateBatch::ptx). A schedule that does not apply gets its error as
/// the candidate's status (kFailedPrecondition) and no symbol. Errors: code generation failures
/// (kInternal).
absl::StatusOr<CandidateBatch> BuildCandidates(const loop::Func& lowered,
                                               const std::vector<schedule::Schedule>& candidates,
                                               const Target& target);

/// The same for candidates some of which may already have failed (e.g. a schedule text that
/// did not parse): such a candidate keeps its error and gets no symbol. `after_schedule`
/// (optional) rewrites each scheduled candidate before code generation (never the reference):
/// fault injection for tests of the measure protocol.
absl::StatusOr<CandidateBatch> BuildCandidatesWith(
    const loop::Func& lowered, const std::vector<absl::StatusOr<schedule::Schedule>>& candidates,
    const Target& target, const std::function<void(loop::Func&)>& after_schedule = nullptr);

/// Builds already scheduled kernels: `reference` and `candidates` must have the params of one
/// workload (same count, dtypes and shapes; workspaces may differ). For tests and for
/// candidates that are not schedules of a template (e.g. another algorithm's lowering).
absl::StatusOr<CandidateBatch> BuildFuncs(const loop::Func& reference,
                                          const std::vector<loop::Func>& candidates,
                                          const Target& target);

}  // namespace kiln::tuning

#endif  // KILN_COMPILER_CORE_TUNING_BUILD_H_
