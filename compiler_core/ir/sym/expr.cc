// sym::Expr's canonical form: construction, arithmetic and the simplifications of floordiv,
// mod, min and max. Bounds and proofs are in bounds.cc, evaluation and parsing in eval.cc and
// parse.cc.
#include "compiler_core/ir/sym/expr.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/ir/sym/poly.h"

namespace kiln::sym {

using internal::Atom;
using internal::AtomKind;
using internal::AtomPtr;
using internal::FloorDivInt;
using internal::Poly;
using internal::Term;

namespace {

std::optional<int64_t> Add64(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<int64_t> Mul64(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}


// "12", "-3": a coefficient's magnitude as text, correct for INT64_MIN.
std::string Magnitude(int64_t v) {
  uint64_t m = v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  return absl::StrCat(m);
}

int Degree(const Term& t) { return static_cast<int>(t.factors.size()); }

bool TermBefore(const Term& a, const Term& b) {
  if (Degree(a) != Degree(b)) return Degree(a) > Degree(b);
  return a.text < b.text;
}

std::string TermText(const std::vector<AtomPtr>& factors) {
  return absl::StrJoin(factors, "*",
                       [](std::string* out, const AtomPtr& a) { absl::StrAppend(out, a->text); });
}

std::shared_ptr<const Poly> InvalidPoly() {
  static const auto* invalid = [] {
    auto p = std::make_shared<Poly>();
    p->invalid = true;
    p->text = "<invalid>";
    return new std::shared_ptr<const Poly>(std::move(p));
  }();
  return *invalid;
}

std::shared_ptr<const Poly> NewConstantPoly(int64_t value) {
  auto p = std::make_shared<Poly>();
  p->constant = value;
  p->text = absl::StrCat(value);
  return p;
}

// The constant `value`. Shape rules make one for every static dim they read
// (TensorType::dims()), so the small ones are built once and shared.
std::shared_ptr<const Poly> ConstantPoly(int64_t value) {
  constexpr int64_t kFirst = -16, kLast = 1024;
  static const auto* cached = [] {
    auto* table = new std::vector<std::shared_ptr<const Poly>>();
    for (int64_t v = kFirst; v <= kLast; ++v) table->push_back(NewConstantPoly(v));
    return table;
  }();
  if (value < kFirst || value > kLast) return NewConstantPoly(value);
  return (*cached)[value - kFirst];
}

// A polynomial from a constant and terms keyed by their factors' text (zero coefficients
// dropped), with its printed form.
Expr Build(int64_t constant, std::map<std::string, Term> terms) {
  auto p = std::make_shared<Poly>();
  p->constant = constant;
  for (auto& [text, term] : terms) {
    if (term.coeff != 0) p->terms.push_back(std::move(term));
  }
  if (p->terms.empty()) return Expr(ConstantPoly(constant));
  std::sort(p->terms.begin(), p->terms.end(), TermBefore);
  std::string& s = p->text;
  for (const Term& t : p->terms) {
    bool negative = t.coeff < 0;
    if (s.empty()) {
      if (negative) s += "-";
    } else {
      s += negative ? " - " : " + ";
    }
    if (t.coeff != 1 && t.coeff != -1) absl::StrAppend(&s, Magnitude(t.coeff), "*");
    s += t.text;
  }
  if (constant != 0) absl::StrAppend(&s, constant < 0 ? " - " : " + ", Magnitude(constant));
  return Expr(std::shared_ptr<const Poly>(std::move(p)));
}

std::map<std::string, Term> TermMap(const Poly& p) {
  std::map<std::string, Term> m;
  for (const Term& t : p.terms) m.emplace(t.text, t);
  return m;
}

Expr FromAtom(AtomPtr atom) {
  Term t;
  t.coeff = 1;
  t.text = atom->text;
  t.factors.push_back(std::move(atom));
  std::map<std::string, Term> m;
  m.emplace(t.text, std::move(t));
  return Build(0, std::move(m));
}

// The atom `e` is exactly (one term, coefficient 1, one factor, no constant), else null.
const Atom* SingleAtom(const Expr& e) {
  const Poly& p = e.poly();
  if (p.invalid || p.constant != 0 || p.terms.size() != 1) return nullptr;
  const Term& t = p.terms[0];
  if (t.coeff != 1 || t.factors.size() != 1) return nullptr;
  return t.factors[0].get();
}

const char* AtomName(AtomKind kind) {
  switch (kind) {
    case AtomKind::kFloorDiv: return "floordiv";
    case AtomKind::kMod: return "mod";
    case AtomKind::kMin: return "min";
    case AtomKind::kMax: return "max";
    case AtomKind::kSymbol: break;
  }
  return "";
}

Expr MakeAtom(AtomKind kind, std::vector<Expr> args) {
  auto atom = std::make_shared<Atom>();
  atom->kind = kind;
  atom->text = absl::StrCat(AtomName(kind), "(",
                            absl::StrJoin(args, ", ",
                                          [](std::string* out, const Expr& e) {
                                            absl::StrAppend(out, e.ToString());
                                          }),
                            ")");
  atom->args = std::move(args);
  return FromAtom(std::move(atom));
}

int64_t Gcd(int64_t a, int64_t b) {
  // Magnitudes; callers pass values whose gcd fits (coefficients reduced below a divisor).
  uint64_t x = a < 0 ? uint64_t{0} - static_cast<uint64_t>(a) : static_cast<uint64_t>(a);
  uint64_t y = b < 0 ? uint64_t{0} - static_cast<uint64_t>(b) : static_cast<uint64_t>(b);
  return static_cast<int64_t>(std::gcd(x, y));
}

// `p` with every coefficient and its constant divided by `g` (each divisible).
Expr DivideExact(const Poly& p, int64_t g) {
  std::map<std::string, Term> terms = TermMap(p);
  for (auto& [text, t] : terms) t.coeff /= g;
  return Build(p.constant / g, std::move(terms));
}

// a = c * q + r with every coefficient of r (and its constant) in [0, c): the split that
// FloorDiv and Mod by a constant c > 0 start from. Returns {q, r}.
std::pair<Expr, Expr> SplitByConstant(const Poly& a, int64_t c) {
  std::map<std::string, Term> q_terms;
  std::map<std::string, Term> r_terms;
  for (const Term& t : a.terms) {
    int64_t quotient = FloorDivInt(t.coeff, c);
    int64_t remainder = t.coeff - quotient * c;
    if (quotient != 0) {
      Term qt = t;
      qt.coeff = quotient;
      q_terms.emplace(t.text, std::move(qt));
    }
    if (remainder != 0) {
      Term rt = t;
      rt.coeff = remainder;
      r_terms.emplace(t.text, std::move(rt));
    }
  }
  int64_t kq = FloorDivInt(a.constant, c);
  return {Build(kq, std::move(q_terms)), Build(a.constant - kq * c, std::move(r_terms))};
}

// The gcd of c, r's constant and r's coefficients.
int64_t CommonFactor(const Poly& r, int64_t c) {
  int64_t g = Gcd(c, r.constant);
  for (const Term& t : r.terms) g = Gcd(g, t.coeff);
  return g;
}

// a / b when b is one term (a coefficient times a product of atoms, no constant), a's
// constant is 0 and each of a's terms is a multiple of it; else nullopt: (4*H*W) / (H*W) = 4,
// (H*W + 2*W) / W = H + 2.
std::optional<Expr> ExactQuotient(const Poly& a, const Poly& b) {
  if (b.constant != 0 || b.terms.size() != 1 || a.constant != 0) return std::nullopt;
  const Term& d = b.terms[0];
  std::map<std::string, Term> out;
  int64_t constant = 0;
  for (const Term& t : a.terms) {
    if (d.coeff == -1 && t.coeff == std::numeric_limits<int64_t>::min()) return std::nullopt;
    if (t.coeff % d.coeff != 0) return std::nullopt;
    std::vector<AtomPtr> rest;
    size_t j = 0;
    for (const AtomPtr& f : t.factors) {
      if (j < d.factors.size() && f->text == d.factors[j]->text) {
        ++j;
      } else {
        rest.push_back(f);
      }
    }
    if (j != d.factors.size()) return std::nullopt;
    int64_t coeff = t.coeff / d.coeff;
    if (rest.empty()) {
      constant += coeff;  // distinct terms: at most one is exactly d
      continue;
    }
    Term q;
    q.coeff = coeff;
    q.text = TermText(rest);
    q.factors = std::move(rest);
    out.emplace(q.text, std::move(q));
  }
  return Build(constant, std::move(out));
}

bool ProvablyNonZero(const Expr& e) { return ProveGT(e, 0) || ProveLT(e, 0); }

enum class DivKind { kFloorDiv, kMod };

Expr DivideByConstant(DivKind kind, const Expr& a, int64_t c) {
  const Poly& p = a.poly();
  if (c < 0) {
    // floor(a / c) = floor(-a / -c); a mod c = -((-a) mod -c).
    if (c == std::numeric_limits<int64_t>::min()) return Expr::Invalid();
    return kind == DivKind::kFloorDiv ? DivideByConstant(kind, -a, -c)
                                      : -DivideByConstant(kind, -a, -c);
  }
  if (p.terms.empty()) {
    return kind == DivKind::kFloorDiv ? Expr(FloorDivInt(p.constant, c))
                                      : Expr(p.constant - FloorDivInt(p.constant, c) * c);
  }
  if (c == 1) return kind == DivKind::kFloorDiv ? a : Expr(0);
  auto [q, r] = SplitByConstant(p, c);
  // floor((c*q + r) / c) = q + floor(r / c) for integer q; (c*q + r) mod c = r mod c.
  if (r.is_constant()) return kind == DivKind::kFloorDiv ? q : r;  // 0 <= r < c
  // A common factor g of r and c: floor(g*r' / (g*c')) = floor(r' / c'); (g*r') mod (g*c') =
  // g * (r' mod c').
  int64_t g = CommonFactor(r.poly(), c);
  Expr reduced = g > 1 ? DivideExact(r.poly(), g) : r;
  int64_t divisor = c / g;
  Interval b = Bounds(reduced);
  if (b.lo != Interval::kNegInf && b.hi != Interval::kPosInf &&
      FloorDivInt(b.lo, divisor) == FloorDivInt(b.hi, divisor)) {
    int64_t m = FloorDivInt(b.lo, divisor);
    if (kind == DivKind::kFloorDiv) return q + Expr(m);
    std::optional<int64_t> shift = Mul64(m, divisor);
    if (!shift) return Expr::Invalid();
    return (reduced - Expr(*shift)) * Expr(g);
  }
  if (kind == DivKind::kFloorDiv) {
    // floor(floor(x / d) / e) = floor(x / (d * e)) for d, e > 0.
    if (const Atom* inner = SingleAtom(reduced);
        inner != nullptr && inner->kind == AtomKind::kFloorDiv && inner->args[1].is_constant()) {
      std::optional<int64_t> d = Mul64(*inner->args[1].AsConstant(), divisor);
      if (d) return q + FloorDiv(inner->args[0], Expr(*d));
    }
    return q + MakeAtom(AtomKind::kFloorDiv, {reduced, Expr(divisor)});
  }
  Expr atom = MakeAtom(AtomKind::kMod, {reduced, Expr(divisor)});
  return g > 1 ? atom * Expr(g) : atom;
}

Expr Divide(DivKind kind, const Expr& a, const Expr& b) {
  if (a.is_invalid() || b.is_invalid()) return Expr::Invalid();
  if (std::optional<int64_t> c = b.AsConstant()) {
    if (*c == 0) return Expr::Invalid();
    return DivideByConstant(kind, a, *c);
  }
  if (std::optional<int64_t> c = a.AsConstant(); c && *c == 0 && ProvablyNonZero(b)) return 0;
  if (ProvablyNonZero(b)) {
    if (std::optional<Expr> q = ExactQuotient(a.poly(), b.poly())) {
      return kind == DivKind::kFloorDiv ? *q : Expr(0);
    }
    // 0 <= a < b: floor(a / b) = 0, a mod b = a.
    if (ProveNonNegative(a) && ProveLT(a, b)) return kind == DivKind::kFloorDiv ? Expr(0) : a;
  }
  return MakeAtom(kind == DivKind::kFloorDiv ? AtomKind::kFloorDiv : AtomKind::kMod, {a, b});
}

Expr Extremum(AtomKind kind, const Expr& a, const Expr& b) {
  if (a.is_invalid() || b.is_invalid()) return Expr::Invalid();
  std::vector<Expr> operands;
  for (const Expr* e : {&a, &b}) {
    const Atom* atom = SingleAtom(*e);
    if (atom != nullptr && atom->kind == kind) {
      operands.insert(operands.end(), atom->args.begin(), atom->args.end());
    } else {
      operands.push_back(*e);
    }
  }
  // Symbolic operands by printed form, then constants: min(N, 4).
  std::sort(operands.begin(), operands.end(), [](const Expr& x, const Expr& y) {
    if (x.is_constant() != y.is_constant()) return y.is_constant();
    return x < y;
  });
  operands.erase(std::unique(operands.begin(), operands.end()), operands.end());
  // Drop each operand that a kept one provably dominates (min: y <= x makes x redundant).
  std::vector<bool> dropped(operands.size(), false);
  for (size_t i = 0; i < operands.size(); ++i) {
    for (size_t j = 0; j < operands.size() && !dropped[i]; ++j) {
      if (i == j || dropped[j]) continue;
      bool dominated = kind == AtomKind::kMin ? ProveLE(operands[j], operands[i])
                                              : ProveGE(operands[j], operands[i]);
      if (dominated) dropped[i] = true;
    }
  }
  std::vector<Expr> kept;
  for (size_t i = 0; i < operands.size(); ++i) {
    if (!dropped[i]) kept.push_back(operands[i]);
  }
  if (kept.size() == 1) return kept[0];
  return MakeAtom(kind, std::move(kept));
}

}  // namespace

bool IsSymbolName(std::string_view name) {
  if (name.empty()) return false;
  if (!std::isalpha(static_cast<unsigned char>(name[0])) && name[0] != '_') return false;
  for (char ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '.') {
      return false;
    }
  }
  // The function names of the printed form stay functions.
  return name != "floordiv" && name != "ceildiv" && name != "mod" && name != "min" &&
         name != "max";
}

std::string RangeText(const Symbol& symbol) {
  return absl::StrCat("[", symbol.min, ", ",
                      symbol.max == kUnbounded ? std::string("inf") : absl::StrCat(symbol.max),
                      "]");
}

Expr::Expr() : Expr(int64_t{0}) {}

Expr::Expr(int64_t value) : poly_(ConstantPoly(value)) {}

Expr Expr::Sym(const Symbol& symbol) {
  auto atom = std::make_shared<Atom>();
  atom->kind = AtomKind::kSymbol;
  atom->symbol = symbol;
  atom->text = symbol.name;
  return FromAtom(std::move(atom));
}

Expr Expr::Invalid() { return Expr(InvalidPoly()); }

bool Expr::is_constant() const { return !poly_->invalid && poly_->terms.empty(); }

std::optional<int64_t> Expr::AsConstant() const {
  if (!is_constant()) return std::nullopt;
  return poly_->constant;
}

std::optional<Symbol> Expr::AsSymbol() const {
  const Atom* atom = SingleAtom(*this);
  if (atom == nullptr || atom->kind != AtomKind::kSymbol) return std::nullopt;
  return atom->symbol;
}

bool Expr::is_invalid() const { return poly_->invalid; }

const std::string& Expr::ToString() const { return poly_->text; }

std::vector<Symbol> Expr::Symbols() const {
  std::map<std::string, Symbol> found;
  std::vector<const Expr*> stack = {this};
  while (!stack.empty()) {
    const Expr* e = stack.back();
    stack.pop_back();
    for (const Term& t : e->poly().terms) {
      for (const AtomPtr& f : t.factors) {
        if (f->kind == AtomKind::kSymbol) {
          found.emplace(f->symbol.name, f->symbol);
        } else {
          for (const Expr& arg : f->args) stack.push_back(&arg);
        }
      }
    }
  }
  std::vector<Symbol> out;
  for (auto& [name, s] : found) out.push_back(s);
  return out;
}

Expr operator+(const Expr& a, const Expr& b) {
  if (a.is_invalid() || b.is_invalid()) return Expr::Invalid();
  std::optional<int64_t> constant = Add64(a.poly().constant, b.poly().constant);
  if (!constant) return Expr::Invalid();
  std::map<std::string, Term> terms = TermMap(a.poly());
  for (const Term& t : b.poly().terms) {
    auto [it, inserted] = terms.emplace(t.text, t);
    if (!inserted) {
      std::optional<int64_t> sum = Add64(it->second.coeff, t.coeff);
      if (!sum) return Expr::Invalid();
      it->second.coeff = *sum;
    }
  }
  return Build(*constant, std::move(terms));
}

Expr operator-(const Expr& a) { return a * Expr(-1); }

Expr operator-(const Expr& a, const Expr& b) { return a + (-b); }

Expr operator*(const Expr& a, const Expr& b) {
  if (a.is_invalid() || b.is_invalid()) return Expr::Invalid();
  const Poly& p = a.poly();
  const Poly& q = b.poly();
  // Each side as (coefficient, factors) pairs, the constant as a term without factors.
  auto parts = [](const Poly& x) {
    std::vector<std::pair<int64_t, const std::vector<AtomPtr>*>> out;
    static const std::vector<AtomPtr> kNone;
    if (x.constant != 0) out.emplace_back(x.constant, &kNone);
    for (const Term& t : x.terms) out.emplace_back(t.coeff, &t.factors);
    return out;
  };
  int64_t constant = 0;
  std::map<std::string, Term> terms;
  for (const auto& [ca, fa] : parts(p)) {
    for (const auto& [cb, fb] : parts(q)) {
      std::optional<int64_t> c = Mul64(ca, cb);
      if (!c) return Expr::Invalid();
      if (fa->empty() && fb->empty()) {
        std::optional<int64_t> sum = Add64(constant, *c);
        if (!sum) return Expr::Invalid();
        constant = *sum;
        continue;
      }
      std::vector<AtomPtr> factors = *fa;
      factors.insert(factors.end(), fb->begin(), fb->end());
      std::stable_sort(factors.begin(), factors.end(),
                       [](const AtomPtr& x, const AtomPtr& y) { return x->text < y->text; });
      Term t;
      t.coeff = *c;
      t.text = TermText(factors);
      t.factors = std::move(factors);
      auto [it, inserted] = terms.emplace(t.text, t);
      if (!inserted) {
        std::optional<int64_t> sum = Add64(it->second.coeff, t.coeff);
        if (!sum) return Expr::Invalid();
        it->second.coeff = *sum;
      }
    }
  }
  return Build(constant, std::move(terms));
}

Expr FloorDiv(const Expr& a, const Expr& b) { return Divide(DivKind::kFloorDiv, a, b); }

std::optional<Expr> ExactDiv(const Expr& a, const Expr& b) {
  if (a.is_invalid() || b.is_invalid()) return std::nullopt;
  return ExactQuotient(a.poly(), b.poly());
}

Expr CeilDiv(const Expr& a, const Expr& b) { return -FloorDiv(-a, b); }

Expr Mod(const Expr& a, const Expr& b) { return Divide(DivKind::kMod, a, b); }

Expr Min(const Expr& a, const Expr& b) { return Extremum(AtomKind::kMin, a, b); }

Expr Max(const Expr& a, const Expr& b) { return Extremum(AtomKind::kMax, a, b); }

Expr Substitute(const Expr& e, const std::map<std::string, Expr>& replacements) {
  if (e.is_invalid()) return e;
  std::function<Expr(const AtomPtr&)> atom_value = [&](const AtomPtr& atom) -> Expr {
    if (atom->kind == AtomKind::kSymbol) {
      auto it = replacements.find(atom->symbol.name);
      return it == replacements.end() ? Expr::Sym(atom->symbol) : it->second;
    }
    std::vector<Expr> args;
    for (const Expr& arg : atom->args) args.push_back(Substitute(arg, replacements));
    switch (atom->kind) {
      case AtomKind::kFloorDiv: return FloorDiv(args[0], args[1]);
      case AtomKind::kMod: return Mod(args[0], args[1]);
      case AtomKind::kMin:
      case AtomKind::kMax: {
        Expr acc = args[0];
        for (size_t i = 1; i < args.size(); ++i) {
          acc = atom->kind == AtomKind::kMin ? Min(acc, args[i]) : Max(acc, args[i]);
        }
        return acc;
      }
      case AtomKind::kSymbol: break;
    }
    return Expr::Invalid();
  };
  Expr out(e.poly().constant);
  for (const Term& t : e.poly().terms) {
    Expr product(t.coeff);
    for (const AtomPtr& f : t.factors) product = product * atom_value(f);
    out = out + product;
  }
  return out;
}

}  // namespace kiln::sym
