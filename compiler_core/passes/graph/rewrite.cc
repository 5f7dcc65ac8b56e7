// The shared greedy rewrite driver and the Rewriter that patterns mutate the graph through.
#include "compiler_core/passes/graph/rewrite.h"

#include <algorithm>
#include <cassert>

#include "absl/strings/str_cat.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::passes {

using graph::Graph;
using graph::Node;
using graph::Value;

void Rewriter::EraseNode(Node* node) {
  assert(!IsErased(node));
  for (Value* out : node->outputs()) {
    assert(IsUnused(graph_, out));
    (void)out;
  }
  // Detach now so the node stops counting as a user; delete at Flush, so pointers stay valid.
  for (int i = 0; i < node->num_inputs(); ++i) node->set_input(i, nullptr);
  erased_.push_back(node);
  erased_set_.insert(node);
}

void Rewriter::ReplaceAllUsesWith(Value* from, Value* to) {
  bool to_is_interface = graph_.IsGraphOutput(to) || graph_.IsGraphInput(to);
  if (graph_.IsGraphOutput(from) && !to_is_interface) to->set_name(from->name());
  graph_.ReplaceAllUsesWith(from, to);
}

bool Rewriter::IsErased(const Node* node) const { return erased_set_.count(node) != 0; }

void Rewriter::Flush() {
  for (Node* node : erased_) graph_.RemoveNode(node);
  erased_.clear();
  erased_set_.clear();
}

absl::StatusOr<bool> ApplyPatterns(Graph& graph, const std::vector<Pattern>& patterns,
                                   int max_sweeps) {
  Rewriter rewriter(graph);
  bool changed = false;
  for (int sweep = 0; sweep < max_sweeps; ++sweep) {
    bool changed_in_sweep = false;
    // A snapshot: nodes a pattern inserts are visited in the next sweep.
    for (Node* node : graph.nodes()) {
      if (rewriter.IsErased(node)) continue;
      for (const Pattern& pattern : patterns) {
        absl::StatusOr<bool> applied = pattern(*node, rewriter);
        if (!applied.ok()) {
          rewriter.Flush();
          return applied.status();
        }
        if (*applied) {
          changed_in_sweep = true;
          break;
        }
      }
    }
    rewriter.Flush();
    if (!changed_in_sweep) break;
    changed = true;
  }
  return changed;
}

absl::Status CheckRunsBeforeFusion(const Graph& graph, std::string_view pass_name) {
  for (const Node* node : graph.nodes()) {
    if (node->fusion_group() < 0) continue;
    return absl::FailedPreconditionError(absl::StrCat(
        "pass '", std::string(pass_name), "' must run before 'fusion': node '", node->name(),
        "' (", node->info().name, ") already has fusion group ", node->fusion_group()));
  }
  return absl::OkStatus();
}

bool IsUnused(const Graph& graph, const Value* value) {
  return !graph.IsGraphOutput(value) && !graph.HasUsers(value);
}

}  // namespace kiln::passes
