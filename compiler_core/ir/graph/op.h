// Operator kinds and the static facts each operator declares (name, arity, fusion class),
// all derived from ops.def.
#ifndef KILN_COMPILER_CORE_IR_GRAPH_OP_H_
#define KILN_COMPILER_CORE_IR_GRAPH_OP_H_

#include <optional>
#include <string_view>

namespace kiln::graph {

enum class OpKind : uint16_t {
#define KILN_OP(kind, name, fusion, min_in, max_in, n_out, sym) kind,
#include "compiler_core/ir/graph/ops.def"
#undef KILN_OP
};

/// How an operator may combine with its neighbours under fusion (TVM's OpPatternKind).
enum class FusionClass : uint8_t {
  kElementwise,       // out[i] = f(in[i])
  kBroadcast,         // elementwise with broadcast inputs
  kInjective,         // each output element reads one input element (reshape, transpose, ...)
  kReduction,         // reduces one or more axes
  kOutEwiseFusable,   // conv, matmul, pooling: elementwise consumers fuse into the epilogue
  kOpaque,            // never fused
};

/// What an op supports over symbolic dims (docs/symbolic-shapes.md), the last column of
/// ops.def: kSymRule, its shape rule reads dims as expressions, so its inputs may have symbolic
/// dims (the shape inference refuses them for other ops); kSymBuild, the ONNX importer's
/// builder handles symbolic inputs and shape values (Value::sym_value); kSymLower, lowering/
/// builds its kernel over symbolic dims (the compile says which node is missing otherwise).
enum SymbolicSupport : uint8_t {
  kSymNone = 0,
  kSymRule = 1,
  kSymBuild = 2,
  kSymLower = 4,
  kSymRuleBuild = kSymRule | kSymBuild,
  kSymRuleLower = kSymRule | kSymLower,
  kSymAll = kSymRule | kSymBuild | kSymLower,
};

/// Static facts about one operator, from ops.def.
struct OpInfo {
  OpKind kind;
  const char* name;  // ONNX op_type, also the printed name
  FusionClass fusion_class;
  int min_inputs;
  int max_inputs;
  int num_outputs;  // the maximum number of outputs; optional trailing outputs may be absent
  uint8_t symbolic;  // SymbolicSupport bits
};

/// Whether `kind`'s ops.def entry has every bit of `support`.
bool SupportsSymbolic(OpKind kind, SymbolicSupport support);

const OpInfo& GetOpInfo(OpKind kind);
inline const char* OpName(OpKind kind) { return GetOpInfo(kind).name; }
/// OpKind for an ONNX op_type in the default domain; nullopt if Kiln has no such op.
std::optional<OpKind> OpKindFromName(std::string_view name);
const char* FusionClassName(FusionClass fusion_class);
/// Whether `kind` only reinterprets its first input's row-major data with a new shape (Reshape,
/// Flatten, Squeeze, Unsqueeze, Identity): fusion gives it no consumers and the kernel plan
/// aliases its result to its input instead of emitting a kernel.
bool IsViewOp(OpKind kind);
/// Whether `kind` is in the "Tensor, reduction and logic ops" section of ops.def (its shape rule,
/// reference kernel, importer builder and lowering live in the tensor_* files).
bool IsTensorOp(OpKind kind);
/// Whether `kind` is in the "NN ops" section of ops.def (nn_* files).
bool IsNnOp(OpKind kind);

}  // namespace kiln::graph

#endif  // KILN_COMPILER_CORE_IR_GRAPH_OP_H_
