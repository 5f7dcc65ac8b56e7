// Shapes as values (sym_values.h): the sym_value rules of the ops that shape arithmetic uses.
#include "compiler_core/ir/graph/sym_values.h"

#include <algorithm>
#include <limits>

#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/ir/graph/shape_rules.h"

namespace kiln::graph {
namespace {

using Elements = std::vector<sym::Expr>;
using Result = std::vector<std::optional<Elements>>;

// Integer or bool (bools as 0 and 1).
bool IsIntegerType(DType dt) { return !IsFloat(dt); }

// Constant integer operand `i` as int64s (nullopt when absent, not constant or too large).
std::optional<std::vector<int64_t>> ConstInts(const Node& node, int i) {
  const Value* v = node.input(i);
  if (v == nullptr || !v->is_constant() || !IsIntegerType(v->type().dtype) ||
      v->type().NumElements() > kMaxSymValueElements) {
    return std::nullopt;
  }
  std::vector<int64_t> out;
  for (int64_t k = 0; k < v->type().NumElements(); ++k) out.push_back(v->constant()->GetAsInt64(k));
  return out;
}

std::optional<Elements> Shape(const Node& node) {
  const TensorType& x = node.input(0)->type();
  auto [start, end] = ShapeOpDims(node, x.rank());
  Elements out;
  for (int64_t d = start; d < end; ++d) out.push_back(x.dim(d));
  return out;
}

std::optional<Elements> Gather(const Node& node, const Elements& data) {
  if (node.input(0)->type().rank() != 1) return std::nullopt;
  std::optional<std::vector<int64_t>> idx = ConstInts(node, 1);
  if (!idx) return std::nullopt;
  const int64_t n = static_cast<int64_t>(data.size());
  Elements out;
  for (int64_t i : *idx) {
    if (i < 0) i += n;
    if (i < 0 || i >= n) return std::nullopt;  // the shape rule or the kernel reports it
    out.push_back(data[i]);
  }
  return out;
}

std::optional<Elements> Slice(const Node& node, const Elements& data) {
  if (node.input(0)->type().rank() != 1) return std::nullopt;
  std::optional<std::vector<int64_t>> starts = ConstInts(node, 1), ends = ConstInts(node, 2);
  if (!starts || !ends || starts->size() != 1 || ends->size() != 1) return std::nullopt;
  int64_t step = 1;
  if (node.input(4) != nullptr) {
    std::optional<std::vector<int64_t>> steps = ConstInts(node, 4);
    if (!steps || steps->size() != 1 || (*steps)[0] == 0) return std::nullopt;
    step = (*steps)[0];
  }
  const int64_t n = static_cast<int64_t>(data.size());
  int64_t s = (*starts)[0], e = (*ends)[0];
  if (s < 0) s += n;
  if (e < 0) e += n;
  Elements out;
  if (step > 0) {
    s = std::clamp<int64_t>(s, 0, n);
    e = std::clamp<int64_t>(e, 0, n);
    for (int64_t i = s; i < e; i += step) out.push_back(data[i]);
  } else {
    s = std::clamp<int64_t>(s, 0, n - 1);
    e = std::clamp<int64_t>(e, -1, n - 1);
    for (int64_t i = s; i > e; i += step) out.push_back(data[i]);
  }
  return out;
}

std::optional<Elements> Elementwise(const Node& node, const Elements& a, const Elements& b) {
  if (a.size() != b.size() && a.size() != 1 && b.size() != 1) return std::nullopt;
  const size_t n = std::max(a.size(), b.size());
  Elements out;
  for (size_t i = 0; i < n; ++i) {
    const sym::Expr& x = a.size() == 1 ? a[0] : a[i];
    const sym::Expr& y = b.size() == 1 ? b[0] : b[i];
    switch (node.op()) {
      case OpKind::kAdd: out.push_back(x + y); break;
      case OpKind::kSub: out.push_back(x - y); break;
      case OpKind::kMul: out.push_back(x * y); break;
      case OpKind::kMin: out.push_back(sym::Min(x, y)); break;
      case OpKind::kMax: out.push_back(sym::Max(x, y)); break;
      case OpKind::kDiv:
        if (!sym::ProveNonNegative(x) || !sym::ProveGT(y, 0)) return std::nullopt;
        out.push_back(sym::FloorDiv(x, y));
        break;
      case OpKind::kEqual:
        // 1 or 0 where provable (x - y is 0, or its range excludes 0), else unknown.
        if (x == y) {
          out.push_back(1);
        } else if (sym::ProveGT(x, y) || sym::ProveLT(x, y)) {
          out.push_back(0);
        } else {
          return std::nullopt;
        }
        break;
      default: return std::nullopt;
    }
    if (out.back().is_invalid()) return std::nullopt;
  }
  return out;
}

std::optional<Elements> Infer(const Node& node) {
  if (node.op() == OpKind::kShape) return Shape(node);
  std::optional<Elements> first = SymElements(node.input(0));
  if (!first) return std::nullopt;
  switch (node.op()) {
    case OpKind::kIdentity:
    case OpKind::kReshape:
    case OpKind::kFlatten:
    case OpKind::kSqueeze:
    case OpKind::kUnsqueeze:
      return first;
    case OpKind::kCast:
      return first;  // the output dtype is checked by the caller
    case OpKind::kGather:
      return Gather(node, *first);
    case OpKind::kSlice:
      return Slice(node, *first);
    case OpKind::kConcat: {
      if (node.input(0)->type().rank() != 1) return std::nullopt;
      Elements out = *first;
      for (int i = 1; i < node.num_inputs(); ++i) {
        std::optional<Elements> more = SymElements(node.input(i));
        if (!more || node.input(i)->type().rank() != 1) return std::nullopt;
        out.insert(out.end(), more->begin(), more->end());
      }
      return out;
    }
    case OpKind::kWhere: {
      // A condition known element by element selects between shape values (PyTorch's
      // Where(Equal(shape, -1), ones, shape) before an Expand).
      std::optional<Elements> a = SymElements(node.input(1));
      std::optional<Elements> b = SymElements(node.input(2));
      if (!a || !b) return std::nullopt;
      const size_t n = std::max({first->size(), a->size(), b->size()});
      Elements out;
      for (size_t i = 0; i < n; ++i) {
        auto at = [&](const Elements& e) -> const sym::Expr* {
          return e.size() == 1 ? &e[0] : (i < e.size() ? &e[i] : nullptr);
        };
        const sym::Expr* c = at(*first);
        const sym::Expr* x = at(*a);
        const sym::Expr* y = at(*b);
        if (c == nullptr || x == nullptr || y == nullptr || !c->is_constant()) return std::nullopt;
        out.push_back(*c->AsConstant() != 0 ? *x : *y);
      }
      return out;
    }
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kDiv:
    case OpKind::kMin:
    case OpKind::kMax:
    case OpKind::kEqual: {
      if (node.num_inputs() != 2) return std::nullopt;
      std::optional<Elements> second = SymElements(node.input(1));
      if (!second) return std::nullopt;
      return Elementwise(node, *first, *second);
    }
    default:
      return std::nullopt;
  }
}

}  // namespace

std::optional<std::vector<sym::Expr>> SymElements(const Value* v) {
  if (v == nullptr) return std::nullopt;
  if (v->sym_value().has_value()) return v->sym_value();
  if (!v->is_constant() || !IsIntegerType(v->type().dtype) ||
      v->type().NumElements() > kMaxSymValueElements) {
    return std::nullopt;
  }
  std::vector<sym::Expr> out;
  for (int64_t k = 0; k < v->type().NumElements(); ++k) {
    out.push_back(sym::Expr(v->constant()->GetAsInt64(k)));
  }
  return out;
}

std::vector<std::optional<std::vector<sym::Expr>>> InferSymValues(const Node& node) {
  Result out(node.outputs().size());
  if (node.outputs().size() != 1) return out;
  const TensorType& t = node.output(0)->type();
  // Shapes are i64 (i32 after a Cast; bool from comparing them); other integer types wrap
  // where a dim would not.
  if (!t.is_static() ||
      (t.dtype != DType::kInt64 && t.dtype != DType::kInt32 && t.dtype != DType::kBool) ||
      t.NumElements() > kMaxSymValueElements || t.rank() > 1) {
    return out;
  }
  for (int i = 0; i < node.num_inputs(); ++i) {
    if (node.input(i) == nullptr && i == 0) return out;
  }
  std::optional<Elements> elements = Infer(node);
  if (!elements || static_cast<int64_t>(elements->size()) != t.NumElements()) return out;
  if (t.dtype == DType::kInt32) {
    // Only values that fit: a Cast to i32 of a larger constant wraps.
    for (const sym::Expr& e : *elements) {
      sym::Interval b = sym::Bounds(e);
      if (b.lo < std::numeric_limits<int32_t>::min() || b.hi > std::numeric_limits<int32_t>::max()) {
        return out;
      }
    }
  }
  out[0] = std::move(elements);
  return out;
}

std::optional<std::vector<sym::Expr>> SymbolicShapeValue(const Value& v) {
  if (IsFloat(v.type().dtype) || !v.type().is_static()) return std::nullopt;
  std::optional<std::vector<sym::Expr>> elems = v.sym_value();
  if (!elems && v.producer() != nullptr) {
    std::vector<std::optional<std::vector<sym::Expr>>> inferred = InferSymValues(*v.producer());
    if (static_cast<size_t>(v.output_index()) < inferred.size()) {
      elems = inferred[static_cast<size_t>(v.output_index())];
    }
  }
  if (!elems || static_cast<int64_t>(elems->size()) != v.type().NumElements()) {
    return std::nullopt;
  }
  bool symbolic = false;
  for (const sym::Expr& e : *elems) {
    if (e.is_invalid()) return std::nullopt;
    symbolic |= !e.is_constant();
  }
  if (!symbolic) return std::nullopt;
  return elems;
}

}  // namespace kiln::graph
