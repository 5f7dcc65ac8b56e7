// Symbolic dims: the size of a tensor dim as an integer expression over symbols that are fixed
// only at run time (an ONNX dim_param such as "seq" or "past"), so that one compiled graph runs
// every shape. An expression is kept in one canonical form, a polynomial with int64
// coefficients over atoms (symbols, floor-divisions, remainders, minima and maxima that do not
// simplify further), so that equal expressions compare equal: (a + b) - a is b, 2 * (x + 1) is
// 2*x + 2. Facts that depend on the symbols' ranges are proven by interval arithmetic over the
// canonical form (past + seq >= 1 given seq >= 1 and past >= 0), as TVM's arith::Analyzer
// (ConstIntBound, RewriteSimplifier) and SymPy-based shape reasoning in PyTorch Inductor do.
//
// Integer semantics are those of index arithmetic: FloorDiv rounds toward negative infinity
// and Mod has the sign of the divisor (Python's // and %), so that a == FloorDiv(a, b) * b +
// Mod(a, b) for every b != 0. An expression whose evaluation must overflow int64 or divide by
// zero (2^62 * 4, FloorDiv(x, 0)) is "invalid": it stays so through every operation, as a NaN
// does, and Evaluate and the callers' checks report it.
#ifndef KILN_COMPILER_CORE_IR_SYM_EXPR_H_
#define KILN_COMPILER_CORE_IR_SYM_EXPR_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln::sym {

/// The largest value a range can name; a range's max of kUnbounded means "no upper bound".
inline constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();

/// A named integer fixed at run time, with the inclusive range [min, max] it may take (max
/// kUnbounded for none). Within one graph a name denotes one symbol: two symbols are the same
/// when their names are. Names are identifiers ([A-Za-z_][A-Za-z0-9_.]*), which keeps the
/// printed form of an expression unambiguous.
struct Symbol {
  std::string name;
  int64_t min = 0;
  int64_t max = kUnbounded;
};

/// Whether `name` can name a symbol (the identifier syntax above).
bool IsSymbolName(std::string_view name);

/// "[1, 4096]", "[0, inf]": a symbol's range for messages.
std::string RangeText(const Symbol& symbol);

/// An inclusive range of int64 values; lo == kNegInf or hi == kPosInf mean unbounded on that
/// side. Arithmetic on ranges saturates at the infinities, so a bound is never too tight.
struct Interval {
  static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
  static constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();
  int64_t lo = kNegInf;
  int64_t hi = kPosInf;
  bool operator==(const Interval&) const = default;
};

class Expr;
namespace internal {
struct Poly;
}  // namespace internal

/// A symbolic integer expression in canonical form: immutable, cheap to copy (one shared
/// pointer), compared and hashed by its canonical printed form. The default is the constant 0.
class Expr {
 public:
  Expr();
  /// The constant `value` (implicit, so that shape code can write `seq + 1`).
  Expr(int64_t value);  // NOLINT(google-explicit-constructor)
  Expr(int value) : Expr(static_cast<int64_t>(value)) {}  // NOLINT(google-explicit-constructor)
  /// The symbol `symbol` (its name must satisfy IsSymbolName; min <= max).
  static Expr Sym(const Symbol& symbol);
  /// An invalid expression (the result of an overflow or a division by zero).
  static Expr Invalid();

  /// Whether the expression is an integer constant (not invalid).
  bool is_constant() const;
  /// The constant's value, or nullopt when the expression is not a constant.
  std::optional<int64_t> AsConstant() const;
  /// The symbol when the expression is exactly one symbol, else nullopt.
  std::optional<Symbol> AsSymbol() const;
  /// Whether some operation that produced it overflowed int64 or divided by zero.
  bool is_invalid() const;

  /// The canonical printed form: terms in a fixed order, constant last, e.g. "past + seq",
  /// "2*H + 1", "floordiv(H - 1, 2) + 1", "min(N, 4)", "H*W"; "<invalid>" when invalid.
  /// Parse(ToString()) gives the same expression back.
  const std::string& ToString() const;
  /// The symbols it reads, by name, each once.
  std::vector<Symbol> Symbols() const;

