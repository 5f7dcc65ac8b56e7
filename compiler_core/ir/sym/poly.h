// The canonical form behind sym::Expr (internal to ir/sym): a polynomial with int64
// coefficients over atoms. An atom is a symbol or an operation that does not distribute over
// sums (floordiv, mod, min, max) with canonical operands; a term is a coefficient times a
// product of atoms (sorted, with repeats for powers); a polynomial is a constant plus terms with
// distinct non-zero coefficients, sorted by degree (highest first), then by printed form.
#ifndef KILN_COMPILER_CORE_IR_SYM_POLY_H_
#define KILN_COMPILER_CORE_IR_SYM_POLY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler_core/ir/sym/expr.h"

namespace kiln::sym::internal {

enum class AtomKind : uint8_t { kSymbol, kFloorDiv, kMod, kMin, kMax };

/// One atom; `text` is its printed form ("seq", "floordiv(H - 1, 2)", "min(N, 4)").
struct Atom {
  AtomKind kind = AtomKind::kSymbol;
  Symbol symbol;           // kSymbol
  std::vector<Expr> args;  // kFloorDiv/kMod: {a, b}; kMin/kMax: two or more, sorted, distinct
  std::string text;
};
using AtomPtr = std::shared_ptr<const Atom>;

/// coeff * factors[0] * factors[1] * ...; `text` is the factors' product ("H*W"), without the
/// coefficient.
struct Term {
  int64_t coeff = 0;
  std::vector<AtomPtr> factors;  // non-empty, sorted by text
  std::string text;
};

struct Poly {
  bool invalid = false;
  int64_t constant = 0;
  std::vector<Term> terms;
  std::string text;  // the canonical printed form
};

/// floor(a / b) for b != 0 (the caller excludes INT64_MIN / -1, which overflows).
inline int64_t FloorDivInt(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b) != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace kiln::sym::internal

#endif  // KILN_COMPILER_CORE_IR_SYM_POLY_H_
