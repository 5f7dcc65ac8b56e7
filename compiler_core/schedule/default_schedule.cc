// The CPU schedule template (knobs.h) and so the default schedule. Per top-level nest:
// contraction update nests (conv, matmul, pooling) move the reductions above the innermost
// output axis, block another output axis (knob "block", default 4, unrolled), and vectorize the
// innermost axis; other nests vectorize their innermost non-reduction loops (knob "vec.<loop>":
// vector multiple of the lanes); large nests run their outermost spatial loop (fused with the
// next one when it is short) in parallel (knobs "parallel", "parallel.fuse"). Blocked
// (NCHW<x>c) convs get a register block of output columns times output-channel vectors held
// across all reductions (knobs "conv.cols", "conv.vecs", "conv.rows", "conv.tail",
// "conv.red_order", "conv.unroll_red", "conv.oh_outer") and run the fused n×ocb×oh loop in
// parallel. 3×3 stride-1 blocked convs may first become Winograd nests (knob "conv.winograd":
// 0, 2 or 4). A blocked conv's bias init and fused epilogue run inside its register block
// (compute_at at the outermost reduction; knob "conv.compute_at"), as do a matmul's (knob
// "compute_at"); a depthwise conv's padded input is computed per band of output rows (knobs
// "conv.pad_at", "conv.pad_rows"). Register-block budgets and the Winograd default depend on
// the target's vector registers (16 with AVX2, 32 with AVX-512). Knob names carry the nest's
// index ("n2.conv.cols"). Every step is tried on a copy and dropped if illegal.
#include <algorithm>
#include <limits>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "compiler_core/ir/loop/visitor.h"
#include "compiler_core/schedule/knobs.h"
#include "compiler_core/schedule/loop_utils.h"
#include "compiler_core/schedule/matmul_schedule.h"
#include "compiler_core/schedule/schedule.h"
#include "compiler_core/schedule/winograd.h"

namespace kiln::schedule {
namespace {

using graph::OpKind;
using loop::Stmt;
using Kind = Primitive::Kind;

/// Output-channel register block of contraction nests.
constexpr int64_t kBlock = 4;

// A parallel loop shorter than this is fused with the next loop to give the pool enough chunks.
// A constant, not the compiling host's core count: the target key excludes core counts, so the
// same cache key must always produce the same code.
constexpr int64_t kMinParallelChunks = 4;

struct LoopInfo {
  std::string name;
  int64_t extent;
  bool reduction;
};

class Planner {
 public:
  Planner(const loop::Func& func, const Target& target, KnobContext& knobs)
      : work_(func), target_(target), knobs_(knobs), lanes_(std::max(1, target.f32_lanes())),
        cores_(kMinParallelChunks) {}

