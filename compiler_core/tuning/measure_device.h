// The device side of one measurement child (measure.cc): where the kernel's buffers live, how it
// runs once, and how one timed run is measured. One implementation per device kind: the host
// CPU (measure.cc) and a CUDA GPU (measure_cuda.cc).
#ifndef KILN_COMPILER_CORE_TUNING_MEASURE_DEVICE_H_
#define KILN_COMPILER_CORE_TUNING_MEASURE_DEVICE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler_core/tuning/measure.h"

namespace kiln::tuning {

/// Runs one built kernel of a batch in the measuring child process.
class MeasureDevice {
 public:
  virtual ~MeasureDevice() = default;
  /// Takes the params' initial contents from `params` (host memory, one buffer per workload
  /// param, `param_bytes` each), allocates the workspaces and runs the kernel's init once.
  virtual absl::Status Prepare(const std::vector<uint8_t*>& params,
                               const std::vector<int64_t>& param_bytes) = 0;
  /// Runs the kernel once, to completion.
  virtual absl::Status Run() = 0;
  /// Makes the params' current contents visible in the host buffers given to Prepare.
  virtual absl::Status ReadBack() = 0;
  /// One timed run after evicting the kernel's data from the caches (options'
  /// cache_flush_bytes); its time in ms.
  virtual absl::StatusOr<double> TimedRun() = 0;
};

/// The CUDA device for a PTX batch's `kernel`, on GPU `options.device` (measure_cuda.cc).
/// Errors: kUnavailable without a driver; the driver's errors loading the PTX.
absl::StatusOr<std::unique_ptr<MeasureDevice>> MakeCudaMeasureDevice(const CandidateBatch& batch,
                                                                     const BuiltKernel& kernel,
                                                                     const MeasureOptions& options);

}  // namespace kiln::tuning

#endif  // KILN_COMPILER_CORE_TUNING_MEASURE_DEVICE_H_
