// The shape program of an artifact compiled with symbolic dims (Manifest.symbols;
// docs/symbolic-shapes.md): parsed once at load, run once per call before the kernels. It binds
// the symbols from the fed input shapes, sizes every output and dynamic buffer at those values
// (the tensor-size limit applies) and places the dynamic buffers, all on the host: no kernel
// launch for a scalar.
#ifndef KILN_COMPILER_CORE_RUNTIME_SYMBOLIC_SHAPES_H_
#define KILN_COMPILER_CORE_RUNTIME_SYMBOLIC_SHAPES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/ir/graph/tensor.h"
#include "compiler_core/ir/sym/bind.h"
#include "compiler_core/ir/sym/compiled.h"
#include "compiler_core/ir/sym/expr.h"
#include "compiler_core/runtime/memory_plan.h"
#include "kiln/v1/artifact.pb.h"

namespace kiln::runtime {

/// A loop over a symbolic dim runs to its run-time length within loop::kUnboundedExtent
/// (2^40) iterations, so a run whose symbols exceed it is refused.
inline constexpr int64_t kMaxSymbolValue = int64_t{1} << 40;

class SymbolicShapes {
 public:
  /// Parses `m`'s symbols, the dims of its inputs and outputs (TensorSpec.dims) and its dynamic
  /// buffers' sizes. A manifest without symbols gives an empty SymbolicShapes. Errors
  /// (kInvalidArgument): a symbol with a bad range or name, or declared twice; dims that do not
  /// match the spec's shape (one entry per dim, "" exactly where the dim is static) or do not
  /// parse over the symbols; a dynamic buffer whose size does not parse or whose live range is
  /// outside the kernel calls; a shape value whose elements do not parse or do not fill its
  /// shape, or whose dtype is not an integer or bool; symbols together with shape profiles or
  /// bounded dims.
  static absl::StatusOr<SymbolicShapes> FromManifest(const kiln::v1::Manifest& m);

  /// Whether the manifest has symbols.
  bool empty() const { return symbols_.empty(); }

  /// Runs the shape program for one call fed inputs of shapes `fed` (one per manifest input,
  /// as FedShape takes them): binds the symbols (sym::BindSymbols; kInvalidArgument naming the
  /// input, dim and symbol), then sizes each output and dynamic buffer. Errors:
  /// kResourceExhausted when one of them would take more than `max_tensor_bytes` bytes or a
  /// symbol exceeds kMaxSymbolValue; kInvalidArgument when a dim evaluates negative (an input
  /// shorter than a window, say). On success values(), output_shapes(), dynamic_offsets(),
  /// dynamic_bytes() and shape_value() describe this call.
  absl::Status Bind(const std::vector<std::vector<int64_t>>& fed, int64_t max_tensor_bytes);

  /// The symbols' values, in Manifest.symbols order (what Binding.DIMS points at).
  const std::vector<int64_t>& values() const { return values_; }
  /// Each output's shape at the bound values.
  const std::vector<std::vector<int64_t>>& output_shapes() const { return output_shapes_; }
  /// Each dynamic buffer's offset in bytes into the dynamic arena (64-byte aligned).
  const std::vector<int64_t>& dynamic_offsets() const { return plan_.offsets; }
  /// The bytes the dynamic arena needs for this call.
  int64_t dynamic_bytes() const { return plan_.arena_bytes; }
  /// Manifest.shape_values[i] at this call's values, in its dtype (8-byte aligned storage).
  void* shape_value(size_t i) { return shape_value_data_[i].data(); }

 private:
  /// The index of `e` in exprs_, compiled on first sight. Errors: what CompiledExpr::Compile
  /// refuses, prefixed with `what`.
  absl::StatusOr<size_t> Intern(const sym::Expr& e, const std::string& what);

  std::vector<sym::Symbol> symbols_;
  std::vector<sym::CompiledExpr> exprs_;                  // each distinct dim or size once
  std::map<std::string, size_t> expr_index_;              // canonical form -> exprs_ index
  std::vector<std::optional<int64_t>> expr_values_;       // per call; nullopt where Run failed
  std::vector<sym::DeclaredInput> inputs_;
  std::vector<TensorType> outputs_;              // symbolic where the manifest's are
  std::vector<std::vector<size_t>> output_dims_;  // per output, per dim: into exprs_
  std::vector<std::string> output_names_;
  std::vector<size_t> dynamic_sizes_;            // bytes: into exprs_
  std::vector<BufferRequest> dynamic_requests_;  // sizes filled per call
  struct ShapeValue {
    DType dtype;
    std::vector<size_t> elements;  // into exprs_
  };
  std::vector<ShapeValue> shape_values_;
  std::vector<std::vector<int64_t>> shape_value_data_;  // per shape value, int64 words
  std::vector<int64_t> values_;
  std::vector<std::vector<int64_t>> output_shapes_;
  MemoryPlan plan_;
};

}  // namespace kiln::runtime

#endif  // KILN_COMPILER_CORE_RUNTIME_SYMBOLIC_SHAPES_H_