  Schedule Run() {
    // Knob: the conv algorithm. 0 is the direct conv; 2 or 4 rewrites a 3x3 stride-1 blocked
    // conv into Winograd F(m x m, 3 x 3) nests (winograd.h) before the nests are planned, the
    // batched GEMM among them planned as a blocked 1x1 conv.
    // With 16 vector registers (AVX2) the default is by output width: F(4x4) from 24 columns,
    // F(2x2) from 12, else direct (Zen 3, one thread: F4 0.23-0.50x the direct conv at widths
    // 27-56, F2 0.49-0.67x at 13-14, both 1.4-1.6x slower at 7; bench/README.md, "Register
    // blocks for 16 registers"). Direct with AVX-512, where it is not measured with the weight
    // transform at load time.
    if (work_.anchor == OpKind::kConv && CanApplyWinograd(work_)) {
      const std::vector<int64_t>& out = work_.params.back()->shape;
      const int64_t ow = out.size() == 5 ? out[3] : 0;
      const int64_t rule =
          target_.vector_registers() != 16 ? 0 : ow >= 24 ? 4 : ow >= 12 ? 2 : 0;
      const int64_t m = knobs_.Choose("conv.winograd", {0, 2, 4}, rule);
      if (m != 0) Try(Kind::kWinograd, {}, m);
    }
    const std::vector<Stmt> nests = TopLevelNests();
    if (nests.empty()) return schedule_;
    // A blocked conv's bias init and fused epilogue (the pointwise nests over its output just
    // before and after its update nest) wait for the update nest: planned with its register
    // block, they are computed there (compute_at) instead of streaming the output through
    // memory twice more; planned on their own only if that is illegal or the knob says no.
    int update = -1;
    for (size_t i = 0; i < nests.size() && update < 0; ++i) {
      if (IsBlockedConvUpdate(nests[i]) || IsMatMulUpdate(nests[i])) {
        update = static_cast<int>(i);
      }
    }
    std::vector<size_t> deferred;
    if (update >= 0) {
      const loop::BufferRef out = InnermostStore(nests[update]);
      for (int i : {update - 1, update + 1}) {
        if (i < 0 || i >= static_cast<int>(nests.size())) continue;
        if (out && InnermostStore(nests[i]) == out) {
          deferred.push_back(static_cast<size_t>(i));
          pending_.push_back(nests[i]->loop_var->name);
        }
      }
      // A depthwise conv's (two reductions: kh, kw) padded input: computed per output row
      // into a local buffer of the rows it reads instead of a padded copy of the whole input.
      std::vector<LoopInfo> spatial, reds;
      bool reductions_last = true;
      SplitChain(nests[update], spatial, reds, reductions_last);
      std::set<const loop::Buffer*> update_loads;
      loop::VisitExprs(nests[update], [&](const loop::Expr& e) {
        if (e->kind == loop::ExprKind::kLoad) update_loads.insert(e->buffer.get());
      });
      for (int i = 0; i < update && work_.anchor == OpKind::kConv && reds.size() == 2; ++i) {
        const loop::BufferRef ws = InnermostStore(nests[i]);
        if (ws && update_loads.count(ws.get()) != 0 &&
            std::find(work_.workspaces.begin(), work_.workspaces.end(), ws) !=
                work_.workspaces.end()) {
          deferred.push_back(static_cast<size_t>(i));
          producer_ = nests[i]->loop_var->name;
          const std::vector<Stmt> chain = PerfectChain(nests[i]);
          producer_inner_ = {chain.back()->loop_var->name, chain.back()->extent, false};
        }
      }
    }
    for (size_t i = 0; i < nests.size(); ++i) {
      if (std::find(deferred.begin(), deferred.end(), i) != deferred.end()) continue;
      prefix_ = absl::StrCat("n", i, ".");
      PlanNest(nests[i]);
    }
    for (size_t i : deferred) {
      if (placed_.count(nests[i]->loop_var->name) != 0) continue;
      prefix_ = absl::StrCat("n", i, ".");
      PlanNest(nests[i]);
    }
    return schedule_;
  }

 private:
  bool Try(Kind kind, std::vector<std::string> loops, int64_t factor = 0) {
    return TryStep(Primitive{kind, std::move(loops), factor}, work_, schedule_);
  }

  /// Applies `steps` together, or none of them when any is illegal (or there are none).
  bool TryAll(const std::vector<Primitive>& steps) {
    if (steps.empty()) return false;
    Schedule all{steps};
    loop::Func copy = work_;
    if (!ApplySchedule(all, copy).ok()) return false;
    work_ = std::move(copy);
    schedule_.steps.insert(schedule_.steps.end(), steps.begin(), steps.end());
    return true;
  }

  /// Splits `name` (extent `extent`) by the vector width and vectorizes the pieces. Returns the
  /// name of the loop that is left outside (for parallelization), or "" if none.
  std::string Vectorize(const std::string& name, int64_t extent) {
    if (extent > lanes_) {
      std::vector<int64_t> multiples = {1};
      for (int64_t m = 2; m <= 4 && m * lanes_ < extent; m *= 2) multiples.push_back(m);
      const int64_t width = lanes_ * Knob("vec." + name, multiples, 1);
      if (!Try(Kind::kSplit, {name}, width)) return name;
      Try(Kind::kVectorize, {name + ".i"});
      if (extent % width != 0) Try(Kind::kVectorize, {name + ".t"});
      return name + ".o";
    }
    if (extent >= 2) Try(Kind::kVectorize, {name});
    return "";
  }

  /// The top-level statements of the current body (one nest each), or {} without a body.
  std::vector<Stmt> TopLevelNests() const {
    const Stmt top = Unwrap(work_.body);
    if (!top) return {};
    return top->kind == loop::StmtKind::kBlock ? top->stmts : std::vector<Stmt>{top};
  }

