// compute_at: a pointwise nest over a contraction's output (its bias init before, its fused
// epilogue after) moves into the contraction's register block, so the output is written once,
// from registers, instead of being streamed through memory by three nests (Halide's and TVM's
// compute_at, specialised to a nest that maps each output element to itself).
#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/loop/visitor.h"
#include "compiler_core/schedule/compute_at_internal.h"
#include "compiler_core/schedule/loop_utils.h"
#include "compiler_core/schedule/primitives.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::schedule {
namespace {

using compute_at_internal::Fail;
using compute_at_internal::CollectAccesses;
using compute_at_internal::Pointwise;

using loop::Expr;
using loop::Stmt;
using loop::StmtKind;

/// Rewrites every reduction root named `at` in a contraction nest: the statement becomes
/// {copy, root} (before) or {root, copy} (after), the copy iterating the root's spatial loops.
class Placer {
 public:
  Placer(const Pointwise& pw, const std::string& at, bool before)
      : pw_(pw), at_(at), before_(before) {}

  absl::StatusOr<Stmt> Rewrite(const Stmt& s, std::vector<Stmt>& enclosing) {
    if (!s) return s;
    switch (s->kind) {
      case StmtKind::kFor: {
        if (s->loop_var->name == at_) return Place(s, enclosing);
        enclosing.push_back(s);
        KILN_ASSIGN_OR_RETURN(Stmt body, Rewrite(s->body, enclosing));
        enclosing.pop_back();
        return body == s->body ? s : WithBody(s, body);
      }
      case StmtKind::kBlock: {
        // Beside a loop `at`, pointwise nests computed there before (the init beside the
        // epilogue) may store B: over the same block loops they stay in place.
        Stmt root;
        for (const Stmt& c : s->stmts) {
          if (c->kind == StmtKind::kFor && c->loop_var->name == at_) root = c;
        }
        std::vector<Stmt> stmts;
        bool changed = false;
        for (const Stmt& c : s->stmts) {
          if (root && c != root && IsEarlierCopy(c, root)) {
            stmts.push_back(c);
            continue;
          }
          KILN_ASSIGN_OR_RETURN(Stmt n, Rewrite(c, enclosing));
          changed |= n != c;
          stmts.push_back(n);
        }
        return changed ? loop::Block(std::move(stmts)) : s;
      }
      case StmtKind::kAsyncWait:
        return s;
      case StmtKind::kMma:
      case StmtKind::kStore:
      case StmtKind::kAsyncCopy:
        if (s->buffer == pw_.store->buffer) {
          return Fail(absl::StrCat("the nest stores %", s->buffer->name, " outside loop '", at_,
                                   "'"));
        }
        return s;
      case StmtKind::kIf:
      case StmtKind::kAllocate: {
        std::set<const loop::Buffer*> loads, stores;
        CollectAccesses(s, &loads, &stores);
        if (stores.count(pw_.store->buffer.get()) != 0) {
          return Fail(absl::StrCat("%", pw_.store->buffer->name,
                                   " is stored under a condition or allocation"));
        }
        return s;
      }
    }
    return s;
  }

  /// Output elements the rewritten sites cover, counting each spatial iteration once; -1 when
  /// a loop has a run-time limit (a symbolic extent: not counted).
  int64_t covered() const { return covered_; }

 private:
  /// `count` times the iterations of loop `l`; -1 (not counted) once a loop has a run-time
  /// limit.
  static int64_t CountTimes(int64_t count, const Stmt& l) {
    return count < 0 || l->limit ? -1 : count * l->extent;
  }

  /// The spatial loops (name, extent) under the reductions of a chain starting at `root`.
  static std::vector<std::pair<std::string, int64_t>> BlockLoops(const Stmt& root) {
    std::vector<std::pair<std::string, int64_t>> loops;
    for (const Stmt& l : PerfectChain(root)) {
      if (!l->is_reduction) loops.emplace_back(l->loop_var->name, l->extent);
    }
    return loops;
  }

  /// True if `c` is a perfect chain of spatial loops like `root`'s block, ending in a store to
  /// B: a pointwise nest computed at `root` by an earlier compute_at.
  bool IsEarlierCopy(const Stmt& c, const Stmt& root) const {
    std::vector<Stmt> chain = PerfectChain(c);
    if (chain.empty()) return false;
    const Stmt store = Unwrap(chain.back()->body);
    if (!store || store->kind != StmtKind::kStore || store->buffer != pw_.store->buffer) {
      return false;
    }
    for (const Stmt& l : chain) {
      if (l->is_reduction) return false;
    }
    return BlockLoops(c) == BlockLoops(root);
  }

