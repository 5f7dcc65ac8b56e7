// CudaExecutable: runs an artifact compiled for a CUDA target ("cuda:sm_NN", code kind PTX) on
// one GPU through the driver API (cuda_driver.h): the PTX module JIT-compiled by the driver at
// load, one device arena per artifact (the static memory plan, as on the CPU), the weights
// uploaded once, one stream, host-device copies at the edges of each run, and the launches of a
// run captured once as a CUDA graph (replayed with one launch) when the driver has graphs.
#ifndef KILN_COMPILER_CORE_RUNTIME_CUDA_CUDA_EXECUTABLE_H_
#define KILN_COMPILER_CORE_RUNTIME_CUDA_CUDA_EXECUTABLE_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/runtime/artifact.h"
#include "compiler_core/runtime/cuda/cuda_driver.h"
#include "compiler_core/runtime/runner.h"

namespace kiln::runtime::cuda {

/// The SM a "cuda:sm_NN[a]:..." target key was compiled for (e.g. 90) and whether it is the
/// arch-specific variant (sm_90a, which runs on exactly that SM).
/// Errors: kInvalidArgument for a key that is not a CUDA target's.
absl::StatusOr<std::pair<int, bool>> TargetSm(const std::string& target_key);

/// Whether PTX for `target_sm` (arch-specific or not) runs on a device of `device_sm`: PTX is
/// JIT-compiled forward (sm_80 PTX runs on sm_80 and later), sm_90a only on sm_90.
/// Errors: kFailedPrecondition naming both.
absl::Status CheckSmCompatible(int target_sm, bool arch_specific, int device_sm,
                               const std::string& device_name);

/// A loaded CUDA artifact on one device. Run is not reentrant; use one per thread.
class CudaExecutable final : public ModelRunner {
 public:
  /// Loads `artifact` on device `ordinal`: checks the manifest (runtime/manifest_check.h), the
  /// SM, JIT-compiles the PTX (cuModuleLoadDataEx), resolves every launch's entry, uploads the
  /// weights, allocates the arena and persistent buffers and runs the init launches.
  /// Errors: kUnavailable without a driver; kNotFound for a missing device; kInvalidArgument
  /// for a host-code artifact or a malformed manifest; kFailedPrecondition for an artifact for
  /// another SM or PTX newer than the driver accepts (with the JIT log); kUnimplemented for what
  /// the CUDA runtime does not run yet (Loop calls, bounded dims).
  static absl::StatusOr<std::unique_ptr<CudaExecutable>> Load(Artifact artifact, int ordinal);
  ~CudaExecutable() override;

  const kiln::v1::Manifest& manifest() const override;
  /// Copies the inputs to the device, runs every launch in order on the stream, checks the
  /// kernels' run-time shapes, copies the outputs back. Errors: kInvalidArgument naming the
  /// input; a failed launch as kInternal with the driver's error.
  absl::StatusOr<std::vector<Tensor>> Run(const std::vector<const Tensor*>& inputs) override;
  /// Runs with the inputs already on the device `repeats` times after `warmup` runs; returns
  /// each timed run's device time in ms (CUDA events around the launches).
  absl::StatusOr<std::vector<double>> TimeRuns(const std::vector<const Tensor*>& inputs,
                                               int warmup, int repeats);
  /// The device this runs on.
  const CudaDeviceInfo& device() const;

 private:
  CudaExecutable();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::runtime::cuda

#endif  // KILN_COMPILER_CORE_RUNTIME_CUDA_CUDA_EXECUTABLE_H_
