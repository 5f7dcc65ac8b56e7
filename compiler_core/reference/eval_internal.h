// Helpers shared by the reference evaluator's per-family kernels: element access in double or
// int64, broadcast indexing, and the family entry points.
#ifndef KILN_COMPILER_CORE_REFERENCE_EVAL_INTERNAL_H_
#define KILN_COMPILER_CORE_REFERENCE_EVAL_INTERNAL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/reference/evaluator.h"

namespace kiln::reference {

using TensorVec = std::vector<TensorPtr>;
using Shape = std::vector<int64_t>;

/// All elements converted to double (f16 decoded).
std::vector<double> ToDoubles(const Tensor& t);
/// Stores `v` at flat index `i`, converted to the tensor's dtype (ints truncate, bool != 0).
void StoreDouble(Tensor& t, int64_t i, double v);
void StoreInt(Tensor& t, int64_t i, int64_t v);
/// A new tensor of `type` holding `values`.
std::shared_ptr<Tensor> FromDoubles(const TensorType& type, const std::vector<double>& values);

/// For each flat index of `out_shape`, the flat index into a tensor of `in_shape` under
/// multidirectional broadcasting.
std::vector<int64_t> BroadcastIndex(const Shape& in_shape, const Shape& out_shape);

/// "node 'n' (Op): " for error messages.
std::string NodePrefix(const graph::Node& node);

/// Per-family kernels. Inputs are already checked against the node's input types.
absl::StatusOr<TensorVec> EvalElementwise(const graph::Node& node, const TensorVec& in);
absl::StatusOr<TensorVec> EvalNn(const graph::Node& node, const TensorVec& in);
absl::StatusOr<TensorVec> EvalMovement(const graph::Node& node, const TensorVec& in);
/// The tensor, reduction and logic ops (eval_tensor.cc): every op with graph::IsTensorOp.
absl::StatusOr<TensorVec> EvalTensorOp(const graph::Node& node, const TensorVec& in);
/// The NN ops (graph::IsNnOp): activations (eval_activation.cc), normalizations
/// (eval_norm.cc), ConvTranspose and losses (eval_nn_ops.cc, which dispatches).
absl::StatusOr<TensorVec> EvalNnOp(const graph::Node& node, const TensorVec& in);
absl::StatusOr<TensorVec> EvalActivation(const graph::Node& node, const TensorVec& in);
absl::StatusOr<TensorVec> EvalNormalization(const graph::Node& node, const TensorVec& in);
/// Det (eval_linalg.cc).
absl::StatusOr<TensorVec> EvalDet(const graph::Node& node, const TensorVec& in);
/// NonZero, Compress, Unique, NonMaxSuppression and RuntimeCheck (eval_data_dependent.cc).
absl::StatusOr<TensorVec> EvalDataDependent(const graph::Node& node, const TensorVec& in);
/// TfIdfVectorizer over integer tokens (eval_text.cc).
absl::StatusOr<TensorVec> EvalTfIdfVectorizer(const graph::Node& node, const TensorVec& in);
/// GridSample, RoiAlign and ResizeTap (eval_sampling.cc), as onnx/reference/ops/op_grid_sample.py,
/// op_roi_align.py and op_resize.py.
absl::StatusOr<TensorVec> EvalSampling(const graph::Node& node, const TensorVec& in);
/// Loop: its body graph evaluated per iteration (eval_control.cc).
absl::StatusOr<TensorVec> EvalLoop(const graph::Node& node, const TensorVec& in);
/// LayoutTransform and blocked Conv/pool nodes (graph::IsLayoutNode; eval_layout.cc).
absl::StatusOr<TensorVec> EvalLayout(const graph::Node& node, const TensorVec& in);

}  // namespace kiln::reference

#endif  // KILN_COMPILER_CORE_REFERENCE_EVAL_INTERNAL_H_
