// Reference kernels of the tensor, reduction and logic ops: comparisons and logic, Where, Mod,
// BitShift, Mean, unary math, reductions and ArgMax/ArgMin, and the index-driven data movement
// (Range, EyeLike, Expand, Tile, Trilu, GatherElements, GatherND, Depth/SpaceToDepth, OneHot,
// ScatterElements, ScatterND, CumSum, TopK, Einsum). Floats compute in double, integers in
// int64 (exact); data movement copies raw bytes.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/ir/graph/tensor_op_rules.h"
#include "compiler_core/reference/eval_internal.h"

namespace kiln::reference {
namespace {

using graph::OpKind;

// Calls f(flat, coords) for every element of `shape` in row-major order.
template <typename F>
void ForEachIndex(const Shape& shape, F f) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  Shape pos(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(i, pos);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++pos[d] < shape[d]) break;
      pos[d] = 0;
    }
  }
}

int64_t Flat(const Shape& strides, const Shape& pos) {
  int64_t f = 0;
  for (size_t d = 0; d < pos.size(); ++d) f += pos[d] * strides[d];
  return f;
}

inline void CopyElem(const Tensor& from, int64_t src, Tensor& to, int64_t dst) {
  size_t size = DTypeSize(from.type.dtype);
  std::memcpy(to.bytes.data() + dst * size, from.bytes.data() + src * size, size);
}

// Unsigned 64-bit view of an integer element (exact for u64 too).
uint64_t GetU64(const Tensor& t, int64_t i) {
  if (t.type.dtype == DType::kUInt64) return t.data<uint64_t>()[i];
  return static_cast<uint64_t>(t.GetAsInt64(i));
}

