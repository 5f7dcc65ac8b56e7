// Internal interface between LowerGroup and the per-op-family lowerings: each family turns its
// anchor node into loop nests that write the kernel's "out" buffer, applying the group's fused
// elementwise consumers (the Epilogue) where the final value of an element is known.
#ifndef KILN_COMPILER_CORE_LOWERING_OP_LOWERING_H_
#define KILN_COMPILER_CORE_LOWERING_OP_LOWERING_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler_core/ir/graph/graph.h"
#include "compiler_core/ir/loop/loop_ir.h"
#include "compiler_core/lowering/kernel_builder.h"

namespace kiln::lowering {

/// Values already computed inside the current nest body, by graph value.
using ValueExprs = std::map<const graph::Value*, loop::Expr>;

/// The fused consumers of a group's anchor, applied to the anchor's value at the final store.
class Epilogue {
 public:
  Epilogue(KernelBuilder& builder, const graph::Value* anchor_out,
           std::vector<const graph::Node*> consumers)
      : builder_(builder), anchor_out_(anchor_out), consumers_(std::move(consumers)) {}

  bool empty() const { return consumers_.empty(); }
  /// The consumers applied to `value`, the anchor's output element at `out_idx`.
  absl::StatusOr<loop::Expr> Apply(loop::Expr value, const std::vector<loop::Expr>& out_idx) const;
  /// kUnimplemented unless the result dtype equals the anchor's (needed by ops that accumulate
  /// in the result buffer).
  absl::Status CheckSameDType(const graph::Node& anchor) const;
  /// A nest "epi.d0", ... over the result: out = Apply(pre(src)), where `src` is the buffer the
  /// anchor accumulated into (null: out itself; an accumulator workspace of the anchor's dtype
  /// when the epilogue changes it). `pre` may be null (identity); returns null when there is
  /// nothing to do (no consumers, no `pre` and src is out).
  absl::StatusOr<loop::Stmt> FinalNest(
      const std::function<loop::Expr(loop::Expr, const std::vector<loop::Expr>&)>& pre,
      loop::BufferRef src = nullptr) const;

 private:
  KernelBuilder& builder_;
  const graph::Value* anchor_out_;
  std::vector<const graph::Node*> consumers_;
};

/// The value of elementwise/broadcast `node` at output index `out_idx`; operands come from
/// `computed` when present, otherwise loads of external inputs (broadcast; BatchNormalization
/// parameters by channel; constant Clip bounds as immediates). Records the result in `computed`.
absl::StatusOr<loop::Expr> LowerElementwiseNode(KernelBuilder& b, const graph::Node& node,
                                                const std::vector<loop::Expr>& out_idx,
                                                ValueExprs& computed);

// Per-family lowerings of the group anchor `node`. Each returns the nests in execution order.
absl::StatusOr<std::vector<loop::Stmt>> LowerElementwiseAnchor(KernelBuilder& b,
                                                               const graph::Node& node,
                                                               const Epilogue& epi);
absl::StatusOr<std::vector<loop::Stmt>> LowerConv(KernelBuilder& b, const graph::Node& node,
                                                  const Epilogue& epi);
absl::StatusOr<std::vector<loop::Stmt>> LowerMatMul(KernelBuilder& b, const graph::Node& node,
                                                    const Epilogue& epi);
absl::StatusOr<std::vector<loop::Stmt>> LowerPool(KernelBuilder& b, const graph::Node& node,
                                                  const Epilogue& epi);
/// LayoutTransform (layout.cc): NC[spatial] ↔ NC[spatial]<x>c.
absl::StatusOr<std::vector<loop::Stmt>> LowerLayoutTransform(KernelBuilder& b,
                                                             const graph::Node& node,
                                                             const Epilogue& epi);
/// Bitcast (layout.cc) of 8-bit elements to i32 words, where it is copied rather than a view.
absl::StatusOr<std::vector<loop::Stmt>> LowerBitcast(KernelBuilder& b, const graph::Node& node,
                                                     const Epilogue& epi);
absl::StatusOr<std::vector<loop::Stmt>> LowerSoftmax(KernelBuilder& b, const graph::Node& node,
                                                     const Epilogue& epi);
absl::StatusOr<std::vector<loop::Stmt>> LowerDataMovement(KernelBuilder& b,
                                                          const graph::Node& node,
                                                          const Epilogue& epi);

/// The tensor, reduction and logic ops (tensor_ops.cc): the value of an elementwise one at
/// `out_idx` (comparisons, logic, Where, Mod, BitShift, Mean, unary math), and the nests of an
/// anchor (reductions, ArgMax/ArgMin, scatter, CumSum, Einsum, index-driven data movement).
absl::StatusOr<loop::Expr> LowerTensorElementwise(KernelBuilder& b, const graph::Node& node,
                                                  const std::vector<loop::Expr>& out_idx,
                                                  const ValueExprs& computed);
absl::StatusOr<std::vector<loop::Stmt>> LowerTensorOp(KernelBuilder& b, const graph::Node& node,
                                                      const Epilogue& epi);

/// The NN ops (graph::IsNnOp): the value of an activation at `out_idx`
/// (activation.cc), and the nests of an anchor (nn_ops.cc, dispatching normalizations to
/// norm.cc).
absl::StatusOr<loop::Expr> LowerActivation(KernelBuilder& b, const graph::Node& node,
                                           const std::vector<loop::Expr>& out_idx,
                                           const ValueExprs& computed);
absl::StatusOr<std::vector<loop::Stmt>> LowerNnOp(KernelBuilder& b, const graph::Node& node,
                                                  const Epilogue& epi);
absl::StatusOr<std::vector<loop::Stmt>> LowerNormalization(KernelBuilder& b,
                                                           const graph::Node& node,
                                                           const Epilogue& epi);

/// TopK (topk.cc): values to "out", int64 indices to the extra result "out1".
absl::StatusOr<std::vector<loop::Stmt>> LowerTopK(KernelBuilder& b, const graph::Node& node,
                                                  const Epilogue& epi);

/// NonZero, Compress, Unique, NonMaxSuppression and RuntimeCheck (data_dependent.cc): serial
/// nests with a run-time shape or value check.
absl::StatusOr<std::vector<loop::Stmt>> LowerDataDependent(KernelBuilder& b,
                                                           const graph::Node& node,
                                                           const Epilogue& epi);
/// TfIdfVectorizer over integer tokens (tfidf.cc).
absl::StatusOr<std::vector<loop::Stmt>> LowerTfIdfVectorizer(KernelBuilder& b,
                                                             const graph::Node& node,
                                                             const Epilogue& epi);
/// Det (det.cc): Gaussian elimination with partial pivoting per matrix.
absl::StatusOr<std::vector<loop::Stmt>> LowerDet(KernelBuilder& b, const graph::Node& node,
                                                 const Epilogue& epi);
/// GridSample, RoiAlign and ResizeTap (sampling.cc): per output element, interpolation taps whose
/// indices are computed from the grid / rois (loads clamped in bounds).
absl::StatusOr<std::vector<loop::Stmt>> LowerSampling(KernelBuilder& b, const graph::Node& node,
                                                      const Epilogue& epi);

/// kUnimplemented "node 'x' (Op): no lowering for <what>".
absl::Status NoLowering(const graph::Node& node, const std::string& what);

}  // namespace kiln::lowering

#endif  // KILN_COMPILER_CORE_LOWERING_OP_LOWERING_H_
