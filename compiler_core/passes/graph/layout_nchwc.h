// Converts CPU convnet chains to the channel-blocked layout NCHW<x>c, with constant weights
// packed at compile time and LayoutTransform nodes only at the edges of each converted region.
#ifndef KILN_COMPILER_CORE_PASSES_GRAPH_LAYOUT_NCHWC_H_
#define KILN_COMPILER_CORE_PASSES_GRAPH_LAYOUT_NCHWC_H_

#include <string_view>

#include "compiler_core/passes/graph/pass.h"

namespace kiln::passes {

/// Options of the layout-nchwc pass.
struct LayoutNchwcOptions {
  /// The block size x: the target's f32 SIMD lanes (16 for AVX-512, 8 for AVX2). Below 4 the
  /// pass does nothing.
  int f32_lanes = 16;
};

/// What: walks the nodes in order and converts, to NCHW<x>c (x = f32_lanes):
///   - 2-D f32 or i32 Conv (input and constant weights of one type; i32 are the accumulators
///     of quantized convolutions) with constant bias if any, group 1 or depthwise, at least
///     x/2 output channels: weights packed
///     OIHW → [OCb, ICb, KH, KW, ICI, x] (ICI = x; a plain input with C < x stays NCHW and
///     gets ICb = 1, ICI = C), bias zero-padded to [OCb*x]; attribute layout="NCHW<x>c";
///   - MaxPool/AveragePool/GlobalAveragePool/GlobalMaxPool whose input is blocked;
///   - Relu, Clip, Add, Sub, Mul, Max, Min, LeakyRelu, HardSigmoid, HardSwish, Sigmoid, Tanh,
///     Cast, Round and Div by a scalar with a blocked input (f32, i32, u8 or i8: the
///     requantization chains of int8 models stay blocked): same op on the blocked shapes,
///     channel-broadcast constants re-laid out, plain same-shape operands blocked by a
///     LayoutTransform;
///   - Concat along channels of blocked inputs whose channel counts (all but the last) are
///     multiples of x.
///   A converted value still read by an unconverted node (Flatten, Gemm, ...) or returned by
///   the graph is unblocked by one LayoutTransform. Padded channels hold zeros or other finite
///   values and are always multiplied by zero weights or dropped.
/// Requires: a verified graph, before fusion. Guarantees: a verified graph computing the same
///   outputs; deterministic.
///
///   before: %3 = Conv(%0, %1, %2) {...} : f32[1,32,8,8]
///   after:  %6 = Conv(%0, %4, %5) {..., layout="NCHW16c"} : f32[1,2,8,8,16]
///           %7 = LayoutTransform(%6) {channels=32, dst_layout="NCHW", ...} : f32[1,32,8,8]
class LayoutNchwc final : public GraphPass {
 public:
  explicit LayoutNchwc(LayoutNchwcOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "layout-nchwc"; }
  absl::StatusOr<bool> Run(graph::Graph& graph) override;

 private:
  LayoutNchwcOptions options_;
};

}  // namespace kiln::passes

#endif  // KILN_COMPILER_CORE_PASSES_GRAPH_LAYOUT_NCHWC_H_
