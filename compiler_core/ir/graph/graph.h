// The graph IR: typed SSA values, operator nodes in topological order, graph inputs, constants
// (weights) and outputs.
#ifndef KILN_COMPILER_CORE_IR_GRAPH_GRAPH_H_
#define KILN_COMPILER_CORE_IR_GRAPH_GRAPH_H_

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler_core/ir/graph/attributes.h"
#include "compiler_core/ir/graph/op.h"
#include "compiler_core/ir/graph/tensor.h"

namespace kiln::graph {

class Graph;
class Node;

/// One read of a value: operand `operand` of node `user`.
struct Use {
  Node* user = nullptr;
  int operand = 0;
};

/// An SSA value: a graph input, a constant, or one output of a node. Owned by its Graph.
class Value {
 public:
  /// Unique within the graph, assigned at creation; not the printed number.
  int id() const { return id_; }
  /// The value's static type.
  const TensorType& type() const { return type_; }
  void set_type(TensorType type) { type_ = std::move(type); }
  /// Source name (ONNX value name); part of the graph hash only for graph inputs and outputs.
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  /// Producing node, or nullptr for graph inputs and constants.
  Node* producer() const { return producer_; }
  /// Index among the producer's outputs (0 when there is no producer).
  int output_index() const { return output_index_; }
  /// Constant data, non-null exactly for constants (ONNX initializers and Constant nodes).
  const std::shared_ptr<const Tensor>& constant() const { return constant_; }
  bool is_constant() const { return constant_ != nullptr; }
  /// The elements of a small integer tensor computed from shapes (Shape -> Gather -> Concat ->
  /// a Reshape's target), as expressions over symbols, row-major; nullopt when unknown. Shape
  /// rules read it where they would read a constant operand, so that a shape computation that
  /// involves symbolic dims folds at compile time (sym_values.h).
  const std::optional<std::vector<sym::Expr>>& sym_value() const { return sym_value_; }
  void set_sym_value(std::optional<std::vector<sym::Expr>> v) { sym_value_ = std::move(v); }
  /// Every node operand that reads this value, one entry per operand (a node reading it twice
  /// appears twice), in no particular order. Node::set_input and Graph keep it current, so
  /// walking it costs O(uses), not O(nodes). Graph::Users gives the users in graph order.
  const std::vector<Use>& uses() const { return uses_; }