int64_t PyMod(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

absl::StatusOr<TensorVec> EvalBinaryLike(const graph::Node& node, const TensorVec& in) {
  const TensorType& ot = node.output(0)->type();
  auto out = Tensor::Zeros(ot);
  OpKind op = node.op();
  std::vector<std::vector<int64_t>> idx;
  for (const TensorPtr& t : in) idx.push_back(BroadcastIndex(t->type.shape, ot.shape));
  const Tensor& a = *in[0];
  DType in_dt = a.type.dtype;
  bool f = IsFloat(in_dt);
  const bool fmod = op == OpKind::kMod && graph::ModAttrs::Of(node).fmod;
  const bool shift_left = op == OpKind::kBitShift && graph::BitShiftAttrs::Of(node).direction ==
                                                         graph::BitShiftDirection::kLeft;
  for (int64_t i = 0; i < ot.NumElements(); ++i) {
    if (op == OpKind::kWhere) {
      bool c = in[0]->GetAsInt64(idx[0][i]) != 0;
      CopyElem(c ? *in[1] : *in[2], c ? idx[1][i] : idx[2][i], *out, i);
      continue;
    }
    if (op == OpKind::kMean) {
      double s = 0;
      for (size_t k = 0; k < in.size(); ++k) s += in[k]->GetAsDouble(idx[k][i]);
      StoreDouble(*out, i, s / static_cast<double>(in.size()));
      continue;
    }
    int64_t ia = 0, ib = 0;
    double fa = 0, fb = 0;
    if (f) {
      fa = a.GetAsDouble(idx[0][i]);
      fb = in[1]->GetAsDouble(idx[1][i]);
    } else {
      ia = a.GetAsInt64(idx[0][i]);
      ib = in[1]->GetAsInt64(idx[1][i]);
    }
    bool u64 = in_dt == DType::kUInt64;
    uint64_t ua = u64 ? GetU64(a, idx[0][i]) : 0, ub = u64 ? GetU64(*in[1], idx[1][i]) : 0;
    int c = 0;  // -1, 0, 1; 2 for unordered (NaN)
    if (f) {
      c = std::isnan(fa) || std::isnan(fb) ? 2 : (fa < fb ? -1 : fa > fb ? 1 : 0);
    } else if (u64) {
      c = ua < ub ? -1 : ua > ub ? 1 : 0;
    } else {
      c = ia < ib ? -1 : ia > ib ? 1 : 0;
    }
    switch (op) {
      case OpKind::kEqual: StoreInt(*out, i, c == 0); break;
      case OpKind::kLess: StoreInt(*out, i, c == -1); break;
      case OpKind::kLessOrEqual: StoreInt(*out, i, c == -1 || c == 0); break;
      case OpKind::kGreater: StoreInt(*out, i, c == 1); break;
      case OpKind::kGreaterOrEqual: StoreInt(*out, i, c == 1 || c == 0); break;
      case OpKind::kAnd: StoreInt(*out, i, (ia != 0) && (ib != 0)); break;
      case OpKind::kOr: StoreInt(*out, i, (ia != 0) || (ib != 0)); break;
      case OpKind::kXor: StoreInt(*out, i, (ia != 0) != (ib != 0)); break;
      case OpKind::kMod:
        if (f) {
          StoreDouble(*out, i, std::fmod(fa, fb));
        } else if (fmod) {
          StoreInt(*out, i, ib == 0 || ib == -1 ? 0 : ia % ib);
        } else if (u64) {
          StoreInt(*out, i, static_cast<int64_t>(ub == 0 ? 0 : ua % ub));
        } else {
          StoreInt(*out, i, PyMod(ia, ib));
        }
        break;
      case OpKind::kBitShift: {
        uint64_t x = GetU64(a, idx[0][i]), s = GetU64(*in[1], idx[1][i]);
        uint64_t r = s >= 64 ? 0 : (shift_left ? x << s : x >> s);
        StoreInt(*out, i, static_cast<int64_t>(r));
        break;
      }
      default:
        return absl::UnimplementedError(NodePrefix(node) + "not a binary op");
    }
  }
  return TensorVec{out};
}

absl::StatusOr<double> UnaryMath(const graph::Node& node, double x) {
  switch (node.op()) {
    case OpKind::kSign: return x > 0 ? 1.0 : x < 0 ? -1.0 : x;
    case OpKind::kFloor: return std::floor(x);
    case OpKind::kCeil: return std::ceil(x);
    case OpKind::kRound: return std::nearbyint(x);  // default rounding: half to even
    case OpKind::kSin: return std::sin(x);
    case OpKind::kCos: return std::cos(x);
    case OpKind::kTan: return std::tan(x);
    case OpKind::kAsin: return std::asin(x);
    case OpKind::kAcos: return std::acos(x);
    case OpKind::kAtan: return std::atan(x);
    case OpKind::kSinh: return std::sinh(x);
    case OpKind::kCosh: return std::cosh(x);
    case OpKind::kAsinh: return std::asinh(x);
    case OpKind::kAcosh: return std::acosh(x);
    case OpKind::kAtanh: return std::atanh(x);
    default: return absl::UnimplementedError(NodePrefix(node) + "not a unary op");
  }
}

absl::StatusOr<TensorVec> EvalUnary(const graph::Node& node, const TensorVec& in) {
  const Tensor& x = *in[0];
  auto out = Tensor::Zeros(node.output(0)->type());
  int64_t n = x.type.NumElements();
  const graph::IsInfAttrs is_inf =
      node.op() == OpKind::kIsInf ? graph::IsInfAttrs::Of(node) : graph::IsInfAttrs{};
  for (int64_t i = 0; i < n; ++i) {
    switch (node.op()) {
      case OpKind::kNot: StoreInt(*out, i, x.GetAsInt64(i) == 0); continue;
      case OpKind::kIsNaN: StoreInt(*out, i, std::isnan(x.GetAsDouble(i))); continue;
      case OpKind::kIsInf: {
        double v = x.GetAsDouble(i);
        bool neg = is_inf.detect_negative;
        bool pos = is_inf.detect_positive;
        StoreInt(*out, i, std::isinf(v) && ((v > 0 && pos) || (v < 0 && neg)));
        continue;
      }
      default: break;
    }
    if (!IsFloat(x.type.dtype)) {
      int64_t v = x.GetAsInt64(i);
      if (node.op() == OpKind::kSign) {
        StoreInt(*out, i, v > 0 ? 1 : v < 0 ? -1 : 0);
      } else if (node.op() == OpKind::kFloor || node.op() == OpKind::kCeil ||
                 node.op() == OpKind::kRound) {
        StoreInt(*out, i, v);
      } else {
        return absl::UnimplementedError(NodePrefix(node) + "integer operands");
      }
      continue;
    }
    auto r = UnaryMath(node, x.GetAsDouble(i));
    if (!r.ok()) return r.status();
    StoreDouble(*out, i, *r);
  }
  return TensorVec{out};
}

absl::StatusOr<TensorVec> EvalReduce(const graph::Node& node, const TensorVec& in) {
  const Tensor& x = *in[0];
  const TensorType& ot = node.output(0)->type();
  auto out = Tensor::Zeros(ot);
  std::vector<int64_t> axes = graph::ReductionAxes(node);
  const Shape& xs = x.type.shape;
  std::vector<bool> reduced(xs.size(), false);
  for (int64_t a : axes) reduced[a] = true;
  // Output flat index of each input element (keepdims or not, the order is the same).
  Shape kept_shape;
  for (size_t d = 0; d < xs.size(); ++d) kept_shape.push_back(reduced[d] ? 1 : xs[d]);
  Shape kstrides = RowMajorStrides(kept_shape);
  OpKind op = node.op();
  int64_t n_out = ot.NumElements();
  int64_t count = 1;
  for (size_t d = 0; d < xs.size(); ++d) {
    if (reduced[d]) count *= xs[d];
  }
  bool f = IsFloat(x.type.dtype);
  std::vector<double> acc(n_out);
  std::vector<int64_t> iacc(n_out);
  double finit = op == OpKind::kReduceProd ? 1 : op == OpKind::kReduceMax ? -INFINITY
                 : op == OpKind::kReduceMin ? INFINITY : 0;
  int64_t iinit = op == OpKind::kReduceProd ? 1
                  : op == OpKind::kReduceMax ? INT64_MIN
                  : op == OpKind::kReduceMin ? INT64_MAX : 0;
  if (!f && (x.type.dtype == DType::kUInt8 || x.type.dtype == DType::kUInt16 ||
             x.type.dtype == DType::kUInt32 || x.type.dtype == DType::kUInt64 ||
             x.type.dtype == DType::kBool) && op == OpKind::kReduceMax) {
    iinit = 0;
  }
  std::fill(acc.begin(), acc.end(), finit);
  std::fill(iacc.begin(), iacc.end(), iinit);
  ForEachIndex(xs, [&](int64_t i, const Shape& pos) {
    int64_t o = 0;
    for (size_t d = 0; d < pos.size(); ++d) {
      if (!reduced[d]) o += pos[d] * kstrides[d];
    }
    if (f) {
      double v = x.GetAsDouble(i);
      double& a = acc[o];
      switch (op) {
        case OpKind::kReduceMax: a = std::isnan(a) || std::isnan(v) ? NAN : std::max(a, v); break;
        case OpKind::kReduceMin: a = std::isnan(a) || std::isnan(v) ? NAN : std::min(a, v); break;
        case OpKind::kReduceProd: a *= v; break;
        case OpKind::kReduceL1: a += std::fabs(v); break;
        case OpKind::kReduceL2: case OpKind::kReduceSumSquare: a += v * v; break;
        case OpKind::kReduceLogSumExp: a += std::exp(v); break;
        default: a += v; break;
      }
    } else {
      int64_t v = x.GetAsInt64(i);
      int64_t& a = iacc[o];
      switch (op) {
        case OpKind::kReduceMax: a = std::max(a, v); break;
        case OpKind::kReduceMin: a = std::min(a, v); break;
        case OpKind::kReduceProd: a *= v; break;
        case OpKind::kReduceL1: a += v < 0 ? -v : v; break;
        case OpKind::kReduceL2: case OpKind::kReduceSumSquare: a += v * v; break;
        default: a += v; break;
      }
    }
  });
  for (int64_t o = 0; o < n_out; ++o) {
    if (f) {
      double a = acc[o];
      switch (op) {
        case OpKind::kReduceMean: a /= static_cast<double>(count); break;
        case OpKind::kReduceL2: a = std::sqrt(a); break;
        case OpKind::kReduceLogSum: case OpKind::kReduceLogSumExp: a = std::log(a); break;
        default: break;
      }
      StoreDouble(*out, o, a);
    } else {
      int64_t a = iacc[o];
      switch (op) {
        case OpKind::kReduceMean: a = count == 0 ? 0 : a / count; break;
        case OpKind::kReduceL2: a = static_cast<int64_t>(std::sqrt(static_cast<double>(a))); break;
        case OpKind::kReduceLogSum: case OpKind::kReduceLogSumExp:
          return absl::UnimplementedError(NodePrefix(node) + "integer operands");
        default: break;
      }
      StoreInt(*out, o, a);
    }
  }
  return TensorVec{out};
}

absl::StatusOr<TensorVec> EvalArg(const graph::Node& node, const TensorVec& in) {
  const Tensor& x = *in[0];
  auto out = Tensor::Zeros(node.output(0)->type());
  const graph::ArgMaxAttrs a = graph::ArgMaxAttrs::Of(node);
  int64_t axis = a.axis;
  bool is_max = node.op() == OpKind::kArgMax;
  bool last = a.select_last_index;
  const Shape& xs = x.type.shape;
  int64_t outer = 1, inner = 1, n = xs[axis];
  for (int64_t d = 0; d < x.type.rank(); ++d) {
    if (d < axis) outer *= xs[d];
    if (d > axis) inner *= xs[d];
  }
  std::vector<double> v = ToDoubles(x);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      int64_t best = 0;
      for (int64_t k = 1; k < n; ++k) {
        double c = v[(o * n + k) * inner + i], b = v[(o * n + best) * inner + i];
        bool better = is_max ? (c > b || (last && c == b)) : (c < b || (last && c == b));
        if (better) best = k;
      }
      out->mutable_data<int64_t>()[o * inner + i] = best;
    }
  }
  return TensorVec{out};
}

