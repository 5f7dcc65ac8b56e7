// The packed layout of a constant matmul B operand: Gemm/MatMul {b_layout="packed<nr>",
// b_cols=N} read B stored as [ceil(N/nr), K, nr] (column panels of nr, zero-padded in the N
// tail) instead of [K, N]. Shape rules, the reference evaluator, the matmul-pack pass and the
// lowering all read the layout through these helpers.
#ifndef KILN_COMPILER_CORE_IR_GRAPH_MATMUL_PACKING_H_
#define KILN_COMPILER_CORE_IR_GRAPH_MATMUL_PACKING_H_

#include <cstdint>
#include <memory>
#include <string>

#include "compiler_core/ir/graph/graph.h"
#include "compiler_core/ir/graph/tensor.h"

namespace kiln::graph {

/// The b_layout attribute value of panels `nr` wide, e.g. "packed32".
std::string PackedBLayout(int64_t nr);

/// The panel width of `node`'s B (a Gemm or MatMul with b_layout="packed<nr>"), or 0 when B is
/// in the op's plain layout (no b_layout attribute). -1 when b_layout is present but malformed.
int64_t PackedBPanelWidth(const Node& node);

/// The logical column count N of `node`'s packed B (attribute b_cols).
int64_t PackedBCols(const Node& node);

/// `b` ([K, N]) packed into [ceil(N/nr), K, nr] panels, zero-padded in the N tail.
std::shared_ptr<Tensor> PackMatMulB(const Tensor& b, int64_t nr);

/// The inverse of PackMatMulB: `packed` ([P, K, nr]) back to [K, n].
std::shared_ptr<Tensor> UnpackMatMulB(const Tensor& packed, int64_t n);

}  // namespace kiln::graph

#endif  // KILN_COMPILER_CORE_IR_GRAPH_MATMUL_PACKING_H_
