// The default schedule of a matmul update nest (Gemm and MatMul): a register-blocked
// micro-kernel with cache blocking over k, built only from the schedule primitives so that it
// replays like any other schedule.
#ifndef KILN_COMPILER_CORE_SCHEDULE_MATMUL_SCHEDULE_H_
#define KILN_COMPILER_CORE_SCHEDULE_MATMUL_SCHEDULE_H_

#include <vector>

#include "compiler_core/ir/loop/loop_ir.h"
#include "compiler_core/schedule/knobs.h"
#include "compiler_core/schedule/schedule.h"
#include "compiler_core/support/target.h"

namespace kiln::schedule {

/// Register and cache tile of the matmul micro-kernel.
struct MatMulTile {
  int64_t mr = 0;  // rows of the output tile (unrolled)
  int64_t nr = 0;  // columns of the output tile (vectorized, a multiple of the f32 lanes)
  int64_t kc = 0;  // k block whose B panel (kc × nr) stays in L1; 0 = k is not blocked
};

/// The tile for an [m, k] × [k, n] product on `target`: mr × nr/lanes accumulators fill about
/// half the vector registers; mr is picked so that the row tail is empty or large.
MatMulTile ChooseMatMulTile(int64_t m, int64_t n, int64_t k, const Target& target);

/// Steps that turn the update nest `nest` of a matmul kernel (anchor Gemm or MatMul; a perfect
/// chain [batch..., i, j, k] with k the only reduction) into
///   j.o { k.o { i.o { k.i { i.i (unrolled) { j.i (vectorized) } } } } }
/// with the tails j.t (N % nr columns), k.t and i.t scheduled the same way below their own
/// loops, and one loop (a batch loop, j.o or i.o) parallel when the product is large enough.
/// Empty when `nest` is not such a nest; the steps are meant to be applied all or none.
/// Knobs (named `prefix` + "mm.<name>"): "mr" rows, "vecs" vectors per row (nr = vecs ×
/// lanes; not for a packed B, whose panel fixes nr), "kc" (0: k not blocked), "parallel"
/// (0 none, 1 the rule above, 2 the outermost batch loop, 3 j.o, 4 i.o).
std::vector<Primitive> MatMulUpdateSchedule(const loop::Stmt& nest, graph::OpKind anchor,
                                            const Target& target, KnobContext& knobs,
                                            const std::string& prefix);
/// The default: MatMulUpdateSchedule with every knob at its default.
std::vector<Primitive> MatMulUpdateSchedule(const loop::Stmt& nest, graph::OpKind anchor,
                                            const Target& target);

}  // namespace kiln::schedule

#endif  // KILN_COMPILER_CORE_SCHEDULE_MATMUL_SCHEDULE_H_