 private:
  friend class Graph;
  friend class Node;
  int id_ = 0;
  TensorType type_;
  std::string name_;
  Node* producer_ = nullptr;
  int output_index_ = 0;
  std::shared_ptr<const Tensor> constant_;
  std::optional<std::vector<sym::Expr>> sym_value_;
  const Graph* graph_ = nullptr;  // the graph that created it
  std::vector<Use> uses_;
  int output_slots_ = 0;   // how often graph_'s output list holds it
  bool is_input_ = false;  // a graph input of graph_
};

/// One operator application. Inputs may contain nullptr for omitted optional ONNX inputs; the
/// others are values of the node's own graph (the verifier checks it).
class Node {
 public:
  Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  OpKind op() const { return op_; }
  const OpInfo& info() const { return GetOpInfo(op_); }
  /// Source node name (ONNX); informational, never part of the graph hash.
  const std::string& name() const { return name_; }
  const std::vector<Value*>& inputs() const { return inputs_; }
  Value* input(int i) const { return i < static_cast<int>(inputs_.size()) ? inputs_[i] : nullptr; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  /// Makes input `i` read `v` (nullptr: omitted), moving the use between the use lists.
  void set_input(int i, Value* v);
  const std::vector<Value*>& outputs() const { return outputs_; }
  Value* output(int i) const { return outputs_[i]; }
  AttrMap& attrs() { return attrs_; }
  const AttrMap& attrs() const { return attrs_; }
  /// Fusion group id assigned by the fusion pass; -1 when the node is not fused. Nodes with the
  /// same id form one kernel; the group's anchor is its first node in topological order.
  int fusion_group() const { return fusion_group_; }
  void set_fusion_group(int group) { fusion_group_ = group; }

 private:
  friend class Graph;
  void AddUse(int i);
  void DropUse(int i);

  OpKind op_;
  std::string name_;
  std::vector<Value*> inputs_;
  std::vector<int> use_index_;  // per input: its entry in inputs_[i]->uses_ (-1 when null)
  std::vector<Value*> outputs_;
  AttrMap attrs_;
  int fusion_group_ = -1;
  const Graph* graph_ = nullptr;  // the graph that holds it
  int64_t order_ = 0;  // increases along the graph's node order (with gaps, for insertions)
  std::list<std::unique_ptr<Node>>::iterator position_;  // its entry in graph_->nodes_
};

/// A computation graph. Nodes are kept in a topological order; passes that insert nodes keep it.
/// Every value keeps its use list and every node an order key, so ReplaceAllUsesWith costs
/// O(uses), Users O(uses log uses), RemoveNode and InsertNodeBefore O(the node's inputs) (an
/// insertion into an exhausted gap renumbers the order, O(nodes), rarely), IsGraphOutput and
/// IsGraphInput O(1): never O(nodes) per call, so a pass that rewrites each node of a 100k-node
/// chain stays linear.
class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  Value* AddInput(std::string name, TensorType type);
  Value* AddConstant(std::string name, std::shared_ptr<const Tensor> data);
  /// Appends a node at the end of the order, creating one output per entry of `output_types`.
  Node* AddNode(OpKind op, std::string name, std::vector<Value*> inputs,
                std::vector<TensorType> output_types, AttrMap attrs = {});
  /// Like AddNode, but places the node right before `before` in the order.
  Node* InsertNodeBefore(Node* before, OpKind op, std::string name, std::vector<Value*> inputs,
                         std::vector<TensorType> output_types, AttrMap attrs = {});
  /// Removes and deletes `node`, dropping its reads from its inputs' use lists. Its outputs
  /// must have no remaining users and must not be graph outputs.
  void RemoveNode(Node* node);
  /// Rewrites every use of `from` (node inputs and graph outputs) to `to`; a no-op when `from`
  /// is null or `to`.
  void ReplaceAllUsesWith(Value* from, Value* to);
  /// Nodes of this graph that read `value`, in graph order (a node appears once even if it reads
  /// it twice).
  std::vector<Node*> Users(const Value* value) const;
  /// Whether a node of this graph reads `value`: !Users(value).empty(), without building it.
  bool HasUsers(const Value* value) const;
  /// Whether `value` is listed among the graph outputs (O(1) for this graph's values).
  bool IsGraphOutput(const Value* value) const;
  /// Whether `value` is one of the graph inputs (O(1) for this graph's values).
  bool IsGraphInput(const Value* value) const;

  /// Replaces the graph outputs (a value may be listed more than once).
  void SetOutputs(std::vector<Value*> outputs);
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  /// Constants in creation order (including ones no longer used; see LiveConstants).
  const std::vector<Value*>& constants() const { return constants_; }
  /// Constants read by at least one node or listed as a graph output, in creation order.
  std::vector<Value*> LiveConstants() const;
  /// Nodes in topological order.
  std::vector<Node*> nodes() const;
  int num_nodes() const { return static_cast<int>(nodes_.size()); }

  /// Reorders nodes topologically (stable: ties keep their current order).
  /// Fails with kInvalidArgument naming a node on a cycle.
  absl::Status SortTopologically();

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

 private:
  Value* NewValue();
  std::unique_ptr<Node> MakeNode(OpKind op, std::string name, std::vector<Value*> inputs,
                                 std::vector<TensorType> output_types, AttrMap attrs);
  /// Gives the nodes order keys kOrderGap apart, in list order.
  void Renumber();

  std::string name_ = "main";
  std::vector<std::unique_ptr<Value>> values_;
  std::list<std::unique_ptr<Node>> nodes_;
  std::vector<Value*> inputs_;
  std::vector<Value*> constants_;
  std::vector<Value*> outputs_;
};

/// The symbols that the types of `graph`'s values read (inputs, constants, node outputs), by
/// name, each once. Errors (kInvalidArgument): two symbols of one name with different ranges
/// ("symbol 'seq' has range [1, 4096] in one type and [0, inf] in another").
absl::StatusOr<std::vector<sym::Symbol>> GraphSymbols(const Graph& graph);

}  // namespace kiln::graph

#endif  // KILN_COMPILER_CORE_IR_GRAPH_GRAPH_H_
