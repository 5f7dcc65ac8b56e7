// Reference kernels of NonZero, Compress, Unique and NonMaxSuppression
// (onnx/reference/ops/op_non_zero.py, op_compress.py, op_unique.py, op_non_max_suppression.py;
// Unique sorts as numpy.unique, NonMaxSuppression follows ONNX Runtime). The data must give the
// node's static output shape, else kInvalidArgument with both shapes.
#include <algorithm>
#include <array>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/reference/eval_internal.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::reference {
namespace {

using graph::OpKind;

absl::Status CheckShape(const graph::Node& node, const Shape& got) {
  const Shape& want = node.output(0)->type().shape;
  if (got == want) return absl::OkStatus();
  return absl::InvalidArgumentError(
      NodePrefix(node) + absl::StrCat("the data give output shape [", absl::StrJoin(got, ","),
                                      "] but the node was compiled for [", absl::StrJoin(want, ","),
                                      "]"));
}

absl::StatusOr<TensorVec> EvalNonZero(const graph::Node& node, const Tensor& x) {
  const Shape& xs = x.type.shape;
  const int64_t rank = static_cast<int64_t>(xs.size());
  std::vector<int64_t> flat;
  const std::vector<double> v = ToDoubles(x);
  for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i) {
    if (v[i] != 0) flat.push_back(i);
  }
  const int64_t k = static_cast<int64_t>(flat.size());
  KILN_RETURN_IF_ERROR(CheckShape(node, {rank, k}));
  std::vector<double> out(static_cast<size_t>(rank * k));
  for (int64_t j = 0; j < k; ++j) {
    int64_t rest = flat[j];
    for (int64_t d = rank - 1; d >= 0; --d) {
      out[d * k + j] = static_cast<double>(rest % xs[d]);
      rest /= xs[d];
    }
  }
  return TensorVec{FromDoubles(node.output(0)->type(), out)};
}

// X viewed as [outer, n, inner] around `axis`.
struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
  AxisView(const Shape& s, int64_t axis) {
    for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) {
      (d < axis ? outer : d == axis ? n : inner) *= s[d];
    }
  }
};

absl::StatusOr<TensorVec> EvalCompress(const graph::Node& node, const Tensor& x,
                                       const Tensor& cond) {
  const int64_t axis = graph::Axis0Attrs::Of(node).axis;
  const AxisView v(x.type.shape, axis);
  std::vector<int64_t> picked;
  for (int64_t p = 0; p < std::min(v.n, cond.type.NumElements()); ++p) {
    if (cond.GetAsDouble(p) != 0) picked.push_back(p);
  }
  Shape got = x.type.shape;
  got[axis] = static_cast<int64_t>(picked.size());
  KILN_RETURN_IF_ERROR(CheckShape(node, got));
  const std::vector<double> xv = ToDoubles(x);
  std::vector<double> out;
  for (int64_t o = 0; o < v.outer; ++o) {
    for (int64_t p : picked) {
      for (int64_t i = 0; i < v.inner; ++i) out.push_back(xv[(o * v.n + p) * v.inner + i]);
    }
  }
  return TensorVec{FromDoubles(node.output(0)->type(), out)};
}

