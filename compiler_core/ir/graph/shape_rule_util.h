// Small helpers shared by the shape-rule files (shape_rules.cc and the per-family *_rules.cc):
// error prefixes naming the node, and typed access to a node's inputs. Internal to ir/graph.
#ifndef KILN_COMPILER_CORE_IR_GRAPH_SHAPE_RULE_UTIL_H_
#define KILN_COMPILER_CORE_IR_GRAPH_SHAPE_RULE_UTIL_H_

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/ir/graph/graph.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/ir/graph/tensor_size.h"

namespace kiln::graph::rules {

/// "node 'NAME' (Op): ", the start of every shape-rule error.
inline std::string Prefix(const Node& node) {
  return absl::StrCat("node '", node.name(), "' (", OpName(node.op()), "): ");
}

/// kInvalidArgument naming `node`.
inline absl::Status Invalid(const Node& node, const std::string& msg) {
  return absl::InvalidArgumentError(Prefix(node) + msg);
}

/// "[d0,d1,...]".
inline std::string ShapeStr(const std::vector<int64_t>& s) {
  return absl::StrCat("[", absl::StrJoin(s, ","), "]");
}

/// The type of input `i`; kInvalidArgument naming the node when the input is absent.
inline absl::StatusOr<const TensorType*> In(const Node& node, int i) {
  const Value* v = node.input(i);
  if (v == nullptr) return Invalid(node, absl::StrCat("input ", i, " is missing"));
  return &v->type();
}

/// `a * b` and `a + b` for shape arithmetic over attribute and constant values, which a model
/// may set to anything: kInvalidArgument naming `node` and `what` when the result overflows
/// int64 (a wrapped product could pass a later check and type a tensor wrongly).
inline absl::StatusOr<int64_t> Mul(const Node& node, int64_t a, int64_t b,
                                   const std::string& what) {
  std::optional<int64_t> r = CheckedMul(a, b);
  if (!r) return Invalid(node, what + " overflows int64");
  return *r;
}
inline absl::StatusOr<int64_t> Add(const Node& node, int64_t a, int64_t b,
                                   const std::string& what) {
  std::optional<int64_t> r = CheckedAdd(a, b);
  if (!r) return Invalid(node, what + " overflows int64");
  return *r;
}

/// The elements of a non-constant operand that shape arithmetic computed (Value::sym_value),
/// or null: what a rule reads where it would read a constant integer operand.
inline const std::vector<sym::Expr>* ShapeValue(const Value* v) {
  if (v == nullptr || v->is_constant() || !v->sym_value().has_value()) return nullptr;
  return &*v->sym_value();
}

/// A shape as expressions, one per dim (TensorType::dims()).
using Dims = std::vector<sym::Expr>;

/// Output spatial sizes of a windowed op (conv, pooling) over spatial dims `in` with window
/// `kernel` (ONNX Conv/MaxPool: floor((in + pads - dilated window) / stride) + 1, ceil with
/// `ceil_mode`). A symbolic dim gives that expression; an input shorter than the window then
/// gives a size below 1, which the run-time shape check refuses. Errors: kInvalidArgument for
/// auto_pad left unresolved, attributes of the wrong length or sign, a static input shorter
/// than the window, or an overflow.
absl::StatusOr<Dims> WindowOutput(const Node& node, const SlidingWindowAttrs& a, const Dims& in,
                                  const std::vector<int64_t>& kernel, bool ceil_mode);

/// "[1,seq,256]": dims as ShapeStr prints static ones.
inline std::string DimsStr(const Dims& dims) {
  return absl::StrCat("[",
                      absl::StrJoin(dims, ",",
                                    [](std::string* out, const sym::Expr& d) {
                                      absl::StrAppend(out, d.ToString());
                                    }),
                      "]");
}

/// Multidirectional broadcast of dims: equal dims (canonical forms), or one of them 1. Two
/// symbolic dims that differ, or a symbolic one against a constant other than 1, cannot be
/// proven to broadcast; nullopt for those and for incompatible constants.
inline std::optional<Dims> BroadcastDims(const Dims& a, const Dims& b) {
  size_t rank = std::max(a.size(), b.size());
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    sym::Expr da = i < rank - a.size() ? sym::Expr(1) : a[i - (rank - a.size())];
    sym::Expr db = i < rank - b.size() ? sym::Expr(1) : b[i - (rank - b.size())];
    if (da == db || db == sym::Expr(1)) {
      out[i] = da;
    } else if (da == sym::Expr(1)) {
      out[i] = db;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

}  // namespace kiln::graph::rules

#endif  // KILN_COMPILER_CORE_IR_GRAPH_SHAPE_RULE_UTIL_H_
