// The matmul micro-kernel schedule. The update nest out[i, j] += a[i, k] * b[k, j] becomes
//
//   parallel for j.o { for k.o { for i.o { for k.i {
//     unrolled for i.i (mr) { vectorized for j.i (nr) { out[i, j] += a[i, k] * b[k, j] } } } } } }
//
// out's mr × nr tile has the same address in every k.i iteration, so LLVM keeps it in
// registers across the k.i loop (buffers are noalias): each k step is mr broadcasts of a,
// nr/lanes vector loads of b and mr·nr/lanes FMAs. The b panel (kc × nr) is reused by every
// i.o iteration from L1. Splits with tails duplicate the loops below them, so every split is
// made while its loop is the outermost of the loops still to be moved, and each tail gets the
// same treatment below it: reorder then permutes whichever of the named loops a chain holds.
#include "compiler_core/schedule/matmul_schedule.h"

#include <algorithm>

#include "compiler_core/schedule/loop_utils.h"

namespace kiln::schedule {
namespace {

using Kind = Primitive::Kind;

/// Products with fewer multiply-adds run on one thread: a parallel launch costs more.
constexpr int64_t kParallelMacs = int64_t{1} << 18;
/// Bytes of the b panel (kc × nr floats) meant to stay in L1.
constexpr int64_t kPanelBytes = 32 * 1024;

Primitive Step(Kind kind, std::vector<std::string> loops, int64_t factor = 0) {
  return Primitive{kind, std::move(loops), factor};
}

}  // namespace

MatMulTile ChooseMatMulTile(int64_t m, int64_t n, int64_t k, const Target& target) {
  const int64_t lanes = std::max(1, target.f32_lanes());
  // Accumulators: half of the 32 (AVX-512) or 16 vector registers, the rest hold b and a.
  const int64_t acc = target.vector_bits >= 512 ? 16 : 12;
  MatMulTile t;
  // Vectors per row: 2, more when there are few rows (a GEMV is otherwise latency-bound).
  int64_t vecs = m <= 2 ? 4 : 2;
  vecs = std::min<int64_t>(vecs, std::max<int64_t>(1, (n + lanes - 1) / lanes));
  t.nr = vecs * lanes;
  const int64_t max_mr = std::max<int64_t>(1, acc / vecs);
  if (m <= max_mr) {
    t.mr = m;
  } else {
    // Prefer 6 rows; take another row count when it leaves no tail, else one leaving a tail
    // of at least half a tile (a short tail has too few accumulators to hide FMA latency).
    std::vector<int64_t> prefs = {6, 8, 7, 5, 4};
    t.mr = 0;
    for (int64_t mr : prefs) {
      if (mr <= max_mr && m % mr == 0) { t.mr = mr; break; }
    }
    for (int64_t mr : prefs) {
      if (t.mr == 0 && mr <= max_mr && 2 * (m % mr) >= mr) t.mr = mr;
    }
    if (t.mr == 0) t.mr = std::min<int64_t>(6, max_mr);
  }
  // k blocks of about kPanelBytes of b, of equal size (the last block is not a sliver). One
  // row tile reads each b panel once: then blocking k would only add output traffic.
  const int64_t kc_max = std::max<int64_t>(64, kPanelBytes / (4 * t.nr));
  if (m > t.mr && k > kc_max + kc_max / 2) {
    const int64_t blocks = (k + kc_max - 1) / kc_max;
    t.kc = ((k + blocks - 1) / blocks + 3) / 4 * 4;
  }
  return t;
}

std::vector<Primitive> MatMulUpdateSchedule(const loop::Stmt& nest, graph::OpKind anchor,
                                            const Target& target) {
  if (anchor != graph::OpKind::kGemm && anchor != graph::OpKind::kMatMul) return {};
  const std::vector<loop::Stmt> chain = PerfectChain(nest);
  const size_t n_loops = chain.size();
  if (n_loops < 3) return {};
  const loop::Stmt& li = chain[n_loops - 3];
  const loop::Stmt& lj = chain[n_loops - 2];
  const loop::Stmt& lk = chain[n_loops - 1];
  if (li->loop_var->name != "i" || lj->loop_var->name != "j" || lk->loop_var->name != "k" ||
      li->is_reduction || lj->is_reduction || !lk->is_reduction || ContainsFor(lk->body)) {
    return {};
  }
  for (size_t d = 0; d + 3 < n_loops; ++d) {
    if (chain[d]->is_reduction) return {};
  }
  const int64_t m = li->extent, n = lj->extent, k = lk->extent;
  const int64_t lanes = std::max(1, target.f32_lanes());
  if (n < std::min<int64_t>(4, lanes)) return {};
  const MatMulTile tile = ChooseMatMulTile(m, n, k, target);

  std::vector<Primitive> steps;
  // j outermost (below the batch loops) and split: its tail j.t gets the same nest below it.
  steps.push_back(Step(Kind::kReorder, {"j", "k", "i"}));
  const bool split_j = n > tile.nr;
  const bool j_tail = split_j && n % tile.nr != 0;
  const std::string jv = split_j ? "j.i" : "j";
  if (split_j) {
    steps.push_back(Step(Kind::kSplit, {"j"}, tile.nr));
    steps.push_back(Step(Kind::kReorder, {"j.o", "k", "i", "j.i"}));
    if (j_tail) steps.push_back(Step(Kind::kReorder, {"k", "i", "j.t"}));
  }
  // k blocks: k.o { i { k.i } }, and the k tail below i like k.i.
  std::vector<std::string> kin = {"k"};
  if (tile.kc > 0) {
    steps.push_back(Step(Kind::kSplit, {"k"}, tile.kc));
    steps.push_back(Step(Kind::kReorder, {"k.o", "i", "k.i"}));
    kin = {"k.i"};
    if (k % tile.kc != 0) {
      steps.push_back(Step(Kind::kReorder, {"i", "k.t"}));
      kin.push_back("k.t");
    }
  } else {
    steps.push_back(Step(Kind::kReorder, {"i", "k"}));
  }
  // Row tiles: i.o { kin { i.i { jv } } }, and the row tail i.t likewise below kin.
  std::vector<std::string> rows = {"i"};
  const bool split_i = m > tile.mr;
  if (split_i) {
    steps.push_back(Step(Kind::kSplit, {"i"}, tile.mr));
    rows = {"i.i"};
    if (m % tile.mr != 0) rows.push_back("i.t");
  }
  for (const std::string& r : rows) {
    for (const std::string& kl : kin) steps.push_back(Step(Kind::kReorder, {kl, r}));
  }
  for (const std::string& r : rows) steps.push_back(Step(Kind::kUnroll, {r}));
  steps.push_back(Step(Kind::kVectorize, {jv}));
  if (j_tail) steps.push_back(Step(Kind::kVectorize, {"j.t"}));

  // One parallel loop: the outermost batch loop, else j.o when it has enough blocks, else i.o.
  int64_t batch = 1;
  for (size_t d = 0; d + 3 < n_loops; ++d) batch *= chain[d]->extent;
  if (batch * m * n * k < kParallelMacs) return steps;
  const int64_t j_blocks = split_j ? n / tile.nr : 1;
  const int64_t i_blocks = split_i ? m / tile.mr : 1;
  if (n_loops > 3 && chain[0]->extent >= 2) {
    steps.push_back(Step(Kind::kParallel, {chain[0]->loop_var->name}));
  } else if (j_blocks >= 4 || (j_blocks >= 2 && i_blocks < 4)) {
    steps.push_back(Step(Kind::kParallel, {"j.o"}));
  } else if (i_blocks >= 2) {
    steps.push_back(Step(Kind::kParallel, {"i.o"}));
  }
  return steps;
}

}  // namespace kiln::schedule
