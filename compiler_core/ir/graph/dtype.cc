// DType names, sizes and ONNX mapping.
#include "compiler_core/ir/graph/dtype.h"

namespace kiln {
namespace {

struct DTypeInfo {
  DType dtype;
  const char* name;
  size_t size;
  int onnx;  // onnx::TensorProto_DataType
};

// ONNX: FLOAT=1 UINT8=2 INT8=3 UINT16=4 INT16=5 INT32=6 INT64=7 BOOL=9 FLOAT16=10 DOUBLE=11
// UINT32=12 UINT64=13 BFLOAT16=16.
constexpr DTypeInfo kInfos[] = {
    {DType::kFloat32, "f32", 4, 1}, {DType::kFloat64, "f64", 8, 11}, {DType::kFloat16, "f16", 2, 10},
    {DType::kInt8, "i8", 1, 3},     {DType::kInt16, "i16", 2, 5},    {DType::kInt32, "i32", 4, 6},
    {DType::kInt64, "i64", 8, 7},   {DType::kUInt8, "u8", 1, 2},     {DType::kUInt16, "u16", 2, 4},
    {DType::kUInt32, "u32", 4, 12}, {DType::kUInt64, "u64", 8, 13},  {DType::kBool, "bool", 1, 9},
    {DType::kBFloat16, "bf16", 2, 16},
};

const DTypeInfo& Info(DType dtype) { return kInfos[static_cast<int>(dtype)]; }

}  // namespace

const char* DTypeName(DType dtype) { return Info(dtype).name; }
size_t DTypeSize(DType dtype) { return Info(dtype).size; }
int DTypeToOnnx(DType dtype) { return Info(dtype).onnx; }

std::optional<DType> ParseDType(std::string_view name) {
  for (const DTypeInfo& info : kInfos) {
    if (name == info.name) return info.dtype;
  }
  return std::nullopt;
}

std::optional<DType> DTypeFromOnnx(int onnx_type) {
  for (const DTypeInfo& info : kInfos) {
    if (info.onnx == onnx_type) return info.dtype;
  }
  return std::nullopt;
}

bool IsFloat(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64 || dtype == DType::kFloat16 ||
         dtype == DType::kBFloat16;
}

bool IsSigned(DType dtype) {
  switch (dtype) {
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
      return true;
    default:
      return IsFloat(dtype);
  }
}

}  // namespace kiln
