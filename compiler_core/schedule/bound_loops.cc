// BoundLoops: per loop, the point past which every store of its body lands in padding.
#include "compiler_core/schedule/bound_loops.h"

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>

#include "compiler_core/ir/loop/visitor.h"

namespace kiln::schedule {
namespace {

using loop::BinaryOp;
using loop::Expr;
using loop::ExprKind;
using loop::SameExpr;
using loop::Stmt;
using loop::StmtKind;
using loop::StmtNode;
using loop::VarNode;

/// An i64 index expression as sum(coeff * var) + constant.
struct Affine {
  std::unordered_map<const VarNode*, int64_t> coeffs;
  int64_t constant = 0;
};

std::optional<Affine> Decompose(const Expr& e) {
  if (e->dtype != DType::kInt64) return std::nullopt;
  switch (e->kind) {
    case ExprKind::kIntImm: {
      Affine a;
      a.constant = e->int_value;
      return a;
    }
    case ExprKind::kVar: {
      Affine a;
      a.coeffs[e->var.get()] = 1;
      return a;
    }
    case ExprKind::kBinary: {
      auto x = Decompose(e->operands[0]);
      auto y = Decompose(e->operands[1]);
      if (!x || !y) return std::nullopt;
      switch (e->binary_op) {
        case BinaryOp::kAdd:
        case BinaryOp::kSub: {
          const int64_t sign = e->binary_op == BinaryOp::kAdd ? 1 : -1;
          for (const auto& [v, c] : y->coeffs) x->coeffs[v] += sign * c;
          x->constant += sign * y->constant;
          return x;
        }
        case BinaryOp::kMul: {
          if (!x->coeffs.empty() && !y->coeffs.empty()) return std::nullopt;
          if (x->coeffs.empty()) std::swap(x, y);
          for (auto& [v, c] : x->coeffs) c *= y->constant;
          x->constant *= y->constant;
          return x;
        }
        default:
          return std::nullopt;
      }
    }
    default:
      return std::nullopt;
  }
}

Expr I64(int64_t v) { return loop::IntImm(v); }

/// ceil(a / c) for c > 0 (floor division rounds toward -inf).
Expr CeilDiv(Expr a, int64_t c) {
  if (c == 1) return a;
  return loop::Binary(BinaryOp::kFloorDiv, a + I64(c - 1), I64(c));
}

/// One load or store of a buffer: its indices, whether it is inside the loop in question, and
/// whether it is a load of the position its own store writes (out[i] = f(out[i])).
struct Access {
  const std::vector<Expr>* indices;
  bool inside;
  bool store;
  bool same_position;
};

/// Every access of `buffer` in `root`, `inside` for those in the subtree `loop`.
std::vector<Access> AccessesOf(const Stmt& root, const loop::StmtNode* loop,
                               const loop::Buffer* buffer) {
  std::vector<Access> out;
  std::function<void(const Stmt&, bool)> walk = [&](const Stmt& s, bool inside) {
    if (!s) return;
    inside = inside || s.get() == loop;
    auto loads = [&](const Expr& e, const StmtNode* store) {
      loop::VisitExprs(e, [&](const Expr& x) {
        if (x->kind != ExprKind::kLoad || x->buffer.get() != buffer) return;
        bool same = store != nullptr && store->buffer.get() == buffer &&
                    store->indices.size() == x->operands.size();
        for (size_t i = 0; same && i < store->indices.size(); ++i) {
          same = SameExpr(store->indices[i], x->operands[i]);
        }
        out.push_back({&x->operands, inside, false, same});
      });
    };
    loads(s->limit, nullptr);
    loads(s->cond, nullptr);
    for (const Expr& i : s->indices) loads(i, nullptr);
    loads(s->value, s->kind == StmtKind::kStore ? s.get() : nullptr);
    if (s->kind == StmtKind::kStore && s->buffer.get() == buffer) {
      out.push_back({&s->indices, inside, true, false});
    }
    for (const Stmt* c : {&s->body, &s->then_body, &s->else_body}) walk(*c, inside);
    for (const Stmt& c : s->stmts) walk(c, inside);
  };
  walk(root, false);
  return out;
}

class Bounder {
 public:
  Bounder(const BufferLengths& lengths, const Stmt& root,
          const std::set<const loop::Buffer*>& params)
      : lengths_(lengths), root_(root), params_(params) {}

  Stmt Rewrite(const Stmt& s) {
    if (!s) return s;
    switch (s->kind) {
      case StmtKind::kFor: {
        outer_.push_back(s->loop_var);
        Stmt body = Rewrite(s->body);
        outer_.pop_back();
        Expr limit = s->limit;
        if (!limit && !s->is_reduction &&
            (s->for_kind == loop::ForKind::kSerial || s->for_kind == loop::ForKind::kParallel)) {
          Bounds bounds = LimitOf(*s, body);
          limit = bounds.limit;
          if (bounds.guard) body = loop::IfThenElse(bounds.guard, body);
        }
        if (body == s->body && limit == s->limit) return s;
        auto n = std::make_shared<loop::StmtNode>(*s);
        n->body = std::move(body);
        n->limit = std::move(limit);
        return n;
      }
      case StmtKind::kStore:
        return s;
      default: {
        bool changed = false;
        auto n = std::make_shared<loop::StmtNode>(*s);
        for (Stmt* c : {&n->body, &n->then_body, &n->else_body}) {
          Stmt r = Rewrite(*c);
          changed |= r != *c;
          *c = std::move(r);
        }
        for (Stmt& c : n->stmts) {
          Stmt r = Rewrite(c);
          changed |= r != c;
          c = std::move(r);
        }
        return changed ? Stmt(n) : s;
      }
    }
  }