// Data movement where each output element copies one input element (or a fill value):
// src(out coords) returns the flat input index, or -1 for `fill`.
template <typename F>
TensorVec Gather(const graph::Node& node, const Tensor& x, F src, const Tensor* fill = nullptr) {
  auto out = Tensor::Zeros(node.output(0)->type());
  ForEachIndex(out->type.shape, [&](int64_t i, const Shape& pos) {
    int64_t s = src(pos);
    if (s >= 0) {
      CopyElem(x, s, *out, i);
    } else if (fill != nullptr) {
      CopyElem(*fill, 0, *out, i);
    }
  });
  return TensorVec{out};
}

int64_t NormIndex(int64_t i, int64_t n) { return i < 0 ? i + n : i; }

// `a` combined with the update `b` under a ScatterElements/ScatterND reduction other than none.
template <typename T>
T ScatterReduce(graph::ScatterReduction red, T a, T b) {
  switch (red) {
    case graph::ScatterReduction::kAdd:
      return a + b;
    case graph::ScatterReduction::kMul:
      return a * b;
    case graph::ScatterReduction::kMax:
      return std::max(a, b);
    default:
      return std::min(a, b);
  }
}

absl::StatusOr<TensorVec> EvalScatterElements(const graph::Node& node, const TensorVec& in) {
  auto out = std::make_shared<Tensor>(*in[0]);
  const Tensor& idx = *in[1];
  const Tensor& upd = *in[2];
  const graph::ScatterElementsAttrs attrs = graph::ScatterElementsAttrs::Of(node);
  int64_t axis = attrs.axis;
  const graph::ScatterReduction red = attrs.reduction;
  Shape strides = RowMajorStrides(out->type.shape);
  bool f = IsFloat(out->type.dtype);
  ForEachIndex(idx.type.shape, [&](int64_t i, const Shape& pos) {
    Shape p = pos;
    p[axis] = NormIndex(idx.GetAsInt64(i), out->type.shape[axis]);
    int64_t dst = Flat(strides, p);
    if (red == graph::ScatterReduction::kNone) {
      CopyElem(upd, i, *out, dst);
    } else if (f) {
      StoreDouble(*out, dst, ScatterReduce(red, out->GetAsDouble(dst), upd.GetAsDouble(i)));
    } else {
      StoreInt(*out, dst, ScatterReduce(red, out->GetAsInt64(dst), upd.GetAsInt64(i)));
    }
  });
  return TensorVec{out};
}

