// Import-time constant folding of small values: shape computations (Shape → Gather → Concat →
// Reshape/Slice chains, ConstantOfShape of a computed shape, ...) must be constants before the
// builders that read them as static parameters run. Evaluation uses the reference evaluator,
// the same one the constant-folding pass uses, so each op's meaning is written once.
#include <optional>
#include <utility>
#include <vector>

#include "compiler_core/importer/onnx/import_context.h"
#include "compiler_core/reference/evaluator.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::importer {
namespace {

using graph::Node;
using graph::Value;

/// Larger results are left to the constant-folding pass (they are not shape parameters).
constexpr int64_t kMaxFoldElements = 4096;

/// `value` when FoldSmallConstant needs no evaluation to answer for it (null, a constant, a
/// graph input, known unfoldable, or a producer with a large result), else nullopt.
std::optional<Value*> Settled(ImportContext& ctx, Value* value) {
  if (value == nullptr || value->is_constant() || value->producer() == nullptr ||
      ctx.IsUnfoldable(value)) {
    return value;
  }
  for (const Value* out : value->producer()->outputs()) {
    if (out->type().NumElements() > kMaxFoldElements) {
      ctx.MarkUnfoldable(value);
      return value;
    }
  }
  return std::nullopt;
}

/// One value being folded: its producer's inputs are folded one after another.
struct Frame {
  Value* value;
  int next_input = 0;
  std::vector<reference::TensorPtr> inputs;
  bool any = false;  // whether some input is present
};

/// The constant that `frame`'s value holds, its inputs all folded, or the value itself when
/// the evaluator cannot compute it.
Value* Evaluate(ImportContext& ctx, const Frame& frame) {
  if (!frame.any) return frame.value;
  absl::StatusOr<std::vector<reference::TensorPtr>> results =
      reference::EvaluateNode(*frame.value->producer(), frame.inputs);
  // An op the evaluator lacks (or cannot fold here) simply stays a node.
  if (!results.ok()) return frame.value;
  const reference::TensorPtr& result = (*results)[frame.value->output_index()];
  if (result == nullptr || result->type != frame.value->type()) return frame.value;
  return ctx.graph().AddConstant(frame.value->name(), result);
}

// A shape value whose elements are all constants (Shape of the static dims of a symbolic
// tensor) as a constant; else null.
Value* ConstantSymValue(ImportContext& ctx, const Value* value) {
  if (value == nullptr || value->is_constant() || !value->sym_value().has_value()) return nullptr;
  const TensorType& t = value->type();
  for (const sym::Expr& e : *value->sym_value()) {
    if (!e.is_constant()) return nullptr;
  }
  auto tensor = Tensor::Zeros(t);
  const std::vector<sym::Expr>& elements = *value->sym_value();
  for (size_t i = 0; i < elements.size(); ++i) {
    const int64_t v = *elements[i].AsConstant();
    switch (t.dtype) {
      case DType::kInt64: tensor->mutable_data<int64_t>()[i] = v; break;
      case DType::kInt32: tensor->mutable_data<int32_t>()[i] = static_cast<int32_t>(v); break;
      case DType::kBool: tensor->mutable_data<uint8_t>()[i] = v != 0 ? 1 : 0; break;
      default: return nullptr;  // other integer types stay nodes
    }
  }
  return ctx.graph().AddConstant(value->name(), std::move(tensor));
}

}  // namespace

absl::StatusOr<Value*> FoldSmallConstant(ImportContext& ctx, Value* value) {
  if (Value* folded = ConstantSymValue(ctx, value)) return folded;
  if (std::optional<Value*> settled = Settled(ctx, value)) return *settled;
  // Depth first over the producers (a builder may emit a chain of nodes: fold the producers
  // first), with an explicit stack: a chain of 100k nodes must not recurse 100k deep. A value
  // found unfoldable is remembered, so an import looks at each value once.
  std::vector<Frame> stack{Frame{value}};
  Value* result = nullptr;  // what the frame popped last folded to, for the frame below it
  while (!stack.empty()) {
    Frame& frame = stack.back();
    Node& node = *frame.value->producer();
    bool pushed = false, failed = false;
    for (; frame.next_input < node.num_inputs(); ++frame.next_input) {
      Value* in = node.input(frame.next_input);
      if (in == nullptr) {
        frame.inputs.push_back(nullptr);
        continue;
      }
      Value* folded = std::exchange(result, nullptr);
      if (folded == nullptr) {
        std::optional<Value*> settled = Settled(ctx, in);
        if (!settled) {
          pushed = true;
          break;
        }
        folded = *settled;
      }
      if (!folded->is_constant()) {
        failed = true;
        break;
      }
      if (folded != in) node.set_input(frame.next_input, folded);
      frame.inputs.push_back(folded->constant());
      frame.any = true;
    }
    if (pushed) {
      // After the push `frame` may dangle; the new frame resumes this one when it is done.
      stack.push_back(Frame{node.input(frame.next_input)});
      continue;
    }
    result = failed ? frame.value : Evaluate(ctx, frame);
    if (result == frame.value) ctx.MarkUnfoldable(frame.value);
    stack.pop_back();
  }
  return result;
}

}  // namespace kiln::importer