 private:
  /// The limit of `loop` (original) with its rewritten `body`, or null. Its iterations are
  /// independent (not a reduction); a skipped one only loses its own stores: those into the
  /// padding of results, which no kept iteration and no code after the loop reads, and those
  /// into its own slice of a scratch workspace.
  struct Bounds {
    Expr limit;  // the loop stops here
    Expr guard;  // the body runs where this holds
  };

  Bounds LimitOf(const loop::StmtNode& loop, const Stmt& body) {
    const VarNode* v = loop.loop_var.get();
    std::set<const loop::Buffer*> allocated;
    std::vector<const loop::StmtNode*> stores;
    loop::VisitStmts(body, [&](const Stmt& s) {
      if (s->kind == StmtKind::kAllocate) allocated.insert(s->buffer.get());
      if (s->kind == StmtKind::kStore) stores.push_back(s.get());
    });
    std::vector<const loop::StmtNode*> bounded;
    std::set<const loop::Buffer*> checked;
    for (const loop::StmtNode* store : stores) {
      const loop::Buffer* b = store->buffer.get();
      if (allocated.count(b)) continue;
      if (lengths_.count(b)) {
        bounded.push_back(store);
        continue;
      }
      if (!checked.insert(b).second) continue;
      if (b->scope == loop::Buffer::Scope::kLocal || params_.count(b)) return {};
      // A workspace: every access in the kernel is inside the loop, at one index list that
      // moves with the loop's variable (each iteration has its own slice).
      const std::vector<Access> accesses = AccessesOf(root_, &loop, b);
      for (const Access& a : accesses) {
        if (!a.inside || a.indices->size() != accesses[0].indices->size()) return {};
        for (size_t i = 0; i < a.indices->size(); ++i) {
          if (!SameExpr((*a.indices)[i], (*accesses[0].indices)[i])) return {};
        }
      }
      bool moves = false;
      for (const Expr& i : *accesses[0].indices) {
        std::optional<Affine> a = Decompose(i);
        moves = moves || (a && a->coeffs.count(v) && a->coeffs.at(v) != 0);
      }
      if (!moves) return {};
    }
    if (bounded.empty()) return {};
    std::set<const VarNode*> outer;
    for (const loop::Var& u : outer_) outer.insert(u.get());
    std::unordered_map<const VarNode*, int64_t> inner_extents;
    loop::VisitStmts(body, [&](const Stmt& s) {
      if (s->kind == StmtKind::kFor) inner_extents[s->loop_var.get()] = s->extent;
    });
    Bounds bounds;
    Expr dead;  // every store's position is padding (AND over stores)
    bool all_limited = true;
    for (const loop::StmtNode* store : bounded) {
      auto it = lengths_.find(store->buffer.get());
      Expr store_limit;              // the smallest prefix bound over the store's dims
      Expr store_dead;               // OR over its dims of "this iteration writes padding"
      std::vector<size_t> limiting;  // the dims that bound the store
      for (size_t d = 0; d < store->indices.size() && d < it->second.size(); ++d) {
        if (!it->second[d]) continue;
        std::optional<DimBound> b =
            AnalyzeDim(store->indices[d], it->second[d], loop.loop_var, outer, inner_extents);
        if (!b) continue;
        limiting.push_back(d);
        if (b->prefix) {
          store_limit = store_limit ? loop::Min(store_limit, b->prefix) : b->prefix;
        }
        Expr cond = b->prefix ? loop::Binary(BinaryOp::kGe, loop::VarRef(loop.loop_var), b->prefix)
                              : b->dead;
        store_dead = store_dead ? loop::Binary(BinaryOp::kOr, store_dead, cond) : cond;
      }
      if (!store_dead) return {};
      // Loads of the result other than out[i] = f(out[i]) must be inside the loop and read, along
      // each dim that bounds the store, the position the store writes: a kept iteration then
      // reads only what it wrote itself.
      for (const Access& a : AccessesOf(root_, &loop, store->buffer.get())) {
        if (a.store || a.same_position) continue;
        if (!a.inside || a.indices->size() != store->indices.size()) return {};
        for (size_t d : limiting) {
          if (!SameExpr((*a.indices)[d], store->indices[d])) return {};
        }
      }
      if (!store_limit) {
        all_limited = false;
      } else if (!bounds.limit) {
        bounds.limit = store_limit;
      } else if (!SameExpr(bounds.limit, store_limit)) {
        bounds.limit = loop::Max(bounds.limit, store_limit);
      }
      if (!dead) {
        dead = store_dead;
      } else if (!SameExpr(dead, store_dead)) {
        dead = loop::Binary(BinaryOp::kAnd, dead, store_dead);
      }
    }
    if (!all_limited) bounds.limit = nullptr;
    // A guard is needed only where some store's padding is not a suffix of the iterations.
    bool needs_guard = false;
    loop::VisitExprs(dead, [&](const Expr& e) {
      needs_guard =
          needs_guard || (e->kind == ExprKind::kBinary && e->binary_op == BinaryOp::kFloorMod);
    });
    // A guard costs a test per iteration: only worth it around a loop of work.
    bool has_loop = false;
    loop::VisitStmts(body,
                     [&](const Stmt& s) { has_loop = has_loop || s->kind == StmtKind::kFor; });
    if ((needs_guard || !bounds.limit) && has_loop) {
      bounds.guard = loop::Unary(loop::UnaryOp::kNot, dead);
    }
    return bounds;
  }