absl::StatusOr<TensorVec> EvalScatterND(const graph::Node& node, const TensorVec& in) {
  auto out = std::make_shared<Tensor>(*in[0]);
  const Tensor& idx = *in[1];
  const Tensor& upd = *in[2];
  const graph::ScatterReduction red = graph::ScatterElementsAttrs::Of(node).reduction;
  const Shape& ds = out->type.shape;
  int64_t k = idx.type.shape.back();
  int64_t n_upd = idx.type.NumElements() / std::max<int64_t>(k, 1);
  int64_t slice = 1;
  for (size_t d = k; d < ds.size(); ++d) slice *= ds[d];
  Shape strides = RowMajorStrides(ds);
  bool f = IsFloat(out->type.dtype);
  for (int64_t u = 0; u < n_upd; ++u) {
    int64_t base = 0;
    for (int64_t j = 0; j < k; ++j) base += NormIndex(idx.GetAsInt64(u * k + j), ds[j]) * strides[j];
    for (int64_t e = 0; e < slice; ++e) {
      int64_t dst = base + e, src = u * slice + e;
      if (red == graph::ScatterReduction::kNone) {
        CopyElem(upd, src, *out, dst);
      } else if (f) {
        StoreDouble(*out, dst, ScatterReduce(red, out->GetAsDouble(dst), upd.GetAsDouble(src)));
      } else {
        StoreInt(*out, dst, ScatterReduce(red, out->GetAsInt64(dst), upd.GetAsInt64(src)));
      }
    }
  }
  return TensorVec{out};
}