  friend bool operator==(const Expr& a, const Expr& b) { return a.ToString() == b.ToString(); }
  friend bool operator!=(const Expr& a, const Expr& b) { return !(a == b); }
  /// A total order (by canonical form), for sorted containers.
  friend bool operator<(const Expr& a, const Expr& b) { return a.ToString() < b.ToString(); }
  template <typename H>
  friend H AbslHashValue(H h, const Expr& e) {
    return H::combine(std::move(h), e.ToString());
  }

  friend Expr operator+(const Expr& a, const Expr& b);
  friend Expr operator-(const Expr& a, const Expr& b);
  friend Expr operator-(const Expr& a);
  friend Expr operator*(const Expr& a, const Expr& b);
  Expr& operator+=(const Expr& b) { return *this = *this + b; }
  Expr& operator-=(const Expr& b) { return *this = *this - b; }
  Expr& operator*=(const Expr& b) { return *this = *this * b; }

  /// Internal: the canonical polynomial.
  const internal::Poly& poly() const { return *poly_; }
  explicit Expr(std::shared_ptr<const internal::Poly> poly) : poly_(std::move(poly)) {}

 private:
  std::shared_ptr<const internal::Poly> poly_;
};

/// floor(a / b) (rounding toward negative infinity); invalid when b is the constant 0.
Expr FloorDiv(const Expr& a, const Expr& b);
/// ceil(a / b) = -FloorDiv(-a, b); invalid when b is the constant 0.
Expr CeilDiv(const Expr& a, const Expr& b);
/// a - FloorDiv(a, b) * b: the remainder with the sign of b; invalid when b is the constant 0.
Expr Mod(const Expr& a, const Expr& b);
/// The smaller / larger of a and b; operands provably dominated are dropped (Min(n, n + 1) is n).
Expr Min(const Expr& a, const Expr& b);
Expr Max(const Expr& a, const Expr& b);

/// a / b as a polynomial identity, when b is one term (a coefficient times a product of atoms)
/// that divides every term of a, and a has no constant (ExactDiv(32*seq*H, 32*seq) is H);
/// nullopt otherwise. Unlike FloorDiv it does not ask b to be non-zero: the caller uses it
/// where a == quotient * b must hold (a Reshape's -1), not to evaluate a / b.
std::optional<Expr> ExactDiv(const Expr& a, const Expr& b);

/// Bounds on the values `e` takes over its symbols' ranges (sound, not always tight: terms are
/// bounded one by one). An invalid expression gives the unbounded interval.
Interval Bounds(const Expr& e);

/// Proofs over the symbols' ranges. A false answer means "not proven", not "false".
bool ProveEqual(const Expr& a, const Expr& b);      // canonical forms equal
bool ProveGE(const Expr& a, const Expr& b);         // a >= b for every symbol value
bool ProveGT(const Expr& a, const Expr& b);         // a > b
bool ProveLE(const Expr& a, const Expr& b);         // a <= b
bool ProveLT(const Expr& a, const Expr& b);         // a < b
bool ProveNonNegative(const Expr& e);               // e >= 0

/// The value of a symbol at run time, or nullopt when it has none.
using SymbolValues = std::function<std::optional<int64_t>(const std::string& name)>;
/// SymbolValues over a map from name to value.
SymbolValues ValuesOf(const std::map<std::string, int64_t>& values);

/// The value of `e` with each symbol given by `values`. Errors (kInvalidArgument): an invalid
/// expression, a symbol without a value ("symbol 'seq' has no value"), a division by zero or an
/// int64 overflow while evaluating, each naming the expression.
absl::StatusOr<int64_t> Evaluate(const Expr& e, const SymbolValues& values);

/// `e` with each symbol named in `replacements` replaced by its expression, simplified again
/// (substituting seq = 1 in FloorDiv(seq + 1, 2) gives 1).
Expr Substitute(const Expr& e, const std::map<std::string, Expr>& replacements);

/// Parses the printed form: integers, symbol names, + - * and parentheses, unary minus, and
/// floordiv(a, b), ceildiv(a, b), mod(a, b), min(a, b, ...), max(a, b, ...). Each symbol name
/// must be in `symbols` (its range comes from there). Errors (kInvalidArgument): a syntax error
/// or an unknown symbol, with the offending text and its column ("unknown symbol 'sq' at
/// column 5 of 'past+sq'").
absl::StatusOr<Expr> Parse(std::string_view text, const std::map<std::string, Symbol>& symbols);

}  // namespace kiln::sym

#endif  // KILN_COMPILER_CORE_IR_SYM_EXPR_H_
