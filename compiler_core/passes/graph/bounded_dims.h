// Bounded dims (`--input-shape input=1..4,1..64,256`): one graph that runs every input length
// within the bounds. The graph is imported at the bounds (the maximums) and every tensor is
// stored padded to its bound shape; the elements past a bounded dim's run-time length are
// padding with unspecified values. Ops that keep positions apart along a dim (elementwise,
// transpose, reshapes that keep the bounded dim outermost in its group, matmul along M/N, conv
// along the batch) compute garbage in the padding and never read it into the valid region; an
// op that reduces along a bounded dim (Softmax, MatMul's K, ReduceSum/Max/...) reads its
// operand through a BoundMask that overwrites the padding with the reduction's identity (0 for
// sums and products of masked pairs, -inf for max and softmax; a mean also rescales the rest). This
// is XLA's dynamic padder (xla/service/dynamic_padder.cc: PadWithScalar before reductions) on
// Kiln's graph IR.
//
// Each dim of a value is tracked as a list of factors (row-major), each with a static bound and
// a run-time length that is the bound (static) or symbol * mul / div; a reshape that merges a
// bounded dim with inner static dims keeps a prefix (one factor), one that merges two bounded
// dims gives a composite dim (several factors; valid elements not a prefix) that may only pass
// through position-wise ops.
#ifndef KILN_COMPILER_CORE_PASSES_GRAPH_BOUNDED_DIMS_H_
#define KILN_COMPILER_CORE_PASSES_GRAPH_BOUNDED_DIMS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/ir/graph/graph.h"

namespace kiln::passes {

/// A bounded dim of the graph inputs: "input:1" (input name, dim index; dims that meet in an
/// elementwise op are one symbol, named after the first) and its range.
struct BoundSymbol {
  std::string name;
  int64_t min = 1;
  int64_t max = 1;
};

/// The run-time length of one dim: its bound when `symbol` is -1, else the symbol's value *
/// mul / div (exact).
struct DimLength {
  int symbol = -1;
  int64_t mul = 1;
  int64_t div = 1;
  bool operator==(const DimLength&) const = default;
};

/// What BoundDims leaves for the kernel plan and the runtime.
struct BoundedDims {
  std::vector<BoundSymbol> symbols;
  /// The graph input "kiln.dims", i64[symbols]: the symbols' values, filled by the runtime.
  const graph::Value* dims = nullptr;
  /// Per graph input other than `dims` and per graph output, each dim's run-time length; empty
  /// for a static tensor.
  std::vector<std::vector<DimLength>> inputs;
  std::vector<std::vector<DimLength>> outputs;
  /// Every value with a bounded dim after the graph passes (RecomputeValueLengths; empty
  /// before): its shape then, and each dim's length (symbol -1 for a static dim or one that
  /// mixes bounded dims). A BoundMask's output is needed in full along its axis, where its
  /// padding holds the fill. The kernel that computes such a value may skip its padding, which
  /// nothing reads (schedule::BoundLoops). Values are owned by the graph and never freed, so
  /// the keys stay valid; a value whose shape a later pass changed is skipped.
  struct ValueLengths {
    std::vector<int64_t> shape;
    std::vector<DimLength> dims;
  };
  std::unordered_map<const graph::Value*, ValueLengths> values;
};

/// Input shapes to import a probe graph at; a probe that is not `required` is skipped when the
/// model does not import there.
struct Probe {
  std::map<std::string, std::vector<int64_t>> shapes;
  bool required = true;
};

/// The probes of a bounded compile: `max_shapes` with every bounded dim (min < max in
/// `min_shapes`) one below its maximum; when some bounded dim's minimum is lower still, every
/// bounded dim at its minimum; and, with several bounded dims, each alone one below its
/// maximum (not required: dims the model ties together cannot move alone). Errors
/// (kInvalidArgument): an input in `min_shapes` without a shape in `max_shapes` or of another
/// rank.
absl::StatusOr<std::vector<Probe>> ProbeShapes(
    const std::map<std::string, std::vector<int64_t>>& max_shapes,
    const std::map<std::string, std::vector<int64_t>>& min_shapes);

/// Imports the model at the given input shapes.
using ShapesImporter = std::function<absl::StatusOr<std::unique_ptr<graph::Graph>>(
    const std::map<std::string, std::vector<int64_t>>&)>;

/// Makes `graph` (the model imported at `max_shapes`) run every length within the bounds: adds
/// the graph input "kiln.dims" and a BoundMask before each op that reduces along a bounded dim,
/// and returns the symbols and the inputs' and outputs' dim lengths. The model is imported again
/// through `import` at each of ProbeShapes; all are constant-folded. A constant that differs
/// between the imports (a bounded dim's length folded into a value, as Shape → Gather → Div or
/// Equal(Shape, 1) do) may only be a Reshape's target shape, and no graph output. A length
/// used as data in a way that gives the same constants at all probes (Equal(seq, 2) with
/// 1..4: false at 4, 3 and 1) goes unnoticed. Errors (kInvalidArgument, naming the node): a probe
/// that does not import; the graph's structure or a constant differs between the imports where that
/// is not allowed; an op that reads a bounded dim where it has no rule (Concat along it, Conv's
/// spatial dims, LayerNormalization over it, ArgMax/ArgMin with select_last_index, ...); a
/// bounded dim meeting a static one or another bounded dim of another bound; a graph output dim
/// that mixes bounded dims.
absl::StatusOr<BoundedDims> BoundDims(graph::Graph& graph,
                                      const std::map<std::string, std::vector<int64_t>>& max_shapes,
                                      const std::map<std::string, std::vector<int64_t>>& min_shapes,
                                      const ShapesImporter& import);

/// Recomputes `bounded.values` over `graph` after the graph passes (which replace values, e.g.
/// blocked-layout convolutions), from the inputs' lengths; BoundMask outputs are needed in full
/// along their axis. Ops without a rule leave their outputs out (computed in full).
void RecomputeValueLengths(graph::Graph& graph, BoundedDims& bounded);

/// The graph hash of a bounded compile: SHA-256 over graph::GraphHash(graph) (after BoundDims)
/// and the symbols' ranges, so that two ranges are two artifacts.
std::string BoundedGraphHash(const graph::Graph& graph, const BoundedDims& bounded);

/// "input:1=1..4" per symbol, for hashes and messages.
std::string FormatBoundSymbols(const std::vector<BoundSymbol>& symbols);

}  // namespace kiln::passes

#endif  // KILN_COMPILER_CORE_PASSES_GRAPH_BOUNDED_DIMS_H_
