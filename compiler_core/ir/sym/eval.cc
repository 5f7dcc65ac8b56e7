// Evaluating a sym::Expr at run-time symbol values, every step checked for int64 overflow
// and division by zero.
#include <algorithm>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
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

absl::Status Failed(const Expr& e, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("evaluating ", e.ToString(), ": ", why));
}

absl::StatusOr<int64_t> Eval(const Expr& e, const SymbolValues& values, const Expr& root);

absl::StatusOr<int64_t> EvalAtom(const Atom& atom, const SymbolValues& values, const Expr& root) {
  if (atom.kind == AtomKind::kSymbol) {
    std::optional<int64_t> v = values(atom.symbol.name);
    if (!v) return Failed(root, absl::StrCat("symbol '", atom.symbol.name, "' has no value"));
    return *v;
  }
  std::vector<int64_t> args;
  for (const Expr& arg : atom.args) {
    absl::StatusOr<int64_t> v = Eval(arg, values, root);
    if (!v.ok()) return v.status();
    args.push_back(*v);
  }
  switch (atom.kind) {
    case AtomKind::kFloorDiv:
    case AtomKind::kMod: {
      int64_t a = args[0];
      int64_t b = args[1];
      if (b == 0) return Failed(root, "division by zero");
      if (a == std::numeric_limits<int64_t>::min() && b == -1) {
        if (atom.kind == AtomKind::kMod) return 0;
        return Failed(root, "int64 overflow");
      }
      const int64_t q = FloorDivInt(a, b);
      return atom.kind == AtomKind::kFloorDiv ? q : a - q * b;
    }
    case AtomKind::kMin: return *std::min_element(args.begin(), args.end());
    case AtomKind::kMax: return *std::max_element(args.begin(), args.end());
    case AtomKind::kSymbol: break;
  }
  return Failed(root, "unknown atom");
}

absl::StatusOr<int64_t> Eval(const Expr& e, const SymbolValues& values, const Expr& root) {
  const Poly& p = e.poly();
  if (p.invalid) return Failed(root, "the expression overflowed int64 or divided by zero");
  int64_t acc = p.constant;
  for (const Term& t : p.terms) {
    int64_t product = t.coeff;
    for (const AtomPtr& f : t.factors) {
      absl::StatusOr<int64_t> v = EvalAtom(*f, values, root);
      if (!v.ok()) return v.status();
      if (__builtin_mul_overflow(product, *v, &product)) return Failed(root, "int64 overflow");
    }
    if (__builtin_add_overflow(acc, product, &acc)) return Failed(root, "int64 overflow");
  }
  return acc;
}

}  // namespace

SymbolValues ValuesOf(const std::map<std::string, int64_t>& values) {
  return [&values](const std::string& name) -> std::optional<int64_t> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

absl::StatusOr<int64_t> Evaluate(const Expr& e, const SymbolValues& values) {
  return Eval(e, values, e);
}

}  // namespace kiln::sym
