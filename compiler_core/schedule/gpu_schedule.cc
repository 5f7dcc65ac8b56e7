// The GPU schedule template (and so the default GPU schedule). Each top-level nest of a kernel
// becomes its own launch (loop::SplitGpuLaunches), so nests need no barrier between them.
// A contraction nest (matmul, conv) whose GEMM is at least 32 x 32 x 16 becomes a
// shared-memory tiled GEMM (gpu_tile.h; knobs "n<i>.gpu_tile", "n<i>.tm", "n<i>.tn",
// "n<i>.bk"), on tensor cores with a --precision (knobs "n<i>.mma", "n<i>.mma_block",
// "n<i>.stages"). Per other nest: the leading spatial (non-reduction) loops of its perfect chain
// are fused into one loop, split by the block size (knob "n<i>.threads": 64..1024, default 256),
// and bound to blockIdx.x (the outer part) and threadIdx.x (the inner part and a split tail).
// Reductions and everything below the fused loop run serially inside each thread, so every thread
// owns one output point (or one row, for a softmax or a layer norm) and iterations stay
// independent. A nest with no leading spatial loop (a full reduction to a scalar) runs on one
// thread.
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/loop/gpu_launch.h"
#include "compiler_core/ir/loop/visitor.h"
#include "compiler_core/schedule/gpu_tile.h"
#include "compiler_core/schedule/knobs.h"
#include "compiler_core/schedule/loop_utils.h"
#include "compiler_core/schedule/schedule.h"

namespace kiln::schedule {
namespace {

using loop::Stmt;
using Kind = Primitive::Kind;

/// Threads per block unless the knob says otherwise: 8 warps, CUDA's usual starting point.
constexpr int64_t kDefaultThreads = 256;
/// Blocks a GEMM should have before its default tile grows to 128 x 128: an H100/H200's SMs.
constexpr int64_t kSmsToFill = 132;

class GpuPlanner {
 public:
  GpuPlanner(const loop::Func& func, const Target& target, KnobContext& knobs)
      : work_(func), target_(target), knobs_(knobs) {}

  Schedule Run() {
    // A step names loops; a name used twice would apply it to loops of other nests too.
    std::map<std::string, int> uses;
    loop::VisitStmts(work_.body, [&](const Stmt& s) {
      if (s->kind == loop::StmtKind::kFor) ++uses[s->loop_var->name];
    });
    std::vector<Stmt> nests = loop::LaunchStatements(work_.body);
    for (size_t i = 0; i < nests.size(); ++i) {
      const std::string prefix = absl::StrCat("n", i, ".");
      if (nests[i]->kind == loop::StmtKind::kFor && TryGpuTile(nests[i]->loop_var->name, prefix)) {
        continue;
      }
      std::vector<Stmt> chain = PerfectChain(nests[i]);
      std::vector<std::string> spatial;
      for (const Stmt& l : chain) {
        if (l->is_reduction || l->limit != nullptr || l->for_kind != loop::ForKind::kSerial ||
            uses[l->loop_var->name] != 1) {
          break;
        }
        spatial.push_back(l->loop_var->name);
      }
      if (spatial.empty()) continue;
      std::string fused = spatial[0];
      int64_t extent = chain[0]->extent;
      for (size_t k = 1; k < spatial.size(); ++k) {
        if (!Try(Kind::kFuse, {fused, spatial[k]})) break;
        fused = absl::StrCat(fused, ".", spatial[k]);
        extent *= chain[k]->extent;
      }
      const int64_t threads =
          knobs_.Choose(prefix + "threads", {64, 128, 256, 512, 1024}, DefaultThreads(extent));
      if (extent <= threads) {
        Try(Kind::kBind, {fused, "threadIdx.x"});
        continue;
      }
      if (!Try(Kind::kSplit, {fused}, threads)) continue;
      Try(Kind::kBind, {fused + ".o", "blockIdx.x"});
      Try(Kind::kBind, {fused + ".i", "threadIdx.x"});
      if (extent % threads != 0) Try(Kind::kBind, {fused + ".t", "threadIdx.x"});
    }
    return schedule_;
  }

 private:
  // Threads per block for a fused extent: 256 unless a divisor of the extent avoids the split's
  // tail (a launch of its own): the largest one up to 256 that is a multiple of a warp (32), else
  // one of at least 64.
  static int64_t DefaultThreads(int64_t extent) {
    if (extent <= kDefaultThreads) return kDefaultThreads;
    int64_t any = 0;
    for (int64_t d = kDefaultThreads; d >= 32; --d) {
      if (extent % d != 0) continue;
      if (d % 32 == 0) return d;
      if (any == 0 && d >= 64) any = d;
    }
    return any != 0 ? any : kDefaultThreads;
  }

  // A contraction large enough to fill a 64 x 64 tile: the shared-memory tiled GEMM (knobs
  // "gpu_tile", "tm", "tn", "bk"). False if it does not apply or the knob says no.
  bool TryGpuTile(const std::string& nest, const std::string& prefix) {
    absl::StatusOr<GemmShape> gemm = AnalyzeContraction(work_, nest);
    if (!gemm.ok() || gemm->m < 32 || gemm->n < 32 || gemm->k < 16) return false;
    if (!knobs_.ChooseBool(prefix + "gpu_tile", true)) return false;
    // With a tensor-core precision: mma.sync tiles (knob "mma"), else the CUDA-core tiling.
    // Knobs "mma_block" (64 or 128; 128 where its tiles still give every SM of a large GPU a
    // block, 132 on an H100/H200) and "stages" (2: cp.async double buffering where it applies).
    const loop::MmaShape shape = MmaShapeOfPrecision(target_.gpu.precision);
    if (shape != loop::MmaShape::kNone && knobs_.ChooseBool(prefix + "mma", true)) {
      const int64_t big_tiles = (gemm->m + 127) / 128 * ((gemm->n + 127) / 128) * gemm->batch;
      const int64_t block =
          knobs_.Choose(prefix + "mma_block", {64, 128}, big_tiles >= kSmsToFill ? 128 : 64);
      const int64_t stages = knobs_.Choose(prefix + "stages", {1, 2}, 2);
      if (TryStep(Primitive{Kind::kGpuTileMma, {nest, target_.gpu.precision}, 0, {block, stages}},
                  work_, schedule_)) {
        return true;
      }
    }
    auto per_thread = [](int64_t extent) -> int64_t { return extent >= 64 ? 4 : 2; };
    const int64_t tm = knobs_.Choose(prefix + "tm", {1, 2, 4, 8}, per_thread(gemm->m));
    const int64_t tn = knobs_.Choose(prefix + "tn", {1, 2, 4, 8}, per_thread(gemm->n));
    const int64_t bk = knobs_.Choose(prefix + "bk", {8, 16, 32}, 16);
    return TryStep(Primitive{Kind::kGpuTile, {nest}, 0, {tm, tn, bk}}, work_, schedule_);
  }

  bool Try(Kind kind, std::vector<std::string> loops, int64_t factor = 0) {
    return TryStep(Primitive{kind, std::move(loops), factor}, work_, schedule_);
  }

  loop::Func work_;
  const Target& target_;
  KnobContext& knobs_;
  Schedule schedule_;
};

}  // namespace

Schedule PlanGpuSchedule(const loop::Func& func, const Target& target, KnobContext& knobs) {
  return GpuPlanner(func, target, knobs).Run();
}

}  // namespace kiln::schedule
