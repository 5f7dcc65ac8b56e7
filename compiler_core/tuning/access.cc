// Index analysis for the feature extractor: concrete evaluation (for strides) and interval
// arithmetic (for footprints) over integer index expressions.
#include "compiler_core/tuning/access.h"

#include <algorithm>
#include <optional>

#include "absl/container/flat_hash_map.h"

namespace kiln::tuning {
namespace {

using loop::BinaryOp;
using loop::Expr;
using loop::ExprKind;
using loop::UnaryOp;

using Env = absl::flat_hash_map<const loop::VarNode*, int64_t>;

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t FloorMod(int64_t a, int64_t b) { return a - FloorDiv(a, b) * b; }

/// Value of an integer (or bool) expression; loads and float parts evaluate to 0.
int64_t Eval(const Expr& e, const Env& env) {
  switch (e->kind) {
    case ExprKind::kIntImm:
      return e->int_value;
    case ExprKind::kVar: {
      auto it = env.find(e->var.get());
      return it == env.end() ? 0 : it->second;
    }
    case ExprKind::kSelect:
      return Eval(e->operands[0], env) != 0 ? Eval(e->operands[1], env) : Eval(e->operands[2], env);
    case ExprKind::kCast:
      return IsFloat(e->operands[0]->dtype) ? 0 : Eval(e->operands[0], env);
    case ExprKind::kUnary: {
      const int64_t a = Eval(e->operands[0], env);
      if (e->unary_op == UnaryOp::kNeg) return -a;
      if (e->unary_op == UnaryOp::kAbs) return a < 0 ? -a : a;
      if (e->unary_op == UnaryOp::kNot) return a == 0;
      return a;
    }
    case ExprKind::kBinary:
      break;
    default:
      return 0;
  }
  if (IsFloat(e->operands[0]->dtype)) return 0;
  const int64_t a = Eval(e->operands[0], env), b = Eval(e->operands[1], env);
  switch (e->binary_op) {
    case BinaryOp::kAdd:
      return a + b;
    case BinaryOp::kSub:
      return a - b;
    case BinaryOp::kMul:
      return a * b;
    case BinaryOp::kDiv:
      return b == 0 ? 0 : a / b;
    case BinaryOp::kFloorDiv:
      return b == 0 ? 0 : FloorDiv(a, b);
    case BinaryOp::kFloorMod:
      return b == 0 ? 0 : FloorMod(a, b);
    case BinaryOp::kMin:
      return std::min(a, b);
    case BinaryOp::kMax:
      return std::max(a, b);
    case BinaryOp::kLt:
      return a < b;
    case BinaryOp::kLe:
      return a <= b;
    case BinaryOp::kGt:
      return a > b;
    case BinaryOp::kGe:
      return a >= b;
    case BinaryOp::kEq:
      return a == b;
    case BinaryOp::kNe:
      return a != b;
    case BinaryOp::kAnd:
      return a != 0 && b != 0;
    case BinaryOp::kOr:
      return a != 0 || b != 0;
    case BinaryOp::kShl:
      return (b >= 0 && b < 63) ? a << b : 0;
    case BinaryOp::kShr:
      return (b >= 0 && b < 63) ? a >> b : 0;
    default:
      return 0;
  }
}

struct Interval {
  int64_t lo = 0, hi = 0;
};
using Ranges = absl::flat_hash_map<const loop::VarNode*, Interval>;

std::optional<int64_t> ConstValue(const Expr& e) {
  if (e->kind == ExprKind::kIntImm) return e->int_value;
  return std::nullopt;
}

/// Bounds of an integer expression, or nullopt when the analysis cannot bound it.
std::optional<Interval> Range(const Expr& e, const Ranges& ranges) {
  switch (e->kind) {
    case ExprKind::kIntImm:
      return Interval{e->int_value, e->int_value};
    case ExprKind::kVar: {
      auto it = ranges.find(e->var.get());
      return it == ranges.end() ? Interval{0, 0} : it->second;
    }
    case ExprKind::kSelect: {
      auto t = Range(e->operands[1], ranges), f = Range(e->operands[2], ranges);
      if (!t || !f) return std::nullopt;
      return Interval{std::min(t->lo, f->lo), std::max(t->hi, f->hi)};
    }
    case ExprKind::kCast:
      if (IsFloat(e->operands[0]->dtype)) return std::nullopt;
      return Range(e->operands[0], ranges);
    case ExprKind::kUnary: {
      if (e->unary_op != UnaryOp::kNeg) return std::nullopt;
      auto a = Range(e->operands[0], ranges);
      if (!a) return std::nullopt;
      return Interval{-a->hi, -a->lo};
    }
    case ExprKind::kBinary:
      break;
    default:
      return std::nullopt;
  }
  if (IsFloat(e->operands[0]->dtype)) return std::nullopt;
  auto a = Range(e->operands[0], ranges), b = Range(e->operands[1], ranges);
  if (!a || !b) return std::nullopt;
  const std::optional<int64_t> c = ConstValue(e->operands[1]);
  switch (e->binary_op) {
    case BinaryOp::kAdd:
      return Interval{a->lo + b->lo, a->hi + b->hi};
    case BinaryOp::kSub:
      return Interval{a->lo - b->hi, a->hi - b->lo};
    case BinaryOp::kMul: {
      const int64_t p[4] = {a->lo * b->lo, a->lo * b->hi, a->hi * b->lo, a->hi * b->hi};
      return Interval{*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
    }
    case BinaryOp::kMin:
      return Interval{std::min(a->lo, b->lo), std::min(a->hi, b->hi)};
    case BinaryOp::kMax:
      return Interval{std::max(a->lo, b->lo), std::max(a->hi, b->hi)};
    case BinaryOp::kFloorDiv:
    case BinaryOp::kDiv:
      if (!c || *c <= 0) return std::nullopt;
      return Interval{FloorDiv(a->lo, *c), FloorDiv(a->hi, *c)};
    case BinaryOp::kFloorMod:
      if (!c || *c <= 0) return std::nullopt;
      if (FloorDiv(a->lo, *c) == FloorDiv(a->hi, *c)) {
        return Interval{FloorMod(a->lo, *c), FloorMod(a->hi, *c)};
      }
      return Interval{0, *c - 1};
    default:
      return std::nullopt;
  }
}

bool Mentions(const Expr& e, const loop::VarNode* var) {
  if (e->kind == ExprKind::kVar) return e->var.get() == var;
  for (const Expr& o : e->operands) {
    if (Mentions(o, var)) return true;
  }
  return false;
}

int64_t Middle(const LoopFrame& l) { return (l.extent - 1) / 2; }

int64_t FlatOffset(const loop::Buffer& buffer, const std::vector<Expr>& indices, const Env& env) {
  int64_t offset = 0;
  for (size_t d = 0; d < indices.size() && d < buffer.shape.size(); ++d) {
    offset = offset * buffer.shape[d] + Eval(indices[d], env);
  }
  return offset;
}

/// Per-dimension widths (elements) of the bounding box; see FootprintLines.
std::vector<int64_t> BoxWidths(const BufferAccess& access, const std::vector<LoopFrame>& loops,
                               int k) {
  Ranges ranges;
  const int n = static_cast<int>(loops.size());
  for (int l = 0; l < n; ++l) {
    ranges[loops[l].var] = l >= n - k ? Interval{0, loops[l].extent - 1}
                                      : Interval{Middle(loops[l]), Middle(loops[l])};
  }
  const std::vector<int64_t>& shape = access.buffer->shape;
  std::vector<int64_t> widths(shape.size(), 1);
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] <= 0) {  // an empty buffer covers nothing
      widths[d] = 0;
      continue;
    }
    bool any = false;
    Interval hull;
    for (const std::vector<Expr>& idx : access.indices) {
      std::optional<Interval> r = d < idx.size() ? Range(idx[d], ranges) : std::nullopt;
      Interval v = r ? *r : Interval{0, shape[d] - 1};
      v.lo = std::clamp<int64_t>(v.lo, 0, shape[d] - 1);
      v.hi = std::clamp<int64_t>(v.hi, 0, shape[d] - 1);
      hull = any ? Interval{std::min(hull.lo, v.lo), std::max(hull.hi, v.hi)} : v;
      any = true;
    }
    widths[d] = std::max<int64_t>(1, hull.hi - hull.lo + 1);
  }
  return widths;
}

}  // namespace

