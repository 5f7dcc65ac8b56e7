// Type and shape rules of the NN ops (activations, normalizations, ConvTranspose,
// losses): the "NN ops" section of ops.def.
#ifndef KILN_COMPILER_CORE_IR_GRAPH_NN_OP_RULES_H_
#define KILN_COMPILER_CORE_IR_GRAPH_NN_OP_RULES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/ir/graph/graph.h"

namespace kiln::graph {


/// Output types of a node whose op satisfies IsNnOp (op.h). Called from InferOutputTypes; same error
/// conventions. Ops that the importer decomposes (Resize, RNN, ...) are kUnimplemented here.
absl::StatusOr<std::vector<TensorType>> InferNnOpTypes(const Node& node);

/// The axes a normalization node reduces over, sorted and non-negative: [axis, rank) for
/// LayerNormalization, [2, rank) for InstanceNormalization, "axes" for
/// MeanVarianceNormalization.
std::vector<int64_t> NormalizedAxes(const Node& node);

}  // namespace kiln::graph

#endif  // KILN_COMPILER_CORE_IR_GRAPH_NN_OP_RULES_H_
