// TensorType helpers and constant-tensor element access.
#include "compiler_core/ir/graph/tensor.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln {

TensorType TensorType::WithDims(DType dtype, const std::vector<sym::Expr>& dims) {
  TensorType type{dtype, {}};
  bool symbolic = false;
  for (const sym::Expr& d : dims) {
    std::optional<int64_t> c = d.AsConstant();
    type.shape.push_back(c ? *c : kSymbolicDim);
    symbolic |= !c.has_value();
  }
  if (symbolic) type.sym_shape = dims;
  return type;
}

sym::Expr TensorType::dim(int64_t i) const {
  return is_static() ? sym::Expr(shape[i]) : sym_shape[i];
}

std::vector<sym::Expr> TensorType::dims() const {
  if (!is_static()) return sym_shape;
  return std::vector<sym::Expr>(shape.begin(), shape.end());
}

int64_t TensorType::NumElements() const {
  if (!is_static()) return -1;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

sym::Expr TensorType::NumElementsExpr() const {
  if (is_static()) return NumElements();
  sym::Expr n(1);
  for (const sym::Expr& d : sym_shape) n = n * d;
  return n;
}

int64_t TensorType::CheckedNumBytes() const {
  if (!is_static()) return -1;
  int64_t n = static_cast<int64_t>(DTypeSize(dtype));
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && n > kMaxTensorBytes / d) return -1;
    n *= d;
  }
  return n;
}

std::string TensorType::ToString() const {
  if (is_static()) return absl::StrCat(DTypeName(dtype), "[", absl::StrJoin(shape, ","), "]");
  return absl::StrCat(DTypeName(dtype), "[",
                      absl::StrJoin(sym_shape, ",",
                                    [](std::string* out, const sym::Expr& d) {
                                      absl::StrAppend(out, d.ToString());
                                    }),
                      "]");
}

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * shape[i + 1];
  }
  return strides;
}

std::shared_ptr<Tensor> Tensor::Zeros(const TensorType& type) {
  auto t = std::make_shared<Tensor>();
  t->type = type;
  t->bytes.assign(static_cast<size_t>(type.NumBytes()), 0);
  return t;
}

namespace {
template <typename T>
T Read(const std::vector<uint8_t>& bytes, int64_t i) {
  T v;
  std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof(T));
  return v;
}
}  // namespace

double Tensor::GetAsDouble(int64_t i) const {
  switch (type.dtype) {
    case DType::kFloat32: return Read<float>(bytes, i);
    case DType::kFloat64: return Read<double>(bytes, i);
    case DType::kFloat16: return HalfToFloat(Read<uint16_t>(bytes, i));
    case DType::kBFloat16: return BFloat16ToFloat(Read<uint16_t>(bytes, i));
    case DType::kInt8: return Read<int8_t>(bytes, i);
    case DType::kInt16: return Read<int16_t>(bytes, i);
    case DType::kInt32: return Read<int32_t>(bytes, i);
    case DType::kInt64: return static_cast<double>(Read<int64_t>(bytes, i));
    case DType::kUInt8: return Read<uint8_t>(bytes, i);
    case DType::kUInt16: return Read<uint16_t>(bytes, i);
    case DType::kUInt32: return Read<uint32_t>(bytes, i);
    case DType::kUInt64: return static_cast<double>(Read<uint64_t>(bytes, i));
    case DType::kBool: return Read<uint8_t>(bytes, i) != 0;
  }
  return 0;
}

int64_t Tensor::GetAsInt64(int64_t i) const {
  switch (type.dtype) {
    case DType::kInt64: return Read<int64_t>(bytes, i);
    case DType::kUInt64: return static_cast<int64_t>(Read<uint64_t>(bytes, i));
    case DType::kInt32: return Read<int32_t>(bytes, i);
    case DType::kUInt32: return Read<uint32_t>(bytes, i);
    default: return static_cast<int64_t>(GetAsDouble(i));
  }
}

float BFloat16ToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t FloatToBFloat16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  return static_cast<uint16_t>(bits >> 16);
}

float HalfToFloat(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(mant), -24);
  } else if (exp == 31) {
    v = mant ? NAN : INFINITY;
  } else {
    v = std::ldexp(static_cast<float>(mant | 0x400), static_cast<int>(exp) - 25);
  }
  return sign ? -v : v;
}

uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t exp = (x >> 23) & 0xff;
  uint32_t mant = x & 0x7fffff;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00 | (mant ? 0x200 : 0));
  int32_t e = static_cast<int32_t>(exp) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  if (e <= 0) {
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) ++half;
  return static_cast<uint16_t>(sign | half);
}

}  // namespace kiln
