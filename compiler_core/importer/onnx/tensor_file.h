// Reading and writing serialized onnx.TensorProto files (.pb), the format of the ONNX test data
// sets and of `kiln run` inputs and outputs.
#ifndef KILN_COMPILER_CORE_IMPORTER_ONNX_TENSOR_FILE_H_
#define KILN_COMPILER_CORE_IMPORTER_ONNX_TENSOR_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "compiler_core/ir/graph/tensor.h"

namespace kiln::importer {

/// A tensor and the name stored with it.
struct NamedTensor {
  std::string name;
  Tensor tensor;
};

/// Reads a TensorProto file (raw_data or typed data fields).
/// Errors: kNotFound, kInvalidArgument (not a TensorProto, data size mismatch),
/// kUnimplemented (unsupported dtype).
absl::StatusOr<NamedTensor> ReadTensorFile(const std::string& path);
/// Writes `tensor` as a TensorProto with raw_data.
absl::Status WriteTensorFile(const std::string& path, const std::string& name,
                             const Tensor& tensor);

}  // namespace kiln::importer

#endif  // KILN_COMPILER_CORE_IMPORTER_ONNX_TENSOR_FILE_H_
