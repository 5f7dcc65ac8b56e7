// Checks the structural invariants of a graph.
#ifndef KILN_COMPILER_CORE_IR_GRAPH_VERIFIER_H_
#define KILN_COMPILER_CORE_IR_GRAPH_VERIFIER_H_

#include "absl/status/status.h"
#include "compiler_core/ir/graph/graph.h"

namespace kiln::graph {

/// Verifies: every node input is a graph input, a constant, or an output of an earlier node;
/// arity is within the op's bounds; output types equal InferOutputTypes; every graph output is
/// defined. Errors: kInvalidArgument naming the first offending node and what was expected.
absl::Status VerifyGraph(const Graph& graph);

}  // namespace kiln::graph

#endif  // KILN_COMPILER_CORE_IR_GRAPH_VERIFIER_H_