  absl::StatusOr<Stmt> Place(const Stmt& root, const std::vector<Stmt>& enclosing) {
    int64_t count = 1;
    for (const Stmt& l : enclosing) {
      if (l->is_reduction) {
        return Fail(absl::StrCat("reduction loop '", l->loop_var->name, "' encloses loop '",
                                 at_, "'"));
      }
      count = CountTimes(count, l);
    }
    if (!root->is_reduction) return Fail(absl::StrCat("loop '", at_, "' is not a reduction"));
    std::vector<Stmt> chain = PerfectChain(root);
    size_t first_spatial = 0;
    while (first_spatial < chain.size() && chain[first_spatial]->is_reduction) ++first_spatial;
    std::set<const loop::VarNode*> reduction_vars;
    for (size_t i = 0; i < first_spatial; ++i) reduction_vars.insert(chain[i]->loop_var.get());
    std::vector<Stmt> spatial(chain.begin() + first_spatial, chain.end());
    for (const Stmt& l : spatial) {
      if (l->is_reduction) {
        return Fail(absl::StrCat("reduction loop '", l->loop_var->name, "' is inside spatial loop"
                                 " of the block at '", at_, "'"));
      }
      if (l->for_kind == loop::ForKind::kParallel) {
        return Fail(absl::StrCat("loop '", l->loop_var->name, "' inside '", at_,
                                 "' is parallel"));
      }
      count = CountTimes(count, l);
    }
    const Stmt store = Unwrap(chain.back()->body);
    if (!store || store->kind != StmtKind::kStore || store->buffer != pw_.store->buffer) {
      return Fail(absl::StrCat("the loops under '", at_, "' do not end in one store to %",
                               pw_.store->buffer->name));
    }
    for (const Expr& index : store->indices) {
      if (loop::AnyExpr(index, [&](const Expr& e) {
            return e->kind == loop::ExprKind::kVar && reduction_vars.count(e->var.get()) != 0;
          })) {
        return Fail(absl::StrCat("the store to %", store->buffer->name,
                                 " is indexed by a reduction loop"));
      }
    }
    // The copy: fresh variables for the block's spatial loops, the pointwise nest's variables
    // replaced by the contraction's store indices over them.
    std::vector<loop::Var> fresh;
    for (const Stmt& l : spatial) fresh.push_back(loop::MakeVar(l->loop_var->name));
    Stmt body = pw_.store;
    for (size_t d = 0; d < pw_.loops.size(); ++d) {
      Expr index = store->indices[d];
      for (size_t k = 0; k < spatial.size(); ++k) {
        index = Substitute(index, spatial[k]->loop_var.get(), loop::VarRef(fresh[k]));
      }
      body = Substitute(body, pw_.loops[d]->loop_var.get(), index);
    }
    for (size_t k = spatial.size(); k-- > 0;) {
      auto copy = std::make_shared<loop::StmtNode>(
          *loop::For(fresh[k], spatial[k]->extent, body, spatial[k]->for_kind, false));
      if (spatial[k]->limit) {
        copy->limit = spatial[k]->limit;
        for (size_t j = 0; j < k; ++j) {
          copy->limit = Substitute(copy->limit, spatial[j]->loop_var.get(), loop::VarRef(fresh[j]));
        }
      }
      body = copy;
    }
    covered_ = count < 0 || covered_ < 0 ? -1 : covered_ + count;
    return before_ ? loop::Block({body, root}) : loop::Block({root, body});
  }

  const Pointwise& pw_;
  const std::string& at_;
  bool before_;
  int64_t covered_ = 0;
};

}  // namespace

