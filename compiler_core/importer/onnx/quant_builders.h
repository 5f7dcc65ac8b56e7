// Quantization ops (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger,
// QLinearMatMul, ConvInteger, QLinearConv) decomposed at import into exact graph ops: float32
// arithmetic with round-half-to-even and saturation as the ONNX spec defines them, int32 matrix
// products.
#ifndef KILN_COMPILER_CORE_IMPORTER_ONNX_QUANT_BUILDERS_H_
#define KILN_COMPILER_CORE_IMPORTER_ONNX_QUANT_BUILDERS_H_

#include <string>

#include "compiler_core/importer/onnx/import_context.h"

namespace kiln::importer {

/// Whether `op_type` (default domain) is one of the quantization ops BuildQuantOp imports.
bool IsQuantOp(const std::string& op_type);

/// The outputs of quantization op `node` (OnnxNode.op is unused; the op is proto->op_type()).
/// Scales and zero points are scalars or 1-D along `axis` (per channel); int8 and uint8
/// quantized types. Errors (naming the node): kUnimplemented for other quantized types
/// (float8, int4, int16), blocked quantization, and DynamicQuantizeLinear of non-float32.
absl::StatusOr<BuiltOutputs> BuildQuantOp(ImportContext& ctx, const OnnxNode& node);

}  // namespace kiln::importer

#endif  // KILN_COMPILER_CORE_IMPORTER_ONNX_QUANT_BUILDERS_H_
