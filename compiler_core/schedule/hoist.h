// Load-time precomputation: the nests of a kernel that depend only on its constant params
// (weights) move from the body, which runs every call, to Func::init, which runs once when the
// artifact is loaded. Winograd's weight transform U = G g Gᵀ is the case it exists for (TVM
// precomputes it with a graph-level weight-transform op and constant folding; ONNX Runtime
// prepacks weights at session creation); any schedule that computes a workspace from weights
// alone gets the same.
#ifndef KILN_COMPILER_CORE_SCHEDULE_HOIST_H_
#define KILN_COMPILER_CORE_SCHEDULE_HOIST_H_

#include "compiler_core/ir/loop/loop_ir.h"

namespace kiln::schedule {

/// Moves top-level statements of `func.body` into `func.init` (appended after any init it
/// has, in their order). A statement moves when every global buffer it loads is a const param
/// or a workspace that only moving statements store to, and everything it stores to is such a
/// workspace (a fixpoint: a workspace that a remaining statement also stores to, such as an
/// accumulator a nest zero-fills, keeps its writers in the body). Statements that store nothing
/// global stay. Returns the number of statements moved; `func` computes the same function
/// (init then body), and is unchanged when it returns 0.
int HoistConstantNests(loop::Func& func);

}  // namespace kiln::schedule

#endif  // KILN_COMPILER_CORE_SCHEDULE_HOIST_H_
