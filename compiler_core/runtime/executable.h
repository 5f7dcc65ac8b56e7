// Loads an artifact's code and runs it: binds inputs, outputs, weights and the arena to each
// kernel call in order, on a thread pool. No LLVM here.
#ifndef KILN_COMPILER_CORE_RUNTIME_EXECUTABLE_H_
#define KILN_COMPILER_CORE_RUNTIME_EXECUTABLE_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/ir/graph/tensor.h"
#include "compiler_core/runtime/artifact.h"
#include "compiler_core/runtime/runner.h"

namespace kiln::runtime {

/// A loaded artifact, ready to run. Run is not reentrant; use one Executable per thread.
class Executable final : public ModelRunner {
 public:
  /// Loads `artifact`'s shared object (from memory, via memfd), resolves every kernel symbol
  /// (of every shape profile) and runs the kernels' init entry points (KernelCall.init_symbol)
  /// once, which fill the persistent buffers from the weights. The profiles share the weights
  /// and one arena sized for the largest.
  /// `num_threads` <= 0 means the number of online cores. Errors: kInvalidArgument if the ABI
  /// version differs, a symbol is missing or the artifact holds PTX (a CUDA target's: run it
  /// with cuda::CudaExecutable); kFailedPrecondition if its target enables CPU features this
  /// host lacks (host_check.h, naming them); kInternal if the loader fails.
  static absl::StatusOr<std::unique_ptr<Executable>> Load(Artifact artifact, int num_threads = 0);
  ~Executable() override;

  const kiln::v1::Manifest& manifest() const override;

  /// The size limit of one tensor a run of an artifact with symbolic dims may allocate (an
  /// output or an intermediate, at the run's symbol values): past it, Run is
  /// kResourceExhausted naming the tensor. Default kMaxTensorBytes (1 TiB); kilnd's
  /// --max-tensor-bytes.
  void SetMaxTensorBytes(int64_t bytes);

  /// Runs the model. `inputs` must match the manifest's inputs in order, dtype and shape
  /// (kInvalidArgument naming the input otherwise); a one-element tensor ([1], [1,1], ...) fed
  /// for a scalar input is taken as the scalar (FedShape, manifest_check.h). An artifact with
  /// shape profiles (Manifest.profiles) runs the profile whose input shapes equal the inputs';
  /// shapes that match no profile are kInvalidArgument listing the compiled profiles. An
  /// artifact with symbolic dims (Manifest.symbols) takes every shape its inputs' dims allow:
  /// the symbols are bound from the input shapes (kInvalidArgument naming the input, dim and
  /// symbol when one is out of range or two inputs disagree; runtime/symbolic_shapes.h) and
  /// the outputs come back with the shapes their dims give. An
  /// artifact with bounded dims (Manifest.bound_symbols) takes every shape whose dims are within
  /// their ranges (kInvalidArgument naming the dim and range otherwise); its bounded inputs are
  /// copied into buffers padded to their bounds. Returns the outputs in manifest order, with the
  /// shapes of the profile that ran, or, with bounded dims, the shapes the inputs give.
  absl::StatusOr<std::vector<Tensor>> Run(const std::vector<const Tensor*>& inputs) override;

  /// Like Run, and also stores each kernel call's wall time in ms in `kernel_ms` (resized to the
  /// kernel count of the manifest or profile that ran, in its order). For profiling; `kernel_ms` may not be null.
  absl::StatusOr<std::vector<Tensor>> RunProfiled(const std::vector<const Tensor*>& inputs,
                                                  std::vector<double>* kernel_ms);
  /// RunProfiled that also stores when each kernel call began, in ms after the run began (for
  /// a timeline: runtime/chrome_trace.h), in `kernel_start_ms` (same size and order).
  absl::StatusOr<std::vector<Tensor>> RunProfiled(const std::vector<const Tensor*>& inputs,
                                                  std::vector<double>* kernel_ms,
                                                  std::vector<double>* kernel_start_ms);

 private:
  Executable();
  absl::StatusOr<std::vector<Tensor>> RunImpl(const std::vector<const Tensor*>& inputs,
                                              std::vector<double>* kernel_ms,
                                              std::vector<double>* kernel_start_ms);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::runtime

#endif  // KILN_COMPILER_CORE_RUNTIME_EXECUTABLE_H_
