// Shapes as values: the contents of the small integer tensors that a model computes from its
// shapes (Shape -> Gather -> Unsqueeze -> Concat -> a Reshape's target; Shape -> Gather -> Add
// for a total length), as expressions over the graph's symbols. Where a dim is symbolic these
// cannot fold to constants; their symbolic value (Value::sym_value) lets the shape rules of
// their consumers (Reshape, Slice, Expand, Range, ConstantOfShape) still type their outputs
// at compile time, as ONNX Runtime's symbolic shape inference and TVM Relax's shape values do.
#ifndef KILN_COMPILER_CORE_IR_GRAPH_SYM_VALUES_H_
#define KILN_COMPILER_CORE_IR_GRAPH_SYM_VALUES_H_

#include <optional>
#include <vector>

#include "compiler_core/ir/graph/graph.h"

namespace kiln::graph {

/// The largest tensor whose elements are tracked as expressions (a shape has one per dim).
inline constexpr int64_t kMaxSymValueElements = 64;

/// The elements of `v` as expressions: its sym_value, or its values when it is an integer or
/// bool (0 and 1) constant of at most kMaxSymValueElements elements; nullopt otherwise.
std::optional<std::vector<sym::Expr>> SymElements(const Value* v);

/// The sym_value of each output of `node` (nullopt where none is known), computed from its
/// inputs' SymElements, for outputs of at most kMaxSymValueElements elements of dtype i64,
/// i32 or bool:
///   Shape                      the input's dims (start..end)
///   Identity, Reshape, Flatten, Squeeze, Unsqueeze, Cast to an integer type: the elements
///   Gather (rank-1 data, constant indices), Slice (rank-1, constant starts/ends/steps),
///   Concat (rank-1)
///   Add, Sub, Mul, Min, Max    elementwise, a one-element operand broadcast
///   Div                        FloorDiv where both operands are provably non-negative (ONNX
///                              integer Div truncates, which equals floor there)
///   Equal                      1 or 0 where provable (equal forms, or a difference whose
///                              range excludes 0)
///   Where                      a condition known element by element selects
/// Elements may all be constants (Shape of the static dims of a symbolic tensor): the caller
/// then makes the output a constant.
std::vector<std::optional<std::vector<sym::Expr>>> InferSymValues(const Node& node);

/// The elements of `v` (row-major) when they are all known expressions of the symbols and some
/// element is not a constant: a shape the model computes (Shape, and Gather, Concat or
/// arithmetic over shapes), which the runtime's shape program evaluates on the host instead of
/// a kernel. nullopt otherwise, and for a float or symbolic-typed `v`. A value a graph pass
/// created carries no sym_value: it is inferred again from its producer's operands.
std::optional<std::vector<sym::Expr>> SymbolicShapeValue(const Value& v);

}  // namespace kiln::graph

#endif  // KILN_COMPILER_CORE_IR_GRAPH_SYM_VALUES_H_
