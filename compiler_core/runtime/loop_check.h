// Load-time checks of a Loop call (KernelCall.loop) that the runtime's loop relies on.
#ifndef KILN_COMPILER_CORE_RUNTIME_LOOP_CHECK_H_
#define KILN_COMPILER_CORE_RUNTIME_LOOP_CHECK_H_

#include <functional>

#include "absl/status/status.h"
#include "kiln/v1/artifact.pb.h"

namespace kiln::runtime {

/// Checks Loop call `call` of manifest `parent` against LoopCall's contract: the body's inputs
/// (i64 [] iteration_num, bool [] cond, the carried values, the outer values) and outputs (one
/// bool, the carried values of the same types, the scan outputs), the call's arguments (M i64
/// and cond bool of one element, then one per body input and per Loop output, each of the size
/// the body gives: a scan output scan_length times one iteration's), no init symbol, no profiles
/// or bound symbols in the body, and the body itself through `validate_body` (ValidateManifest).
/// Errors: kInvalidArgument naming the call and what is wrong.
absl::Status CheckLoopCall(
    const kiln::v1::Manifest& parent, const kiln::v1::KernelCall& call,
    const std::function<absl::Status(const kiln::v1::Manifest&)>& validate_body);

}  // namespace kiln::runtime

#endif  // KILN_COMPILER_CORE_RUNTIME_LOOP_CHECK_H_