  /// The buffer stored by the innermost statement of `nest`'s perfect chain, or null.
  static loop::BufferRef InnermostStore(const Stmt& nest) {
    std::vector<Stmt> chain = PerfectChain(nest);
    if (chain.empty()) return nullptr;
    Stmt store = Unwrap(chain.back()->body);
    return store && store->kind == loop::StmtKind::kStore ? store->buffer : nullptr;
  }

  /// Splits `nest`'s perfect chain into spatial and reduction loops; `reductions_last` says
  /// whether every reduction comes after every spatial loop.
  static void SplitChain(const Stmt& nest, std::vector<LoopInfo>& spatial,
                         std::vector<LoopInfo>& reds, bool& reductions_last) {
    reductions_last = true;
    for (const Stmt& s : PerfectChain(nest)) {
      LoopInfo l{s->loop_var->name, s->extent, s->is_reduction};
      if (l.reduction) {
        reds.push_back(l);
      } else {
        if (!reds.empty()) reductions_last = false;
        spatial.push_back(l);
      }
    }
  }

  /// The deepest loop of the blocked conv's outer chain named `rows` or fused with it last
  /// ("n.ocb.o.oh"), or "" if none.
  std::string RowLoop(const std::string& rows) const {
    std::string found;
    for (const Stmt& nest : TopLevelNests()) {
      std::set<std::string> names;
      CollectLoopNames(nest, names);
      if (names.count(reduction_root_) == 0) continue;
      for (const Stmt& l : PerfectChain(nest)) {
        const std::string& n = l->loop_var->name;
        if (n == rows || absl::EndsWith(n, "." + rows)) found = n;
      }
    }
    return found;
  }

  /// The update nest of a matmul or gemm: spatial loops, then reductions.
  bool IsMatMulUpdate(const Stmt& nest) const {
    if (work_.anchor != OpKind::kMatMul && work_.anchor != OpKind::kGemm) return false;
    std::vector<LoopInfo> spatial, reds;
    bool reductions_last = true;
    SplitChain(nest, spatial, reds, reductions_last);
    return !spatial.empty() && !reds.empty() && reductions_last;
  }

  /// The first reduction loop (pre-order) of the top-level nest that stores `out` under a
  /// reduction, or "" if none.
  std::string ReductionRoot(const loop::BufferRef& out) const {
    if (!out) return "";
    for (const Stmt& nest : TopLevelNests()) {
      std::string root;
      bool stores = false;
      loop::VisitStmts(nest, [&](const Stmt& s) {
        if (s->kind == loop::StmtKind::kFor && s->is_reduction && root.empty()) {
          root = s->loop_var->name;
        }
        if (s->kind == loop::StmtKind::kStore && s->buffer == out) stores = true;
      });
      if (stores && !root.empty()) return root;
    }
    return "";
  }

  /// The update nest of a blocked (NCHW<x>c) conv: n, ocb, oh, ow, oc, then reductions.
  bool IsBlockedConvUpdate(const Stmt& nest) const {
    std::vector<LoopInfo> spatial, reds;
    bool reductions_last = true;
    SplitChain(nest, spatial, reds, reductions_last);
    return IsBlockedConvUpdate(spatial, reds, reductions_last);
  }
  bool IsBlockedConvUpdate(const std::vector<LoopInfo>& spatial,
                           const std::vector<LoopInfo>& reds, bool reductions_last) const {
    return work_.anchor == OpKind::kConv && spatial.size() == 5 && spatial[1].name == "ocb" &&
           !reds.empty() && reductions_last;
  }

