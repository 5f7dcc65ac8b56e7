// Constant folding over the graph IR.
//
// What: every node whose inputs are all constants (omitted optional inputs allowed) is evaluated
//   with reference::EvaluateNode, the same evaluator tests use as the numeric reference; each
//   used result becomes a new constant and the node is erased. Folding cascades in one forward
//   sweep because nodes are visited in topological order. Weight transforms (Transpose of a
//   weight, Reshape of a constant, ...) are folded however large the result: they cost nothing
//   at run time afterwards; results that would materialize much more than their inputs (an
//   Expand of a scalar, a Tile) past 64 MiB, or anything past 1 TiB, stay nodes and run at run
//   time. Ops the evaluator does not implement are left in place.
// Requires: no fusion groups assigned yet (kFailedPrecondition otherwise).
// Guarantees: no node has only constant inputs unless the evaluator lacks its op or its result
//   is too large to materialize (TooLargeToFold); graph output
//   names are kept; deterministic (constants are created in node order).
//
//   before: %1 = const f32[2] dense<[1.0,4.0]>
//           %2 = Sqrt(%1) : f32[2]
//   after:  %1 = const f32[2] dense<[1.0,2.0]>      (Sqrt erased; its users read %1)
#include "compiler_core/passes/graph/constant_folding.h"

#include "absl/strings/str_cat.h"
#include "compiler_core/passes/graph/rewrite.h"
#include "compiler_core/reference/evaluator.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::passes {
namespace {

using graph::Node;
using graph::Value;

bool HasOnlyConstantInputs(const Node& node) {
  bool any = false;
  for (const Value* in : node.inputs()) {
    if (in == nullptr) continue;
    if (!in->is_constant()) return false;
    any = true;
  }
  return any;
}

/// Results larger than this that are also more than 4x their inputs (an Expand of a scalar, a
/// Tile, a Range: materializing, not computing on weights) stay nodes and run at run time.
constexpr int64_t kMaxExpandingFoldBytes = int64_t{64} << 20;

/// Whether folding `node` would materialize a result too large to hold at compile time (or
/// to ship in the artifact): one past kMaxTensorBytes, or past kMaxExpandingFoldBytes and 4x
/// the inputs' bytes. Weight transforms (a Transpose, a DequantizeLinear) of any size fold.
bool TooLargeToFold(const Node& node) {
  int64_t in_bytes = 0;
  for (const Value* in : node.inputs()) {
    if (in != nullptr) in_bytes += in->type().NumBytes();
  }
  for (const Value* out : node.outputs()) {
    const int64_t bytes = out->type().CheckedNumBytes();
    if (bytes < 0 || (bytes > kMaxExpandingFoldBytes && bytes / 4 > in_bytes)) return true;
  }
  return false;
}

/// The one folding pattern: evaluate the node and replace its results by constants.
absl::StatusOr<bool> FoldConstantNode(Node& node, Rewriter& rewriter) {
  // A Loop left to run at run time is one too large to unroll: never evaluated at compile time.
  if (node.op() == graph::OpKind::kLoop || !HasOnlyConstantInputs(node) || TooLargeToFold(node)) {
    return false;
  }
  std::vector<reference::TensorPtr> inputs;
  for (const Value* in : node.inputs()) {
    inputs.push_back(in == nullptr ? nullptr : in->constant());
  }
  absl::StatusOr<std::vector<reference::TensorPtr>> results =
      reference::EvaluateNode(node, inputs);
  // An op the evaluator lacks is not an error: the node simply stays.
  if (results.status().code() == absl::StatusCode::kUnimplemented) return false;
  if (!results.ok()) {
    return absl::Status(results.status().code(),
                        absl::StrCat("cannot fold node '", node.name(), "' (", node.info().name,
                                     "): ", results.status().message()));
  }
  if (results->size() != node.outputs().size()) {
    return absl::InternalError(absl::StrCat("node '", node.name(), "' (", node.info().name,
                                            "): evaluator returned ", results->size(),
                                            " results for ", node.outputs().size(), " outputs"));
  }
  graph::Graph& graph = rewriter.graph();
  for (size_t i = 0; i < results->size(); ++i) {
    Value* out = node.output(static_cast<int>(i));
    if (IsUnused(graph, out)) continue;
    const reference::TensorPtr& result = (*results)[i];
    if (result == nullptr || !(result->type == out->type())) {
      return absl::InternalError(absl::StrCat(
          "node '", node.name(), "' (", node.info().name, "): evaluator result ", i,
          " has type ", result ? result->type.ToString() : "null", ", expected ",
          out->type().ToString()));
    }
    Value* folded = graph.AddConstant(out->name(), result);
    rewriter.ReplaceAllUsesWith(out, folded);
  }
  rewriter.EraseNode(&node);
  return true;
}

}  // namespace

absl::StatusOr<bool> ConstantFolding::Run(graph::Graph& graph) {
  KILN_RETURN_IF_ERROR(CheckRunsBeforeFusion(graph, name()));
  return ApplyPatterns(graph, {FoldConstantNode});
}

}  // namespace kiln::passes
