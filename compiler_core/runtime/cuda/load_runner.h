// LoadRunner: loads an artifact on the device a user names ("cpu", "cuda:N"), the one place
// that picks the runtime.
#ifndef KILN_COMPILER_CORE_RUNTIME_CUDA_LOAD_RUNNER_H_
#define KILN_COMPILER_CORE_RUNTIME_CUDA_LOAD_RUNNER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "compiler_core/runtime/artifact.h"
#include "compiler_core/runtime/runner.h"

namespace kiln::runtime::cuda {

/// "cpu" (or ""): runtime::Executable with `threads` threads (0: one per core); "cuda:N":
/// CudaExecutable on GPU N. Errors: kInvalidArgument for another device spec or an artifact
/// for the other kind of device (naming --device / --target to use); the runtimes' own.
absl::StatusOr<std::unique_ptr<ModelRunner>> LoadRunner(Artifact artifact,
                                                        const std::string& device,
                                                        int threads = 0);

}  // namespace kiln::runtime::cuda

#endif  // KILN_COMPILER_CORE_RUNTIME_CUDA_LOAD_RUNNER_H_