  void PlanNest(const Stmt& nest) {
    std::vector<LoopInfo> chain;
    for (const Stmt& s : PerfectChain(nest)) {
      chain.push_back({s->loop_var->name, s->extent, s->is_reduction});
    }
    const int64_t work = Work(nest);
    if (chain.empty()) return;
    // Matmul update nests: the register-blocked micro-kernel (matmul_schedule.h), all or none.
    if (TryAll(MatMulUpdateSchedule(nest, work_.anchor, target_, knobs_, prefix_))) {
      // Knob: the zero init and the epilogue (bias, activation) inside the micro-kernel's
      // block, at its outermost reduction. Off over symbolic dims: there it measured 1.3-1.5x
      // slower on llama_decoder_kv's prompt (an epilogue that reads another input, the
      // residual Add, keeps LLVM from holding the block in registers).
      if (!pending_.empty() && KnobBool("compute_at", !HasLimitedLoop(nest))) {
        const std::string root = ReductionRoot(InnermostStore(nest));
        for (const std::string& name : pending_) {
          if (!root.empty() && Try(Kind::kComputeAt, {name, root})) placed_.insert(name);
        }
      }
      return;
    }
    std::vector<LoopInfo> spatial, reds;
    bool reductions_last = true;
    SplitChain(nest, spatial, reds, reductions_last);
    if (IsBlockedConvUpdate(spatial, reds, reductions_last)) {
      std::vector<std::string> outer = PlanBlockedConv(spatial, reds);
      // Knob: compute the bias init and the epilogue in the register block (compute_at at the
      // outermost reduction), so the output is stored once, from registers.
      if (!outer.empty() && !pending_.empty() && KnobBool("conv.compute_at", true)) {
        for (const std::string& name : pending_) {
          if (Try(Kind::kComputeAt, {name, reduction_root_})) placed_.insert(name);
        }
      }
      // Knob: compute the padded input per band of output rows (knob conv.pad_rows: the band's
      // rows, by default the largest divisor of the output height up to 8, so that a stride-1
      // 3x3 conv pads at most (8 + 2) / 8 of its input rows) into a local buffer of the input
      // rows the band reads, instead of a padded copy of the whole input through memory.
      const bool pad_at = !outer.empty() && !producer_.empty() && KnobBool("conv.pad_at", true);
      if (pad_at && outer[2] == spatial[2].name) {
        const int64_t oh = spatial[2].extent;
        std::vector<int64_t> bands;
        int64_t band = 1;
        for (int64_t r = 1; r <= std::min<int64_t>(oh, 16); ++r) {
          if (oh % r != 0) continue;
          bands.push_back(r);
          if (r <= 8) band = r;
        }
        band = Knob("conv.pad_rows", bands, band);
        if (band < oh && Try(Kind::kSplit, {outer[2]}, band)) outer[2] += ".o";
      }
      if (!outer.empty() && KnobBool("parallel", work >= kParallelThreshold)) {
        ParallelizeFused(outer);
      }
      if (pad_at) {
        const std::string at = RowLoop(outer[2]);
        if (!at.empty() && Try(Kind::kComputeAt, {producer_, at})) {
          placed_.insert(producer_);
          Vectorize(producer_inner_.name, producer_inner_.extent);
        }
      }
      return;
    }
    const bool contraction = IsContraction(work_.anchor) && !reds.empty() && reductions_last &&
                             !spatial.empty();
    std::vector<std::string> outer_order;  // spatial loops above the vector loop, outermost first
    if (contraction) {
      outer_order = PlanContraction(spatial, reds);
    } else {
      const Stmt inner = chain.back().reduction ? nullptr : PerfectChain(nest).back();
      for (const LoopInfo& l : chain) {
        if (l.reduction) break;
        outer_order.push_back(l.name);
      }
      if (inner && !ContainsFor(inner->body)) {
        std::string rest = Vectorize(chain.back().name, chain.back().extent);
        // Empty when a reduction loop is outermost (then no spatial loop precedes it).
        if (!outer_order.empty()) outer_order.pop_back();
        if (!rest.empty()) outer_order.push_back(rest);
      } else {
        // The chain ends in a block (e.g. softmax passes): vectorize its innermost loops.
        for (const Stmt& s : InnermostLoops(PerfectChain(nest).back()->body)) {
          if (!s->is_reduction) Vectorize(s->loop_var->name, s->extent);
        }
      }
    }
    if (!outer_order.empty() && KnobBool("parallel", work >= kParallelThreshold)) {
      Parallelize(outer_order, chain);
    }
  }

  int64_t Knob(const std::string& name, std::vector<int64_t> choices, int64_t default_value) {
    return knobs_.Choose(prefix_ + name, std::move(choices), default_value);
  }
  bool KnobBool(const std::string& name, bool default_value) {
    return knobs_.ChooseBool(prefix_ + name, default_value);
  }

