// Optimizer ops of the ai.onnx.preview.training domain (Adagrad, Momentum, Adam), decomposed at
// import into element-wise graph ops.
#ifndef KILN_COMPILER_CORE_IMPORTER_ONNX_TRAINING_BUILDERS_H_
#define KILN_COMPILER_CORE_IMPORTER_ONNX_TRAINING_BUILDERS_H_

#include <string>

#include "compiler_core/importer/onnx/import_context.h"

namespace kiln::importer {

/// The domain of the training operators.
inline constexpr char kTrainingDomain[] = "ai.onnx.preview.training";

/// Whether (`domain`, `op_type`) is an optimizer op BuildTrainingOp imports.
bool IsTrainingOp(const std::string& domain, const std::string& op_type);

/// The outputs of optimizer op `node` (OnnxNode.op is unused; the op is proto->op_type()), as
/// the ONNX operator spec (ai.onnx.preview.training, version 1) defines them. Inputs: R (the
/// learning rate, f32 scalar), T (the update count, i64 scalar), then n tensors each of X
/// (weights), G (gradients) and the op's state (Adagrad: H; Momentum: V; Adam: V, H); outputs
/// the n new X then each state's n new values, same shapes. Errors: kInvalidArgument when the
/// input count is not 2 + k * n, an attribute is out of its domain, or X, G and the states
/// differ in type; kUnimplemented for non-f32 tensors.
absl::StatusOr<BuiltOutputs> BuildTrainingOp(ImportContext& ctx, const OnnxNode& node);

}  // namespace kiln::importer

#endif  // KILN_COMPILER_CORE_IMPORTER_ONNX_TRAINING_BUILDERS_H_