bool DependsOn(const BufferAccess& access, const loop::VarNode* var) {
  for (const std::vector<Expr>& idx : access.indices) {
    for (const Expr& e : idx) {
      if (Mentions(e, var)) return true;
    }
  }
  return false;
}

int64_t FlatStride(const BufferAccess& access, const std::vector<LoopFrame>& loops, int level) {
  if (access.indices.empty() || loops[level].extent < 2) return 0;
  Env env;
  for (const LoopFrame& l : loops) env[l.var] = Middle(l);
  const int64_t base = FlatOffset(*access.buffer, access.indices[0], env);
  env[loops[level].var] += 1;
  return FlatOffset(*access.buffer, access.indices[0], env) - base;
}

int64_t FootprintElements(const BufferAccess& access, const std::vector<LoopFrame>& loops, int k) {
  int64_t elems = 1;
  for (int64_t w : BoxWidths(access, loops, k)) elems *= w;
  return elems;
}

int64_t FootprintLines(const BufferAccess& access, const std::vector<LoopFrame>& loops, int k,
                       int64_t line_bytes) {
  const std::vector<int64_t>& shape = access.buffer->shape;
  const std::vector<int64_t> widths = BoxWidths(access, loops, k);
  if (access.buffer->NumElements() <= 0) return 0;
  // The box is rows × one contiguous run: trailing dimensions covered whole join the run.
  int j = static_cast<int>(shape.size()) - 1;
  int64_t run = 1;
  while (j >= 0 && widths[j] == shape[j]) run *= shape[j--];
  if (j >= 0) run *= widths[j];
  int64_t rows = 1;
  for (int d = 0; d < j; ++d) rows *= widths[d];
  const int64_t elem = static_cast<int64_t>(DTypeSize(access.buffer->dtype));
  const int64_t lines = rows * ((run * elem + line_bytes - 1) / line_bytes);
  const int64_t buffer_lines = (access.buffer->NumBytes() + line_bytes - 1) / line_bytes;
  return std::max<int64_t>(1, std::min(lines, buffer_lines));
}

}  // namespace kiln::tuning
