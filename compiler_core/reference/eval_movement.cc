// Reference kernels of data-movement ops. They copy elements as raw bytes, so every dtype is
// exact: reshapes, Transpose, Concat, Pad, Gather, Slice, Shape and Constant.
#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/reference/eval_internal.h"

namespace kiln::reference {
namespace {

using graph::OpKind;

std::vector<int64_t> ConstInts(const TensorPtr& t) {
  std::vector<int64_t> v;
  if (t == nullptr) return v;
  for (int64_t i = 0; i < t->type.NumElements(); ++i) v.push_back(t->GetAsInt64(i));
  return v;
}

// Copies the element at flat `src` of `from` to flat `dst` of `to` (same dtype).
inline void CopyElem(const Tensor& from, int64_t src, Tensor& to, int64_t dst, size_t size) {
  std::memcpy(to.bytes.data() + dst * size, from.bytes.data() + src * size, size);
}

// Calls f(out_flat, coords) for every element of `shape` in row-major order.
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

TensorVec Relabel(const graph::Node& node, const TensorVec& in) {
  auto out = std::make_shared<Tensor>();
  out->type = node.output(0)->type();
  out->bytes = in[0]->bytes;
  return TensorVec{out};
}

TensorVec EvalTranspose(const graph::Node& node, const TensorVec& in) {
  const Tensor& x = *in[0];
  auto out = Tensor::Zeros(node.output(0)->type());
  Shape perm = graph::TransposePermutation(node);
  Shape strides = RowMajorStrides(x.type.shape);
  size_t size = DTypeSize(x.type.dtype);
  ForEachIndex(out->type.shape, [&](int64_t i, const Shape& pos) {
    int64_t src = 0;
    for (size_t d = 0; d < pos.size(); ++d) src += pos[d] * strides[perm[d]];
    CopyElem(x, src, *out, i, size);
  });
  return TensorVec{out};
}

TensorVec EvalConcat(const graph::Node& node, const TensorVec& in) {
  auto out = Tensor::Zeros(node.output(0)->type());
  int64_t axis = graph::ConcatAttrs::Of(node).axis;
  const Shape& os = out->type.shape;
  if (axis < 0) axis += static_cast<int64_t>(os.size());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(os.size()); ++d) {
    if (d < axis) outer *= os[d];
    if (d > axis) inner *= os[d];
  }
  size_t size = DTypeSize(out->type.dtype);
  int64_t offset = 0;
  for (const TensorPtr& t : in) {
    int64_t chunk = t->type.shape[axis] * inner;
    if (chunk == 0) continue;  // an empty input (its data pointer may be null)
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(out->bytes.data() + (o * os[axis] * inner + offset) * size,
                  t->bytes.data() + o * chunk * size, chunk * size);
    }
    offset += chunk;
  }
  return TensorVec{out};
}

TensorVec EvalPad(const graph::Node& node, const TensorVec& in) {
  const Tensor& x = *in[0];
  auto out = Tensor::Zeros(node.output(0)->type());
  const graph::PadAttrs a = graph::PadAttrs::Of(node);
  Shape pads = in.size() > 1 && in[1] ? ConstInts(in[1]) : a.pads;
  const graph::PadMode mode = a.mode;
  int64_t rank = x.type.rank();
  size_t size = DTypeSize(x.type.dtype);
  Shape strides = RowMajorStrides(x.type.shape);
  ForEachIndex(out->type.shape, [&](int64_t i, const Shape& pos) {
    int64_t src = 0;
    bool inside = true;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t p = pos[d] - pads[d], n = x.type.shape[d];
      if (p < 0 || p >= n) {
        if (mode == graph::PadMode::kEdge) {
          p = p < 0 ? 0 : n - 1;
        } else if (mode == graph::PadMode::kReflect && n > 1) {
          int64_t period = 2 * (n - 1);
          p = ((p % period) + period) % period;
          if (p >= n) p = period - p;
        } else if (mode == graph::PadMode::kReflect) {
          p = 0;
        } else {
          inside = false;
        }
      }
      src += p * strides[d];
    }
    if (inside) {
      CopyElem(x, src, *out, i, size);
    } else if (in.size() > 2 && in[2]) {
      CopyElem(*in[2], 0, *out, i, size);
    }
  });
  return TensorVec{out};
}

