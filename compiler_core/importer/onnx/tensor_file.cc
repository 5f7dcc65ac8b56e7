// Reading and writing serialized onnx.TensorProto files.
#include "compiler_core/importer/onnx/tensor_file.h"

#include <cstdint>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "compiler_core/importer/onnx/tensor_proto.h"
#include "compiler_core/support/status_macros.h"
#include "onnx/onnx-data_pb.h"

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

absl::StatusOr<std::vector<NamedTensor>> ReadSequenceFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open sequence file '", path, "'"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  onnx::SequenceProto proto;
  if (!proto.ParseFromString(buffer.str()) ||
      (proto.elem_type() != onnx::SequenceProto::TENSOR && proto.tensor_values_size() > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "' is not a serialized onnx.SequenceProto of tensors"));
  }
  std::string dir =
      path.substr(0, path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/'));
  std::vector<NamedTensor> out;
  for (int k = 0; k < proto.tensor_values_size(); ++k) {
    KILN_ASSIGN_OR_RETURN(auto tensor, TensorFromProto(proto.tensor_values(k), dir));
    out.push_back({SequenceElementName(proto.name(), k), std::move(*tensor)});
  }
  return out;
}

absl::Status WriteSequenceFile(const std::string& path, const std::string& name,
                               const std::vector<const Tensor*>& elements) {
  onnx::SequenceProto proto;
  proto.set_name(name);
  proto.set_elem_type(onnx::SequenceProto::TENSOR);
  for (size_t k = 0; k < elements.size(); ++k) {
    *proto.add_tensor_values() =
        TensorToProto(SequenceElementName(name, static_cast<int64_t>(k)), *elements[k]);
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !proto.SerializeToOstream(&out)) {
    return absl::InternalError(absl::StrCat("cannot write sequence file '", path, "'"));
  }
  return absl::OkStatus();
}

std::string SequenceElementName(const std::string& name, int64_t k) {
  return absl::StrCat(name, "[", k, "]");
}

std::optional<std::pair<std::string, int64_t>> ParseSequenceElementName(const std::string& name) {
  if (name.size() < 4 || name.back() != ']') return std::nullopt;
  const size_t open = name.rfind('[');
  if (open == std::string::npos || open == 0 || open + 2 > name.size() - 1) return std::nullopt;
  int64_t k = 0;
  for (size_t i = open + 1; i + 1 < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || k > (INT64_MAX - 9) / 10) return std::nullopt;
    k = k * 10 + (name[i] - '0');
  }
  return std::make_pair(name.substr(0, open), k);
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
