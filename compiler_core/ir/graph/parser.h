// Parser for the textual graph IR: reads exactly what PrintGraph prints, so that tests and
// tools can build graphs from text (print → parse → print is the identity).
#ifndef KILN_COMPILER_CORE_IR_GRAPH_PARSER_H_
#define KILN_COMPILER_CORE_IR_GRAPH_PARSER_H_

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "compiler_core/ir/graph/graph.h"

namespace kiln::graph {

/// The largest constant ParseGraph builds: 256 MiB.
inline constexpr int64_t kMaxParsedConstantBytes = int64_t{256} << 20;

/// Parses one graph in the form documented in printer.h:
///
///   graph @name(%0 "x": f32[1,4]) -> (%2 "y") {
///     %1 = const f32[4] splat<1.0>
///     %2 = Add(%0, %1) {attr=..} : f32[1,4] group=0
///     return %2
///   }
///
/// Value numbers are names, not positions: any distinct numbers work, but a value must be
/// defined before it is used. Node output types and fusion groups are taken from the text, not
/// inferred; the result is not verified (call VerifyGraph). Attribute values are ints, floats
/// (a number with '.', 'e', or inf/nan), strings, int lists and float lists; an empty list
/// "[]" is an int list. `// ...` comments run to the end of the line. Each node is named after
/// its first output ("%3"), so verifier errors point back at the text.
/// Errors: kInvalidArgument, the message starting with "LINE:COL: " (1-based) and saying what
/// was expected. Elided constants ("sha256:...") and tensor attributes cannot be parsed, nor a
/// constant larger than kMaxParsedConstantBytes (the text format is for tests and kiln-opt;
/// weights come from ONNX).
absl::StatusOr<std::unique_ptr<Graph>> ParseGraph(std::string_view text);

}  // namespace kiln::graph

#endif  // KILN_COMPILER_CORE_IR_GRAPH_PARSER_H_