  /// Returns the spatial loops left above the reductions, outermost first.
  std::vector<std::string> PlanContraction(const std::vector<LoopInfo>& spatial,
                                           const std::vector<LoopInfo>& reds) {
    const LoopInfo inner = spatial.back();
    std::string block;
    int64_t block_extent = 0;
    for (const LoopInfo& l : spatial) {
      if (&l != &spatial.back() && (l.name == "oc" || l.name == "i")) {
        block = l.name;
        block_extent = l.extent;
      }
    }
    int64_t factor = 0;
    if (!block.empty()) {
      std::vector<int64_t> factors = {0};
      for (int64_t f : {2, 4, 8}) {
        if (block_extent % f == 0 && block_extent >= 2 * f) factors.push_back(f);
      }
      const bool rule = block_extent % kBlock == 0 && block_extent >= 2 * kBlock;
      factor = Knob("block", factors, rule ? kBlock : 0);
    }
    if (factor == 0) block.clear();
    if (!block.empty() && !Try(Kind::kSplit, {block}, factor)) block.clear();
    const bool exact = inner.extent > lanes_ && inner.extent % lanes_ == 0;
    if (exact && !Try(Kind::kSplit, {inner.name}, lanes_)) return {};
    std::vector<std::string> outer, order;
    for (const LoopInfo& l : spatial) {
      if (l.name == inner.name) continue;
      outer.push_back(l.name == block ? block + ".o" : l.name);
    }
    if (exact) outer.push_back(inner.name + ".o");
    order = outer;
    for (const LoopInfo& l : reds) order.push_back(l.name);
    if (!block.empty()) order.push_back(block + ".i");
    order.push_back(exact ? inner.name + ".i" : inner.name);
    if (!Try(Kind::kReorder, order)) return {};
    if (exact) {
      Try(Kind::kVectorize, {inner.name + ".i"});
    } else {
      Vectorize(inner.name, inner.extent);
    }
    if (!block.empty()) Try(Kind::kUnroll, {block + ".i"});
    return outer;
  }

