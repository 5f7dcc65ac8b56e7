// Winograd minimal filtering for 3×3 stride-1 convolutions, as a schedule step. F(m×m, 3×3)
// computes an m×m output tile from an (m+2)×(m+2) input tile d with (m+2)² multiplications per
// input/output channel pair instead of 9m²:
//   Y = Aᵀ [ (G g Gᵀ) ⊙ (Bᵀ d B) ] A
// (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks", CVPR 2016; the matrices
// for m = 2 are the paper's, those for m = 4 use the interpolation points 0, ±1, ±2, ∞). Summed
// over input channels, the ⊙ becomes, per tile position (ξ, ν), a matrix product over
// channels, so the conv turns into (m+2)² independent GEMMs.
//
// `winograd(m)` rewrites the update nest of a blocked conv kernel (layout NCHW<x>c, group 1,
// blocked input; the nest the lowering writes as
//   out[n, ocb, oh, ow, oc] += src[n, icb, oh + kh, ow + kw, ic] * w[ocb, icb, kh, kw, ic, oc]
// with kh, kw of extent 3) into, in its place:
//   wt:  U[ξα+ν, ocb, icb, ic, oc]  = (G g Gᵀ)[ξ, ν]          weight transform, per channel pair
//   it:  V[ξα+ν, icb, n·TH+th, tw, ic] = (Bᵀ d B)[ξ, ν]       input transform, per tile
//   M = 0, then the batched GEMM over input channels, shaped as a blocked 1×1 conv so the conv
//   planner schedules it (loops p, ocb, th, tw, oc; reductions icb, ic):
//        M[p, ocb, th, tw, oc] += V[p, icb, th, tw, ic] * U[p, ocb, icb, ic, oc]
//   ot:  out[n, ocb, th·m+i, tw·m+j, oc] += (Aᵀ M A)[i, j]   output transform, edge tiles guarded
// with α = m+2, TH = ⌈OH/m⌉, TW = ⌈OW/m⌉. The transforms run in two stages through a local
// α×α tile per channel vector. When the source is too small for the last tiles, a zero-extended
// copy of it is added first. U, V, M (and the copy) are new workspaces; init and epilogue nests
// are untouched, so the kernel computes the same function, to Winograd's rounding.
#ifndef KILN_COMPILER_CORE_SCHEDULE_WINOGRAD_H_
#define KILN_COMPILER_CORE_SCHEDULE_WINOGRAD_H_

#include <cstdint>

#include "absl/status/status.h"
#include "compiler_core/ir/loop/loop_ir.h"

namespace kiln::schedule {

/// True if `func` holds a conv update nest that winograd(m) can rewrite (the form above, f32,
/// unscheduled).
bool CanApplyWinograd(const loop::Func& func);

/// Rewrites `func` as described above with output tiles of m×m (m = 2 or 4). Errors:
/// kFailedPrecondition when m is unsupported, no update nest has the form above, or a name
/// the rewrite adds is taken; `func` is unchanged on error.
absl::Status ApplyWinograd(loop::Func& func, int64_t m);

}  // namespace kiln::schedule

#endif  // KILN_COMPILER_CORE_SCHEDULE_WINOGRAD_H_
