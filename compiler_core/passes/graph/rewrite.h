// The one rewrite driver shared by the graph passes (MLIR's greedy pattern driver, tinygrad's
// graph_rewrite): a pass is a list of small pattern functions applied over the nodes in order,
// sweep after sweep, until none applies.
#ifndef KILN_COMPILER_CORE_PASSES_GRAPH_REWRITE_H_
#define KILN_COMPILER_CORE_PASSES_GRAPH_REWRITE_H_

#include <functional>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/ir/graph/graph.h"

namespace kiln::passes {

/// Mutation interface handed to patterns. Erased nodes are detached at once (their inputs are
/// cleared, so they no longer count as users) and deleted from the graph at the end of a sweep,
/// so node pointers held by the driver stay valid.
class Rewriter {
 public:
  explicit Rewriter(graph::Graph& graph) : graph_(graph) {}
  graph::Graph& graph() { return graph_; }

  /// Erases `node`. Its outputs must have no users and must not be graph outputs.
  void EraseNode(graph::Node* node);
  /// Replaces every use of `from` with `to`. If `from` is a graph output, `to` takes its name
  /// (unless `to` is itself a graph input or output), so graph output names survive rewrites.
  void ReplaceAllUsesWith(graph::Value* from, graph::Value* to);
  /// True if the node was erased during the current sweep.
  bool IsErased(const graph::Node* node) const;
  /// Deletes the nodes erased so far. Called by the driver after each sweep.
  void Flush();

 private:
  graph::Graph& graph_;
  std::vector<graph::Node*> erased_;  // in erasure order, for a deterministic Flush
  std::unordered_set<const graph::Node*> erased_set_;  // queried only, never iterated
};

/// A local rewrite rooted at one node: returns true if it changed the graph, false if it did not
/// match, or an error.
using Pattern = std::function<absl::StatusOr<bool>(graph::Node& node, Rewriter& rewriter)>;

/// Applies `patterns` (first match wins) to every node in topological order, repeating sweeps
/// until one changes nothing or `max_sweeps` is reached. Returns whether anything changed.
absl::StatusOr<bool> ApplyPatterns(graph::Graph& graph, const std::vector<Pattern>& patterns,
                                   int max_sweeps = 16);

/// kFailedPrecondition if fusion groups are already assigned: passes that add or remove nodes
/// must run before "fusion", or they would break its numbering contract.
absl::Status CheckRunsBeforeFusion(const graph::Graph& graph, std::string_view pass_name);

/// True if `value` is read by no node and is not a graph output.
bool IsUnused(const graph::Graph& graph, const graph::Value* value);

}  // namespace kiln::passes

#endif  // KILN_COMPILER_CORE_PASSES_GRAPH_REWRITE_H_
