// CompiledExpr: sym::Fold into postfix steps, and a stack machine that runs them.
#include "compiler_core/ir/sym/compiled.h"

#include <algorithm>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "compiler_core/ir/sym/fold.h"
#include "compiler_core/ir/sym/poly.h"

namespace kiln::sym {

absl::StatusOr<CompiledExpr> CompiledExpr::Compile(const Expr& e,
                                                   const std::vector<Symbol>& slots) {
  if (e.is_invalid()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot compile the invalid expression ",
                                                   e.ToString()));
  }
  for (const Symbol& s : e.Symbols()) {
    if (std::none_of(slots.begin(), slots.end(),
                     [&](const Symbol& slot) { return slot.name == s.name; })) {
      return absl::InvalidArgumentError(
          absl::StrCat("expression ", e.ToString(), " reads symbol '", s.name, "', not bound"));
    }
  }
  // Each folded value is its postfix program; a binary node appends both operands and the op.
  using Program = std::vector<Step>;
  auto binary = [](Op op) {
    return [op](Program a, Program b) {
      a.insert(a.end(), b.begin(), b.end());
      a.push_back({op, 0});
      return a;
    };
  };
  FoldOps<Program> ops;
  ops.constant = [](int64_t v) { return Program{{Op::kConst, v}}; };
  ops.symbol = [&slots](const Symbol& s) {
    int64_t slot = 0;
    while (slots[static_cast<size_t>(slot)].name != s.name) ++slot;
    return Program{{Op::kSlot, slot}};
  };
  ops.add = binary(Op::kAdd);
  ops.mul = binary(Op::kMul);
  ops.floordiv = binary(Op::kFloorDiv);
  ops.mod = binary(Op::kMod);
  ops.min = binary(Op::kMin);
  ops.max = binary(Op::kMax);
  CompiledExpr c;
  c.expr_ = e;
  c.steps_ = Fold(e, ops);
  size_t depth = 0;
  for (const Step& s : c.steps_) {
    depth = s.op == Op::kConst || s.op == Op::kSlot ? depth + 1 : depth - 1;
    c.depth_ = std::max(c.depth_, depth);
  }
  return c;
}

std::optional<int64_t> CompiledExpr::Run(const int64_t* values) const {
  constexpr size_t kInline = 16;
  int64_t inline_stack[kInline];
  std::vector<int64_t> heap;
  int64_t* stack = inline_stack;
  if (depth_ > kInline) {
    heap.resize(depth_);
    stack = heap.data();
  }
  size_t top = 0;
  for (const Step& s : steps_) {
    switch (s.op) {
      case Op::kConst: stack[top++] = s.arg; continue;
      case Op::kSlot: stack[top++] = values[s.arg]; continue;
      default: break;
    }
    const int64_t b = stack[--top];
    int64_t& a = stack[top - 1];
    switch (s.op) {
      case Op::kAdd:
        if (__builtin_add_overflow(a, b, &a)) return std::nullopt;
        break;
      case Op::kMul:
        if (__builtin_mul_overflow(a, b, &a)) return std::nullopt;
        break;
      case Op::kFloorDiv:
      case Op::kMod: {
        if (b == 0 || (a == std::numeric_limits<int64_t>::min() && b == -1)) return std::nullopt;
        const int64_t q = internal::FloorDivInt(a, b);
        a = s.op == Op::kFloorDiv ? q : a - q * b;
        break;
      }
      case Op::kMin: a = std::min(a, b); break;
      case Op::kMax: a = std::max(a, b); break;
      default: break;
    }
  }
  return stack[0];
}

}  // namespace kiln::sym