absl::StatusOr<TensorVec> EvalCumSum(const graph::Node& node, const TensorVec& in) {
  const Tensor& x = *in[0];
  auto out = Tensor::Zeros(node.output(0)->type());
  int64_t rank = x.type.rank();
  int64_t axis = NormIndex(in[1]->GetAsInt64(0), rank);
  if (axis < 0 || axis >= rank) return absl::InvalidArgumentError(NodePrefix(node) + "bad axis");
  const graph::CumSumAttrs a = graph::CumSumAttrs::Of(node);
  bool excl = a.exclusive;
  bool rev = a.reverse;
  const Shape& xs = x.type.shape;
  int64_t outer = 1, inner = 1, n = xs[axis];
  for (int64_t d = 0; d < rank; ++d) {
    if (d < axis) outer *= xs[d];
    if (d > axis) inner *= xs[d];
  }
  bool f = IsFloat(x.type.dtype);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double fs = 0;
      int64_t is = 0;
      for (int64_t t = 0; t < n; ++t) {
        int64_t k = rev ? n - 1 - t : t;
        int64_t e = (o * n + k) * inner + i;
        if (excl) {
          f ? StoreDouble(*out, e, fs) : StoreInt(*out, e, is);
        }
        if (f) {
          fs += x.GetAsDouble(e);
        } else {
          is += x.GetAsInt64(e);
        }
        if (!excl) {
          f ? StoreDouble(*out, e, fs) : StoreInt(*out, e, is);
        }
      }
    }
  }
  return TensorVec{out};
}

