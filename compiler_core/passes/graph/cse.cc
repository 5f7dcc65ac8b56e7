// Common-subexpression elimination over the graph IR.
//
// What: first merges constants with the same type and bytes into the first such constant, then,
//   in one forward sweep of the rewrite driver, merges every node into the first earlier node
//   with the same op, the same inputs (after earlier merges), equal attributes
//   (AttrMap::operator==) and the same output types. Merging cascades because nodes are visited
//   in topological order. A node or constant that is itself a graph output is never merged away,
//   so graph output names stay as they are.
// Requires: no fusion groups assigned yet (kFailedPrecondition otherwise).
// Guarantees: no two remaining nodes (and no two live constants) are equal as defined above,
//   except graph outputs; deterministic: the earliest node of each class is kept.
//
//   before: %2 = Relu(%0) : f32[4]
//           %3 = Relu(%0) : f32[4]
//           %4 = Add(%2, %3) : f32[4]
//   after:  %2 = Relu(%0) : f32[4]
//           %3 = Add(%2, %2) : f32[4]
#include "compiler_core/passes/graph/cse.h"

#include <string>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/printer.h"
#include "compiler_core/passes/graph/rewrite.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::passes {
namespace {

using graph::Graph;
using graph::Node;
using graph::Value;

bool HasGraphOutput(const Graph& graph, const Node& node) {
  for (const Value* out : node.outputs()) {
    if (graph.IsGraphOutput(out)) return true;
  }
  return false;
}

/// Everything that makes two nodes equal, as one string: op, input value ids, output types and
/// printed attributes (AttrMap::operator== compares printed attributes, so this agrees with it).
std::string NodeKey(const Node& node) {
  std::string key = node.info().name;
  for (const Value* in : node.inputs()) absl::StrAppend(&key, ",", in ? in->id() : -1);
  for (const Value* out : node.outputs()) absl::StrAppend(&key, ";", out->type().ToString());
  for (const auto& [name, value] : node.attrs().items()) {
    absl::StrAppend(&key, "|", name, "=", graph::FormatAttrValue(value));
  }
  return key;
}

/// Redirects the uses of each constant to the first live constant with the same type and bytes.
bool MergeConstants(Graph& graph, Rewriter& rewriter) {
  // Keyed by content; only queried, never iterated, so the result is deterministic.
  std::unordered_map<std::string, Value*> first;
  bool changed = false;
  for (Value* c : graph.LiveConstants()) {
    const Tensor& t = *c->constant();
    std::string key = absl::StrCat(t.type.ToString(), ":");
    key.append(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
    auto [it, inserted] = first.emplace(std::move(key), c);
    if (inserted || graph.IsGraphOutput(c)) continue;
    rewriter.ReplaceAllUsesWith(c, it->second);
    changed = true;
  }
  return changed;
}

/// Builds the node-merging pattern. `first` maps a NodeKey to the earliest node with that key;
/// entries are never erased nodes because the first of each class is the one kept.
Pattern MergeEqualNodes(std::unordered_map<std::string, Node*>& first) {
  return [&first](Node& node, Rewriter& rewriter) -> absl::StatusOr<bool> {
    auto [it, inserted] = first.emplace(NodeKey(node), &node);
    if (inserted || it->second == &node) return false;
    if (HasGraphOutput(rewriter.graph(), node)) return false;
    Node* kept = it->second;
    for (int i = 0; i < static_cast<int>(node.outputs().size()); ++i) {
      rewriter.ReplaceAllUsesWith(node.output(i), kept->output(i));
    }
    rewriter.EraseNode(&node);
    return true;
  };
}

}  // namespace

absl::StatusOr<bool> CommonSubexpressionElimination::Run(Graph& graph) {
  KILN_RETURN_IF_ERROR(CheckRunsBeforeFusion(graph, name()));
  Rewriter rewriter(graph);
  bool changed = MergeConstants(graph, rewriter);
  std::unordered_map<std::string, Node*> first;
  KILN_ASSIGN_OR_RETURN(bool merged, ApplyPatterns(graph, {MergeEqualNodes(first)}));
  return changed || merged;
}

}  // namespace kiln::passes
