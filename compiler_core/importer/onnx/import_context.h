// Shared state of one ONNX import: the graph under construction, the ONNX-name → value map,
// the opset, and helpers that the per-op builders use to emit canonical nodes.
#ifndef KILN_COMPILER_CORE_IMPORTER_ONNX_IMPORT_CONTEXT_H_
#define KILN_COMPILER_CORE_IMPORTER_ONNX_IMPORT_CONTEXT_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/ir/graph/graph.h"
#include "onnx/onnx_pb.h"

namespace kiln::importer {

/// One ONNX node as the builders see it: converted attributes and resolved inputs.
struct OnnxNode {
  const onnx::NodeProto* proto = nullptr;
  graph::OpKind op;
  std::string name;                   // node name, or its first output's name when unnamed
  graph::AttrMap attrs;               // every ONNX attribute, converted
  std::vector<graph::Value*> inputs;  // nullptr for omitted ("") optional inputs

  /// "node 'name' (OpType): " for error messages.
  std::string Prefix() const;
  graph::Value* input(int i) const {
    return i < static_cast<int>(inputs.size()) ? inputs[i] : nullptr;
  }
};

/// Builder result: one value per ONNX output (nullptr where the canonical form drops it).
using BuiltOutputs = std::vector<graph::Value*>;

class ImportContext {
 public:
  /// Builds into `graph`; every value it emits must fit `max_tensor_bytes`
  /// (ImportOptions::max_tensor_bytes).
  ImportContext(graph::Graph& graph, int opset, int64_t max_tensor_bytes)
      : graph_(graph), opset_(opset), max_tensor_bytes_(max_tensor_bytes) {}

  graph::Graph& graph() { return graph_; }
  /// Default-domain opset of the model.
  int opset() const { return opset_; }
  /// The largest tensor the import accepts, in bytes.
  int64_t max_tensor_bytes() const { return max_tensor_bytes_; }
  /// Whether an ONNX value name is read by some node or is a graph output.
  bool IsUsed(const std::string& name) const { return used_.count(name) != 0; }
  void MarkUsed(const std::string& name) { used_.insert(name); }

  /// Appends a node, typing its outputs with InferOutputTypes. Errors: the shape rule's, and
  /// kInvalidArgument naming the node when an output type fails CheckTensorSize (a negative
  /// dim, a size past int64 or max_tensor_bytes()), before anything can evaluate the node.
  absl::StatusOr<graph::Node*> Emit(graph::OpKind op, const std::string& name,
                                    std::vector<graph::Value*> inputs, graph::AttrMap attrs,
                                    int num_outputs = 1);
  /// Emit for a single-output op, returning its output.
  absl::StatusOr<graph::Value*> EmitValue(graph::OpKind op, const std::string& name,
                                          std::vector<graph::Value*> inputs,
                                          graph::AttrMap attrs = {});
  /// A Reshape (allowzero 0) of `x` to the static `shape`.
  absl::StatusOr<graph::Value*> EmitReshape(const std::string& name, graph::Value* x,
                                            const std::vector<int64_t>& shape);
  /// New constants: 1-D i64 vector, or a scalar (rank 0) of `dtype`.
  graph::Value* ConstI64(const std::string& name, const std::vector<int64_t>& values);
  graph::Value* ConstScalar(const std::string& name, DType dtype, double value);
  /// A new float constant (f32, f64, f16 or bf16 `dtype`) of `shape` holding `values` row-major.
  graph::Value* ConstFloats(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                            const std::vector<double>& values);

  /// The integer values of constant input `i` of `node` (kUnimplemented if not constant).
  absl::StatusOr<std::vector<int64_t>> ConstInts(const OnnxNode& node, int i) const;
  /// The fully static type ONNX shape inference (or the declared graph outputs) gives the value
  /// named `name`, if any. Used where an op's output shape is static although an operand that
  /// determines it arrives at run time.
  std::optional<TensorType> KnownType(const std::string& name) const {
    auto it = known_types_.find(name);
    if (it == known_types_.end()) return std::nullopt;
    return it->second;
  }
  void SetKnownType(const std::string& name, TensorType type) {
    known_types_[name] = std::move(type);
  }
  /// Whether `name` is a graph output that no node reads (a data-dependent op may then size it
  /// by an upper bound and return its run-time shape).
  bool IsUnreadGraphOutput(const std::string& name) const {
    return unread_outputs_.count(name) != 0;
  }
  void SetUnreadGraphOutputs(std::set<std::string> names) { unread_outputs_ = std::move(names); }
  /// The elements of the sequence named `name` (sequence_builders.h), or null when no
  /// sequence has that name.
  const std::vector<graph::Value*>* Sequence(const std::string& name) const {
    auto it = sequences_.find(name);
    return it == sequences_.end() ? nullptr : &it->second;
  }
  void SetSequence(const std::string& name, std::vector<graph::Value*> elements) {
    sequences_[name] = std::move(elements);
  }
  /// Whether FoldSmallConstant found `value` unfoldable (it stays so: its producer's inputs
  /// only ever change to equal constants).
  bool IsUnfoldable(const graph::Value* value) const { return unfoldable_.count(value) != 0; }
  void MarkUnfoldable(const graph::Value* value) { unfoldable_.insert(value); }