  /// How one store dim bounds the iterations of the loop over `v`: from `prefix` on (an index
  /// c * v + ... that only grows past the length), or where `dead` holds (a remainder, as a
  /// flattened row split into dims: floor(A / q) mod m, with no wrap inside the iteration).
  struct DimBound {
    Expr prefix;
    Expr dead;
  };

  std::optional<DimBound> AnalyzeDim(Expr index, const Expr& length, const loop::Var& var,
                                     const std::set<const VarNode*>& outer,
                                     const std::unordered_map<const VarNode*, int64_t>& inner) {
    int64_t modulus = 0;
    if (index->kind == ExprKind::kBinary && index->binary_op == BinaryOp::kFloorMod &&
        index->operands[1]->kind == ExprKind::kIntImm && index->operands[1]->int_value > 0) {
      modulus = index->operands[1]->int_value;
      index = index->operands[0];
    }
    // floor(A / q) >= length exactly when A >= q * length (q > 0): a flattened index.
    int64_t scale = 1;
    while (index->kind == ExprKind::kBinary && index->binary_op == BinaryOp::kFloorDiv &&
           index->operands[1]->kind == ExprKind::kIntImm && index->operands[1]->int_value > 0) {
      scale *= index->operands[1]->int_value;
      index = index->operands[0];
    }
    std::optional<Affine> a = Decompose(index);
    if (!a) return std::nullopt;
    const VarNode* v = var.get();
    auto c = a->coeffs.find(v);
    if (c == a->coeffs.end() || c->second <= 0) return std::nullopt;
    int64_t inner_span = 0;  // the most the inner loops' terms add within one iteration
    for (const auto& [u, k] : a->coeffs) {
      if (u == v || outer.count(u) || k == 0) continue;
      // An inner term with k < 0 could move the position back into the valid region.
      auto e = inner.find(u);
      if (k < 0 || e == inner.end()) return std::nullopt;
      inner_span += k * (e->second - 1);
    }
    Expr offset;  // the enclosing loops' terms, outermost first, and the constant
    for (const loop::Var& u : outer_) {
      auto k = a->coeffs.find(u.get());
      if (k == a->coeffs.end() || k->second == 0) continue;
      Expr term = k->second == 1 ? loop::VarRef(u) : loop::VarRef(u) * I64(k->second);
      offset = offset ? offset + term : term;
    }
    if (a->constant != 0) offset = offset ? offset + I64(a->constant) : I64(a->constant);
    DimBound out;
    if (modulus == 0) {
      Expr threshold = scale == 1 ? length : length * I64(scale);
      out.prefix = CeilDiv(offset ? threshold - offset : threshold, c->second);
      return out;
    }
    // The iteration's first position t = floor(base / q) and last floor((base + span) / q): all
    // padding when t mod m >= length and the range does not wrap past m.
    Expr base = c->second == 1 ? loop::VarRef(var) : loop::VarRef(var) * I64(c->second);
    if (offset) base = base + offset;
    auto div = [&](Expr x) {
      return scale == 1 ? x : loop::Binary(BinaryOp::kFloorDiv, x, I64(scale));
    };
    Expr first = div(base);
    Expr last = div(inner_span == 0 ? base : base + I64(inner_span));
    Expr r = loop::Binary(BinaryOp::kFloorMod, first, I64(modulus));
    out.dead = loop::Binary(BinaryOp::kAnd, loop::Binary(BinaryOp::kGe, r, length),
                            loop::Binary(BinaryOp::kLt, r + (last - first), I64(modulus)));
    return out;
  }

  const BufferLengths& lengths_;
  const Stmt& root_;
  const std::set<const loop::Buffer*>& params_;
  std::vector<loop::Var> outer_;  // the enclosing loops' variables, outermost first
};

}  // namespace

loop::Stmt BoundLoops(const loop::Func& func, const BufferLengths& lengths) {
  if (lengths.empty()) return func.body;
  std::set<const loop::Buffer*> params;
  for (const loop::BufferRef& p : func.params) params.insert(p.get());
  return Bounder(lengths, func.body, params).Rewrite(func.body);
}

}  // namespace kiln::schedule
