// Rewrites the int32 convolutions of quantized models (ConvInteger, QLinearConv and fused QDQ
// convolutions, as the importer decomposes them) into u8s8 convolutions on packed words, which
// codegen maps to VPDPBUSD: four 8-bit multiply-adds per 32-bit lane.
#ifndef KILN_COMPILER_CORE_PASSES_GRAPH_CONV_U8S8_H_
#define KILN_COMPILER_CORE_PASSES_GRAPH_CONV_U8S8_H_

#include <string_view>

#include "compiler_core/passes/graph/pass.h"

namespace kiln::passes {

/// Options of the conv-u8s8 pass.
struct ConvU8S8Options {
  /// The target has a 4-way u8 x s8 dot product at its vector width (Target::HasInt8Dot4).
  /// Without one the pass does nothing: the int32 convolution is faster than emulating it.
  bool int8_dot4 = false;
};

/// What: a blocked int32 Conv (layout-nchwc, group 1) whose input is
///   [LayoutTransform to NCHW<x>c of] [Sub(·, zp) of] Cast to i32 of an 8-bit tensor u
/// (zp a scalar constant) and whose packed weights all lie in [-128, 127] becomes
///   Conv{quant="u8s8", pad_value=zp*0x01010101}(Bitcast(u8 blocked), weight words, bias')
/// (graph/layout_rules.h). The algebra, per output channel o over its window's taps t:
///   sum_t (u_t - zp) * w_t = sum_t u_t * w_t - zp * sum_t w_t,
/// so bias' = bias - zp * sum_t w_t (a constant) and padding reads zp (a zero after the
/// subtraction). An int8 u is first made uint8 by adding 128 (with zp + 128). A plain u (the
/// RGB stem, or a value the layout pass left plain) is blocked by 4 * ceil(ICI / 4) channels
/// for the conv; a blocked u is read in place through the Bitcast view (no copy). Convolutions
/// that do not match are left as they are (still exact, in int32).
/// A blocked depthwise Conv (group = C) of such an input becomes
///   Conv{quant="u8", pad_value=zp}(uint8 u blocked, its int32 weights, bias')
/// with the same zero-point folding: no product sums over channels, so nothing is packed, but
/// the conv reads the uint8 data itself (a quarter of the int32 operand's bytes) and no kernel
/// writes the int32 copy.
/// Requires: a verified graph after layout-nchwc, before fusion. Guarantees: a verified graph
///   computing the same outputs bit for bit; deterministic.
///
///   before: %5 = Cast(%u) {to=6} : i32[1,4,8,8,16]
///           %6 = Sub(%5, %zp) : i32[1,4,8,8,16]
///           %7 = Conv(%6, %w) {layout="NCHW16c", ...} : i32[1,2,8,8,16]
///   after:  %8 = Bitcast(%u) {to=6} : i32[1,4,8,8,4]
///           %9 = Conv(%8, %w_u8s8, %bias_u8s8) {layout="NCHW16c", pad_value=..., quant="u8s8",
///           ...}
///                : i32[1,2,8,8,16]
class ConvU8S8 final : public GraphPass {
 public:
  explicit ConvU8S8(ConvU8S8Options options = {}) : options_(options) {}
  std::string_view name() const override { return "conv-u8s8"; }
  absl::StatusOr<bool> Run(graph::Graph& graph) override;

 private:
  ConvU8S8Options options_;
};

}  // namespace kiln::passes

#endif  // KILN_COMPILER_CORE_PASSES_GRAPH_CONV_U8S8_H_
