// Tensor types (dtype + shape, each dim static or symbolic) and constant tensor data.
#ifndef KILN_COMPILER_CORE_IR_GRAPH_TENSOR_H_
#define KILN_COMPILER_CORE_IR_GRAPH_TENSOR_H_

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "compiler_core/ir/graph/dtype.h"
#include "compiler_core/ir/sym/expr.h"

namespace kiln {

/// The largest tensor Kiln compiles: 1 TiB (2^40 bytes), far beyond any real model, so that
/// sums of buffer sizes cannot overflow int64.
inline constexpr int64_t kMaxTensorBytes = int64_t{1} << 40;

/// The `shape` entry of a symbolic dim (its size is in `TensorType::sym_shape`).
inline constexpr int64_t kSymbolicDim = -1;

/// A dtype and a shape, row-major (the last dimension is contiguous). Rank 0 is a scalar with
/// one element; a zero dimension makes an empty tensor. A dim is static (its size in `shape`)
/// or symbolic: an expression over symbols fixed at run time (sym::Expr; "seq", "past + seq"),
/// with kSymbolicDim in `shape` and the expression in `sym_shape`. A static type has an empty
/// `sym_shape`, so code that handles only static shapes reads `shape` as before and checks
/// is_static() first.
struct TensorType {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  /// Empty for a static type; else one expression per dim (constants for the static dims), at
  /// least one of them not a constant. Build symbolic types with WithDims, which keeps this
  /// form.
  std::vector<sym::Expr> sym_shape;

  /// The type with `dims` (static when every dim is a constant, symbolic otherwise).
  static TensorType WithDims(DType dtype, const std::vector<sym::Expr>& dims);

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  /// Whether every dim is static.
  bool is_static() const { return sym_shape.empty(); }
  /// Dim `i` as an expression (a constant for a static dim).
  sym::Expr dim(int64_t i) const;
  /// Every dim as an expression.
  std::vector<sym::Expr> dims() const;
  /// The element count; -1 for a symbolic type (see NumElementsExpr).
  int64_t NumElements() const;
  int64_t NumBytes() const { return NumElements() * static_cast<int64_t>(DTypeSize(dtype)); }
  /// The element count as an expression (the product of the dims).
  sym::Expr NumElementsExpr() const;
  /// NumBytes(), or -1 when it exceeds kMaxTensorBytes or overflows int64 (a shape from
  /// `--input-shape` or a model can ask for any size; the importer refuses such values), or
  /// the type is symbolic.
  int64_t CheckedNumBytes() const;
  /// Printed form, e.g. "f32[1,3,224,224]", "f32[1,2,past + seq,32]"; a scalar prints as
  /// "f32[]".
  std::string ToString() const;
  bool operator==(const TensorType& other) const = default;
};

/// Row-major strides in elements for `shape`.
std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& shape);

/// Constant tensor data: a type and its elements as little-endian bytes, row-major.
/// Immutable once built; shared between graphs by shared_ptr<const Tensor>.
struct Tensor {
  TensorType type;
  std::vector<uint8_t> bytes;  // size == type.NumBytes()

  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(bytes.data());
  }
  template <typename T>
  T* mutable_data() {
    return reinterpret_cast<T*>(bytes.data());
  }
  /// Element `i` (flat index) converted to double / int64, whatever the dtype (f16 decoded).
  double GetAsDouble(int64_t i) const;
  int64_t GetAsInt64(int64_t i) const;

  /// A zero-filled tensor of `type`.
  static std::shared_ptr<Tensor> Zeros(const TensorType& type);
};

/// IEEE half <-> float conversions (round to nearest even).
float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);
/// bfloat16 <-> float: the upper 16 bits of the f32. FloatToBFloat16 truncates, as the ONNX
/// Cast conformance data does (opsets 13..17); a NaN stays a (quiet) NaN.
float BFloat16ToFloat(uint16_t b);
uint16_t FloatToBFloat16(float f);

}  // namespace kiln

#endif  // KILN_COMPILER_CORE_IR_GRAPH_TENSOR_H_
