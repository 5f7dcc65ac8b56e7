// Conversions between onnx.TensorProto and Kiln tensors, including external-data tensors.
#ifndef KILN_COMPILER_CORE_IMPORTER_ONNX_TENSOR_PROTO_H_
#define KILN_COMPILER_CORE_IMPORTER_ONNX_TENSOR_PROTO_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "compiler_core/ir/graph/tensor.h"
#include "onnx/onnx_pb.h"

namespace kiln::importer {

/// Decodes `proto` (raw_data or the typed data fields; f16 from int32_data bit patterns).
/// External data (data_location EXTERNAL) is read from `base_dir`/location at offset/length;
/// locations that are absolute or escape `base_dir` are rejected.
/// The claimed shape is checked (CheckTensorSize against `max_bytes`) before anything is
/// allocated or read.
/// Errors: kInvalidArgument (a negative dim, a size past int64 or `max_bytes`, size mismatch,
/// bad external reference), kNotFound (missing external file), kUnimplemented (unsupported
/// dtype such as string).
absl::StatusOr<std::shared_ptr<Tensor>> TensorFromProto(const onnx::TensorProto& proto,
                                                        const std::string& base_dir,
                                                        int64_t max_bytes = kMaxTensorBytes);

/// Encodes `tensor` as a TensorProto with raw_data.
onnx::TensorProto TensorToProto(const std::string& name, const Tensor& tensor);

}  // namespace kiln::importer

#endif  // KILN_COMPILER_CORE_IMPORTER_ONNX_TENSOR_PROTO_H_
