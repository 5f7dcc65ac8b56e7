// compute_at's producer case: a nest that fills a workspace (a conv's zero-padded input) is
// computed, per iteration of a loop of the nest that reads it, into a local buffer holding
// just the region that iteration reads (Halide's compute_at + store_at at the same loop, with
// bounds inferred from affine indices). The workspace no longer streams through memory: for a
// depthwise conv, a few padded input rows per output row, in L1.
#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/ir/loop/visitor.h"
#include "compiler_core/schedule/compute_at_internal.h"
#include "compiler_core/schedule/loop_utils.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::schedule::compute_at_internal {
namespace {

using loop::BinaryOp;
using loop::Expr;
using loop::ExprKind;
using loop::Stmt;
using loop::StmtKind;

/// The local buffer may not exceed this (it lives on the stack of the thread that runs the
/// loop; pool threads have the default 8 MiB).
constexpr int64_t kMaxLocalBytes = int64_t{1} << 20;

/// An index split into a part of the loops outside `at` (`outer`, opaque) and an affine part
/// over loops inside it: constant + sum of coef * var, coef >= 0.
struct Affine {
  std::vector<Expr> outer;
  /// (variable, coefficient) in order of first appearance, so the rewritten index (and the
  /// generated code) does not depend on where the variables were allocated.
  std::vector<std::pair<loop::Var, int64_t>> coef;
  int64_t constant = 0;

  void AddTerm(const loop::Var& var, int64_t c) {
    for (auto& [v, k] : coef) {
      if (v == var) {
        k += c;
        return;
      }
    }
    coef.emplace_back(var, c);
  }
};

class Linearizer {
 public:
  explicit Linearizer(const std::map<const loop::VarNode*, int64_t>& inner) : inner_(inner) {}

  /// False if `e` is not affine with non-negative coefficients in the inner variables.
  bool Add(const Expr& e, int64_t scale, Affine& out) const {
    if (!HasInner(e)) {
      if (e->kind == ExprKind::kIntImm) {
        out.constant += scale * e->int_value;
      } else {
        out.outer.push_back(scale == 1 ? e : loop::Binary(BinaryOp::kMul, e, loop::IntImm(scale)));
      }
      return true;
    }
    if (e->kind == ExprKind::kVar) {
      if (scale < 0) return false;
      out.AddTerm(e->var, scale);
      return true;
    }
    if (e->kind != ExprKind::kBinary) return false;
    const Expr& a = e->operands[0];
    const Expr& b = e->operands[1];
    switch (e->binary_op) {
      case BinaryOp::kAdd: return Add(a, scale, out) && Add(b, scale, out);
      case BinaryOp::kSub: return !HasInner(b) && Add(a, scale, out) && Add(b, -scale, out);
      case BinaryOp::kMul:
        if (b->kind == ExprKind::kIntImm) return Add(a, scale * b->int_value, out);
        if (a->kind == ExprKind::kIntImm) return Add(b, scale * a->int_value, out);
        return false;
      default: return false;
    }
  }

  /// The largest value of the affine part's variable terms.
  int64_t MaxVariable(const Affine& a) const {
    int64_t m = 0;
    for (const auto& [var, c] : a.coef) m += c * (inner_.at(var.get()) - 1);
    return m;
  }

 private:
  bool HasInner(const Expr& e) const {
    return loop::AnyExpr(e, [&](const Expr& x) {
      return x->kind == ExprKind::kVar && inner_.count(x->var.get()) != 0;
    });
  }
  const std::map<const loop::VarNode*, int64_t>& inner_;
};

Expr Sum(const std::vector<Expr>& terms, int64_t constant) {
  Expr sum;
  for (const Expr& t : terms) sum = sum ? loop::Binary(BinaryOp::kAdd, sum, t) : t;
  if (!sum) return loop::IntImm(constant);
  return constant == 0 ? sum : loop::Binary(BinaryOp::kAdd, sum, loop::IntImm(constant));
}

/// Rewrites the loads of the workspace in one `at` loop's body to the local buffer.
class LoadRewriter : public loop::StmtMutator {
 public:
  LoadRewriter(const loop::Buffer* from, loop::BufferRef to,
               std::function<std::vector<Expr>(const std::vector<Expr>&)> index)
      : from_(from), to_(std::move(to)), index_(std::move(index)) {}
  Expr MutateExpr(const Expr& e) override {
    Expr m = MutateChildren(e);
    if (m->kind == ExprKind::kLoad && m->buffer.get() == from_) {
      return loop::Load(to_, index_(m->operands));
    }
    return m;
  }

 private:
  const loop::Buffer* from_;
  loop::BufferRef to_;
  std::function<std::vector<Expr>(const std::vector<Expr>&)> index_;
};

class ProducerPlacer {
 public:
  ProducerPlacer(const Pointwise& pw, const std::string& at) : pw_(pw), at_(at) {}

  absl::StatusOr<Stmt> Rewrite(const Stmt& s) {
    if (!s) return s;
    if (s->kind == StmtKind::kFor && s->loop_var->name == at_) return Place(s);
    switch (s->kind) {
      case StmtKind::kFor:
      case StmtKind::kAllocate: {
        KILN_ASSIGN_OR_RETURN(Stmt body, Rewrite(s->body));
        return body == s->body ? s : WithBody(s, body);
      }
      case StmtKind::kBlock: {
        std::vector<Stmt> stmts;
        bool changed = false;
        for (const Stmt& c : s->stmts) {
          KILN_ASSIGN_OR_RETURN(Stmt n, Rewrite(c));
          changed |= n != c;
          stmts.push_back(n);
        }
        return changed ? loop::Block(std::move(stmts)) : s;
      }
      case StmtKind::kMma:
      case StmtKind::kStore:
      case StmtKind::kAsyncCopy:
      case StmtKind::kAsyncWait:
      case StmtKind::kIf: {
        std::set<const loop::Buffer*> loads, stores;
        CollectAccesses(s, &loads, &stores);
        if (loads.count(buffer()) != 0) {
          return Fail(absl::StrCat("%", buffer()->name, " is read outside loop '", at_, "'"));
        }
        return s;
      }
    }
    return s;
  }

