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

#include <string>

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

/// `name` without the "_<n>" suffix KernelBuilder::NewVar adds to a name already taken.
std::string BaseName(const std::string& name) {
  const size_t us = name.rfind('_');
  if (us == std::string::npos || us + 1 == name.size()) return name;
  for (size_t c = us + 1; c < name.size(); ++c) {
    if (name[c] < '0' || name[c] > '9') return name;
  }
  return name.substr(0, us);
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
  KnobContext defaults;
  return MatMulUpdateSchedule(nest, anchor, target, defaults, "");
}

std::vector<Primitive> MatMulUpdateSchedule(const loop::Stmt& nest, graph::OpKind anchor,
                                            const Target& target, KnobContext& knobs,
                                            const std::string& prefix) {
  if (anchor != graph::OpKind::kGemm && anchor != graph::OpKind::kMatMul) return {};
  const std::vector<loop::Stmt> chain = PerfectChain(nest);
  const size_t n_loops = chain.size();
  if (n_loops < 3) return {};
  // A packed B (lowering/matmul.cc) comes as [i, jb, jj, k]: j already split into panels jb
  // of width nr = jj's extent. Otherwise [i, j, k], where j may be a packed tail jt.
  const bool packed = n_loops >= 4 && BaseName(chain[n_loops - 3]->loop_var->name) == "jb" &&
                      BaseName(chain[n_loops - 2]->loop_var->name) == "jj";
  const size_t n_outer = n_loops - (packed ? 4 : 3);  // batch loops above i
  const loop::Stmt& li = chain[n_outer];
  const loop::Stmt& lj = chain[n_loops - 2];
  const loop::Stmt& lk = chain[n_loops - 1];
  const std::string jname = BaseName(lj->loop_var->name);
  if (BaseName(li->loop_var->name) != "i" || BaseName(lk->loop_var->name) != "k" ||
      (packed ? jname != "jj" : jname != "j" && jname != "jt") || li->is_reduction ||
      lj->is_reduction || !lk->is_reduction || ContainsFor(lk->body)) {
    return {};
  }
  for (size_t d = 0; d + 1 < n_loops; ++d) {
    if (chain[d]->is_reduction) return {};
  }
  const std::string i = li->loop_var->name, j = lj->loop_var->name, k = lk->loop_var->name;
  const std::string jb = packed ? chain[n_loops - 3]->loop_var->name : "";
  const int64_t m = li->extent, k_ext = lk->extent;
  const int64_t n = packed ? lj->extent * chain[n_loops - 3]->extent : lj->extent;
  const int64_t lanes = std::max(1, target.f32_lanes());
  if (n < std::min<int64_t>(4, lanes)) return {};
  MatMulTile tile = ChooseMatMulTile(m, n, k_ext, target);
  if (packed && tile.nr != lj->extent) {
    // The panel width is the packing's (2 vectors, the tile of m > 2 rows); a GEMV's wider
    // tile does not apply.
    tile = ChooseMatMulTile(std::max<int64_t>(m, 3), n, k_ext, target);
    tile.nr = lj->extent;
  }
  // Knobs around the rule's tile: rows up to the accumulator budget, vectors per row (not for a
  // packed panel), k blocks of 64..512 or none.
  const int64_t acc = target.vector_bits >= 512 ? 16 : 12;
  // A symbolic j (attention's past + seq columns) takes one vector per row by default: its
  // tail columns run scalar, so a narrower panel leaves fewer of them (past 7 + seq 1 is one
  // vector, where two would leave all 8 to the tail).
  if (!packed && lj->limit != nullptr) tile.nr = lanes;
  if (!packed) {
    std::vector<int64_t> vec_choices;
    for (int64_t v = 1; v <= 4 && (v == 1 || (v - 1) * lanes < n); ++v) vec_choices.push_back(v);
    tile.nr = lanes * knobs.Choose(prefix + "mm.vecs", vec_choices, tile.nr / lanes);
  }
  const int64_t vecs = std::max<int64_t>(1, tile.nr / lanes);
  std::vector<int64_t> mr_choices;
  for (int64_t r = 1; r <= std::min<int64_t>(m, std::max<int64_t>(1, acc / vecs)); ++r) {
    mr_choices.push_back(r);
  }
  // A symbolic i takes the most rows the accumulators allow: its tail is decomposed below.
  if (li->limit != nullptr) tile.mr = mr_choices.back();
  tile.mr = knobs.Choose(prefix + "mm.mr", mr_choices, tile.mr);
  std::vector<int64_t> kc_choices = {0};
  for (int64_t kc : {64, 128, 256, 512}) {
    if (kc < k_ext) kc_choices.push_back(kc);
  }
  // A symbolic k (attention's past + seq) is not blocked by default: its extent is the
  // unbounded placeholder, and a block loop would run with a run-time tail every call.
  if (lk->limit != nullptr) tile.kc = 0;
  tile.kc = knobs.Choose(prefix + "mm.kc", kc_choices, tile.kc);

  std::vector<Primitive> steps;
  bool split_j = false, j_tail = false;
  std::string jv = j, jo;
  if (packed) {
    steps.push_back(Step(Kind::kReorder, {jb, k, i, j}));
    jo = jb;
  } else {
    // j outermost (below the batch loops) and split: its tail j.t gets the same nest below it.
    steps.push_back(Step(Kind::kReorder, {j, k, i}));
    split_j = n > tile.nr;
    j_tail = split_j && n % tile.nr != 0;
    if (split_j) {
      jv = j + ".i";
      jo = j + ".o";
      steps.push_back(Step(Kind::kSplit, {j}, tile.nr));
      steps.push_back(Step(Kind::kReorder, {jo, k, i, jv}));
      if (j_tail) steps.push_back(Step(Kind::kReorder, {k, i, j + ".t"}));
    } else if (jname == "jt") {
      // A packed B's tail columns (fewer than a panel): jt innermost, like j.t.
      steps.push_back(Step(Kind::kReorder, {k, i, j}));
    }
  }
  // k blocks: k.o { i { k.i } }, and the k tail below i like k.i.
  std::vector<std::string> kin = {k};
  if (tile.kc > 0) {
    steps.push_back(Step(Kind::kSplit, {k}, tile.kc));
    steps.push_back(Step(Kind::kReorder, {k + ".o", i, k + ".i"}));
    kin = {k + ".i"};
    if (k_ext % tile.kc != 0) {
      steps.push_back(Step(Kind::kReorder, {i, k + ".t"}));
      kin.push_back(k + ".t");
    }
  } else {
    steps.push_back(Step(Kind::kReorder, {i, k}));
  }
  // Row tiles: i.o { kin { i.i { jv } } }, and the row tail i.t likewise below kin.
  std::vector<std::string> rows = {i};
  const bool split_i = m > tile.mr;
  if (split_i) {
    steps.push_back(Step(Kind::kSplit, {i}, tile.mr));
    rows = {i + ".i"};
    if (li->limit != nullptr) {
      // A symbolic i always has a tail, of run-time length r < mr: its rows go in blocks of
      // halving height (r = 5 of mr = 6: a block of 4, then one row), each a register block
      // like i.i. The last single row stays above kin, so that it too keeps its accumulators
      // in registers across k (below k they would go through memory every step).
      std::string tail = i + ".t";
      for (int64_t block = 4; block >= 2; block /= 2) {
        if (block >= tile.mr) continue;
        steps.push_back(Step(Kind::kSplit, {tail}, block));
        rows.push_back(tail + ".i");
        tail += ".t";
      }
    } else if (m % tile.mr != 0) {
      rows.push_back(i + ".t");
    }
  }
  for (const std::string& r : rows) {
    for (const std::string& kl : kin) steps.push_back(Step(Kind::kReorder, {kl, r}));
  }
  for (const std::string& r : rows) steps.push_back(Step(Kind::kUnroll, {r}));
  steps.push_back(Step(Kind::kVectorize, {jv}));
  if (j_tail) steps.push_back(Step(Kind::kVectorize, {j + ".t"}));

  // One parallel loop: the outermost batch loop, else j.o when it has enough blocks, else i.o.
  // In double: symbolic loops have huge extents (loop::kUnboundedExtent).
  double batch = 1;
  for (size_t d = 0; d < n_outer; ++d) batch *= static_cast<double>(chain[d]->extent);
  const int64_t j_blocks = packed ? chain[n_loops - 3]->extent : split_j ? n / tile.nr : 1;
  const int64_t i_blocks = split_i ? m / tile.mr : 1;
  const bool has_batch = n_outer > 0 && chain[0]->extent >= 2;
  const int64_t where = knobs.Choose(prefix + "mm.parallel", {0, 1, 2, 3, 4},
                                     batch * static_cast<double>(m) * static_cast<double>(n) *
                                                     static_cast<double>(k_ext) <
                                                 static_cast<double>(kParallelMacs)
                                             ? 0
                                             : 1);
  if (where == 2 || (where == 1 && has_batch)) {
    if (has_batch) steps.push_back(Step(Kind::kParallel, {chain[0]->loop_var->name}));
  } else if (where == 3 || (where == 1 && (j_blocks >= 4 || (j_blocks >= 2 && i_blocks < 4)))) {
    if (j_blocks >= 2) steps.push_back(Step(Kind::kParallel, {jo}));
  } else if (where == 4 || (where == 1 && i_blocks >= 2)) {
    if (i_blocks >= 2) steps.push_back(Step(Kind::kParallel, {i + ".o"}));
  }
  return steps;
}

}  // namespace kiln::schedule
