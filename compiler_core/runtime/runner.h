// ModelRunner: what a caller needs of a loaded artifact, whatever runs it (the CPU Executable,
// the CUDA runtime's CudaExecutable).
#ifndef KILN_COMPILER_CORE_RUNTIME_RUNNER_H_
#define KILN_COMPILER_CORE_RUNTIME_RUNNER_H_

#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/ir/graph/tensor.h"
#include "kiln/v1/artifact.pb.h"

namespace kiln::runtime {

/// A loaded artifact that runs a model: host tensors in, host tensors out.
class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  virtual const kiln::v1::Manifest& manifest() const = 0;
  /// Runs the model on `inputs` (manifest order); returns the outputs in manifest order. A
  /// one-element tensor ([1], [1,1], ...) fed for an input declared as a scalar ([]) is taken as
  /// the scalar, as ONNX Runtime takes it (runtime::FedShape, manifest_check.h); any other shape
  /// must match the manifest's. Errors: kInvalidArgument for inputs that do not match the
  /// manifest; the runtime's own.
  virtual absl::StatusOr<std::vector<Tensor>> Run(const std::vector<const Tensor*>& inputs) = 0;
};

}  // namespace kiln::runtime

#endif  // KILN_COMPILER_CORE_RUNTIME_RUNNER_H_
