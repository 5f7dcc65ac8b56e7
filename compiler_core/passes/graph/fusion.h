// Operator fusion: assigns fusion group ids (TVM-style, from each op's fusion class) that the
// lowering turns into one kernel per group.
#ifndef KILN_COMPILER_CORE_PASSES_GRAPH_FUSION_H_
#define KILN_COMPILER_CORE_PASSES_GRAPH_FUSION_H_

#include <cstdint>
#include <string_view>

#include "compiler_core/passes/graph/pass.h"

namespace kiln::passes {

/// The most nodes one fusion group holds (anchor included). The lowering applies a chain's
/// members as one nested expression per element, and codegen walks expressions recursively,
/// so an unbounded chain (a 100k-node Relu chain) would nest 100k deep and overflow the stack;
/// a longer chain continues in a new group. Real epilogues are a handful of ops.
inline constexpr int kMaxFusedNodes = 64;

/// Assigns fusion groups. Contract (lowering and pipeline rely on it exactly):
///  - afterwards EVERY node has a group id >= 0 (any earlier ids are recomputed);
///  - groups are numbered 0, 1, 2, ... in the topological order of their anchors;
///  - a group is an anchor followed by a chain c1, c2, ... where each ci has fusion class
///    kElementwise or kBroadcast and one output, ci's output shape equals the anchor's output 0
///    shape, and so does its dtype unless the anchor is elementwise/broadcast or a blocked Conv
///    (an int8 conv's requantization to uint8 joins its group), ci reads the previous member's
///    output 0 (the anchor's for c1), and
///    that output has exactly one user (ci), is not a graph output, and the previous member's
///    other outputs are unused;
///  - a group has at most kMaxFusedNodes nodes;
///  - kOpaque ops and view ops (Reshape, Flatten, Squeeze, Unsqueeze, Identity) never take
///    consumers and are never consumers; any other op may anchor a group;
///  - chain members come after their anchor in topological order (the node order is unchanged);
///  - every value a group reads from outside itself is a graph input, a constant, or produced by
///    a group with a smaller id, so running the groups in id order is valid.
/// Example: Conv → Add(residual) → Relu is one group; Gemm → Relu one group; MaxPool alone.
class OperatorFusion final : public GraphPass {
 public:
  std::string_view name() const override { return "fusion"; }
  absl::StatusOr<bool> Run(graph::Graph& graph) override;
};

}  // namespace kiln::passes

#endif  // KILN_COMPILER_CORE_PASSES_GRAPH_FUSION_H_
