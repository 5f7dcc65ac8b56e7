// Type and shape rules of the NN ops of issue 4 (activations, normalizations, ConvTranspose,
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

/// The attributes of a ResizeTap node (ops.def), with their defaults.
struct ResizeTapAttrs {
  int64_t axis, in, out, tap;
  std::string mode, nearest_mode, coord;
  double cubic_a;
  bool exclude_outside;
  bool index;  // part "index" (else "coeff")

  explicit ResizeTapAttrs(const AttrMap& a)
      : axis(a.GetInt("axis", 0)), in(a.GetInt("in", 1)), out(a.GetInt("out", 1)),
        tap(a.GetInt("tap", 0)), mode(a.GetString("mode", "nearest")),
        nearest_mode(a.GetString("nearest_mode", "round_prefer_floor")),
        coord(a.GetString("coordinate_transformation_mode", "half_pixel")),
        cubic_a(a.GetFloat("cubic_coeff_a", -0.75f)),
        exclude_outside(a.GetInt("exclude_outside", 0) != 0),
        index(a.GetString("part", "index") == "index") {}
};

}  // namespace kiln::graph

#endif  // KILN_COMPILER_CORE_IR_GRAPH_NN_OP_RULES_H_