absl::Status ComputeAt(loop::Func& func, const std::string& nest, const std::string& at) {
  const Stmt top = Unwrap(func.body);
  if (!top || top->kind != StmtKind::kBlock) {
    return Fail("the function body is not a sequence of nests");
  }
  const std::vector<Stmt>& nests = top->stmts;
  auto find = [&](auto pred) -> int {
    for (size_t i = 0; i < nests.size(); ++i) {
      if (pred(nests[i])) return static_cast<int>(i);
    }
    return -1;
  };
  const int from = find([&](const Stmt& s) {
    return s->kind == StmtKind::kFor && s->loop_var->name == nest;
  });
  if (from < 0) return Fail(absl::StrCat("no nest starts with loop '", nest, "'"));
  absl::StatusOr<Pointwise> pw = compute_at_internal::MatchPointwise(nests[from]);
  if (!pw.ok()) {
    return Fail(absl::StrCat("nest '", nest, "' is not pointwise: ", pw.status().message()));
  }
  const int to = find([&](const Stmt& s) {
    std::set<std::string> names;
    CollectLoopNames(s, names);
    return names.count(at) != 0;
  });
  if (to < 0) return Fail(absl::StrCat("no loop named '", at, "'"));
  if (to == from) return Fail(absl::StrCat("loop '", at, "' is in nest '", nest, "' itself"));
  // Nothing between the two nests may touch the stored buffer, nor write what the pointwise
  // nest reads; the contraction may not write what the pointwise nest reads besides it.
  const loop::BufferRef& out = pw->store->buffer;
  std::set<const loop::Buffer*> pw_loads, pw_stores, to_loads, to_stores;
  CollectAccesses(nests[from], &pw_loads, &pw_stores);
  CollectAccesses(nests[to], &to_loads, &to_stores);
  pw_loads.erase(out.get());
  for (int i = std::min(from, to); i <= std::max(from, to); ++i) {
    if (i == from) continue;
    std::set<const loop::Buffer*> loads, stores;
    CollectAccesses(nests[i], &loads, &stores);
    for (const loop::Buffer* b : pw_loads) {
      if (stores.count(b) != 0) {
        return Fail(absl::StrCat("nest '", nest, "' reads %", b->name, ", which is written in "
                                 "between"));
      }
    }
    if (i != to && (loads.count(out.get()) != 0 || stores.count(out.get()) != 0)) {
      return Fail(absl::StrCat("another nest in between uses %", out->name));
    }
  }
  Stmt placed;
  const auto workspace = std::find(func.workspaces.begin(), func.workspaces.end(), out);
  if (to_stores.count(out.get()) != 0) {
    Placer placer(*pw, at, from < to);
    std::vector<Stmt> enclosing;
    KILN_ASSIGN_OR_RETURN(placed, placer.Rewrite(nests[to], enclosing));
    // Every element the pointwise nest computes must be computed in the contraction's blocks
    // (each spatial iteration stores a distinct element: the lowering's output loops are a
    // bijection onto the output, which split, reorder and fuse preserve).
    // With run-time limits the count is unknown: then the nest of `at` must be the only one
    // that computes part of the buffer (the lowering's output loops are a bijection onto it;
    // Rewrite refuses a store outside a loop `at`), so any other nest that stores it must be
    // pointwise over all of it (an epilogue), not a second contraction (a packed B's tail
    // columns).
    if (placer.covered() < 0) {
      for (size_t i = 0; i < nests.size(); ++i) {
        if (static_cast<int>(i) == from || static_cast<int>(i) == to) continue;
        std::set<const loop::Buffer*> loads, stores;
        CollectAccesses(nests[i], &loads, &stores);
        if (stores.count(out.get()) != 0 && !compute_at_internal::MatchPointwise(nests[i]).ok()) {
          return Fail(absl::StrCat("another nest computes part of %", out->name,
                                   " (with run-time limits the blocks at '", at,
                                   "' cannot be counted)"));
        }
      }
    } else if (placer.covered() != out->NumElements()) {
      return Fail(absl::StrCat("the blocks at '", at, "' cover ", placer.covered(), " of the ",
                               out->NumElements(), " elements of %", out->name));
    }
  } else if (to_loads.count(out.get()) != 0 && workspace != func.workspaces.end() &&
             from < to) {
    if (HasLimitedLoop(func.body)) {
      return Fail("the kernel has loops with run-time limits (symbolic extents): a workspace "
                  "computed per block is not supported there yet");
    }
    // The producer case: the workspace becomes a local buffer per iteration of `at`, so no
    // other nest may use it.
    for (size_t i = 0; i < nests.size(); ++i) {
      if (static_cast<int>(i) == from || static_cast<int>(i) == to) continue;
      std::set<const loop::Buffer*> loads, stores;
      CollectAccesses(nests[i], &loads, &stores);
      if (loads.count(out.get()) != 0 || stores.count(out.get()) != 0) {
        return Fail(absl::StrCat("another nest uses %", out->name));
      }
    }
    KILN_ASSIGN_OR_RETURN(placed, compute_at_internal::PlaceProducer(nests[to], *pw, at));
  } else {
    return Fail(absl::StrCat("the nest of loop '", at, "' neither stores %", out->name,
                             " nor reads it as a workspace computed before it"));
  }
  std::vector<Stmt> result;
  for (size_t i = 0; i < nests.size(); ++i) {
    if (static_cast<int>(i) == from) continue;
    result.push_back(static_cast<int>(i) == to ? placed : nests[i]);
  }
  if (to_stores.count(out.get()) == 0) func.workspaces.erase(workspace);
  func.body = loop::Block(std::move(result));
  return absl::OkStatus();
}

}  // namespace kiln::schedule
