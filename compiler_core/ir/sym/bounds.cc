// Interval bounds of sym::Expr over its symbols' ranges, and the proofs built on them. The
// arithmetic saturates at Interval's infinities, so every bound is sound (never narrower than
// the values the expression can take).
#include <algorithm>
#include <initializer_list>

#include "compiler_core/ir/sym/expr.h"
#include "compiler_core/ir/sym/poly.h"

namespace kiln::sym {

using internal::Atom;
using internal::AtomKind;
using internal::AtomPtr;
using internal::FloorDivInt;
using internal::Poly;
using internal::Term;

namespace {

constexpr int64_t kNegInf = Interval::kNegInf;
constexpr int64_t kPosInf = Interval::kPosInf;

bool IsInf(int64_t v) { return v == kNegInf || v == kPosInf; }

int Sign(int64_t v) { return v > 0 ? 1 : (v < 0 ? -1 : 0); }

// a + b for two lower bounds (or two upper bounds): an infinity stays, an overflow saturates.
int64_t SatAdd(int64_t a, int64_t b) {
  if (a == kNegInf || b == kNegInf) return kNegInf;
  if (a == kPosInf || b == kPosInf) return kPosInf;
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return a > 0 ? kPosInf : kNegInf;
  return r;
}

int64_t SatMul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  int sign = Sign(a) * Sign(b);
  if (IsInf(a) || IsInf(b)) return sign > 0 ? kPosInf : kNegInf;
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return sign > 0 ? kPosInf : kNegInf;
  return r;
}

// floor(a / b) for b != 0 with infinities (a finite value over an infinity is 0 or -1).
int64_t SatFloorDiv(int64_t a, int64_t b) {
  if (IsInf(b)) {
    if (IsInf(a)) return 0;  // only ever a corner dominated by another (see FloorDivBounds)
    if (a == 0 || Sign(a) == Sign(b)) return 0;
    return -1;
  }
  if (IsInf(a)) return Sign(a) * Sign(b) > 0 ? kPosInf : kNegInf;
  return FloorDivInt(a, b);
}

Interval Mul(Interval a, Interval b) {
  int64_t c[4] = {SatMul(a.lo, b.lo), SatMul(a.lo, b.hi), SatMul(a.hi, b.lo),
                  SatMul(a.hi, b.hi)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

// floor(x / y) over a box where y has one sign: monotone in x for each y, and in y for each x
// of one sign, so the extremes are at the corners.
Interval FloorDivBounds(Interval x, Interval y) {
  if (y.lo <= 0 && y.hi >= 0) return {};
  int64_t c[4] = {SatFloorDiv(x.lo, y.lo), SatFloorDiv(x.lo, y.hi), SatFloorDiv(x.hi, y.lo),
                  SatFloorDiv(x.hi, y.hi)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

Interval ModBounds(Interval x, Interval y) {
  if (y.lo > 0) {
    // x mod y in [0, y - 1]; and at most x when x >= 0.
    int64_t hi = y.hi == kPosInf ? kPosInf : y.hi - 1;
    if (x.lo >= 0) hi = std::min(hi, x.hi);
    return {0, hi};
  }
  if (y.hi < 0) {
    int64_t lo = y.lo == kNegInf ? kNegInf : y.lo + 1;
    if (x.hi <= 0) lo = std::max(lo, x.lo);
    return {lo, 0};
  }
  return {};
}

Interval AtomBounds(const Atom& atom) {
  switch (atom.kind) {
    case AtomKind::kSymbol:
      return {atom.symbol.min, atom.symbol.max == kUnbounded ? kPosInf : atom.symbol.max};
    case AtomKind::kFloorDiv:
      return FloorDivBounds(Bounds(atom.args[0]), Bounds(atom.args[1]));
    case AtomKind::kMod:
      return ModBounds(Bounds(atom.args[0]), Bounds(atom.args[1]));
    case AtomKind::kMin:
    case AtomKind::kMax: {
      Interval acc = Bounds(atom.args[0]);
      for (size_t i = 1; i < atom.args.size(); ++i) {
        Interval b = Bounds(atom.args[i]);
        if (atom.kind == AtomKind::kMin) {
          acc = {std::min(acc.lo, b.lo), std::min(acc.hi, b.hi)};
        } else {
          acc = {std::max(acc.lo, b.lo), std::max(acc.hi, b.hi)};
        }
      }
      return acc;
    }
  }
  return {};
}

}  // namespace

Interval Bounds(const Expr& e) {
  const Poly& p = e.poly();
  if (p.invalid) return {};
  Interval acc{p.constant, p.constant};
  for (const Term& t : p.terms) {
    Interval product{1, 1};
    for (const AtomPtr& f : t.factors) product = Mul(product, AtomBounds(*f));
    Interval term = Mul(Interval{t.coeff, t.coeff}, product);
    acc = {SatAdd(acc.lo, term.lo), SatAdd(acc.hi, term.hi)};
  }
  return acc;
}

bool ProveEqual(const Expr& a, const Expr& b) {
  return !a.is_invalid() && !b.is_invalid() && a == b;
}

bool ProveNonNegative(const Expr& e) {
  if (e.is_invalid()) return false;
  return Bounds(e).lo >= 0;
}

bool ProveGE(const Expr& a, const Expr& b) {
  if (a.is_invalid() || b.is_invalid()) return false;
  if (a == b) return true;
  Expr d = a - b;
  // An overflowing difference: compare the bounds of each side instead.
  if (d.is_invalid()) return Bounds(a).lo >= Bounds(b).hi;
  return Bounds(d).lo >= 0;
}

bool ProveGT(const Expr& a, const Expr& b) { return ProveGE(a, b + Expr(1)); }

bool ProveLE(const Expr& a, const Expr& b) { return ProveGE(b, a); }

bool ProveLT(const Expr& a, const Expr& b) { return ProveGT(b, a); }

}  // namespace kiln::sym