absl::StatusOr<TensorVec> EvalGather(const graph::Node& node, const TensorVec& in) {
  const Tensor& x = *in[0];
  const Tensor& idx = *in[1];
  auto out = Tensor::Zeros(node.output(0)->type());
  int64_t axis = graph::Axis0Attrs::Of(node).axis;
  if (axis < 0) axis += x.type.rank();
  int64_t outer = 1, inner = 1, dim = x.type.shape[axis];
  for (int64_t d = 0; d < x.type.rank(); ++d) {
    if (d < axis) outer *= x.type.shape[d];
    if (d > axis) inner *= x.type.shape[d];
  }
  int64_t nidx = idx.type.NumElements();
  size_t size = DTypeSize(x.type.dtype);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < nidx; ++j) {
      int64_t k = idx.GetAsInt64(j);
      if (k < 0) k += dim;
      if (k < 0 || k >= dim) {
        return absl::InvalidArgumentError(NodePrefix(node) +
                                          absl::StrCat("index ", idx.GetAsInt64(j),
                                                       " is out of range for dim ", dim));
      }
      std::memcpy(out->bytes.data() + ((o * nidx + j) * inner) * size,
                  x.bytes.data() + ((o * dim + k) * inner) * size, inner * size);
    }
  }
  return TensorVec{out};
}

TensorVec EvalSlice(const graph::Node& node, const TensorVec& in) {
  const Tensor& x = *in[0];
  auto out = Tensor::Zeros(node.output(0)->type());
  int64_t rank = x.type.rank();
  Shape starts = ConstInts(in[1]), axes = ConstInts(in.size() > 3 ? in[3] : nullptr);
  Shape steps = ConstInts(in.size() > 4 ? in[4] : nullptr);
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  Shape first(rank, 0), step(rank, 1);
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
    int64_t dim = x.type.shape[a], s = starts[i];
    if (s < 0) s += dim;
    s = steps[i] > 0 ? std::clamp<int64_t>(s, 0, dim) : std::clamp<int64_t>(s, 0, dim - 1);
    first[a] = s;
    step[a] = steps[i];
  }
  Shape strides = RowMajorStrides(x.type.shape);
  size_t size = DTypeSize(x.type.dtype);
  ForEachIndex(out->type.shape, [&](int64_t i, const Shape& pos) {
    int64_t src = 0;
    for (int64_t d = 0; d < rank; ++d) src += (first[d] + pos[d] * step[d]) * strides[d];
    CopyElem(x, src, *out, i, size);
  });
  return TensorVec{out};
}

}  // namespace

absl::StatusOr<TensorVec> EvalMovement(const graph::Node& node, const TensorVec& in) {
  switch (node.op()) {
    case OpKind::kFlatten:
    case OpKind::kReshape:
    case OpKind::kSqueeze:
    case OpKind::kUnsqueeze:
      return Relabel(node, in);
    case OpKind::kTranspose: return EvalTranspose(node, in);
    case OpKind::kConcat: return EvalConcat(node, in);
    case OpKind::kPad: return EvalPad(node, in);
    case OpKind::kGather: return EvalGather(node, in);
    case OpKind::kSlice: return EvalSlice(node, in);
    case OpKind::kShape: {
      auto out = Tensor::Zeros(node.output(0)->type());
      const Shape& s = in[0]->type.shape;
      int64_t r = static_cast<int64_t>(s.size());
      int64_t start = graph::ShapeAttrs::Of(node).start;
      if (start < 0) start += r;
      start = std::clamp<int64_t>(start, 0, r);
      for (int64_t i = 0; i < out->type.NumElements(); ++i) {
        out->mutable_data<int64_t>()[i] = s[start + i];
      }
      return TensorVec{out};
    }
    case OpKind::kConstant: {
      TensorPtr value = graph::ConstantAttrs::Of(node).value;
      if (value == nullptr) return absl::InvalidArgumentError(NodePrefix(node) + "no value");
      return TensorVec{value};
    }
    default:
      return absl::UnimplementedError(NodePrefix(node) + "not a data-movement op");
  }
}

}  // namespace kiln::reference
