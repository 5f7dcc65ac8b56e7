// Overflow-checked size arithmetic and the tensor size check.
#include "compiler_core/ir/graph/tensor_size.h"

#include "absl/strings/str_cat.h"

namespace kiln {

std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

std::optional<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

std::optional<int64_t> CheckedToInt64(double v) {
  // 2^63 is exact as a double; every double below it (and >= -2^63) converts.
  constexpr double kLimit = 9223372036854775808.0;
  if (!(v >= -kLimit && v < kLimit)) return std::nullopt;
  return static_cast<int64_t>(v);
}

std::optional<int64_t> CheckedProduct(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    std::optional<int64_t> next = CheckedMul(n, d);
    if (!next) return std::nullopt;
    n = *next;
  }
  return n;
}

absl::Status CheckTensorSize(const TensorType& type, int64_t max_bytes, absl::string_view what) {
  const std::string head = absl::StrCat(what, " has type ", type.ToString(), ": ");
  if (!type.is_static()) {
    // Symbolic dims are checked when the run's symbol values are known (the shape program);
    // here only a dim that is negative for every symbol value, or a constant one.
    for (size_t i = 0; i < type.sym_shape.size(); ++i) {
      if (sym::Bounds(type.sym_shape[i]).hi < 0) {
        return absl::InvalidArgumentError(absl::StrCat(head, "dim ", i, " is negative"));
      }
    }
    return absl::OkStatus();
  }
  for (size_t i = 0; i < type.shape.size(); ++i) {
    if (type.shape[i] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(head, "dim ", i, " is negative"));
    }
  }
  std::optional<int64_t> elements = CheckedProduct(type.shape);
  if (!elements) {
    return absl::InvalidArgumentError(absl::StrCat(head, "its element count overflows int64"));
  }
  std::optional<int64_t> bytes = CheckedMul(*elements, static_cast<int64_t>(DTypeSize(type.dtype)));
  if (!bytes) {
    return absl::InvalidArgumentError(absl::StrCat(head, "its size in bytes overflows int64"));
  }
  if (*bytes > max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(head, "takes ", *bytes,
                                                   " bytes, more than the limit of ", max_bytes,
                                                   " (max_tensor_bytes)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> CheckTensorSizeAt(const TensorType& type,
                                          const std::map<std::string, int64_t>& values,
                                          int64_t max_bytes, absl::string_view what) {
  std::vector<int64_t> shape;
  for (size_t i = 0; i < type.shape.size(); ++i) {
    absl::StatusOr<int64_t> d = sym::Evaluate(type.dim(static_cast<int64_t>(i)), sym::ValuesOf(values));
    if (!d.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " has type ", type.ToString(), ": dim ", i, ": ", d.status().message()));
    }
    shape.push_back(*d);
  }
  TensorType at{type.dtype, shape};
  std::string symbols;
  for (const auto& [name, v] : values) {
    absl::StrAppend(&symbols, symbols.empty() ? "" : ", ", name, "=", v);
  }
  const std::string head = absl::StrCat(what, " has type ", type.ToString(),
                                        type.is_static() ? "" : absl::StrCat(" at ", symbols));
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(head, ": dim ", i, " is ", shape[i]));
    }
  }
  const int64_t bytes = at.CheckedNumBytes();
  if (bytes < 0 || bytes > max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        head, ": it takes ",
        bytes < 0 ? std::string("more than 2^40") : absl::StrCat(bytes), " bytes, more than the limit of ",
        max_bytes, " (max_tensor_bytes)"));
  }
  return bytes;
}

}  // namespace kiln
