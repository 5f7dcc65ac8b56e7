// gpu_tile: a contraction nest rewritten for a GPU as a shared-memory tiled GEMM (the classic
// SGEMM blocking; V. Volkov and J. Demmel, "Benchmarking GPUs to tune dense linear algebra",
// SC 2008; the same tiling as CUTLASS's threadblock/thread levels).
#ifndef KILN_COMPILER_CORE_SCHEDULE_GPU_TILE_H_
#define KILN_COMPILER_CORE_SCHEDULE_GPU_TILE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler_core/ir/loop/loop_ir.h"

namespace kiln::schedule {

/// Threads per block side of gpu_tile: 16 x 16 = 256 threads.
inline constexpr int64_t kGpuTileThreads = 16;

/// A contraction's GEMM extents: M, N, K and the batch (gpu_tile's grouping).
struct GemmShape {
  int64_t m = 0, n = 0, k = 0, batch = 1;
};

/// The GEMM extents of the nest `nest` of `func` if gpu_tile applies to it.
/// Errors: those of GpuTileContraction's analysis (kFailedPrecondition saying why).
absl::StatusOr<GemmShape> AnalyzeContraction(const loop::Func& func, const std::string& nest);

/// gpu_tile(nest, tm, tn, bk): the top-level nest whose outermost loop is `nest`, a perfect
/// chain of spatial loops then reduction loops around one store
///   C[f(s)] = C[f(s)] + X(s, r) * Y(s, r)
/// (s the spatial variables, r the reductions), becomes an implicit GEMM: the spatial loops
/// that only X reads form M (flattened in chain order), those only Y reads form N, the others
/// a batch; the reductions form K. Each block (blockIdx.x over N tiles, .y over M tiles, .z
/// over the batch) computes a (16 tm) x (16 tn) tile of C with 16 x 16 threads, each holding
/// tm x tn accumulators (a local buffer indexed by the thread loops, so one per thread); per K
/// tile of `bk`, the threads first copy X's and Y's tiles into shared buffers "<C>_xs" [bk,
/// 16 tm] and "<C>_ys" [bk, 16 tn] (evaluating X and Y at each point, 0 past the edges), then
/// accumulate from them. Rows and columns are interleaved across threads (row a*16 + ty,
/// column c*16 + tx) so that shared reads are conflict-free and global stores coalesce. The
/// result is added to C (which the nests before hold as the init, e.g. the bias).
/// Errors: kFailedPrecondition, leaving `func` unchanged, when the nest is not of that form,
/// M or N is empty (e.g. a depthwise conv), or a factor is not positive.
absl::Status GpuTileContraction(loop::Func& func, const std::string& nest, int64_t tm, int64_t tn,
                                int64_t bk);

/// gpu_tile_mma(nest, tf32|f16|bf16[, block, stages]): the same implicit GEMM on tensor cores
/// (PTX mma.sync; the tiling of CUTLASS's multistage GEMM, NVIDIA's "CUTLASS: Fast Linear
/// Algebra in CUDA C++", 2017). A block computes a `block` x `block` tile of C (64: 4 warps as
/// 2 x 2, each 32 x 32; 128: 8 warps as 2 x 4, each 64 x 32), a warp's tile being 16 x 8
/// mma.sync tiles with f32 accumulators per lane in PTX's C fragment layout (loop::MmaShape),
/// added to C at the end. K tiles of 32 (16 for tf32 at block 128) are staged in shared memory
/// as f32 (tf32) or f16 / bf16, each tile stored with its rows along the operand's contiguous
/// dim (loop::kMmaAMajorM / kMmaBMajorN) and padded so fragment reads avoid bank conflicts.
/// With `stages` 2, where both operands are plain loads of the tile's type, tiles are copied
/// with cp.async (loop::AsyncCopy: 16 bytes at a time where the operand is contiguous and
/// aligned along the tile's rows, else 4) into two alternating buffers, the copy of tile k + 1
/// overlapping the MMAs of tile k; otherwise (`stages` 1, or an operand that needs converting
/// or computing) threads copy element by element into one buffer. Errors: as
/// GpuTileContraction's, and kFailedPrecondition for kNone, a block other than 64 or 128, or
/// stages other than 1 or 2.
absl::Status GpuTileMma(loop::Func& func, const std::string& nest, loop::MmaShape shape,
                        int64_t block = 64, int64_t stages = 2);

/// The MMA shape of a --precision name: "tf32" m16n8k8.tf32, "fp16"/"f16" m16n8k16.f16,
/// "bf16" m16n8k16.bf16; kNone for anything else (fp32).
loop::MmaShape MmaShapeOfPrecision(const std::string& precision);

}  // namespace kiln::schedule

#endif  // KILN_COMPILER_CORE_SCHEDULE_GPU_TILE_H_