absl::StatusOr<TensorVec> EvalTopK(const graph::Node& node, const TensorVec& in) {
  const Tensor& x = *in[0];
  auto values = Tensor::Zeros(node.output(0)->type());
  auto indices = Tensor::Zeros(TensorType{DType::kInt64, values->type.shape});
  const graph::TopKAttrs attrs = graph::TopKAttrs::Of(node);
  int64_t axis = attrs.axis;
  bool largest = attrs.largest;
  const Shape& xs = x.type.shape;
  int64_t k = values->type.shape[axis];
  int64_t outer = 1, inner = 1, n = xs[axis];
  for (int64_t d = 0; d < x.type.rank(); ++d) {
    if (d < axis) outer *= xs[d];
    if (d > axis) inner *= xs[d];
  }
  std::vector<double> v = ToDoubles(x);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      std::vector<int64_t> order(n);
      std::iota(order.begin(), order.end(), 0);
      auto at = [&](int64_t j) { return v[(o * n + j) * inner + i]; };
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return largest ? at(a) > at(b) : at(a) < at(b);
      });
      for (int64_t j = 0; j < k; ++j) {
        int64_t dst = (o * k + j) * inner + i;
        CopyElem(x, (o * n + order[j]) * inner + i, *values, dst);
        indices->mutable_data<int64_t>()[dst] = order[j];
      }
    }
  }
  TensorVec out{values};
  if (node.outputs().size() > 1) out.push_back(indices);
  return out;
}

absl::StatusOr<TensorVec> EvalEinsum(const graph::Node& node, const TensorVec& in) {
  std::vector<Shape> shapes;
  for (const TensorPtr& t : in) shapes.push_back(t->type.shape);
  auto spec = graph::ParseEinsum(graph::EinsumAttrs::Of(node).equation, shapes);
  if (!spec.ok()) return absl::InvalidArgumentError(NodePrefix(node) + std::string(spec.status().message()));
  std::string all = spec->output + spec->reduced;
  Shape extents;
  for (char c : all) extents.push_back(spec->size[static_cast<int>(c)]);
  auto out = Tensor::Zeros(node.output(0)->type());
  int64_t n_out = out->type.NumElements();
  std::vector<double> acc(n_out, 0.0);
  std::vector<std::vector<double>> vals;
  std::vector<Shape> strides;
  for (const TensorPtr& t : in) {
    vals.push_back(ToDoubles(*t));
    strides.push_back(RowMajorStrides(t->type.shape));
  }
  int64_t no = static_cast<int64_t>(spec->output.size());
  Shape ostrides = RowMajorStrides(out->type.shape);
  ForEachIndex(extents, [&](int64_t, const Shape& pos) {
    int64_t label_pos[128] = {};
    for (size_t j = 0; j < all.size(); ++j) label_pos[static_cast<int>(all[j])] = pos[j];
    double prod = 1;
    for (size_t t = 0; t < in.size(); ++t) {
      int64_t flat = 0;
      const std::string& l = spec->inputs[t];
      for (size_t d = 0; d < l.size(); ++d) {
        int64_t p = shapes[t][d] == 1 ? 0 : label_pos[static_cast<int>(l[d])];
        flat += p * strides[t][d];
      }
      prod *= vals[t][flat];
    }
    int64_t o = 0;
    for (int64_t j = 0; j < no; ++j) o += pos[j] * ostrides[j];
    acc[o] += prod;
  });
  for (int64_t o = 0; o < n_out; ++o) StoreDouble(*out, o, acc[o]);
  return TensorVec{out};
}

}  // namespace

