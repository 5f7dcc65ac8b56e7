// Lowers one fused group of graph nodes to a loop IR kernel.
#ifndef KILN_COMPILER_CORE_LOWERING_LOWER_H_
#define KILN_COMPILER_CORE_LOWERING_LOWER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/ir/graph/graph.h"
#include "compiler_core/ir/loop/loop_ir.h"

namespace kiln::lowering {

/// A lowered kernel: the loop IR function and, for each of its params, the graph value bound to
/// it (inputs the group reads from outside itself, constants included, then the group's
/// result). Workspaces are kernel-private and bound to nothing.
struct LoweredKernel {
  loop::Func func;
  std::vector<const graph::Value*> param_values;  // same length and order as func.params
  const graph::Value* result = nullptr;           // the value the kernel writes
};

/// Lowers `nodes` — one fusion group in topological order: the anchor first, then elementwise /
/// broadcast consumers applied in its epilogue, each consuming the previous node's output — to a
/// serial, unscheduled loop nest named `kernel_name`. Loops get unique names from the op's axes
/// (e.g. "n", "oc", "oh", "ow", "ic", "kh", "kw"); reduction loops are marked is_reduction.
/// Errors: kUnimplemented naming the node and op for ops or attributes without a lowering.
absl::StatusOr<LoweredKernel> LowerGroup(const std::vector<const graph::Node*>& nodes,
                                         const std::string& kernel_name);

/// A kernel that copies `source` into a buffer of `result`'s type (same element count), used
/// for graph outputs that alias another value (reshape of an input, an output listed twice).
absl::StatusOr<LoweredKernel> LowerCopy(const graph::Value* source, const graph::Value* result,
                                        const std::string& kernel_name);

}  // namespace kiln::lowering

#endif  // KILN_COMPILER_CORE_LOWERING_LOWER_H_
