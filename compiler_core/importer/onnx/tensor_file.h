// Reading and writing serialized onnx.TensorProto files (.pb), the format of the ONNX test data
// sets and of `kiln run` inputs and outputs.
#ifndef KILN_COMPILER_CORE_IMPORTER_ONNX_TENSOR_FILE_H_
#define KILN_COMPILER_CORE_IMPORTER_ONNX_TENSOR_FILE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

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
/// Reads an onnx.SequenceProto file of tensors (the test data of a sequence-typed graph input
/// or output): its elements in order, each named "<sequence name>[k]". Errors: kNotFound,
/// kInvalidArgument (not a SequenceProto of tensors, or an element as for ReadTensorFile).
absl::StatusOr<std::vector<NamedTensor>> ReadSequenceFile(const std::string& path);
/// The name of element `k` of sequence `name` as a graph input or output: "name[k]".
std::string SequenceElementName(const std::string& name, int64_t k);
/// The sequence name and element index of a "name[k]" element name, if it is one.
std::optional<std::pair<std::string, int64_t>> ParseSequenceElementName(const std::string& name);
/// Writes `elements` as an onnx.SequenceProto of tensors named `name`.
absl::Status WriteSequenceFile(const std::string& path, const std::string& name,
                               const std::vector<const Tensor*>& elements);
/// Writes `tensor` as a TensorProto with raw_data.
absl::Status WriteTensorFile(const std::string& path, const std::string& name,
                             const Tensor& tensor);

}  // namespace kiln::importer

#endif  // KILN_COMPILER_CORE_IMPORTER_ONNX_TENSOR_FILE_H_
