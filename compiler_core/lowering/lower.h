// Lowers one fused group of graph nodes to a loop IR kernel.
#ifndef KILN_COMPILER_CORE_LOWERING_LOWER_H_
#define KILN_COMPILER_CORE_LOWERING_LOWER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/ir/graph/graph.h"
#include "compiler_core/ir/loop/loop_ir.h"

namespace kiln::lowering {

/// How the kernels of a graph with symbolic dims receive the symbols' values: symbol k (in
/// `names` order) is element k of `dims`, the graph input "kiln.dims" (i64[names.size()]),
/// which the kernel reads through its param "dims" (docs/symbolic-shapes.md).
struct KernelSymbols {
  std::vector<std::string> names;
  const graph::Value* dims = nullptr;
};

/// A lowered kernel: the loop IR function and, for each of its params, the graph value bound to
/// it (inputs the group reads from outside itself, constants included, then the group's
/// results in order). Workspaces are kernel-private and bound to nothing.
struct LoweredKernel {
  loop::Func func;
  std::vector<const graph::Value*> param_values;  // same length and order as func.params
  /// The values the kernel writes, in order: the group's result first, then any further
  /// outputs of a multi-output anchor (TopK's indices, MaxPool's Indices). They are the last
  /// results.size() params.
  std::vector<const graph::Value*> results;

  /// An output shape the kernel computes from operands that arrive at run time: before its
  /// other nests, the kernel stores the shape (int64, one per dim) into the workspace named
  /// `workspace`; the runtime compares it with `expected` after the call (artifact.proto
  /// ShapeCheck).
  struct ShapeCheck {
    std::string workspace;
    std::vector<int64_t> expected;
    std::string what;  // "node 'y' (Slice): starts/ends/axes/steps"
    bool values = false;  // checks values (RuntimeCheck), not an output shape
    /// `expected` is an upper bound: the kernel's result is a graph output whose run-time shape
    /// is the stored one (ShapeCheck.bounded).
    bool bounded = false;
  };
  std::vector<ShapeCheck> shape_checks;
};

/// Kernel layout produced by LowerGroup (schedules and default schedules rely on it):
///
/// - Params: the group's external inputs in first-use order ("in0", "in1", ...; constants
///   included, omitted optional inputs skipped, each value once), then the result "out", then
///   the further results of a multi-output anchor ("out1", ...) LAST.
///   Compile-time operands (Pad pads/constant_value, Slice starts/axes/steps, Reshape shape,
///   constant Clip bounds) are folded into the IR and are not params.
/// - Elementwise/broadcast anchors and data movement: one nest over the output, loops "d0",
///   "d1", ...; fused consumers are applied at the store. Concat has one nest per input
///   ("cat<k>.d0", ...).
/// - Conv (NC[D]HW): optional pad nest "pad.n", "pad.c", "pad.[d|h|w]" writing workspace
///   "xpad" (only when pads are non-zero); init nest "init.n", "init.oc", "init.o[d|h|w]"
///   (out = bias or 0); update nest "n", "oc", "o[d|h|w]", then reductions "ic", "k[d|h|w]"
///   innermost; epilogue nest "epi.d0", ... (only with fused consumers).
/// - Gemm: "init.i", "init.j"; update "i", "j", "k" (k a reduction). MatMul: batch loops "b0",
///   ... before "i"/"j" (absent for a 1-D operand), then "k".
/// - MaxPool/AveragePool/LpPool: "init.n", "init.c", "init.o*"; update "n", "c", "o*", "k*"
///   (reduction); AveragePool always has the epilogue nest (divide by the window count), LpPool
///   unless p = 1 (the 1/p-th power of the sum of |x|^p). MaxPool with a
///   used Indices output writes it as result "out1" (flattened NC[spatial] index, row-major or,
///   with storage_order 1, column-major over the spatial dims) in the same nests.
///   GlobalAverage/Max/LpPool: "init.n", "init.c"; update "n", "c", then "d"/"h"/"w" reductions.
/// - Softmax/LogSoftmax: one nest over the non-axis dims ("d<axis index>") whose body runs four
///   axis loops "max.a" (reduction), "exp.a", "sum.a" (reduction), "norm.a", with workspaces
///   "max" and "sum" indexed by the non-axis dims.
/// - TopK: one nest over the non-axis dims ("d<i>") whose body clears workspace "taken" (loop
///   "clr.a"), then for each rank "j" (a reduction: ranks depend on the earlier ones) scans the
///   axis "a" (reduction) for the best untaken element (ties: the lower index), writes it to
///   "out" (values) and "out1" (int64 indices) and marks it taken. Output is always sorted.
/// No nest ever loads out of bounds (padding goes through clamped indices under a select).
///
/// Lowers `nodes` — one fusion group in topological order: the anchor first, then elementwise /
/// broadcast consumers applied in its epilogue, each consuming the previous node's output — to a
/// serial, unscheduled loop nest named `kernel_name`. Loops get unique names from the op's axes
/// (e.g. "n", "oc", "oh", "ow", "ic", "kh", "kw"); reduction loops are marked is_reduction.
/// Errors: kUnimplemented naming the node and op for ops or attributes without a lowering.
/// With symbolic dims in the group's types, `symbols` (the graph's) gives the loops over
/// them run-time limits and the buffers dim expressions; ops whose lowering reads static
/// shapes refuse a symbolic type (kUnimplemented, naming the node).
absl::StatusOr<LoweredKernel> LowerGroup(const std::vector<const graph::Node*>& nodes,
                                         const std::string& kernel_name,
                                         const KernelSymbols* symbols = nullptr);

/// A kernel that copies `source` into a buffer of `result`'s type (same element count), used
/// for graph outputs that alias another value (reshape of an input, an output listed twice).
/// With symbolic types the two must have equal dims (`symbols`: the graph's).
absl::StatusOr<LoweredKernel> LowerCopy(const graph::Value* source, const graph::Value* result,
                                        const std::string& kernel_name,
                                        const KernelSymbols* symbols = nullptr);

}  // namespace kiln::lowering

#endif  // KILN_COMPILER_CORE_LOWERING_LOWER_H_
