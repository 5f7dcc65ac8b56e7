// Folds inference-form BatchNormalization into the preceding Conv.
//
// What: for y = BN(Conv(x, w, b), scale, bias, mean, var) with epsilon eps, per output channel m
//     s[m]  = scale[m] / sqrt(var[m] + eps)
//     w'[m] = w[m] * s[m]                      (every weight of output channel m)
//     b'[m] = (b[m] - mean[m]) * s[m] + bias[m]   (b = 0 when the Conv has no bias)
//   computed in double and stored as f32; the Conv and the BN are replaced by one new Conv
//   reading fresh w'/b' constants (the old weights may be shared and are never mutated).
// Requires: no fusion groups assigned yet. Folds only when the Conv output is used by the BN
//   alone and is not a graph output, w, b and the four BN params are f32 constants of the
//   expected sizes, and the BN's optional extra outputs are unused. Any other BN stays.
// Guarantees: the graph computes the same function up to f32 rounding; a graph output produced by
//   the BN keeps its name.
//
//   before: %5 = Conv(%0, %1) {...} : f32[1,8,4,4]
//           %6 = BatchNormalization(%5, %2, %3, %4, %4) {epsilon=1e-05} : f32[1,8,4,4]
//   after:  %5 = Conv(%0, %1', %2') {...} : f32[1,8,4,4]
#include "compiler_core/passes/graph/fold_batchnorm.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/passes/graph/rewrite.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::passes {
namespace {

using graph::Graph;
using graph::Node;
using graph::OpKind;
using graph::Value;

/// The constant tensor behind `value` if it is an f32 constant, else nullptr.
const Tensor* F32Constant(const Value* value) {
  if (value == nullptr || !value->is_constant()) return nullptr;
  const Tensor* t = value->constant().get();
  return t->type.dtype == DType::kFloat32 ? t : nullptr;
}

/// The Conv feeding `bn` if the pair can be folded, else nullptr.
Node* FoldableConv(const Graph& graph, const Node& bn) {
  if (bn.num_inputs() != 5) return nullptr;
  for (int i = 1; i < static_cast<int>(bn.outputs().size()); ++i) {
    if (!IsUnused(graph, bn.output(i))) return nullptr;
  }
  Value* x = bn.input(0);
  if (x == nullptr || x->producer() == nullptr) return nullptr;
  Node* conv = x->producer();
  if (conv->op() != OpKind::kConv || conv->outputs().size() != 1) return nullptr;
  if (graph.IsGraphOutput(x) || graph.Users(x).size() != 1) return nullptr;
  if (x->type().dtype != DType::kFloat32 || x->type().rank() < 2) return nullptr;
  if (bn.output(0)->type() != x->type()) return nullptr;
  const Tensor* w = F32Constant(conv->input(1));
  if (w == nullptr || w->type.rank() < 1) return nullptr;
  int64_t channels = w->type.shape[0];
  if (x->type().shape[1] != channels) return nullptr;
  Value* b = conv->input(2);
  if (b != nullptr && (F32Constant(b) == nullptr || b->type().NumElements() != channels)) {
    return nullptr;
  }
  for (int i = 1; i < 5; ++i) {
    const Tensor* p = F32Constant(bn.input(i));
    if (p == nullptr || p->type.NumElements() != channels) return nullptr;
  }
  return conv;
}

/// Computes the folded weight and bias constants.
std::pair<std::shared_ptr<Tensor>, std::shared_ptr<Tensor>> FoldedWeights(const Node& conv,
                                                                           const Node& bn) {
  const Tensor& w = *conv.input(1)->constant();
  const Tensor* b = conv.input(2) ? conv.input(2)->constant().get() : nullptr;
  const Tensor& scale = *bn.input(1)->constant();
  const Tensor& shift = *bn.input(2)->constant();
  const Tensor& mean = *bn.input(3)->constant();
  const Tensor& var = *bn.input(4)->constant();
  double eps = graph::BatchNormalizationAttrs::Of(bn).epsilon;
  int64_t channels = w.type.shape[0];
  int64_t per_channel = channels == 0 ? 0 : w.type.NumElements() / channels;

  auto new_w = Tensor::Zeros(w.type);
  auto new_b = Tensor::Zeros(TensorType{DType::kFloat32, {channels}});
  for (int64_t m = 0; m < channels; ++m) {
    double s = scale.GetAsDouble(m) / std::sqrt(var.GetAsDouble(m) + eps);
    for (int64_t k = 0; k < per_channel; ++k) {
      int64_t i = m * per_channel + k;
      new_w->mutable_data<float>()[i] = static_cast<float>(w.GetAsDouble(i) * s);
    }
    double bias = b ? b->GetAsDouble(m) : 0.0;
    new_b->mutable_data<float>()[m] =
        static_cast<float>((bias - mean.GetAsDouble(m)) * s + shift.GetAsDouble(m));
  }
  return {new_w, new_b};
}

/// The pattern, rooted at the BN: Conv → BN becomes one Conv.
absl::StatusOr<bool> FoldBatchNormIntoConv(Node& bn, Rewriter& rewriter) {
  if (bn.op() != OpKind::kBatchNormalization) return false;
  Graph& graph = rewriter.graph();
  Node* conv = FoldableConv(graph, bn);
  if (conv == nullptr) return false;
  auto [w, b] = FoldedWeights(*conv, bn);
  Value* w_value = graph.AddConstant(absl::StrCat(conv->input(1)->name(), "_bn"), std::move(w));
  Value* b_value = graph.AddConstant(absl::StrCat(conv->name(), "_bn_bias"), std::move(b));
  Node* folded = graph.InsertNodeBefore(conv, OpKind::kConv, conv->name(),
                                        {conv->input(0), w_value, b_value},
                                        {conv->output(0)->type()}, conv->attrs());
  folded->output(0)->set_name(conv->output(0)->name());
  rewriter.ReplaceAllUsesWith(bn.output(0), folded->output(0));
  rewriter.EraseNode(&bn);
  rewriter.EraseNode(conv);
  return true;
}

}  // namespace

absl::StatusOr<bool> FoldBatchNorm::Run(Graph& graph) {
  KILN_RETURN_IF_ERROR(CheckRunsBeforeFusion(graph, name()));
  return ApplyPatterns(graph, {FoldBatchNormIntoConv});
}

}  // namespace kiln::passes