  /// The update nest of a blocked conv ("n", "ocb", "oh", "ow", "oc", then reductions): a
  /// register block of C output columns times V vectors of output channels stays in registers
  /// across all reductions, each broadcast input element feeding V FMAs:
  ///   n, ocb.o, oh, ow.o, <reductions>, ocb.i (unrolled), ow.i (unrolled), oc (vectorized).
  /// C = ow when ow <= 16 (no split), else its largest divisor up to 8 (a split by 14 runs
  /// markedly slower than by 8 in measurements), or 8 plus a tail block of ow % 8 columns when
  /// that divisor is below 7 (PlanTailedConv); V = 2 when the block stays within 16
  /// accumulators and ocb is even (AVX-512; halve both below it). Returns the loops above the
  /// reductions, outermost first.
  std::vector<std::string> PlanBlockedConv(const std::vector<LoopInfo>& spatial,
                                           std::vector<LoopInfo> reds) {
    const int64_t ocb = spatial[1].extent, ow = spatial[3].extent;
    // The accumulator budget of the default rules (half the vector registers: 16 with
    // AVX-512, 8 below it) and of the space (all of them but one broadcast and one weight).
    const int64_t max_acc = target_.vector_registers() / 2;
    const int64_t acc_limit = target_.vector_registers() - 2;
    // Knob: the order of the reductions (the lowering's icb, kh, kw, ic): 0 as lowered, 1 the
    // last outermost, 2 the first moved just above the last (kh, kw, icb, ic).
    if (reds.size() >= 3) {
      const int64_t order = Knob("conv.red_order", {0, 1, 2}, 0);
      if (order == 1) std::rotate(reds.begin(), reds.end() - 1, reds.end());
      if (order == 2) std::rotate(reds.begin(), reds.begin() + 1, reds.end() - 1);
    } else if (reds.size() == 2 && KnobBool("conv.red_order", false)) {
      std::swap(reds[0], reds[1]);
    }
    reduction_root_ = reds[0].name;
    if (ow >= loop::kUnboundedExtent) return PlanSymbolicConv(spatial, reds);
    int64_t cols = ow;
    bool tailed = false;
    if (ow > max_acc) {
      for (cols = max_acc / 2; ow % cols != 0;) --cols;
      // Odd widths (111, 55, 27) have only short divisors: take a full block and let the split's
      // tail copy (ow % C columns) hold its own register block.
      tailed = cols < max_acc / 2 - 1;
    }
    // With 16 vector registers (AVX2), one vector of output channels over a row of 7 to 14
    // columns (all of a row up to 14, else its largest divisor from 7 up: 9 of 27, 11 of 55),
    // which measured 1.3-2x faster on Zen 3 than a tailed block of 4; longer rows that 4
    // divides (28, 56, 112) keep 4 columns (x 2 vectors when ocb is even), which measured
    // 1.3-2x faster there than 14 x 1 (bench/README.md, "Register blocks for 16 registers").
    if (target_.vector_registers() == 16 && (ow <= acc_limit || ow % (max_acc / 2) != 0)) {
      for (int64_t c = std::min(ow, acc_limit); c >= 7; --c) {
        if (ow % c != 0) continue;
        cols = c;
        tailed = false;
        break;
      }
    }
    if (ow > max_acc / 2 && ow % (max_acc / 2) != 0 && KnobBool("conv.tail", tailed)) {
      std::vector<int64_t> tail_choices;
      for (int64_t c : {max_acc / 2, max_acc / 2 + 2, max_acc - 2, acc_limit - 2, acc_limit}) {
        if (c < ow) tail_choices.push_back(c);
      }
      const int64_t tail_cols = Knob("conv.tail_cols", tail_choices, max_acc / 2);
      std::vector<std::string> outer = PlanTailedConv(spatial, reds, tail_cols);
      if (!outer.empty()) return outer;
    }
    // Register block columns: the divisors of ow up to the accumulator budget (ow itself when
    // it fits in one block).
    std::vector<int64_t> col_choices;
    for (int64_t c = 1; c <= std::min(ow, acc_limit); ++c) {
      if (ow % c == 0) col_choices.push_back(c);
    }
    if (ow <= 16) col_choices.push_back(ow);
    cols = Knob("conv.cols", col_choices, cols);
    // Two vectors only for unsplit rows or full half-blocks: other splits (28 by 7) measured
    // 3x slower with two vectors.
    const bool two = ocb % 2 == 0 && 2 * cols <= max_acc && (cols == ow || 2 * cols == max_acc);
    std::vector<int64_t> vec_choices = {1};
    for (int64_t v : {2, 4}) {
      // The accumulators, v weight vectors and one broadcast must fit the register file
      // (7 columns x 2 vectors, 17 registers with AVX2, spilled and measured 1.6-4.5x slower
      // than 7 x 1 on Zen 1: bench/README.md, "compute_at ... Zen 1").
      if (ocb % v == 0 && v * cols + v + 1 <= target_.vector_registers()) vec_choices.push_back(v);
    }
    const int64_t vecs = Knob("conv.vecs", vec_choices, two ? 2 : 1);
    std::string oc_outer = spatial[1].name, oc_inner;
    if (vecs > 1 && Try(Kind::kSplit, {oc_outer}, vecs)) {
      oc_inner = oc_outer + ".i";
      oc_outer += ".o";
    }
    // Knob: output rows per register block (oh split, its inner part unrolled with the block).
    const int64_t oh = spatial[2].extent;
    std::vector<int64_t> row_choices = {1};
    for (int64_t r : {2, 4}) {
      if (oh % r == 0 && oh > r && r * cols * vecs + vecs + 1 <= target_.vector_registers()) {
        row_choices.push_back(r);
      }
    }
    const int64_t rows = Knob("conv.rows", row_choices, 1);
    std::string oh_outer = spatial[2].name, oh_inner;
    if (rows > 1 && Try(Kind::kSplit, {oh_outer}, rows)) {
      oh_inner = oh_outer + ".i";
      oh_outer += ".o";
    }
    // Knob: output rows outside the channel blocks (n, oh, ocb, ...), so that an input row
    // stays in cache across the output-channel blocks instead of the input streaming once per
    // block. Off by default: on mobilenet_v2's convs it measured within noise on Zen 3.
    std::vector<std::string> outer = {spatial[0].name, oc_outer, oh_outer};
    if (KnobBool("conv.oh_outer", false)) std::swap(outer[1], outer[2]);
    std::string inner = spatial[3].name;
    if (cols < ow && Try(Kind::kSplit, {inner}, cols)) {
      outer.push_back(inner + ".o");
      inner += ".i";
    }
    std::vector<std::string> order = outer;
    for (const LoopInfo& l : reds) order.push_back(l.name);
    if (!oh_inner.empty()) order.push_back(oh_inner);
    if (!oc_inner.empty()) order.push_back(oc_inner);
    order.push_back(inner);
    order.push_back(spatial[4].name);
    if (!Try(Kind::kReorder, order)) return {};
    if (!oh_inner.empty()) Try(Kind::kUnroll, {oh_inner});
    if (!oc_inner.empty()) Try(Kind::kUnroll, {oc_inner});
    Try(Kind::kUnroll, {inner});
    Try(Kind::kVectorize, {spatial[4].name});
    // Knob: unroll the innermost reduction above the register block (kw or ic).
    if (!reds.empty() && KnobBool("conv.unroll_red", false)) Try(Kind::kUnroll, {reds.back().name});
    return outer;
  }