  int sites() const { return sites_; }

 private:
  const loop::Buffer* buffer() const { return pw_.store->buffer.get(); }

  absl::StatusOr<Stmt> Place(const Stmt& at_loop) {
    std::map<const loop::VarNode*, int64_t> inner;
    loop::VisitStmts(at_loop->body, [&](const Stmt& s) {
      if (s->kind == StmtKind::kFor) inner[s->loop_var.get()] = s->extent;
    });
    std::vector<std::vector<Expr>> loads;
    loop::VisitExprs(at_loop->body, [&](const Expr& e) {
      if (e->kind == ExprKind::kLoad && e->buffer.get() == buffer()) loads.push_back(e->operands);
    });
    if (loads.empty()) return Fail(absl::StrCat("loop '", at_, "' reads no %", buffer()->name));
    // Per dimension: the region [outer + lo, outer + lo + size) that one iteration reads, when
    // every load has the same outer part and an affine inner part; else all of the dimension.
    const Linearizer lin(inner);
    const std::vector<int64_t>& shape = buffer()->shape;
    const size_t rank = shape.size();
    std::vector<bool> narrowed(rank, false);
    std::vector<Expr> origin(rank);
    std::vector<int64_t> lo(rank, 0), size = shape;
    for (size_t d = 0; d < rank; ++d) {
      std::string outer_key;
      int64_t min = 0, max = 0;
      bool ok = true;
      for (size_t k = 0; k < loads.size() && ok; ++k) {
        Affine a;
        ok = lin.Add(loads[k][d], 1, a);
        if (!ok) break;
        const Expr outer = Sum(a.outer, 0);
        const std::string key = loop::PrintExpr(outer);
        if (k == 0) {
          outer_key = key;
          origin[d] = outer;
          min = a.constant;
          max = a.constant + lin.MaxVariable(a);
        } else {
          ok = key == outer_key;
          min = std::min(min, a.constant);
          max = std::max(max, a.constant + lin.MaxVariable(a));
        }
      }
      if (ok && max - min + 1 < shape[d]) {
        narrowed[d] = true;
        lo[d] = min;
        size[d] = max - min + 1;
      }
    }
    if (std::find(narrowed.begin(), narrowed.end(), true) == narrowed.end()) {
      return Fail(absl::StrCat("an iteration of loop '", at_, "' reads all of %",
                               buffer()->name));
    }
    loop::BufferRef local = loop::MakeBuffer(absl::StrCat(buffer()->name, "_at"),
                                             buffer()->dtype, size, loop::Buffer::Scope::kLocal);
    if (local->NumBytes() > kMaxLocalBytes) {
      return Fail(absl::StrCat("the region of %", buffer()->name, " one iteration of loop '", at_,
                               "' reads is ", local->NumBytes(), " bytes (limit ",
                               kMaxLocalBytes, ")"));
    }
    // The producer over the region: fresh loops of the region's extents (same names), its
    // variables replaced by origin + lo + loop.
    std::vector<loop::Var> fresh;
    std::vector<Expr> local_idx;
    Stmt body = pw_.store;
    for (size_t d = 0; d < rank; ++d) {
      fresh.push_back(loop::MakeVar(pw_.loops[d]->loop_var->name));
      local_idx.push_back(loop::VarRef(fresh[d]));
      Expr global = narrowed[d] ? loop::Binary(BinaryOp::kAdd, Sum({origin[d]}, lo[d]),
                                               loop::VarRef(fresh[d]))
                                : loop::VarRef(fresh[d]);
      body = Substitute(body, pw_.loops[d]->loop_var.get(), global);
    }
    body = loop::Store(local, local_idx, body->value);
    for (size_t d = rank; d-- > 0;) body = loop::For(fresh[d], size[d], body);
    // The reads: global index - origin - lo in narrowed dimensions.
    LoadRewriter rewriter(buffer(), local, [&](const std::vector<Expr>& idx) {
      std::vector<Expr> out = idx;
      for (size_t d = 0; d < rank; ++d) {
        if (!narrowed[d]) continue;
        Affine a;
        lin.Add(idx[d], 1, a);
        std::vector<Expr> terms;
        for (const auto& [var, c] : a.coef) {
          if (c == 0) continue;
          const Expr v = loop::VarRef(var);
          terms.push_back(c == 1 ? v : loop::Binary(BinaryOp::kMul, v, loop::IntImm(c)));
        }
        out[d] = Sum(terms, a.constant - lo[d]);
      }
      return out;
    });
    Stmt reads = rewriter.MutateStmt(at_loop->body);
    ++sites_;
    return WithBody(at_loop, loop::Allocate(local, loop::Block({body, reads})));
  }

  const Pointwise& pw_;
  const std::string& at_;
  int sites_ = 0;
};

}  // namespace

absl::StatusOr<Stmt> PlaceProducer(const Stmt& consumer, const Pointwise& pw,
                                   const std::string& at) {
  ProducerPlacer placer(pw, at);
  KILN_ASSIGN_OR_RETURN(Stmt placed, placer.Rewrite(consumer));
  if (placer.sites() == 0) return Fail(absl::StrCat("no loop named '", at, "'"));
  return placed;
}

}  // namespace kiln::schedule::compute_at_internal