absl::StatusOr<TensorVec> EvalUnique(const graph::Node& node, const Tensor& x) {
  const graph::UniqueAttrs attrs = graph::UniqueAttrs::Of(node);
  // The importer always sets axis (flattening the input when ONNX gives none).
  const int64_t axis = attrs.axis.value_or(0);
  const bool sorted = attrs.sorted;
  const AxisView v(x.type.shape, axis);
  const std::vector<double> xv = ToDoubles(x);
  // Slice p as the row-major sequence of its elements.
  auto slice = [&](int64_t p) {
    std::vector<double> s;
    for (int64_t o = 0; o < v.outer; ++o) {
      for (int64_t i = 0; i < v.inner; ++i) s.push_back(xv[(o * v.n + p) * v.inner + i]);
    }
    return s;
  };
  std::vector<int64_t> firsts;  // first occurrences, in order
  std::vector<int64_t> rep(static_cast<size_t>(v.n));
  for (int64_t p = 0; p < v.n; ++p) {
    rep[p] = p;
    for (int64_t f : firsts) {
      if (slice(f) == slice(p)) {
        rep[p] = f;
        break;
      }
    }
    if (rep[p] == p) firsts.push_back(p);
  }
  if (sorted) {
    std::stable_sort(firsts.begin(), firsts.end(),
                     [&](int64_t a, int64_t b) { return slice(a) < slice(b); });
  }
  const int64_t u = static_cast<int64_t>(firsts.size());
  Shape got = x.type.shape;
  got[axis] = u;
  KILN_RETURN_IF_ERROR(CheckShape(node, got));
  std::vector<int64_t> position(static_cast<size_t>(v.n));
  for (int64_t k = 0; k < u; ++k) position[firsts[k]] = k;
  std::vector<double> y, indices, inverse, counts(static_cast<size_t>(u), 0.0);
  for (int64_t o = 0; o < v.outer; ++o) {
    for (int64_t k = 0; k < u; ++k) {
      for (int64_t i = 0; i < v.inner; ++i) y.push_back(xv[(o * v.n + firsts[k]) * v.inner + i]);
    }
  }
  for (int64_t k = 0; k < u; ++k) indices.push_back(static_cast<double>(firsts[k]));
  for (int64_t p = 0; p < v.n; ++p) {
    const int64_t k = position[rep[p]];
    inverse.push_back(static_cast<double>(k));
    counts[k] += 1;
  }
  return TensorVec{
      FromDoubles(node.output(0)->type(), y), FromDoubles(node.output(1)->type(), indices),
      FromDoubles(node.output(2)->type(), inverse), FromDoubles(node.output(3)->type(), counts)};
}

// Box `i` of `boxes` (at offset `at`) as corners (y1, x1, y2, x2), min before max.
std::array<float, 4> Corners(const std::vector<double>& boxes, int64_t at, bool center) {
  const float a = static_cast<float>(boxes[at]), b = static_cast<float>(boxes[at + 1]);
  const float c = static_cast<float>(boxes[at + 2]), d = static_cast<float>(boxes[at + 3]);
  if (center) return {b - d / 2, a - c / 2, b + d / 2, a + c / 2};  // [xc, yc, w, h]
  return {std::min(a, c), std::min(b, d), std::max(a, c), std::max(b, d)};
}

// Whether a box suppresses another: IoU above the threshold (ONNX Runtime's SuppressByIOU).
bool Suppresses(const std::array<float, 4>& p, const std::array<float, 4>& q, float threshold) {
  const float ih = std::max(0.0f, std::min(p[2], q[2]) - std::max(p[0], q[0]));
  const float iw = std::max(0.0f, std::min(p[3], q[3]) - std::max(p[1], q[1]));
  const float inter = ih * iw;
  const float area_p = (p[2] - p[0]) * (p[3] - p[1]), area_q = (q[2] - q[0]) * (q[3] - q[1]);
  const float uni = area_p + area_q - inter;
  if (inter <= 0 || area_p <= 0 || area_q <= 0 || uni <= 0) return false;
  return inter / uni > threshold;
}

