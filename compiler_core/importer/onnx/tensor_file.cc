// Reading and writing serialized onnx.TensorProto files.
#include "compiler_core/importer/onnx/tensor_file.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "compiler_core/importer/onnx/tensor_proto.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::importer {

absl::StatusOr<NamedTensor> ReadTensorFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open tensor file '", path, "'"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string bytes = buffer.str();
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "' is not a serialized onnx.TensorProto"));
  }
  std::string dir = path.substr(0, path.find_last_of('/') == std::string::npos
                                       ? 0
                                       : path.find_last_of('/'));
  KILN_ASSIGN_OR_RETURN(auto tensor, TensorFromProto(proto, dir));
  return NamedTensor{proto.name(), std::move(*tensor)};
}

absl::Status WriteTensorFile(const std::string& path, const std::string& name,
                             const Tensor& tensor) {
  onnx::TensorProto proto = TensorToProto(name, tensor);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !proto.SerializeToOstream(&out)) {
    return absl::InternalError(absl::StrCat("cannot write tensor file '", path, "'"));
  }
  return absl::OkStatus();
}

}  // namespace kiln::importer
