// CompiledExpr: a symbolic expression flattened once into a postfix program over symbol slots,
// for the run-time shape program, which evaluates every symbolic size of an artifact on each
// call (sym::Evaluate looks each symbol up by name and allocates; this does neither).
#ifndef KILN_COMPILER_CORE_IR_SYM_COMPILED_H_
#define KILN_COMPILER_CORE_IR_SYM_COMPILED_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/ir/sym/expr.h"

namespace kiln::sym {

class CompiledExpr {
 public:
  /// `e` over the symbols of `slots`: the symbol slots[s] reads values[s] at Run. Errors
  /// (kInvalidArgument): `e` is invalid, or reads a symbol that `slots` does not name.
  static absl::StatusOr<CompiledExpr> Compile(const Expr& e, const std::vector<Symbol>& slots);

  /// The value at `values` (one per slot), with the semantics of sym::Evaluate (floordiv and
  /// mod round toward negative infinity); nullopt on an int64 overflow or a division by zero,
  /// where the caller asks sym::Evaluate for the message.
  std::optional<int64_t> Run(const int64_t* values) const;

  /// The expression it was compiled from.
  const Expr& expr() const { return expr_; }

 private:
  enum class Op : uint8_t { kConst, kSlot, kAdd, kMul, kFloorDiv, kMod, kMin, kMax };
  struct Step {
    Op op;
    int64_t arg;  // kConst: the value; kSlot: the slot
  };
  Expr expr_;
  std::vector<Step> steps_;
  size_t depth_ = 0;  // the stack depth Run needs
};

}  // namespace kiln::sym

#endif  // KILN_COMPILER_CORE_IR_SYM_COMPILED_H_
