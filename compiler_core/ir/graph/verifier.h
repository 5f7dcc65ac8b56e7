// Checks the structural invariants of a graph.
#ifndef KILN_COMPILER_CORE_IR_GRAPH_VERIFIER_H_
#define KILN_COMPILER_CORE_IR_GRAPH_VERIFIER_H_

#include "absl/status/status.h"
#include "compiler_core/ir/graph/graph.h"

namespace kiln::graph {

/// Verifies: every node input is a graph input, a constant, or an output of an earlier node;
/// arity is within the op's bounds; output types equal InferOutputTypes; every graph output is
/// defined; symbols as VerifySymbols says. Errors: kInvalidArgument naming the first offending
/// node and what was expected.
absl::Status VerifyGraph(const Graph& graph);

/// The symbolic-dim part of VerifyGraph: each symbol has one range (GraphSymbols), and every
/// symbol that a type reads is a graph input's dim by itself, so that a run can bind it from
/// the input shapes (sym::BindSymbols). Errors: kInvalidArgument naming the value, e.g.
/// "node 'n' (Relu): output 0 has type f32[k], whose symbol 'k' no graph input dim gives by
/// itself".
absl::Status VerifySymbols(const Graph& graph);

}  // namespace kiln::graph

#endif  // KILN_COMPILER_CORE_IR_GRAPH_VERIFIER_H_