  /// PlanBlockedConv with a split of ow by `cols` that leaves a tail, one vector of output
  /// channels (splitting ocb by 2 here measured 2.5x slower), each of the main nest and the
  /// split's tail copy reordered on its own:
  ///   n, ocb, oh, { ow.o, <reductions>, ow.i, oc ; <reductions>, ow.t, oc }
  /// (ow.i and ow.t unrolled, oc vectorized). Returns {} (nothing applied) if illegal.
  std::vector<std::string> PlanTailedConv(const std::vector<LoopInfo>& spatial,
                                          const std::vector<LoopInfo>& reds, int64_t cols) {
    const std::string& ow = spatial[3].name;
    const std::string& oc = spatial[4].name;
    std::vector<std::string> main = {ow + ".o"}, tail;
    for (const LoopInfo& l : reds) {
      main.push_back(l.name);
      tail.push_back(l.name);
    }
    main.insert(main.end(), {ow + ".i", oc});
    tail.insert(tail.end(), {ow + ".t", oc});
    if (!TryAll({Primitive{Kind::kSplit, {ow}, cols}, Primitive{Kind::kReorder, main, 0},
                 Primitive{Kind::kReorder, tail, 0}, Primitive{Kind::kUnroll, {ow + ".i"}, 0},
                 Primitive{Kind::kUnroll, {ow + ".t"}, 0}, Primitive{Kind::kVectorize, {oc}, 0}})) {
      return {};
    }
    return {spatial[0].name, spatial[1].name, spatial[2].name};
  }

  /// PlanBlockedConv for a symbolic output width: register blocks of C = max_acc columns (8
  /// with AVX2, 16 with AVX-512) times one vector of output channels, and the run-time tail
  /// r < C in blocks of halving width (C/2, ..., 2) and a last single column, each its own
  /// register block (as the matmul row tail, matmul_schedule.cc):
  ///   n, ocb, oh, { ow.o, <reds>, ow.i, oc ; ow.t.o, <reds>, ow.t.i, oc ; ... ; ow.t...t,
  ///   <reds>, oc }
  /// (the .i loops unrolled, oc vectorized). Returns {} (nothing applied) if illegal.
  std::vector<std::string> PlanSymbolicConv(const std::vector<LoopInfo>& spatial,
                                            const std::vector<LoopInfo>& reds) {
    const std::string& ow = spatial[3].name;
    const std::string& oc = spatial[4].name;
    const int64_t cols = std::max<int64_t>(2, target_.vector_registers() / 2);
    std::vector<Primitive> steps;
    auto block = [&](const std::string& loop, int64_t width) {
      steps.push_back(Primitive{Kind::kSplit, {loop}, width});
      std::vector<std::string> order = {loop + ".o"};
      for (const LoopInfo& l : reds) order.push_back(l.name);
      order.insert(order.end(), {loop + ".i", oc});
      steps.push_back(Primitive{Kind::kReorder, order, 0});
      steps.push_back(Primitive{Kind::kUnroll, {loop + ".i"}, 0});
    };
    block(ow, cols);
    std::string tail = ow + ".t";
    for (int64_t width = cols / 2; width >= 2; width /= 2) {
      block(tail, width);
      tail += ".t";
    }
    // The last column: one iteration at most, above the reductions.
    std::vector<std::string> last = {tail};
    for (const LoopInfo& l : reds) last.push_back(l.name);
    last.push_back(oc);
    steps.push_back(Primitive{Kind::kReorder, last, 0});
    steps.push_back(Primitive{Kind::kVectorize, {oc}, 0});
    if (!TryAll(steps)) return {};
    return {spatial[0].name, spatial[1].name, spatial[2].name};
  }