 private:
  graph::Graph& graph_;
  int opset_;
  int64_t max_tensor_bytes_;
  std::set<std::string> used_;
  std::map<std::string, TensorType> known_types_;
  std::map<std::string, std::vector<graph::Value*>> sequences_;
  std::set<std::string> unread_outputs_;
  std::unordered_set<const graph::Value*> unfoldable_;  // queried only, never iterated
};

/// The first output of a just-emitted node, as a builder's result.
absl::StatusOr<BuiltOutputs> Single(absl::StatusOr<graph::Node*> node);
/// `axis` normalized into [0, rank) (negative axes count from the end; rank 0 accepts 0).
/// Errors: kInvalidArgument naming the node when out of range.
absl::StatusOr<int64_t> NormalizeAxis(const OnnxNode& node, int64_t axis, int64_t rank);

/// Builds the canonical Kiln node(s) for one ONNX node (see importer.h and the per-op
/// builders). Errors name the node.
absl::StatusOr<BuiltOutputs> BuildNode(ImportContext& ctx, const OnnxNode& node);

/// Per-family builders, dispatched from BuildNode.
absl::StatusOr<BuiltOutputs> BuildWindowOp(ImportContext& ctx, const OnnxNode& node);
absl::StatusOr<BuiltOutputs> BuildShapeOp(ImportContext& ctx, const OnnxNode& node);
/// `x` with its first lens[b] elements along `time_axis` reversed for each batch entry b along
/// `batch_axis` (ReverseSequence; lens i64 [batch], may arrive at run time; time and batch axes 0
/// and 1 in either order). Errors: those of the emitted ops.
absl::StatusOr<graph::Value*> ReverseWithinLengths(ImportContext& ctx, const std::string& name,
                                                   graph::Value* x, graph::Value* lens,
                                                   int64_t time_axis, int64_t batch_axis);
/// NonZero, Compress, Unique and NonMaxSuppression, whose output shape depends on the data
/// (data_dependent_builders.cc).
absl::StatusOr<BuiltOutputs> BuildDataDependentOp(ImportContext& ctx, const OnnxNode& node);
/// TfIdfVectorizer over integer tokens (text_builders.cc).
absl::StatusOr<BuiltOutputs> BuildTfIdfVectorizer(ImportContext& ctx, const OnnxNode& node);
/// Builders of the tensor, reduction and logic ops (tensor_builders.cc): every op with
/// graph::IsTensorOp.
absl::StatusOr<BuiltOutputs> BuildTensorOp(ImportContext& ctx, const OnnxNode& node);
/// Reshape/Squeeze/Unsqueeze whose shape or axes input is a runtime value: a Reshape to the
/// output type ONNX shape inference knows (the data movement is a row-major copy either way).
absl::StatusOr<BuiltOutputs> BuildReshapeToKnownType(ImportContext& ctx, const OnnxNode& node);
/// `value` itself, or a new constant holding it when its producer (and, recursively, the
/// producers it reads) has only constant inputs and a small result (import_folding.cc).
absl::StatusOr<graph::Value*> FoldSmallConstant(ImportContext& ctx, graph::Value* value);
/// Builders of the NN ops (nn_builders.cc): every op with graph::IsNnOp except
/// Hardmax (built by the generic path, which handles its pre-13 axis semantics).
/// Resize/Upsample (resize_builders.cc) and RNN/GRU/LSTM (rnn_builders.cc) are decomposed into
/// other ops.
absl::StatusOr<BuiltOutputs> BuildNnOp(ImportContext& ctx, const OnnxNode& node);
absl::StatusOr<BuiltOutputs> BuildResize(ImportContext& ctx, const OnnxNode& node);
absl::StatusOr<BuiltOutputs> BuildRecurrent(ImportContext& ctx, const OnnxNode& node);
/// Scatter, MaxUnpool, Shrink and ReverseSequence as compositions of other ops
/// (composite_builders.cc).
absl::StatusOr<BuiltOutputs> BuildComposite(ImportContext& ctx, const OnnxNode& node);
/// The Hann/Hamming/Blackman windows, DFT, STFT and MelWeightMatrix as constants and
/// compositions of other ops (signal_builders.cc).
absl::StatusOr<BuiltOutputs> BuildSignalOp(ImportContext& ctx, const OnnxNode& node);

}  // namespace kiln::importer

#endif  // KILN_COMPILER_CORE_IMPORTER_ONNX_IMPORT_CONTEXT_H_
