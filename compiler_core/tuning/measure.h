// Measuring candidates of one workload: a batch (the reference — the default schedule — and
// every candidate as kernels of one shared object, built by build.h) runs kernel by kernel in a
// child process on this machine: outputs first compared with the reference's on the same seeded
// random inputs (a fast but wrong candidate is never timed, let alone recorded), then warm-up
// runs and timed repeats until a minimum measured time. A crash or hang costs one candidate:
// the child dies (or is killed by its alarm), the caller goes on.
//
// The batch is data (code bytes and symbol names) so that a compile worker can build it and a
// measure worker attached to the device can run it; nothing in the batch or the measurement
// is CPU-specific (a GPU batch would carry PTX and run under the CUDA driver).
#ifndef KILN_COMPILER_CORE_TUNING_MEASURE_H_
#define KILN_COMPILER_CORE_TUNING_MEASURE_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler_core/ir/loop/loop_ir.h"
#include "compiler_core/runtime/cuda/cuda_driver.h"
#include "compiler_core/tuning/hardware.h"

namespace kiln::tuning {

/// One launch of a PTX kernel entry (a GPU batch): grid and block dimensions (x, y, z).
struct KernelLaunch {
  std::string entry;
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::array<int64_t, 3> block = {1, 1, 1};
};

/// One kernel of a batch.
struct BuiltKernel {
  absl::Status status;          // why it was not built (then symbol is "")
  std::string symbol;           // exported by the batch's code
  /// Run once (untimed) before the first call, with the same arguments: the kernel's
  /// load-time init (loop::Func::init); "" when it has none.
  std::string init_symbol;
  std::vector<int64_t> workspace_bytes;  // its workspaces, passed after the params
  /// A GPU batch's kernel: its launches (body, then init), in order; `symbol` names the func.
  std::vector<KernelLaunch> launches, init_launches;
};

/// Built code for one workload: the reference kernel and the candidates.
struct CandidateBatch {
  std::string code;             // ELF shared object (CPU) or PTX text (ptx: a GPU's)
  bool ptx = false;             // run on cuda:`device` through the CUDA driver
  BuiltKernel reference;        // the default schedule's kernel
  std::vector<BuiltKernel> candidates;
};

struct MeasureOptions {
  int num_threads = 1;         // threads of the pool the kernels' parallel loops run on
  int device = 0;              // a PTX batch's GPU: cuda:<device>
  int warmup_runs = 2;
  int min_repeats = 5;
  int max_repeats = 200;
  double min_measure_ms = 50;  // repeat until the timed runs add up to at least this
  double timeout_s = 10;       // per kernel, including the comparison and warm-up
  /// Outputs match when |got - want| <= atol * S + rtol * |want| (NaN matches NaN), S the
  /// largest |want| of that output (at least 1): a sum computed in another order (Winograd's
  /// transforms, a split reduction) is off by a rounding error that scales with its terms, not
  /// its result, so outputs near zero need the output's scale. A wrong candidate is off by
  /// about S. Integers and bools match exactly.
  double atol = 1e-4;
  double rtol = 1e-3;
  uint64_t input_seed = 1;     // float params get uniform [-1, 1] values from it; others 0
  /// Before every warm-up and timed run, read this many bytes of another buffer, so the
  /// kernel's data leaves the private caches (L1, L2) for the shared one, where a model's
  /// other kernels leave it between two calls. Timed kernels then see the cache state they see
  /// in a model rather than their own hot data, which favours schedules that would lose in the
  /// model (TVM's enable_cpu_cache_flush). 0: no flush. CacheFlushBytesFor picks the size.
  int64_t cache_flush_bytes = 0;
};

/// Twice the largest cache below the last level of `hardware` (CPU: 2 x L2), or twice its only
/// cache level (a GPU's L2); 0 when no cache size is known.
int64_t CacheFlushBytesFor(const HardwareInfo& hardware);

/// GPU `ordinal` as a measure worker for `target` (a cuda target) sees it: device "<name>,
/// <memory> MiB, driver <version>", compute_units its SMs, cache_bytes its L2 (measure_cuda.cc).
/// Queried in a child process, so the caller (which forks the measuring children) never
/// initializes the CUDA driver itself.
/// Errors: kUnavailable without a driver, kNotFound for a missing device, kFailedPrecondition
/// when the device's SM cannot run the target's PTX.
absl::StatusOr<HardwareInfo> DetectCudaHardware(const Target& target, int ordinal);

/// runtime::cuda::QueryCudaDevice run in a child process: the CUDA driver must not be
/// initialized in a process that later forks children which use it (each measuring child
/// makes its own context), so a measuring process asks through this. Errors: the query's.
absl::StatusOr<runtime::cuda::CudaDeviceInfo> QueryCudaDeviceInChild(int ordinal);

/// The outcome for one kernel.
struct Measurement {
  /// OK; kFailedPrecondition for a wrong output (naming the param and element) or a candidate
  /// that was not built; kDeadlineExceeded when it ran past the timeout; kAborted when the
  /// child died of a signal (a crash).
  absl::Status status;
  double median_ms = 0, p10_ms = 0, p90_ms = 0, min_ms = 0;
  int repeats = 0;
  double max_abs_error = 0;  // against the reference (0 for the reference itself)
};

/// What RunCandidates measured.
struct BatchMeasurement {
  Measurement reference;
  std::vector<Measurement> candidates;  // in batch order
};

/// Runs `batch` for workload `lowered` (whose params give the buffers' dtypes and shapes) on
/// this machine, one child process per kernel, the reference first. A PTX batch runs on GPU
/// `options.device` through the CUDA driver, each child with its own context, so a kernel that
/// faults (a sticky CUDA error) kills only its child; its times are CUDA-event times. Errors:
/// kFailedPrecondition when the reference itself fails (then nothing can be compared), kInternal
/// when no child can be started.
absl::StatusOr<BatchMeasurement> RunCandidates(const loop::Func& lowered,
                                               const CandidateBatch& batch,
                                               const MeasureOptions& options);

}  // namespace kiln::tuning

#endif  // KILN_COMPILER_CORE_TUNING_MEASURE_H_
