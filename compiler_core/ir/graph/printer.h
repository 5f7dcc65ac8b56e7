// Textual form of the graph IR. Deterministic: values are numbered in program order (inputs,
// then live constants, then node outputs), attributes print sorted by name, floats exactly.
//
//   graph @main(%0 "input": f32[1,4]) -> (%3 "out") {
//     %1 = const f32[4] dense<[1.0,2.0,3.0,4.0]>
//     %2 = Add(%0, %1) : f32[1,4]
//     %3 = Relu(%2) : f32[1,4] group=0
//     return %3
//   }
//
// Constants print as dense<[...]> (at most kMaxDenseElements elements), splat<v> (all elements
// equal) or sha256:<16 hex digits> (elided; the parser cannot read those back). An omitted
// optional input prints as "_". A fusion group id prints as a trailing "group=N". A graph
// attribute (a Loop's body) prints as graph<@name hash> in the node's attributes, and the graph
// itself follows the enclosing graph, after a "// body of node 'x' (Loop):" line.
#ifndef KILN_COMPILER_CORE_IR_GRAPH_PRINTER_H_
#define KILN_COMPILER_CORE_IR_GRAPH_PRINTER_H_

#include <string>

#include "compiler_core/ir/graph/graph.h"

namespace kiln::graph {

inline constexpr int64_t kMaxDenseElements = 16;

/// Prints `graph` in the textual form above.
std::string PrintGraph(const Graph& graph);

/// Prints the value of one constant: dense<...>, splat<...> or sha256:...
std::string FormatConstant(const Tensor& tensor);

}  // namespace kiln::graph

#endif  // KILN_COMPILER_CORE_IR_GRAPH_PRINTER_H_
