// Reference kernels of NonZero, Compress and Unique (onnx/reference/ops/op_non_zero.py,
// op_compress.py, op_unique.py; Unique sorts as numpy.unique). The data must give the node's
// static output shape, else kInvalidArgument with both shapes.
#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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
  const int64_t axis = node.attrs().GetInt("axis", 0);
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
  const int64_t axis = node.attrs().GetInt("axis", 0);
  const bool sorted = node.attrs().GetInt("sorted", 1) != 0;
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

}  // namespace

absl::StatusOr<TensorVec> EvalDataDependent(const graph::Node& node, const TensorVec& in) {
  switch (node.op()) {
    case OpKind::kNonZero:
      return EvalNonZero(node, *in[0]);
    case OpKind::kCompress:
      return EvalCompress(node, *in[0], *in[1]);
    case OpKind::kUnique:
      return EvalUnique(node, *in[0]);
    default:
      return absl::InternalError(NodePrefix(node) + "not a data-dependent op");
  }
}

}  // namespace kiln::reference
