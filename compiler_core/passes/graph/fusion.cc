// Operator fusion over the graph IR: groups each anchor with the chain of elementwise and
// broadcast consumers that can run in its epilogue (TVM's fusion classes, chain-shaped).
//
// What: walks the nodes in topological order; the first node not yet in a group anchors a new
//   group (ids 0, 1, 2, ... in that order) and then absorbs consumers one at a time while the
//   chain rule in fusion.h holds: the candidate is the single user of the previous member's
//   output, is elementwise/broadcast, produces the anchor's output shape (and dtype, unless the
//   anchor is elementwise or a blocked conv, whose lowerings allow a dtype-changing epilogue),
//   and the previous output is not a graph output, up to kMaxFusedNodes nodes per group (a longer
//   chain continues in a new group). Opaque and view ops are singleton groups. A
//   candidate whose other operands are not yet computed by an earlier group is left for a later
//   group, so executing the groups in id order is always valid.
// Requires: a verified graph in topological order. May run again: ids are recomputed.
// Guarantees: every node has a group id >= 0; the node order is unchanged; deterministic.
//
//   before: %3 = Conv(%0, %1, %2) {...} : f32[1,8,4,4]
//           %4 = Relu(%3) : f32[1,8,4,4]
//   after:  %3 = Conv(...) {...} : f32[1,8,4,4] group=0   %4 = Relu(%3) : f32[1,8,4,4] group=0
#include "compiler_core/passes/graph/fusion.h"

#include <unordered_map>

#include "compiler_core/passes/graph/rewrite.h"

namespace kiln::passes {
namespace {

using graph::FusionClass;
using graph::Graph;
using graph::Node;
using graph::OpKind;
using graph::Value;

/// May `node` have consumers fused after it?
bool CanTakeConsumers(const Node& node) {
  return node.info().fusion_class != FusionClass::kOpaque && !graph::IsViewOp(node.op());
}

/// May `node` be fused into a chain as a consumer?
bool CanBeConsumer(const Node& node) {
  FusionClass fc = node.info().fusion_class;
  return (fc == FusionClass::kElementwise || fc == FusionClass::kBroadcast) &&
         !graph::IsViewOp(node.op()) && node.outputs().size() == 1;
}

using GroupMap = std::unordered_map<const Node*, int>;  // queried only, never iterated

/// May the epilogue of a group anchored at `anchor` change the dtype (its lowering computes
/// the anchor's result apart from the group's output)? Elementwise anchors compute one
/// expression per element; blocked convs accumulate into a workspace of their own dtype.
bool AllowsDTypeChange(const Node& anchor) {
  FusionClass fc = anchor.info().fusion_class;
  return fc == FusionClass::kElementwise || fc == FusionClass::kBroadcast ||
         (anchor.op() == OpKind::kConv && anchor.attrs().Has("layout"));
}

/// The next chain member after `prev` in a group whose anchor output type is `type` (its dtype
/// may change along the chain where `dtype_may_change`), or nullptr.
/// Besides the contract in fusion.h, every other input of the candidate must already be computed
/// by an earlier group or by the chain so far, so running the groups in id order is always valid
/// (e.g. a residual Add whose second operand is produced later joins that later group instead).
Node* NextInChain(const Graph& graph, const Node& prev, const TensorType& type,
                  bool dtype_may_change, const GroupMap& group) {
  for (size_t i = 1; i < prev.outputs().size(); ++i) {
    if (!IsUnused(graph, prev.output(static_cast<int>(i)))) return nullptr;
  }
  const Value* out = prev.output(0);
  if (graph.IsGraphOutput(out)) return nullptr;
  std::vector<Node*> users = graph.Users(out);
  if (users.size() != 1) return nullptr;
  Node* next = users[0];
  if (group.count(next) != 0) return nullptr;
  if (!CanBeConsumer(*next)) return nullptr;
  const TensorType& next_type = next->output(0)->type();
  if (next_type.shape != type.shape || (!dtype_may_change && next_type.dtype != type.dtype)) {
    return nullptr;
  }
  for (const Value* in : next->inputs()) {
    if (in == nullptr || in == out || in->producer() == nullptr) continue;
    if (group.count(in->producer()) == 0) return nullptr;
  }
  return next;
}

/// Group id for every node, in node order.
std::vector<int> ComputeGroups(const Graph& graph) {
  std::vector<Node*> nodes = graph.nodes();
  GroupMap group;
  std::vector<int> result;
  int next_id = 0;
  for (Node* node : nodes) {
    auto it = group.find(node);
    if (it != group.end()) {
      result.push_back(it->second);
      continue;
    }
    int id = next_id++;
    group[node] = id;
    result.push_back(id);
    if (!CanTakeConsumers(*node) || node->outputs().empty()) continue;
    const TensorType& type = node->output(0)->type();
    const bool dtype_may_change = AllowsDTypeChange(*node);
    int size = 1;
    for (Node* member = NextInChain(graph, *node, type, dtype_may_change, group);
         member != nullptr && size < kMaxFusedNodes;
         member = NextInChain(graph, *member, type, dtype_may_change, group)) {
      group[member] = id;
      ++size;
    }
  }
  return result;
}

}  // namespace

absl::StatusOr<bool> OperatorFusion::Run(Graph& graph) {
  std::vector<int> groups = ComputeGroups(graph);
  std::vector<Node*> nodes = graph.nodes();
  bool changed = false;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i]->fusion_group() == groups[i]) continue;
    nodes[i]->set_fusion_group(groups[i]);
    changed = true;
  }
  return changed;
}

}  // namespace kiln::passes