absl::StatusOr<TensorVec> EvalNonMaxSuppression(const graph::Node& node, const TensorVec& in) {
  const Shape& bs = in[0]->type.shape;
  const int64_t batches = bs[0], n = bs[1], classes = in[1]->type.shape[1];
  auto input = [&](size_t i) { return i < in.size() ? in[i].get() : nullptr; };
  const int64_t max_out = input(2) ? input(2)->GetAsInt64(0) : 0;
  const float iou = input(3) ? static_cast<float>(input(3)->GetAsDouble(0)) : 0.0f;
  const bool has_min = input(4) != nullptr;
  const float min_score = has_min ? static_cast<float>(input(4)->GetAsDouble(0)) : 0.0f;
  const bool center = graph::NonMaxSuppressionAttrs::Of(node).center_point_box != 0;
  const std::vector<double> boxes = ToDoubles(*in[0]), scores = ToDoubles(*in[1]);
  std::vector<double> rows;
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t c = 0; c < classes; ++c) {
      const int64_t base = (b * classes + c) * n;
      std::vector<int64_t> order;
      for (int64_t i = 0; i < n; ++i) {
        if (!has_min || static_cast<float>(scores[base + i]) > min_score) order.push_back(i);
      }
      std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) {
        return static_cast<float>(scores[base + p]) > static_cast<float>(scores[base + q]);
      });
      std::vector<std::array<float, 4>> kept;
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= max_out) break;
        std::array<float, 4> box = Corners(boxes, (b * n + i) * 4, center);
        bool suppressed = false;
        for (const auto& k : kept) suppressed = suppressed || Suppresses(box, k, iou);
        if (suppressed) continue;
        kept.push_back(box);
        rows.insert(rows.end(),
                    {static_cast<double>(b), static_cast<double>(c), static_cast<double>(i)});
      }
    }
  }
  KILN_RETURN_IF_ERROR(CheckShape(node, {static_cast<int64_t>(rows.size() / 3), 3}));
  return TensorVec{FromDoubles(node.output(0)->type(), rows)};
}

absl::StatusOr<TensorVec> EvalRuntimeCheck(const graph::Node& node, const TensorVec& in) {
  const graph::RuntimeCheckAttrs a = graph::RuntimeCheckAttrs::Of(node);
  const Shape& expected = a.expected;
  std::vector<int64_t> got;
  for (int64_t i = 0; i < in[1]->type.NumElements(); ++i) got.push_back(in[1]->GetAsInt64(i));
  if (got != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat(a.what.empty() ? NodePrefix(node) : a.what, ": got [", absl::StrJoin(got, ","),
                     "], the node was compiled for [", absl::StrJoin(expected, ","), "]"));
  }
  return TensorVec{in[0]};
}

// BoundMask: x with the elements at or past dims[symbol] * mul / div along "axis" set to "fill".
absl::StatusOr<TensorVec> EvalBoundMask(const graph::Node& node, const TensorVec& in) {
  const graph::BoundMaskAttrs a = graph::BoundMaskAttrs::Of(node);
  const int64_t axis = a.axis;
  const int64_t length = in[1]->GetAsInt64(a.symbol) * a.mul / a.div;
  auto out = std::make_shared<Tensor>(*in[0]);
  const Shape& shape = out->type.shape;
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  for (int64_t i = 0; i < out->type.NumElements(); ++i) {
    if ((i / inner) % shape[axis] >= length) {
      StoreDouble(*out, i, a.fill);
    } else if (a.rescale) {
      StoreDouble(
          *out, i,
          out->GetAsDouble(i) * static_cast<double>(shape[axis]) / static_cast<double>(length));
    }
  }
  return TensorVec{out};
}

}  // namespace

absl::StatusOr<TensorVec> EvalDataDependent(const graph::Node& node, const TensorVec& in) {
  switch (node.op()) {
    case OpKind::kNonZero:
      return EvalNonZero(node, *in[0]);
    case OpKind::kCompress:
      return EvalCompress(node, *in[0], *in[1]);
    case OpKind::kUnique:
      return EvalUnique(node, *in[0]);
    case OpKind::kNonMaxSuppression:
      return EvalNonMaxSuppression(node, in);
    case OpKind::kRuntimeCheck:
      return EvalRuntimeCheck(node, in);
    case OpKind::kBoundMask:
      return EvalBoundMask(node, in);
    default:
      return absl::InternalError(NodePrefix(node) + "not a data-dependent op");
  }
}

}  // namespace kiln::reference
