// Whether this host can run an artifact's code: the CPU features its target enabled, checked
// against the host's at load, so that a mismatch is a clear error instead of an illegal
// instruction in the middle of a run.
#ifndef KILN_COMPILER_CORE_RUNTIME_HOST_CHECK_H_
#define KILN_COMPILER_CORE_RUNTIME_HOST_CHECK_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace kiln::runtime {

/// Checks that a host with `host_features` (x86::HostFeatures(): LLVM feature name → present)
/// runs code generated for `target_key`, a CPU Target::Key()
/// ("cpu:<cpu>:<triple>:v<bits>:<features>"): its triple is x86-64 and every feature it enables
/// ("+name") that code generation can use (SIMD, AMX, bit-manipulation, crypto; not system
/// features such as sgx or uintr, which only intrinsics reach) and host detection knows is
/// present. A feature host detection does not report (one implied by x86-64) is not checked.
/// Errors: kFailedPrecondition naming the target CPU and every missing feature, e.g. "the artifact
/// was compiled for cpu:sapphirerapids, whose features amx-bf16, amx-int8, amx-tile this CPU lacks;
/// compile it for this CPU (--target host) or run it on a machine that has them"; kInvalidArgument
/// for a key that is not a CPU target's.
absl::Status CheckTargetRunsOnHost(absl::string_view target_key,
                                   const std::map<std::string, bool>& host_features);

/// CheckTargetRunsOnHost with this machine's features (read once).
absl::Status CheckTargetRunsHere(absl::string_view target_key);

}  // namespace kiln::runtime

#endif  // KILN_COMPILER_CORE_RUNTIME_HOST_CHECK_H_
