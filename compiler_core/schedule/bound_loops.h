// Run-time loop limits for bounded dims: after scheduling, a serial or parallel loop whose
// iterations past some point only store into the padding of bounded dims (positions at or past
// the run-time length, which no later kernel reads) gets that point as its limit, so a kernel
// compiled for the bounds does work in proportion to the lengths of the run.
#ifndef KILN_COMPILER_CORE_SCHEDULE_BOUND_LOOPS_H_
#define KILN_COMPILER_CORE_SCHEDULE_BOUND_LOOPS_H_

#include <map>
#include <vector>

#include "compiler_core/ir/loop/loop_ir.h"

namespace kiln::schedule {

/// Per param buffer, per dim: the dim's run-time length as an i64 expression over params (e.g.
/// %dims[1] * 4), or null for a dim whose every position is needed.
using BufferLengths = std::map<const loop::Buffer*, std::vector<loop::Expr>>;

/// `func.body` with limits on its serial and parallel loops that are not reductions. A loop over
/// `v` gets a limit when every store in its body is to a param in `lengths`, to a workspace that
/// nothing outside the loop reads, or to a local buffer allocated inside it; when no code
/// outside the loop reads those buffers except at the position the reading store writes
/// (out[i] = f(out[i])); and when each store to a param's index along some dim with a length
/// is affine, c * v + (terms of enclosing loops) + (terms of inner loops with coefficients >= 0)
/// with c > 0, possibly floor-divided by a constant q > 0 (a flattened index): from
/// ceildiv(q * length - terms of enclosing loops, c) on, an iteration stores only into padding
/// and into its own scratch (the loop's iterations are independent). The limit is the largest
/// such bound over the stores. An index that is a remainder, floor(A / q) mod m (a flattened
/// row split into dims, the inner dim bounded), instead gives a guard around the body of a loop
/// that holds a loop: the iteration is skipped when its first position mod m is at or past the
/// length and its positions do not wrap past m (padding inside the row range, not a suffix of
/// the iterations). Loops that already have a limit are kept.
loop::Stmt BoundLoops(const loop::Func& func, const BufferLengths& lengths);

}  // namespace kiln::schedule

#endif  // KILN_COMPILER_CORE_SCHEDULE_BOUND_LOOPS_H_
