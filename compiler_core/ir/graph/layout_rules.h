// The channel-blocked layout NC[spatial]<x>c of CPU convnets: layout names, blocked types, and
// the shape rules of LayoutTransform and of Conv/pool nodes carrying a "layout" attribute.
#ifndef KILN_COMPILER_CORE_IR_GRAPH_LAYOUT_RULES_H_
#define KILN_COMPILER_CORE_IR_GRAPH_LAYOUT_RULES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/ir/graph/graph.h"

namespace kiln::graph {

/// The block size x of "NCHW<x>c" (x >= 1), 0 for "NCHW", -1 for anything else.
int64_t LayoutBlock(const std::string& layout);
/// "NCHW<x>c".
std::string BlockedLayoutName(int64_t block);
/// A plain [N, C, spatial...] type blocked: [N, ceil(C/x), spatial..., x] (C static; N and the
/// spatial dims may be symbolic).
TensorType BlockedType(const TensorType& plain, int64_t block);
/// A blocked [N, Cb, spatial..., x] type unblocked to [N, channels, spatial...].
TensorType UnblockedType(const TensorType& blocked, int64_t channels);

/// True for LayoutTransform, Bitcast and for
/// Conv/MaxPool/AveragePool/GlobalAveragePool/GlobalMaxPool nodes with a "layout" attribute; their
/// types come from InferLayoutTypes.
bool IsLayoutNode(const Node& node);

/// Output types of a layout node (IsLayoutNode). Blocked Conv ("layout"="NCHW<x>c", explicit
/// pads): input 0 is blocked [N, ICb, H, W, x] or plain [N, C, H, W]; weights are packed
/// [OCb, ICb, KH, KW, ICI, x] (plain input: ICb = 1, ICI = C; depthwise, group > 1:
/// [OCb, 1, KH, KW, 1, x]); bias [OCb * x]; output [N, OCb, OH, OW, x]. Blocked pools: input
/// [N, Cb, H, W, x], output [N, Cb, OH, OW, x] ([N, Cb, 1, 1, x] for global pools).
/// A blocked Conv with "quant"="u8s8" is an int8 convolution on packed words (oneDNN's u8s8s32):
/// input i32 [N, ICb, H, W, ICW] where word j holds the uint8 channels 4j..4j+3 of the block,
/// weights i32 [OCb, ICb, KH, KW, ICW, x] where word j holds the int8 weights of those input
/// channels for one output channel, bias i32 [OCb * x], output i32 [N, OCb, OH, OW, x]:
///   out[n, ocb, oh, ow, oc] = bias[ocb * x + oc] + sum over icb, kh, kw, j of
///                             dot4_u8s8(x[n, icb, ih, iw, j], w[ocb, icb, kh, kw, j, oc])
/// with out-of-bounds input words equal to attribute "pad_value" (default 0; each byte is the
/// input's zero point). A blocked depthwise Conv with "quant"="u8" reads uint8 [N, Cb, H, W, x]
/// with int32 weights [Cb, 1, KH, KW, 1, x] and bias i32 [Cb * x] into i32 [N, Cb, OH, OW, x]:
///   out[n, cb, oh, ow, c] = bias[cb * x + c] + sum over kh, kw of
///                           int32(x[n, cb, ih, iw, c]) * w[cb, 0, kh, kw, 0, c]
/// out-of-bounds inputs reading "pad_value". Bitcast: the input's bytes as dtype "to"; the last
/// dim scales.
/// Errors: kInvalidArgument naming the node.
absl::StatusOr<std::vector<TensorType>> InferLayoutTypes(const Node& node);

}  // namespace kiln::graph

#endif  // KILN_COMPILER_CORE_IR_GRAPH_LAYOUT_RULES_H_
