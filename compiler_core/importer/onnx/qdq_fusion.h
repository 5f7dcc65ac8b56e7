// QDQ convolutions (DequantizeLinear -> Conv [-> Relu] -> QuantizeLinear, as ONNX Runtime's and
// TensorRT's QDQ quantizers write int8 models) rewritten into QLinearConv before import.
#ifndef KILN_COMPILER_CORE_IMPORTER_ONNX_QDQ_FUSION_H_
#define KILN_COMPILER_CORE_IMPORTER_ONNX_QDQ_FUSION_H_

#include "onnx/onnx_pb.h"

namespace kiln::importer {

/// Replaces each QuantizeLinear whose input is a Conv (or a Relu of one) reading a
/// DequantizeLinear'd activation (per-tensor scale) and a DequantizeLinear'd constant weight
/// (per-tensor or per-output-channel scale), with an int32 bias (zero point 0, scale exactly
/// x_scale * w_scale) if any, by QLinearConv (and Max(y, y_zero_point) for the Relu) writing the
/// QuantizeLinear's output: the integer arithmetic of ONNX Runtime's QDQ transformer (exact int32
/// accumulation, one float requantization by x_scale * w_scale / y_scale), where the QDQ
/// graph's float semantics would round twice. When any pattern was fused, every node whose
/// outputs nothing reads any more (the replaced Conv, Relu and weight DequantizeLinear) is
/// removed from `graph`, so it is never imported. A pattern whose intermediate values have other
/// readers, or whose
/// parameters are not constants, is left as it is. `opset` is the model's default-domain opset
/// (QLinearConv needs 10, Max on 8-bit integers 12). Also replaces each QuantizeLinear of a
/// MatMul of two DequantizeLinear'd operands (per-tensor scale for A, per-tensor or per-column
/// for a constant 2-D B; 8-bit zero point initializers on both) by QLinearMatMul, the same
/// integer arithmetic for products (MatMul has no bias); and each Gemm {alpha=1, beta=1,
/// transA=0} of a DequantizeLinear'd activation and constant weight (per-tensor or per output
/// channel, [N, K] with transB=1 or [K, N]) and an int32 bias as above, with or without a
/// QuantizeLinear after it, by MatMulInteger (weight transposed at compile time when transB)
/// + bias, Cast, a constant multiplier x_scale * w_scale[n] [/ y_scale] and [QuantizeLinear
/// with scale 1 and the output zero point]: QLinearConv's arithmetic for a Linear layer.
/// Returns the number of fused patterns.
int FuseQdqConvs(onnx::GraphProto& graph, int opset);

}  // namespace kiln::importer

#endif  // KILN_COMPILER_CORE_IMPORTER_ONNX_QDQ_FUSION_H_
