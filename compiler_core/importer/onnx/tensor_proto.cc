// TensorProto decoding (raw, typed fields, external data) and encoding (raw_data).
#include "compiler_core/importer/onnx/tensor_proto.h"

#include <cstring>
#include <fstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/tensor_size.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::importer {
namespace {

// Reads the bytes of an external-data tensor (at most the file's size).
absl::StatusOr<std::string> ReadExternal(const onnx::TensorProto& proto,
                                         const std::string& base_dir) {
  std::string location;
  int64_t offset = 0, length = -1;
  std::string name = proto.name();
  for (const auto& kv : proto.external_data()) {
    if (kv.key() == "location") location = kv.value();
    if (kv.key() != "offset" && kv.key() != "length") continue;
    int64_t value = 0;
    if (!absl::SimpleAtoi(kv.value(), &value) || value < 0) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", name, "': external data ",
                                                     kv.key(), " '", kv.value(),
                                                     "' is not a non-negative integer"));
    }
    (kv.key() == "offset" ? offset : length) = value;
  }
  if (location.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", name, "': external data has no location"));
  }
  if (base_dir.empty()) {
    // Bytes with no file behind them (an upload to kilnd, a worker's task) have no directory
    // to resolve against; the process's working directory is not one.
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor '", name, "': external data ('", location,
        "') is refused in a model sent as bytes; only a model file may refer to files beside "
        "it (the kiln CLI inlines them before uploading)"));
  }
  if (location[0] == '/' || location.find("..") != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor '", name, "': external data location '", location, "' escapes the model dir"));
  }
  std::string path = base_dir + "/" + location;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("tensor '", name, "': cannot open external data file '", path, "'"));
  }
  in.seekg(0, std::ios::end);
  int64_t size = static_cast<int64_t>(in.tellg());
  if (offset < 0 || offset > size) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", name, "': external data offset ",
                                                   offset, " is past the end of '", path, "'"));
  }
  if (length < 0) length = size - offset;
  if (length > size - offset) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", name, "': external data of ",
                                                   length, " bytes at offset ", offset,
                                                   " exceeds file '", path, "'"));
  }
  std::string bytes(static_cast<size_t>(length), '\0');
  in.seekg(offset);
  in.read(bytes.data(), length);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read '", path, "'"));
  return bytes;
}

template <typename Dst, typename Field>
void CopyField(const Field& field, Tensor& t) {
  for (int i = 0; i < field.size(); ++i) t.mutable_data<Dst>()[i] = static_cast<Dst>(field[i]);
}

}  // namespace

absl::StatusOr<std::shared_ptr<Tensor>> TensorFromProto(const onnx::TensorProto& proto,
                                                        const std::string& base_dir,
                                                        int64_t max_bytes) {
  const std::string& name = proto.name();
  std::optional<DType> dtype = DTypeFromOnnx(proto.data_type());
  if (!dtype) {
    return absl::UnimplementedError(absl::StrCat("tensor '", name, "': unsupported data type ",
                                                 proto.data_type()));
  }
  TensorType type{*dtype, {proto.dims().begin(), proto.dims().end()}};
  // Sizes are checked before anything is allocated: a header may claim any shape.
  KILN_RETURN_IF_ERROR(CheckTensorSize(type, max_bytes, absl::StrCat("tensor '", name, "'")));
  const int64_t n = type.NumElements();
  const size_t nbytes = static_cast<size_t>(type.NumBytes());
  auto size_error = [&](int64_t got) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", name, "' of type ",
                                                   type.ToString(), " has ", got,
                                                   " data values, expected ", n));
  };
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    KILN_ASSIGN_OR_RETURN(std::string bytes, ReadExternal(proto, base_dir));
    if (bytes.size() != nbytes) return size_error(bytes.size() / DTypeSize(*dtype));
    auto t = Tensor::Zeros(type);
    if (nbytes > 0) std::memcpy(t->bytes.data(), bytes.data(), nbytes);  // empty: data() null
    return t;
  }
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != nbytes) {
      return size_error(proto.raw_data().size() / DTypeSize(*dtype));
    }
    auto t = Tensor::Zeros(type);
    if (nbytes > 0) std::memcpy(t->bytes.data(), proto.raw_data().data(), nbytes);
    return t;
  }
  const int64_t values = *dtype == DType::kFloat32   ? proto.float_data_size()
                         : *dtype == DType::kFloat64 ? proto.double_data_size()
                         : *dtype == DType::kInt64   ? proto.int64_data_size()
                         : *dtype == DType::kUInt32 || *dtype == DType::kUInt64
                             ? proto.uint64_data_size()
                             : proto.int32_data_size();
  if (values != n) return size_error(values);
  auto t = Tensor::Zeros(type);
  switch (*dtype) {
    case DType::kFloat32:
      CopyField<float>(proto.float_data(), *t);
      break;
    case DType::kFloat64:
      CopyField<double>(proto.double_data(), *t);
      break;
    case DType::kInt64:
      CopyField<int64_t>(proto.int64_data(), *t);
      break;
    case DType::kUInt32:
    case DType::kUInt64:
      if (*dtype == DType::kUInt32) {
        CopyField<uint32_t>(proto.uint64_data(), *t);
      } else {
        CopyField<uint64_t>(proto.uint64_data(), *t);
      }
      break;
    default:  // int32_data carries i32, i16, i8, u8, u16, bool and f16/bf16 bit patterns
      switch (*dtype) {
        case DType::kInt32: CopyField<int32_t>(proto.int32_data(), *t); break;
        case DType::kInt16: CopyField<int16_t>(proto.int32_data(), *t); break;
        case DType::kInt8: CopyField<int8_t>(proto.int32_data(), *t); break;
        case DType::kUInt8: CopyField<uint8_t>(proto.int32_data(), *t); break;
        case DType::kUInt16:
        case DType::kFloat16:
        case DType::kBFloat16: CopyField<uint16_t>(proto.int32_data(), *t); break;
        case DType::kBool:
          for (int64_t i = 0; i < n; ++i) t->mutable_data<uint8_t>()[i] = proto.int32_data(i) != 0;
          break;
        default: break;
      }
  }
  return t;
}

onnx::TensorProto TensorToProto(const std::string& name, const Tensor& tensor) {
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(DTypeToOnnx(tensor.type.dtype));
  for (int64_t d : tensor.type.shape) proto.add_dims(d);
  proto.set_raw_data(std::string(reinterpret_cast<const char*>(tensor.bytes.data()),
                                 tensor.bytes.size()));
  return proto;
}

}  // namespace kiln::importer
