// Dead-code elimination over the graph IR.
//
// What: marks live every node that (transitively) feeds a graph output, walking the nodes once in
//   reverse topological order, then erases the rest. Every graph op is side-effect free, so a
//   node is dead exactly when none of its results reaches an output. Constants nobody reads need
//   no removal: the printer and the lowering only see LiveConstants().
// Requires: no fusion groups assigned yet (erasing a group would leave a gap in the numbering).
// Guarantees: every remaining node has a result that reaches a graph output; the order of the
//   remaining nodes is unchanged.
//
//   before: %1 = Relu(%0) : f32[4]
//           %2 = Exp(%0) : f32[4]        (unused)
//   after:  %1 = Relu(%0) : f32[4]
#include "compiler_core/passes/graph/dce.h"

#include <unordered_set>

#include "compiler_core/passes/graph/rewrite.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::passes {
namespace {

using graph::Graph;
using graph::Node;
using graph::Value;

/// Nodes with a result that reaches a graph output. Pointer-keyed, but only queried, never
/// iterated, so the result stays deterministic.
std::unordered_set<const Node*> LiveNodes(const Graph& graph) {
  std::unordered_set<const Value*> live_values(graph.outputs().begin(), graph.outputs().end());
  std::unordered_set<const Node*> live_nodes;
  std::vector<Node*> nodes = graph.nodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    const Node* node = *it;
    bool live = false;
    for (const Value* out : node->outputs()) live = live || live_values.count(out) != 0;
    if (!live) continue;
    live_nodes.insert(node);
    for (const Value* in : node->inputs()) {
      if (in != nullptr) live_values.insert(in);
    }
  }
  return live_nodes;
}

}  // namespace

absl::StatusOr<bool> DeadCodeElimination::Run(Graph& graph) {
  KILN_RETURN_IF_ERROR(CheckRunsBeforeFusion(graph, name()));
  std::unordered_set<const Node*> live = LiveNodes(graph);
  Rewriter rewriter(graph);
  bool changed = false;
  // Reverse order: a dead node's dead users are erased before it.
  std::vector<Node*> nodes = graph.nodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    if (live.count(*it) != 0) continue;
    rewriter.EraseNode(*it);
    changed = true;
  }
  rewriter.Flush();
  return changed;
}

}  // namespace kiln::passes
