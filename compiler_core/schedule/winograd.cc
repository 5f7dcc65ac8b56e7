// winograd(m): the conv update nest → weight/input transforms, batched GEMM, output transform.
#include "compiler_core/schedule/winograd.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler_core/schedule/loop_utils.h"

namespace kiln::schedule {
namespace {

using loop::BinaryOp;
using loop::BufferRef;
using loop::Expr;
using loop::ExprKind;
using loop::Stmt;
using loop::StmtKind;
using loop::Var;

// Transform matrices, row-major, for F(2×2, 3×3) (α = 4) and F(4×4, 3×3) (α = 6).
constexpr double kBT2[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
constexpr double kG2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
constexpr double kAT2[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};

constexpr double kBT4[6][6] = {{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
                               {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
constexpr double kG4[6][3] = {{1.0 / 4, 0, 0},
                              {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                              {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                              {1.0 / 24, 1.0 / 12, 1.0 / 6},
                              {1.0 / 24, -1.0 / 12, 1.0 / 6},
                              {0, 0, 1}};
constexpr double kAT4[4][6] = {
    {1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};

struct Matrices {
  int64_t m;
  double bt(int64_t r, int64_t c) const { return m == 2 ? kBT2[r][c] : kBT4[r][c]; }
  double g(int64_t r, int64_t c) const { return m == 2 ? kG2[r][c] : kG4[r][c]; }
  double at(int64_t r, int64_t c) const { return m == 2 ? kAT2[r][c] : kAT4[r][c]; }
};

/// An index expression as Σ coeff·var + constant; nullopt when it is not of that form.
struct Linear {
  std::map<const loop::VarNode*, int64_t> coeffs;
  int64_t constant = 0;
};

std::optional<Linear> ToLinear(const Expr& e) {
  switch (e->kind) {
    case ExprKind::kIntImm:
      return Linear{{}, e->int_value};
    case ExprKind::kVar:
      return Linear{{{e->var.get(), 1}}, 0};
    case ExprKind::kBinary: {
      auto a = ToLinear(e->operands[0]);
      auto b = ToLinear(e->operands[1]);
      if (!a || !b) return std::nullopt;
      if (e->binary_op == BinaryOp::kAdd || e->binary_op == BinaryOp::kSub) {
        const int64_t sign = e->binary_op == BinaryOp::kAdd ? 1 : -1;
        for (const auto& [v, c] : b->coeffs) a->coeffs[v] += sign * c;
        a->constant += sign * b->constant;
        return a;
      }
      if (e->binary_op == BinaryOp::kMul) {
        if (!a->coeffs.empty() && !b->coeffs.empty()) return std::nullopt;
        const Linear& k = a->coeffs.empty() ? *a : *b;
        Linear r = a->coeffs.empty() ? *b : *a;
        for (auto& [v, c] : r.coeffs) c *= k.constant;
        r.constant *= k.constant;
        return r;
      }
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

/// True if `e` is exactly Σ vars[i] (each with coefficient 1), nothing else.
bool IsSumOf(const Expr& e, std::vector<const loop::VarNode*> vars) {
  std::optional<Linear> l = ToLinear(e);
  if (!l || l->constant != 0) return false;
  std::map<const loop::VarNode*, int64_t> want;
  for (const loop::VarNode* v : vars) want[v] += 1;
  for (const auto& [v, c] : l->coeffs) {
    if (c != 0 && want[v] != c) return false;
    if (c != 0) want.erase(v);
  }
  for (const auto& [v, c] : want) {
    if (c != 0) return false;
  }
  return true;
}

bool IsVar(const Expr& e, const loop::VarNode* v) {
  return e->kind == ExprKind::kVar && e->var.get() == v;
}

/// The recognized conv update nest.
struct ConvNest {
  size_t index = 0;  // among the top-level statements
  BufferRef out, src, w;
  int64_t n = 0, ocb = 0, oh = 0, ow = 0, x = 0;  // output extents (x: output channel lanes)
  int64_t icb = 0, l = 0;                        // input channel blocks and lanes
  int64_t ph = 0, pw = 0;                        // source rows / columns
};

std::vector<Stmt> TopLevel(const Stmt& body) {
  Stmt b = Unwrap(body);
  if (!b) return {};
  if (b->kind == StmtKind::kBlock) return b->stmts;
  return {b};
}

std::optional<ConvNest> MatchNest(const Stmt& nest) {
  std::vector<Stmt> chain = PerfectChain(nest);
  if (chain.size() != 9) return std::nullopt;
  for (size_t i = 0; i < 9; ++i) {
    if (chain[i]->is_reduction != (i >= 5) || chain[i]->for_kind != loop::ForKind::kSerial) {
      return std::nullopt;
    }
  }
  const Stmt& store = chain.back()->body;
  if (!store || store->kind != StmtKind::kStore) return std::nullopt;
  const Expr& v = store->value;
  if (v->kind != ExprKind::kBinary || v->binary_op != BinaryOp::kAdd) return std::nullopt;
  const Expr& acc = v->operands[0];
  const Expr& prod = v->operands[1];
  if (acc->kind != ExprKind::kLoad || acc->buffer != store->buffer ||
      prod->kind != ExprKind::kBinary || prod->binary_op != BinaryOp::kMul) {
    return std::nullopt;
  }
  Expr src = prod->operands[0], w = prod->operands[1];
  if (src->kind != ExprKind::kLoad || w->kind != ExprKind::kLoad) return std::nullopt;
  if (src->operands.size() == 6) std::swap(src, w);
  if (src->operands.size() != 5 || w->operands.size() != 6) return std::nullopt;
  auto var = [&](size_t i) { return chain[i]->loop_var.get(); };
  // Loops: n ocb oh ow oc | icb kh kw ic.
  const loop::VarNode *n = var(0), *ocb = var(1), *oh = var(2), *ow = var(3), *oc = var(4),
                      *icb = var(5), *kh = var(6), *kw = var(7), *ic = var(8);
  const std::vector<const loop::VarNode*> out_vars = {n, ocb, oh, ow, oc};
  if (store->indices.size() != 5 || acc->operands.size() != 5) return std::nullopt;
  for (size_t i = 0; i < 5; ++i) {
    if (!IsVar(store->indices[i], out_vars[i]) || !IsVar(acc->operands[i], out_vars[i])) {
      return std::nullopt;
    }
  }
  const std::vector<const loop::VarNode*> w_vars = {ocb, icb, kh, kw, ic, oc};
  for (size_t i = 0; i < 6; ++i) {
    if (!IsVar(w->operands[i], w_vars[i])) return std::nullopt;
  }
  if (!IsVar(src->operands[0], n) || !IsVar(src->operands[1], icb) ||
      !IsSumOf(src->operands[2], {oh, kh}) || !IsSumOf(src->operands[3], {ow, kw}) ||
      !IsVar(src->operands[4], ic)) {
    return std::nullopt;
  }
  ConvNest c;
  c.out = store->buffer;
  c.src = src->buffer;
  c.w = w->buffer;
  if (c.out == c.src || c.out == c.w || c.src == c.w) return std::nullopt;
  for (const BufferRef& b : {c.out, c.src, c.w}) {
    if (b->dtype != DType::kFloat32 || b->scope != loop::Buffer::Scope::kGlobal) {
      return std::nullopt;
    }
  }
  c.n = chain[0]->extent;
  c.ocb = chain[1]->extent;
  c.oh = chain[2]->extent;
  c.ow = chain[3]->extent;
  c.x = chain[4]->extent;
  c.icb = chain[5]->extent;
  c.l = chain[8]->extent;
  if (chain[6]->extent != 3 || chain[7]->extent != 3) return std::nullopt;
  if (c.out->shape != std::vector<int64_t>{c.n, c.ocb, c.oh, c.ow, c.x} ||
      c.w->shape != std::vector<int64_t>{c.ocb, c.icb, 3, 3, c.l, c.x}) {
    return std::nullopt;
  }
  const std::vector<int64_t>& ss = c.src->shape;
  if (ss.size() != 5 || ss[0] != c.n || ss[1] != c.icb || ss[4] != c.l || ss[2] < c.oh + 2 ||
      ss[3] < c.ow + 2) {
    return std::nullopt;
  }
  c.ph = ss[2];
  c.pw = ss[3];
  return c;
}

std::optional<ConvNest> FindConvNest(const loop::Func& func) {
  std::vector<Stmt> nests = TopLevel(func.body);
  for (size_t i = 0; i < nests.size(); ++i) {
    if (std::optional<ConvNest> c = MatchNest(nests[i])) {
      c->index = i;
      return c;
    }
  }
  return std::nullopt;
}

Expr I(int64_t v) { return loop::IntImm(v); }
Expr R(const Var& v) { return loop::VarRef(v); }
Expr Add(Expr a, Expr b) { return loop::Binary(BinaryOp::kAdd, std::move(a), std::move(b)); }
/// a + k, or a itself when k is 0.
Expr Offset(Expr a, int64_t k) { return k == 0 ? a : Add(std::move(a), I(k)); }
Expr Mul(Expr a, int64_t k) { return loop::Binary(BinaryOp::kMul, std::move(a), I(k)); }

/// Σ coeff·term over the nonzero coefficients (±1 without a multiplication), in term order.
Expr WeightedSum(const std::vector<std::pair<double, Expr>>& terms) {
  Expr sum;
  for (const auto& [c, t] : terms) {
    if (c == 0) continue;
    if (!sum) {
      sum = c == 1    ? t
            : c == -1 ? loop::Unary(loop::UnaryOp::kNeg, t)
                      : loop::FloatImm(c) * t;
    } else if (c == 1) {
      sum = sum + t;
    } else if (c == -1) {
      sum = sum - t;
    } else {
      sum = sum + loop::FloatImm(c) * t;
    }
  }
  return sum ? sum : loop::FloatImm(0);
}

/// for v0 in e0 { for v1 in e1 { ... body } } over (var, extent) pairs, outermost first.
Stmt NestOf(const std::vector<std::pair<Var, int64_t>>& loops, Stmt body,
            size_t reductions_from = SIZE_MAX) {
  for (size_t i = loops.size(); i-- > 0;) {
    body = loop::For(loops[i].first, loops[i].second, std::move(body), loop::ForKind::kSerial,
                     i >= reductions_from);
  }
  return body;
}

class Rewriter {
 public:
  Rewriter(const loop::Func& func, const ConvNest& c, int64_t m)
      : func_(func), c_(c), mx_{m}, a_(m + 2), th_((c.oh + m - 1) / m),
        tw_((c.ow + m - 1) / m) {}

  absl::Status Run(loop::Func& out) {
    std::vector<Stmt> nests = TopLevel(func_.body);
    for (const Stmt& s : nests) {
      if (s != nests[c_.index]) CollectLoopNames(s, loop_names_);
    }
    for (const BufferRef& b : func_.params) buffer_names_.insert(b->name);
    for (const BufferRef& b : func_.workspaces) buffer_names_.insert(b->name);
    u_ = NewBuffer("wino.u", {a_ * a_, c_.ocb, c_.icb, c_.l, c_.x});
    v_ = NewBuffer("wino.v", {a_ * a_, c_.icb, c_.n * th_, tw_, c_.l});
    m_ = NewBuffer("wino.m", {a_ * a_, c_.ocb, c_.n * th_, tw_, c_.x});
    wt_tile_ = NewBuffer("wino.wt", {a_, 3, c_.x}, loop::Buffer::Scope::kLocal);
    it_tile_ = NewBuffer("wino.it", {a_, a_, c_.l}, loop::Buffer::Scope::kLocal);
    ot_tile_ = NewBuffer("wino.ot", {mx_.m, a_, c_.x}, loop::Buffer::Scope::kLocal);
    std::vector<Stmt> added;
    src_ = c_.src;
    std::vector<BufferRef> workspaces = func_.workspaces;
    if (c_.ph < th_ * mx_.m + 2 || c_.pw < tw_ * mx_.m + 2) {
      src_ = NewBuffer("wino.xpad", {c_.n, c_.icb, th_ * mx_.m + 2, tw_ * mx_.m + 2, c_.l});
      added.push_back(ExtendSource());
      workspaces.push_back(src_);
    }
    added.push_back(WeightTransform());
    added.push_back(InputTransform());
    added.push_back(GemmInit());
    added.push_back(Gemm());
    added.push_back(OutputTransform());
    if (!clash_.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("winograd: the name '", clash_, "' it adds is already taken"));
    }
    std::vector<Stmt> body(nests.begin(), nests.begin() + c_.index);
    body.insert(body.end(), added.begin(), added.end());
    body.insert(body.end(), nests.begin() + c_.index + 1, nests.end());
    workspaces.insert(workspaces.end(), {u_, v_, m_});
    out.body = loop::Block(std::move(body));
    out.workspaces = std::move(workspaces);
    return absl::OkStatus();
  }

 private:
  /// A loop variable / f32 buffer named `name`; a name already in the Func is recorded as the
  /// clash Run reports.
  Var NewVar(const std::string& name) {
    if (!loop_names_.insert(name).second) clash_ = name;
    return loop::MakeVar(name);
  }
  BufferRef NewBuffer(const std::string& name, std::vector<int64_t> shape,
                      loop::Buffer::Scope scope = loop::Buffer::Scope::kGlobal) {
    if (!buffer_names_.insert(name).second) clash_ = name;
    return loop::MakeBuffer(name, DType::kFloat32, std::move(shape), scope);
  }

  // xp[n, c, h, w, l] = h < PH && w < PW ? src[n, c, h, w, l] : 0 (indices clamped).
  Stmt ExtendSource() {
    Var n = NewVar("wx.n"), cb = NewVar("wx.c"), h = NewVar("wx.h"), w = NewVar("wx.w"),
        l = NewVar("wx.l");
    Expr cond = loop::Binary(BinaryOp::kAnd, loop::Binary(BinaryOp::kLt, R(h), I(c_.ph)),
                             loop::Binary(BinaryOp::kLt, R(w), I(c_.pw)));
    Expr value = loop::Select(
        cond,
        loop::Load(c_.src, {R(n), R(cb), loop::Min(R(h), I(c_.ph - 1)),
                            loop::Min(R(w), I(c_.pw - 1)), R(l)}),
        loop::FloatImm(0));
    const std::vector<int64_t>& s = src_->shape;
    return NestOf({{n, s[0]}, {cb, s[1]}, {h, s[2]}, {w, s[3]}, {l, s[4]}},
                  loop::Store(src_, {R(n), R(cb), R(h), R(w), R(l)}, value));
  }

  // U[ξα+ν, ocb, icb, ic, oc] = Σ_kw (Σ_kh G[ξ,kh] w[ocb, icb, kh, kw, ic, oc]) G[ν,kw].
  Stmt WeightTransform() {
    Var ocb = NewVar("wt.ocb"), icb = NewVar("wt.icb"), ic = NewVar("wt.ic"), oc = NewVar("wt.oc");
    std::vector<Stmt> body;
    for (int64_t xi = 0; xi < a_; ++xi) {
      for (int64_t kw = 0; kw < 3; ++kw) {
        std::vector<std::pair<double, Expr>> terms;
        for (int64_t kh = 0; kh < 3; ++kh) {
          terms.push_back({mx_.g(xi, kh),
                           loop::Load(c_.w, {R(ocb), R(icb), I(kh), I(kw), R(ic), R(oc)})});
        }
        body.push_back(loop::Store(wt_tile_, {I(xi), I(kw), R(oc)}, WeightedSum(terms)));
      }
    }
    for (int64_t xi = 0; xi < a_; ++xi) {
      for (int64_t nu = 0; nu < a_; ++nu) {
        std::vector<std::pair<double, Expr>> terms;
        for (int64_t kw = 0; kw < 3; ++kw) {
          terms.push_back({mx_.g(nu, kw), loop::Load(wt_tile_, {I(xi), I(kw), R(oc)})});
        }
        body.push_back(loop::Store(u_, {I(xi * a_ + nu), R(ocb), R(icb), R(ic), R(oc)},
                                   WeightedSum(terms)));
      }
    }
    Stmt inner = loop::Allocate(wt_tile_, loop::For(oc, c_.x, loop::Block(std::move(body))));
    return NestOf({{ocb, c_.ocb}, {icb, c_.icb}, {ic, c_.l}}, inner);
  }

  // V[ξα+ν, icb, n·TH+th, tw, c] = Σ_j (Σ_i Bᵀ[ξ,i] d[i, j]) Bᵀ[ν,j],
  // d[i, j] = src[n, icb, th·m+i, tw·m+j, c].
  Stmt InputTransform() {
    Var n = NewVar("it.n"), icb = NewVar("it.icb"), th = NewVar("it.th"), tw = NewVar("it.tw"),
        c = NewVar("it.c");
    std::vector<Stmt> body;
    for (int64_t xi = 0; xi < a_; ++xi) {
      for (int64_t j = 0; j < a_; ++j) {
        std::vector<std::pair<double, Expr>> terms;
        for (int64_t i = 0; i < a_; ++i) {
          terms.push_back({mx_.bt(xi, i),
                           loop::Load(src_, {R(n), R(icb), Offset(Mul(R(th), mx_.m), i),
                                             Offset(Mul(R(tw), mx_.m), j), R(c)})});
        }
        body.push_back(loop::Store(it_tile_, {I(xi), I(j), R(c)}, WeightedSum(terms)));
      }
    }
    Expr row = Add(Mul(R(n), th_), R(th));
    for (int64_t xi = 0; xi < a_; ++xi) {
      for (int64_t nu = 0; nu < a_; ++nu) {
        std::vector<std::pair<double, Expr>> terms;
        for (int64_t j = 0; j < a_; ++j) {
          terms.push_back({mx_.bt(nu, j), loop::Load(it_tile_, {I(xi), I(j), R(c)})});
        }
        body.push_back(
            loop::Store(v_, {I(xi * a_ + nu), R(icb), row, R(tw), R(c)}, WeightedSum(terms)));
      }
    }
    Stmt inner = loop::Allocate(it_tile_, loop::For(c, c_.l, loop::Block(std::move(body))));
    return NestOf({{n, c_.n}, {icb, c_.icb}, {th, th_}, {tw, tw_}}, inner);
  }

  Stmt GemmInit() {
    Var p = NewVar("mi.p"), ocb = NewVar("mi.ocb"), th = NewVar("mi.th"), tw = NewVar("mi.tw"),
        oc = NewVar("mi.oc");
    const std::vector<int64_t>& s = m_->shape;
    return NestOf({{p, s[0]}, {ocb, s[1]}, {th, s[2]}, {tw, s[3]}, {oc, s[4]}},
                  loop::Store(m_, {R(p), R(ocb), R(th), R(tw), R(oc)}, loop::FloatImm(0)));
  }

  // M[p, ocb, th, tw, oc] += V[p, icb, th, tw, ic] * U[p, ocb, icb, ic, oc]: a blocked 1×1
  // conv with the tile position p as its batch.
  Stmt Gemm() {
    Var p = NewVar("p"), ocb = NewVar("ocb"), th = NewVar("th"), tw = NewVar("tw"),
        oc = NewVar("oc"), icb = NewVar("icb"), ic = NewVar("ic");
    std::vector<Expr> mi = {R(p), R(ocb), R(th), R(tw), R(oc)};
    Expr value = loop::Load(m_, mi) + loop::Load(v_, {R(p), R(icb), R(th), R(tw), R(ic)}) *
                                          loop::Load(u_, {R(p), R(ocb), R(icb), R(ic), R(oc)});
    const std::vector<int64_t>& s = m_->shape;
    return NestOf({{p, s[0]}, {ocb, s[1]}, {th, s[2]}, {tw, s[3]}, {oc, s[4]},
                   {icb, c_.icb}, {ic, c_.l}},
                  loop::Store(m_, mi, value), /*reductions_from=*/5);
  }

  // out[n, ocb, th·m+i, tw·m+j, oc] += Σ_ν (Σ_ξ Aᵀ[i,ξ] M[ξα+ν, ...]) Aᵀ[j,ν], for the
  // positions inside the output.
  Stmt OutputTransform() {
    Var n = NewVar("ot.n"), ocb = NewVar("ot.ocb"), th = NewVar("ot.th"), tw = NewVar("ot.tw"),
        oc = NewVar("ot.oc");
    std::vector<Stmt> body;
    Expr row = Add(Mul(R(n), th_), R(th));
    for (int64_t i = 0; i < mx_.m; ++i) {
      for (int64_t nu = 0; nu < a_; ++nu) {
        std::vector<std::pair<double, Expr>> terms;
        for (int64_t xi = 0; xi < a_; ++xi) {
          terms.push_back(
              {mx_.at(i, xi), loop::Load(m_, {I(xi * a_ + nu), R(ocb), row, R(tw), R(oc)})});
        }
        body.push_back(loop::Store(ot_tile_, {I(i), I(nu), R(oc)}, WeightedSum(terms)));
      }
    }
    // Rows (columns) of the last tile past the output need a guard: th·m + i < OH.
    auto inside = [&](const Var& t, int64_t i, int64_t extent, int64_t tiles) -> Expr {
      if ((tiles - 1) * mx_.m + i < extent) return nullptr;
      return loop::Binary(BinaryOp::kLt, Offset(Mul(R(t), mx_.m), i), I(extent));
    };
    for (int64_t i = 0; i < mx_.m; ++i) {
      for (int64_t j = 0; j < mx_.m; ++j) {
        std::vector<std::pair<double, Expr>> terms;
        for (int64_t nu = 0; nu < a_; ++nu) {
          terms.push_back({mx_.at(j, nu), loop::Load(ot_tile_, {I(i), I(nu), R(oc)})});
        }
        std::vector<Expr> oi = {R(n), R(ocb), Offset(Mul(R(th), mx_.m), i),
                                Offset(Mul(R(tw), mx_.m), j), R(oc)};
        Stmt store = loop::Store(c_.out, oi, loop::Load(c_.out, oi) + WeightedSum(terms));
        Expr rc = inside(th, i, c_.oh, th_), cc = inside(tw, j, c_.ow, tw_);
        Expr cond = rc && cc ? loop::Binary(BinaryOp::kAnd, rc, cc) : rc ? rc : cc;
        body.push_back(cond ? loop::IfThenElse(cond, store) : store);
      }
    }
    Stmt inner = loop::Allocate(ot_tile_, loop::For(oc, c_.x, loop::Block(std::move(body))));
    return NestOf({{n, c_.n}, {ocb, c_.ocb}, {th, th_}, {tw, tw_}}, inner);
  }

  const loop::Func& func_;
  const ConvNest& c_;
  Matrices mx_;
  int64_t a_, th_, tw_;
  std::set<std::string> loop_names_, buffer_names_;  // taken in the Func
  std::string clash_;
  BufferRef src_, u_, v_, m_, wt_tile_, it_tile_, ot_tile_;
};

}  // namespace

bool CanApplyWinograd(const loop::Func& func) { return FindConvNest(func).has_value(); }

absl::Status ApplyWinograd(loop::Func& func, int64_t m) {
  if (m != 2 && m != 4) {
    return absl::FailedPreconditionError(
        absl::StrCat("winograd: output tile ", m, " is not supported (2 or 4)"));
  }
  std::optional<ConvNest> c = FindConvNest(func);
  if (!c) {
    return absl::FailedPreconditionError(
        "winograd: no unscheduled 3x3 stride-1 blocked conv update nest "
        "(out[n, ocb, oh, ow, oc] += src[n, icb, oh + kh, ow + kw, ic] * "
        "w[ocb, icb, kh, kw, ic, oc])");
  }
  loop::Func out = func;
  if (absl::Status st = Rewriter(func, *c, m).Run(out); !st.ok()) return st;
  func = std::move(out);
  return absl::OkStatus();
}

}  // namespace kiln::schedule
