// Element types of tensors in the graph IR and loop IR.
#ifndef KILN_COMPILER_CORE_IR_GRAPH_DTYPE_H_
#define KILN_COMPILER_CORE_IR_GRAPH_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln {

/// Element type. The printed names ("f32", "i64", ...) are used in both IRs' text forms.
enum class DType : uint8_t {
  kFloat32,
  kFloat64,
  kFloat16,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUInt8,
  kUInt16,
  kUInt32,
  kUInt64,
  kBool,
  /// bfloat16: a storage type (the upper half of an f32); only Cast converts to and from it.
  kBFloat16,
};

/// Short printed name: f32, f64, f16, i8, i16, i32, i64, u8, u16, u32, u64, bool, bf16.
const char* DTypeName(DType dtype);
/// Inverse of DTypeName; nullopt for an unknown name.
std::optional<DType> ParseDType(std::string_view name);
/// Size of one element in bytes (bool is 1 byte).
size_t DTypeSize(DType dtype);
bool IsFloat(DType dtype);
bool IsSigned(DType dtype);
/// ONNX TensorProto::DataType enum value for `dtype`.
int DTypeToOnnx(DType dtype);
/// DType for an ONNX TensorProto::DataType value; nullopt for types Kiln does not support
/// (string, complex).
std::optional<DType> DTypeFromOnnx(int onnx_type);

}  // namespace kiln

#endif  // KILN_COMPILER_CORE_IR_GRAPH_DTYPE_H_
