// Overflow-checked tensor sizes and the size budget: what the importer uses to refuse a shape
// with a negative dim, an element count past int64 or more bytes than the compile allows.
#ifndef KILN_COMPILER_CORE_IR_GRAPH_TENSOR_SIZE_H_
#define KILN_COMPILER_CORE_IR_GRAPH_TENSOR_SIZE_H_

#include <cstdint>
#include <map>
#include <string>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler_core/ir/graph/tensor.h"

namespace kiln {

/// `a * b`, or nullopt when it overflows int64.
std::optional<int64_t> CheckedMul(int64_t a, int64_t b);
/// `a + b`, or nullopt when it overflows int64.
std::optional<int64_t> CheckedAdd(int64_t a, int64_t b);
/// `v` rounded toward zero, or nullopt when it is NaN, infinite or outside int64 (where a plain
/// cast is undefined).
std::optional<int64_t> CheckedToInt64(double v);
/// The product of `dims` (1 for none), or nullopt when it overflows int64. Dims are not
/// checked for sign: a negative dim gives a negative product.
std::optional<int64_t> CheckedProduct(const std::vector<int64_t>& dims);

/// OK when `type` is a tensor Kiln can hold: every dim non-negative, its element count and its
/// size in bytes within int64 and at most `max_bytes` bytes. Otherwise kInvalidArgument
/// starting with `what` (e.g. "node 'n3' (Expand): output 0") and saying why, e.g.
/// "... has type f32[4,-2]: dim 1 is negative", "... its element count overflows int64",
/// "... takes 8796093022208 bytes, more than the limit of 1099511627776 (max_tensor_bytes)".
/// A symbolic type is refused only for a dim negative for every symbol value; its size is
/// checked at run time, when the symbols have values.
absl::Status CheckTensorSize(const TensorType& type, int64_t max_bytes, absl::string_view what);

/// The size check of a symbolic `type` at one run's symbol values (`values`, from
/// sym::BindSymbols): OK with its size in bytes when every dim evaluates non-negative and the
/// tensor fits `max_bytes`. Errors: kInvalidArgument starting with `what` for a negative dim or
/// an evaluation that fails; kResourceExhausted when it would take more than `max_bytes`
/// ("... f32[1,seq,1024] at seq=70000 takes 286720000 bytes, more than the limit of ...
/// (max_tensor_bytes)"): a run asks for it, not the model.
absl::StatusOr<int64_t> CheckTensorSizeAt(const TensorType& type,
                                          const std::map<std::string, int64_t>& values,
                                          int64_t max_bytes, absl::string_view what);

}  // namespace kiln

#endif  // KILN_COMPILER_CORE_IR_GRAPH_TENSOR_SIZE_H_