  /// Fuses the first three loops of `outer` (n, ocb, oh) into one parallel loop, so that even
  /// a conv with one channel block splits into enough chunks for every thread.
  void ParallelizeFused(const std::vector<std::string>& outer) {
    const int64_t depth = Knob("parallel.fuse", {1, 2, 3}, 3);
    std::string target = outer[0];
    for (size_t i = 1; i < static_cast<size_t>(depth) && i < outer.size(); ++i) {
      if (!Try(Kind::kFuse, {target, outer[i]})) break;
      target += "." + outer[i];
    }
    Try(Kind::kParallel, {target});
  }

  /// Parallelizes the outermost loop of `outer` (fusing it with the next one when it is short).
  void Parallelize(const std::vector<std::string>& outer, const std::vector<LoopInfo>& chain) {
    int64_t extent = 0;
    for (const LoopInfo& l : chain) {
      if (l.name == outer[0]) extent = l.extent;
    }
    std::string target = outer[0];
    if (outer.size() >= 2 &&
        KnobBool("parallel.fuse", extent > 0 && extent < cores_) &&
        Try(Kind::kFuse, {outer[0], outer[1]})) {
      target = outer[0] + "." + outer[1];
    }
    Try(Kind::kParallel, {target});
  }

  /// Number of leaf statements `s` executes (the nest's work, for the parallel threshold).
  static int64_t Work(const Stmt& s) {
    if (!s) return 0;
    switch (s->kind) {
      case loop::StmtKind::kFor: {
        // Saturating: a symbolic loop's extent is huge (loop::kUnboundedExtent).
        const int64_t body = Work(s->body);
        if (body != 0 && s->extent > std::numeric_limits<int64_t>::max() / body) {
          return std::numeric_limits<int64_t>::max();
        }
        return s->extent * body;
      }
      case loop::StmtKind::kAllocate: return Work(s->body);
      case loop::StmtKind::kIf: return std::max(Work(s->then_body), Work(s->else_body));
      case loop::StmtKind::kMma:
      case loop::StmtKind::kStore:
      case loop::StmtKind::kAsyncCopy:
        return 1;
      case loop::StmtKind::kAsyncWait:
        return 0;
      case loop::StmtKind::kBlock: {
        int64_t total = 0;
        for (const Stmt& c : s->stmts) {
          const int64_t w = Work(c);
          total = total > std::numeric_limits<int64_t>::max() - w
                      ? std::numeric_limits<int64_t>::max()
                      : total + w;
        }
        return total;
      }
    }
    return 0;
  }

  static bool IsContraction(OpKind op) {
    return op == OpKind::kConv || op == OpKind::kGemm || op == OpKind::kMatMul ||
           op == OpKind::kMaxPool || op == OpKind::kAveragePool || op == OpKind::kLpPool;
  }

  static std::vector<Stmt> InnermostLoops(const Stmt& s) {
    std::vector<Stmt> out;
    if (!s) return out;
    if (s->kind == loop::StmtKind::kFor) {
      if (!ContainsFor(s->body)) return {s};
      return InnermostLoops(s->body);
    }
    for (const Stmt& c : s->stmts) {
      for (const Stmt& l : InnermostLoops(c)) out.push_back(l);
    }
    for (const Stmt& c : {s->body, s->then_body, s->else_body}) {
      if (s->kind == loop::StmtKind::kFor) continue;
      for (const Stmt& l : InnermostLoops(c)) out.push_back(l);
    }
    return out;
  }

  loop::Func work_;
  const Target& target_;
  KnobContext& knobs_;
  std::string prefix_;  // "n<nest index>." for knob names
  int lanes_;
  int64_t cores_;
  Schedule schedule_;
  std::vector<std::string> pending_;  // outermost loops of nests waiting for compute_at
  std::set<std::string> placed_;      // those computed at a register block
  std::string reduction_root_;        // the blocked conv's outermost reduction after reordering
  std::string producer_;              // outermost loop of a depthwise conv's pad nest, waiting
  LoopInfo producer_inner_;           // its innermost loop
};

}  // namespace

Schedule PlanSchedule(const loop::Func& func, const Target& target, KnobContext& knobs) {
  if (target.IsGpu()) return PlanGpuSchedule(func, target, knobs);
  return Planner(func, target, knobs).Run();
}

}  // namespace kiln::schedule
