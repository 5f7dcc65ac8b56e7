// Fold: builds a value of another IR (a loop IR index expression, a string, a number) from a
// symbolic expression's canonical form, one callback per constructor, so that code outside
// ir/sym can translate expressions without seeing the polynomial.
#ifndef KILN_COMPILER_CORE_IR_SYM_FOLD_H_
#define KILN_COMPILER_CORE_IR_SYM_FOLD_H_

#include <cstdint>
#include <functional>

#include "compiler_core/ir/sym/expr.h"
#include "compiler_core/ir/sym/poly.h"

namespace kiln::sym {

/// The constructors Fold calls. `floordiv` and `mod` round toward negative infinity (mod has
/// the divisor's sign); `min`/`max` are binary (a longer min is folded left to right).
template <typename T>
struct FoldOps {
  std::function<T(int64_t)> constant;
  std::function<T(const Symbol&)> symbol;
  std::function<T(T, T)> add;
  std::function<T(T, T)> mul;
  std::function<T(T, T)> floordiv;
  std::function<T(T, T)> mod;
  std::function<T(T, T)> min;
  std::function<T(T, T)> max;
};

/// `e` rebuilt with `ops`: the constant plus each term (coefficient times its atoms' product),
/// terms in canonical order. `e` must be valid (not is_invalid()).
template <typename T>
T Fold(const Expr& e, const FoldOps<T>& ops) {
  const internal::Poly& p = e.poly();
  auto atom = [&](const internal::Atom& a) -> T {
    switch (a.kind) {
      case internal::AtomKind::kSymbol:
        return ops.symbol(a.symbol);
      case internal::AtomKind::kFloorDiv:
        return ops.floordiv(Fold(a.args[0], ops), Fold(a.args[1], ops));
      case internal::AtomKind::kMod:
        return ops.mod(Fold(a.args[0], ops), Fold(a.args[1], ops));
      case internal::AtomKind::kMin:
      case internal::AtomKind::kMax: {
        T acc = Fold(a.args[0], ops);
        for (size_t i = 1; i < a.args.size(); ++i) {
          acc = a.kind == internal::AtomKind::kMin ? ops.min(acc, Fold(a.args[i], ops))
                                                   : ops.max(acc, Fold(a.args[i], ops));
        }
        return acc;
      }
    }
    return ops.constant(0);
  };
  bool have = false;
  T sum = ops.constant(0);
  for (const internal::Term& t : p.terms) {
    T prod = atom(*t.factors[0]);
    for (size_t i = 1; i < t.factors.size(); ++i) prod = ops.mul(prod, atom(*t.factors[i]));
    if (t.coeff != 1) prod = ops.mul(ops.constant(t.coeff), prod);
    sum = have ? ops.add(sum, prod) : prod;
    have = true;
  }
  if (!have) return ops.constant(p.constant);
  if (p.constant != 0) sum = ops.add(sum, ops.constant(p.constant));
  return sum;
}

}  // namespace kiln::sym

#endif  // KILN_COMPILER_CORE_IR_SYM_FOLD_H_