absl::StatusOr<TensorVec> EvalTensorOp(const graph::Node& node, const TensorVec& in) {
  const TensorType& ot = node.output(0)->type();
  switch (node.op()) {
    case OpKind::kEqual: case OpKind::kLess: case OpKind::kLessOrEqual: case OpKind::kGreater:
    case OpKind::kGreaterOrEqual: case OpKind::kAnd: case OpKind::kOr: case OpKind::kXor:
    case OpKind::kWhere: case OpKind::kMod: case OpKind::kBitShift: case OpKind::kMean:
      return EvalBinaryLike(node, in);
    case OpKind::kNot: case OpKind::kIsNaN: case OpKind::kIsInf: case OpKind::kSign:
    case OpKind::kFloor: case OpKind::kCeil: case OpKind::kRound: case OpKind::kSin:
    case OpKind::kCos: case OpKind::kTan: case OpKind::kAsin: case OpKind::kAcos:
    case OpKind::kAtan: case OpKind::kSinh: case OpKind::kCosh: case OpKind::kAsinh:
    case OpKind::kAcosh: case OpKind::kAtanh:
      return EvalUnary(node, in);
    case OpKind::kReduceSum: case OpKind::kReduceMean: case OpKind::kReduceMax:
    case OpKind::kReduceMin: case OpKind::kReduceProd: case OpKind::kReduceL1:
    case OpKind::kReduceL2: case OpKind::kReduceLogSum: case OpKind::kReduceLogSumExp:
    case OpKind::kReduceSumSquare:
      return EvalReduce(node, in);
    case OpKind::kArgMax: case OpKind::kArgMin:
      return EvalArg(node, in);
    case OpKind::kSize: {
      auto out = Tensor::Zeros(ot);
      *out->mutable_data<int64_t>() = in[0]->type.NumElements();
      return TensorVec{out};
    }
    case OpKind::kRange: {
      auto out = Tensor::Zeros(ot);
      for (int64_t i = 0; i < ot.NumElements(); ++i) {
        if (IsFloat(ot.dtype)) {
          StoreDouble(*out, i, in[0]->GetAsDouble(0) + i * in[2]->GetAsDouble(0));
        } else {
          StoreInt(*out, i, in[0]->GetAsInt64(0) + i * in[2]->GetAsInt64(0));
        }
      }
      return TensorVec{out};
    }
    case OpKind::kEyeLike: {
      auto out = Tensor::Zeros(ot);
      int64_t k = graph::EyeLikeAttrs::Of(node).k;
      ForEachIndex(ot.shape, [&](int64_t i, const Shape& p) { StoreInt(*out, i, p[1] - p[0] == k); });
      return TensorVec{out};
    }
    case OpKind::kExpand: case OpKind::kTile: {
      const Tensor& x = *in[0];
      const Shape& xs = x.type.shape;
      Shape strides = RowMajorStrides(xs);
      size_t off = ot.shape.size() - xs.size();
      bool tile = node.op() == OpKind::kTile;
      return Gather(node, x, [&](const Shape& pos) {
        int64_t s = 0;
        for (size_t d = 0; d < xs.size(); ++d) {
          int64_t p = pos[d + off];
          s += (tile ? p % xs[d] : (xs[d] == 1 ? 0 : p)) * strides[d];
        }
        return s;
      });
    }
    case OpKind::kTrilu: {
      const Tensor& x = *in[0];
      int64_t k = in.size() > 1 && in[1] ? in[1]->GetAsInt64(0) : 0;
      bool upper = graph::TriluAttrs::Of(node).upper;
      size_t r = ot.shape.size();
      return Gather(node, x, [&](const Shape& pos) -> int64_t {
        int64_t diff = pos[r - 1] - pos[r - 2];
        bool keep = upper ? diff >= k : diff <= k;
        return keep ? Flat(RowMajorStrides(ot.shape), pos) : -1;
      });
    }
    case OpKind::kGatherElements: {
      const Tensor& x = *in[0];
      const Tensor& idx = *in[1];
      int64_t axis = graph::Axis0Attrs::Of(node).axis;
      Shape xstr = RowMajorStrides(x.type.shape), istr = RowMajorStrides(idx.type.shape);
      return Gather(node, x, [&](const Shape& pos) {
        Shape p = pos;
        p[axis] = NormIndex(idx.GetAsInt64(Flat(istr, pos)), x.type.shape[axis]);
        return Flat(xstr, p);
      });
    }
    case OpKind::kGatherND: {
      const Tensor& x = *in[0];
      const Tensor& idx = *in[1];
      int64_t b = graph::GatherNDAttrs::Of(node).batch_dims;
      const Shape& is = idx.type.shape;
      int64_t k = is.back();
      Shape xstr = RowMajorStrides(x.type.shape), istr = RowMajorStrides(is);
      int64_t ir = static_cast<int64_t>(is.size());
      return Gather(node, x, [&](const Shape& pos) {
        // pos = indices dims [0, ir-1) then data dims [b+k, rank).
        Shape p(x.type.shape.size(), 0);
        for (int64_t d = 0; d < b; ++d) p[d] = pos[d];
        Shape ipos(pos.begin(), pos.begin() + (ir - 1));
        ipos.push_back(0);
        for (int64_t j = 0; j < k; ++j) {
          ipos[ir - 1] = j;
          p[b + j] = NormIndex(idx.GetAsInt64(Flat(istr, ipos)), x.type.shape[b + j]);
        }
        for (size_t d = b + k; d < p.size(); ++d) p[d] = pos[ir - 1 + d - b - k];
        return Flat(xstr, p);
      });
    }
    case OpKind::kDepthToSpace: case OpKind::kSpaceToDepth: {
      const Tensor& x = *in[0];
      const graph::DepthToSpaceAttrs a = graph::DepthToSpaceAttrs::Of(node);
      int64_t bs = a.blocksize;  // > 0: the shape rule rejects others
      bool crd = a.mode == graph::DepthToSpaceMode::kCRD;
      Shape xstr = RowMajorStrides(x.type.shape);
      int64_t oc = ot.shape[1];
      int64_t ic = x.type.shape[1];
      bool d2s = node.op() == OpKind::kDepthToSpace;
      return Gather(node, x, [&](const Shape& p) {
        if (d2s) {
          int64_t bh = p[2] % bs, bw = p[3] % bs;
          int64_t c = crd ? p[1] * bs * bs + bh * bs + bw : (bh * bs + bw) * oc + p[1];
          return Flat(xstr, {p[0], c, p[2] / bs, p[3] / bs});
        }
        int64_t blk = p[1] / ic, c = p[1] % ic;
        return Flat(xstr, {p[0], c, p[2] * bs + blk / bs, p[3] * bs + blk % bs});
      });
    }
    case OpKind::kOneHot: {
      const Tensor& idx = *in[0];
      const Tensor& values = *in[2];
      int64_t axis = graph::AxisAttrs::Of(node).axis;
      int64_t depth = ot.shape[axis];
      Shape istr = RowMajorStrides(idx.type.shape);
      auto out = Tensor::Zeros(ot);
      ForEachIndex(ot.shape, [&](int64_t i, const Shape& p) {
        Shape ip = p;
        ip.erase(ip.begin() + axis);
        int64_t v = static_cast<int64_t>(idx.GetAsDouble(Flat(istr, ip)));
        if (v < 0) v += depth;
        CopyElem(values, v == p[axis] ? 1 : 0, *out, i);
      });
      return TensorVec{out};
    }
    case OpKind::kScatterElements:
      return EvalScatterElements(node, in);
    case OpKind::kScatterND:
      return EvalScatterND(node, in);
    case OpKind::kCumSum:
      return EvalCumSum(node, in);
    case OpKind::kTopK:
      return EvalTopK(node, in);
    case OpKind::kEinsum:
      return EvalEinsum(node, in);
    case OpKind::kDet:
      return EvalDet(node, in);
    case OpKind::kTfIdfVectorizer:
      return EvalTfIdfVectorizer(node, in);
    case OpKind::kNonZero: case OpKind::kCompress: case OpKind::kUnique:
    case OpKind::kNonMaxSuppression:
    case OpKind::kRuntimeCheck:
    case OpKind::kBoundMask:
      return EvalDataDependent(node, in);
    default:
      return absl::UnimplementedError(NodePrefix(node) +
                                      "must be canonicalized by the importer before evaluation");
  }
}

}  // namespace kiln::reference
