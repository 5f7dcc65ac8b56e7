// Import-time constant folding of small values: shape computations (Shape → Gather → Concat →
// Reshape/Slice chains, ConstantOfShape of a computed shape, ...) must be constants before the
// builders that read them as static parameters run. Evaluation uses the reference evaluator,
// the same one the constant-folding pass uses, so each op's meaning is written once.
#include "compiler_core/importer/onnx/import_context.h"
#include "compiler_core/reference/evaluator.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::importer {
namespace {

/// Larger results are left to the constant-folding pass (they are not shape parameters).
constexpr int64_t kMaxFoldElements = 4096;

}  // namespace

absl::StatusOr<graph::Value*> FoldSmallConstant(ImportContext& ctx, graph::Value* value) {
  if (value == nullptr || value->is_constant() || value->producer() == nullptr) return value;
  graph::Node* node = value->producer();
  for (const graph::Value* out : node->outputs()) {
    if (out->type().NumElements() > kMaxFoldElements) return value;
  }
  std::vector<reference::TensorPtr> inputs;
  bool any = false;
  for (int i = 0; i < node->num_inputs(); ++i) {
    graph::Value* in = node->input(i);
    if (in == nullptr) {
      inputs.push_back(nullptr);
      continue;
    }
    // A builder may emit a chain of nodes: fold the producers first.
    KILN_ASSIGN_OR_RETURN(graph::Value* folded, FoldSmallConstant(ctx, in));
    if (!folded->is_constant()) return value;
    if (folded != in) node->set_input(i, folded);
    inputs.push_back(folded->constant());
    any = true;
  }
  if (!any) return value;
  absl::StatusOr<std::vector<reference::TensorPtr>> results =
      reference::EvaluateNode(*node, inputs);
  // An op the evaluator lacks (or cannot fold here) simply stays a node.
  if (!results.ok()) return value;
  const reference::TensorPtr& result = (*results)[value->output_index()];
  if (result == nullptr || result->type != value->type()) return value;
  return ctx.graph().AddConstant(value->name(), result);
}

}  // namespace kiln::importer
