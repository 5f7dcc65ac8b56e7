// LoadRunner: the device spec → the runtime that runs the artifact there.
#include "compiler_core/runtime/cuda/load_runner.h"

#include "compiler_core/runtime/cuda/cuda_driver.h"
#include "compiler_core/runtime/cuda/cuda_executable.h"
#include "compiler_core/runtime/executable.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::runtime::cuda {

absl::StatusOr<std::unique_ptr<ModelRunner>> LoadRunner(Artifact artifact,
                                                        const std::string& device, int threads) {
  if (device.empty() || device == "cpu") {
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<Executable> exe,
                          Executable::Load(std::move(artifact), threads));
    return std::unique_ptr<ModelRunner>(std::move(exe));
  }
  KILN_ASSIGN_OR_RETURN(int ordinal, ParseCudaDevice(device));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<CudaExecutable> exe,
                        CudaExecutable::Load(std::move(artifact), ordinal));
  return std::unique_ptr<ModelRunner>(std::move(exe));
}

}  // namespace kiln::runtime::cuda
