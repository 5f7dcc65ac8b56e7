// Shared by the conv-u8s8 and matmul-u8s8 passes: matching the 8-bit operand of an int32
// contraction, packing int8 weights into words of four, and reading uint8 data as words.
#ifndef KILN_COMPILER_CORE_PASSES_GRAPH_U8S8_WORDS_H_
#define KILN_COMPILER_CORE_PASSES_GRAPH_U8S8_WORDS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "compiler_core/ir/graph/graph.h"

namespace kiln::passes::u8s8 {

/// The 8-bit data an int32 contraction operand is computed from.
struct U8Operand {
  graph::Value* u = nullptr;  // u8 or i8
  /// The uint8 zero point: the operand is uint8(u) - (zero_point + runtime_zero_point) (u8),
  /// or uint8(u + 128) - (...) (i8, whose zero point is then its own + 128).
  int64_t zero_point = 0;
  /// A zero point computed at run time (DynamicQuantizeLinear's): an i32 scalar-like value, or
  /// null when the zero point is the constant `zero_point` alone.
  graph::Value* runtime_zero_point = nullptr;
  std::vector<graph::Node*> chain;  // the nodes between u and the operand, nearest first
};

/// The node producing `v` if it is `op`, else null.
graph::Node* ProducerIs(const graph::Value* v, graph::OpKind op);

/// Matches [Sub(] Cast<i32>(u) [, zp)] at `in` (u of dtype u8 or i8, zp a scalar-like i32
/// value: a constant, or computed at run time); nullopt otherwise.
std::optional<U8Operand> MatchU8Operand(graph::Value* in);

/// Integer weights `w` viewed as [outer, k, x] (i32 values, each in [-128, 127]) as i32 words
/// [outer, ceil(k / 4), x] (byte b of word j: row 4j + b; zero bytes past k), and in `sums`
/// the sum over k of each column: sums[(o / rows_per_group) * x + c] over outer rows o. The
/// result has the flat shape [outer * ceil(k / 4) * x]; the caller sets its type. Null if a
/// weight is outside [-128, 127].
std::shared_ptr<Tensor> PackWords(const Tensor& w, int64_t outer, int64_t k, int64_t x,
                                  int64_t rows_per_group, std::vector<int64_t>& sums);

/// `u` as uint8 (u8 as it is; i8 as uint8(u + 128) by a Cast/Add/Cast inserted before
/// `before`, once per i8 value: `converted` remembers them across calls of one pass).
graph::Value* ToUnsigned(graph::Graph& graph, graph::Node& before, graph::Value* u,
                         std::unordered_map<const graph::Value*, graph::Value*>& converted);

/// A Bitcast of uint8 `u` ([.., 4m]) to i32 words [.., m], before `before`.
graph::Value* BitcastToWords(graph::Graph& graph, graph::Node& before, graph::Value* u);

/// Replaces the integer contraction `node` by `result` (which keeps a graph output's name),
/// removes `node`, then the nodes of `chain` (nearest first) while their outputs are unused.
void ReplaceContraction(graph::Graph& graph, graph::Node& node, graph::Value* result,
                        const std::vector<graph::Node*>& chain);

}  // namespace kiln::passes::u8s8

#endif  // KILN_COMPILER_CORE_PASSES_GRAPH_U8S8_WORDS_H_
