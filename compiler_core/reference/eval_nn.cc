// Reference kernels of the neural-network ops: Conv, Gemm, MatMul, pooling (Max/Average/Lp),
// global pooling, BatchNormalization (inference) and Softmax/LogSoftmax. Everything computes
// in double.
#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/matmul_packing.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/reference/eval_internal.h"

namespace kiln::reference {
namespace {

using graph::OpKind;

constexpr int64_t kPadding = -1;  // window position in the padding
constexpr int64_t kOutside = -2;  // window position beyond the padded input (ceil_mode)

// For every (output position, kernel position) pair of a windowed op over the spatial dims,
// the flat spatial input index, or kPadding / kOutside.
struct WindowTable {
  int64_t num_out = 1, num_kernel = 1, num_in = 1;
  std::vector<int64_t> index;  // num_out * num_kernel
};

WindowTable BuildWindow(const graph::SlidingWindowAttrs& a, const Shape& in, const Shape& out,
                        const Shape& kernel) {
  size_t n = in.size();
  Shape strides = graph::OrFill(a.strides, n, 1);
  Shape dil = graph::OrFill(a.dilations, n, 1);
  Shape pads = graph::OrFill(a.pads, 2 * n, 0);
  WindowTable t;
  for (size_t d = 0; d < n; ++d) {
    t.num_out *= out[d];
    t.num_kernel *= kernel[d];
    t.num_in *= in[d];
  }
  t.index.resize(t.num_out * t.num_kernel);
  Shape in_strides = RowMajorStrides(in);
  Shape o(n, 0);
  for (int64_t oi = 0; oi < t.num_out; ++oi) {
    Shape k(n, 0);
    for (int64_t ki = 0; ki < t.num_kernel; ++ki) {
      int64_t flat = 0;
      int64_t state = 0;
      for (size_t d = 0; d < n; ++d) {
        int64_t p = o[d] * strides[d] - pads[d] + k[d] * dil[d];
        if (p < -pads[d] || p >= in[d] + pads[d + n]) {
          state = kOutside;
        } else if ((p < 0 || p >= in[d]) && state == 0) {
          state = kPadding;
        }
        flat += p * in_strides[d];
      }
      t.index[oi * t.num_kernel + ki] = state != 0 ? state : flat;
      for (int64_t d = static_cast<int64_t>(n) - 1; d >= 0; --d) {
        if (++k[d] < kernel[d]) break;
        k[d] = 0;
      }
    }
    for (int64_t d = static_cast<int64_t>(n) - 1; d >= 0; --d) {
      if (++o[d] < out[d]) break;
      o[d] = 0;
    }
  }
  return t;
}

Shape Spatial(const Shape& s) { return Shape(s.begin() + 2, s.end()); }

TensorVec EvalConv(const graph::Node& node, const TensorVec& in) {
  const TensorType& ot = node.output(0)->type();
  const Shape& xs = in[0]->type.shape;
  const Shape& ws = in[1]->type.shape;
  const graph::ConvAttrs a = graph::ConvAttrs::Of(node);
  WindowTable win =
      BuildWindow(graph::SlidingWindowAttrs::From(a), Spatial(xs), Spatial(ot.shape), Spatial(ws));
  std::vector<double> x = ToDoubles(*in[0]), w = ToDoubles(*in[1]);
  std::vector<double> bias = in.size() > 2 && in[2] ? ToDoubles(*in[2]) : std::vector<double>();
  int64_t batch = xs[0], cin = xs[1], cout = ws[0];
  int64_t group = a.group;
  int64_t cin_g = cin / group, cout_g = cout / group;
  int64_t K = win.num_kernel, O = win.num_out, I = win.num_in;
  std::vector<double> out(batch * cout * O, 0.0);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t m = 0; m < cout; ++m) {
      double* acc = &out[(b * cout + m) * O];
      if (!bias.empty()) std::fill(acc, acc + O, bias[m]);
      int64_t g = m / cout_g;
      for (int64_t c = 0; c < cin_g; ++c) {
        const double* xp = &x[(b * cin + g * cin_g + c) * I];
        const double* wp = &w[(m * cin_g + c) * K];
        for (int64_t k = 0; k < K; ++k) {
          double wv = wp[k];
          for (int64_t o = 0; o < O; ++o) {
            int64_t idx = win.index[o * K + k];
            if (idx >= 0) acc[o] += wv * xp[idx];
          }
        }
      }
    }
  }
  return TensorVec{FromDoubles(ot, out)};
}

TensorVec EvalPool(const graph::Node& node, const TensorVec& in) {
  const TensorType& ot = node.output(0)->type();
  const Shape& xs = in[0]->type.shape;
  const graph::PoolAttrs a = graph::PoolAttrs::Of(node);
  const Shape& kernel = a.kernel_shape;
  WindowTable win =
      BuildWindow(graph::SlidingWindowAttrs::From(a), Spatial(xs), Spatial(ot.shape), kernel);
  std::vector<double> x = ToDoubles(*in[0]);
  bool is_max = node.op() == OpKind::kMaxPool;
  bool include_pad = a.count_include_pad;
  // LpPool: sum |x|^p over the window (padding adds 0), then the 1/p-th power.
  const bool is_lp = node.op() == OpKind::kLpPool;
  const double lp = static_cast<double>(a.p);
  int64_t planes = xs[0] * xs[1], K = win.num_kernel, O = win.num_out, I = win.num_in;
  std::vector<double> out(planes * O);
  std::vector<int64_t> argmax(is_max ? planes * O : 0);
  for (int64_t p = 0; p < planes; ++p) {
    const double* xp = &x[p * I];
    for (int64_t o = 0; o < O; ++o) {
      double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
      int64_t count = 0, best = 0;
      for (int64_t k = 0; k < K; ++k) {
        int64_t idx = win.index[o * K + k];
        if (idx == kOutside) continue;
        if (idx == kPadding) {
          if (include_pad) ++count;
          continue;
        }
        ++count;
        if (is_max) {
          if (xp[idx] > acc) {
            acc = xp[idx];
            best = p * I + idx;
          }
        } else {
          acc += is_lp ? std::pow(std::abs(xp[idx]), lp) : xp[idx];
        }
      }
      out[p * O + o] = is_max  ? acc
                       : is_lp ? std::pow(acc, 1.0 / lp)
                               : (count > 0 ? acc / count : 0.0);
      if (is_max) argmax[p * O + o] = best;
    }
  }
  TensorVec result{FromDoubles(ot, out)};
  if (is_max && node.outputs().size() > 1) {
    auto idx = Tensor::Zeros(node.output(1)->type());
    // storage_order 1: the spatial part of each index is column-major.
    const bool column_major = a.storage_order != 0;
    for (size_t i = 0; i < argmax.size(); ++i) {
      int64_t flat = argmax[i];
      if (column_major) {
        int64_t plane = flat / I, rest = flat % I, col = 0, stride = 1;
        std::vector<int64_t> pos(xs.size() - 2);
        for (size_t d = xs.size() - 1; d >= 2; --d) {
          pos[d - 2] = rest % xs[d];
          rest /= xs[d];
        }
        for (size_t d = 2; d < xs.size(); ++d) {
          col += pos[d - 2] * stride;
          stride *= xs[d];
        }
        flat = plane * I + col;
      }
      idx->mutable_data<int64_t>()[i] = flat;
    }
    result.push_back(idx);
  }
  return result;
}

TensorVec EvalGlobalPool(const graph::Node& node, const TensorVec& in) {
  const Shape& xs = in[0]->type.shape;
  int64_t planes = xs[0] * xs[1];
  int64_t size = in[0]->type.NumElements() / std::max<int64_t>(planes, 1);
  std::vector<double> x = ToDoubles(*in[0]), out(planes);
  bool is_max = node.op() == OpKind::kGlobalMaxPool;
  // GlobalLpPool: (sum of |x|^p)^(1/p) over the plane.
  const bool is_lp = node.op() == OpKind::kGlobalLpPool;
  const double lp = is_lp ? static_cast<double>(graph::GlobalLpPoolAttrs::Of(node).p) : 2.0;
  for (int64_t p = 0; p < planes; ++p) {
    double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
    for (int64_t i = 0; i < size; ++i) {
      double v = x[p * size + i];
      acc = is_max ? std::max(acc, v) : acc + (is_lp ? std::pow(std::abs(v), lp) : v);
    }
    out[p] = is_max ? acc : is_lp ? std::pow(acc, 1.0 / lp) : acc / static_cast<double>(size);
  }
  return TensorVec{FromDoubles(node.output(0)->type(), out)};
}

/// `in` with a packed B (b_layout="packed<nr>", matmul_packing.h) unpacked to [K, N], so the
/// kernels below keep the one definition of Gemm and MatMul.
TensorVec UnpackedB(const graph::Node& node, const TensorVec& in) {
  if (graph::PackedBPanelWidth(node) <= 0 || in.size() < 2 || !in[1]) return in;
  TensorVec out = in;
  out[1] = graph::UnpackMatMulB(*in[1], graph::PackedBCols(node));
  return out;
}

/// Words of four bytes ([.., m] i32) as their bytes ([.., 4m] i32): zero-extended (uint8) or
/// sign-extended (int8); along dim `axis` (the last or, for B, the second last) when
/// `rows` (B [m, N] → [4m, N]).
TensorPtr WordBytes(const Tensor& words, bool is_signed, bool rows) {
  Shape s = words.type.shape;
  const size_t axis = rows ? s.size() - 2 : s.size() - 1;
  int64_t inner = 1;
  for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  const int64_t m = s[axis], outer = words.type.NumElements() / (m * inner);
  s[axis] *= 4;
  auto out = Tensor::Zeros(TensorType{DType::kInt32, s});
  const uint32_t* src = words.data<uint32_t>();
  int32_t* dst = out->mutable_data<int32_t>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < m; ++j) {
      for (int64_t i = 0; i < inner; ++i) {
        const uint32_t w = src[(o * m + j) * inner + i];
        for (int64_t b = 0; b < 4; ++b) {
          const auto byte = static_cast<uint8_t>(w >> (8 * b));
          dst[(o * 4 * m + 4 * j + b) * inner + i] =
              is_signed ? static_cast<int8_t>(byte) : static_cast<int32_t>(byte);
        }
      }
    }
  }
  return out;
}

/// A "quant"="u8s8" MatMul's operands (A words of uint8, B words of int8 along K) as the int32
/// values they hold, for the plain MatMul kernel.
TensorVec U8S8Operands(const graph::Node& node, TensorVec in) {
  if (graph::MatMulAttrs::Of(node).quant != graph::Quant::kU8S8) return in;
  in[0] = WordBytes(*in[0], /*is_signed=*/false, /*rows=*/false);
  in[1] = WordBytes(*in[1], /*is_signed=*/true, /*rows=*/true);
  return in;
}

TensorVec EvalGemm(const graph::Node& node, const TensorVec& in) {
  const TensorType& ot = node.output(0)->type();
  const graph::GemmAttrs attrs = graph::GemmAttrs::Of(node);
  bool ta = attrs.transA, tb = attrs.transB;
  double alpha = attrs.alpha, beta = attrs.beta;
  int64_t M = ot.shape[0], N = ot.shape[1];
  int64_t K = ta ? in[0]->type.shape[0] : in[0]->type.shape[1];
  std::vector<double> a = ToDoubles(*in[0]), b = ToDoubles(*in[1]);
  std::vector<double> out(M * N, 0.0);
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t k = 0; k < K; ++k) {
      double av = ta ? a[k * M + m] : a[m * K + k];
      for (int64_t n = 0; n < N; ++n) out[m * N + n] += av * (tb ? b[n * K + k] : b[k * N + n]);
    }
  }
  for (double& v : out) v *= alpha;
  if (in.size() > 2 && in[2]) {
    std::vector<double> c = ToDoubles(*in[2]);
    std::vector<int64_t> idx = BroadcastIndex(in[2]->type.shape, ot.shape);
    for (int64_t i = 0; i < M * N; ++i) out[i] += beta * c[idx[i]];
  }
  return TensorVec{FromDoubles(ot, out)};
}

TensorVec EvalMatMul(const graph::Node& node, const TensorVec& in) {
  Shape sa = in[0]->type.shape, sb = in[1]->type.shape;
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  int64_t M = sa[sa.size() - 2], K = sa.back(), N = sb.back();
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  size_t rank = std::max(ba.size(), bb.size());
  Shape batch(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - ba.size() ? 1 : ba[i - (rank - ba.size())];
    int64_t db = i < rank - bb.size() ? 1 : bb[i - (rank - bb.size())];
    batch[i] = da == 1 ? db : da;
  }
  std::vector<int64_t> ia = BroadcastIndex(ba, batch), ib = BroadcastIndex(bb, batch);
  std::vector<double> a = ToDoubles(*in[0]), b = ToDoubles(*in[1]);
  std::vector<double> out(ia.size() * M * N, 0.0);
  for (size_t t = 0; t < ia.size(); ++t) {
    const double* ap = &a[ia[t] * M * K];
    const double* bp = &b[ib[t] * K * N];
    double* op = &out[t * M * N];
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t k = 0; k < K; ++k) {
        double av = ap[m * K + k];
        for (int64_t n = 0; n < N; ++n) op[m * N + n] += av * bp[k * N + n];
      }
    }
  }
  return TensorVec{FromDoubles(node.output(0)->type(), out)};
}

TensorVec EvalBatchNorm(const graph::Node& node, const TensorVec& in) {
  const Shape& xs = in[0]->type.shape;
  double eps = graph::BatchNormalizationAttrs::Of(node).epsilon;
  std::vector<double> x = ToDoubles(*in[0]);
  std::vector<double> scale = ToDoubles(*in[1]), bias = ToDoubles(*in[2]);
  std::vector<double> mean = ToDoubles(*in[3]), var = ToDoubles(*in[4]);
  int64_t C = xs[1], inner = 1;
  for (size_t d = 2; d < xs.size(); ++d) inner *= xs[d];
  for (size_t i = 0; i < x.size(); ++i) {
    int64_t c = (static_cast<int64_t>(i) / inner) % C;
    x[i] = scale[c] * (x[i] - mean[c]) / std::sqrt(var[c] + eps) + bias[c];
  }
  TensorVec out{FromDoubles(node.output(0)->type(), x)};
  for (size_t i = 1; i < node.outputs().size(); ++i) {
    out.push_back(FromDoubles(node.output(static_cast<int>(i))->type(), i == 1 ? mean : var));
  }
  return out;
}

TensorVec EvalSoftmax(const graph::Node& node, const TensorVec& in) {
  const Shape& xs = in[0]->type.shape;
  int64_t rank = static_cast<int64_t>(xs.size());
  int64_t axis = graph::AxisAttrs::Of(node).axis;
  if (axis < 0) axis += rank;
  int64_t outer = 1, dim = rank == 0 ? 1 : xs[axis], inner = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (d < axis) outer *= xs[d];
    if (d > axis) inner *= xs[d];
  }
  std::vector<double> x = ToDoubles(*in[0]);
  bool log = node.op() == OpKind::kLogSoftmax;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double* base = &x[o * dim * inner + i];
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < dim; ++k) mx = std::max(mx, base[k * inner]);
      double sum = 0;
      for (int64_t k = 0; k < dim; ++k) sum += std::exp(base[k * inner] - mx);
      for (int64_t k = 0; k < dim; ++k) {
        double v = base[k * inner] - mx;
        base[k * inner] = log ? v - std::log(sum) : std::exp(v) / sum;
      }
    }
  }
  return TensorVec{FromDoubles(node.output(0)->type(), x)};
}

}  // namespace

absl::StatusOr<TensorVec> EvalNn(const graph::Node& node, const TensorVec& in) {
  switch (node.op()) {
    case OpKind::kConv: return EvalConv(node, in);
    case OpKind::kMaxPool:
    case OpKind::kAveragePool:
    case OpKind::kLpPool: return EvalPool(node, in);
    case OpKind::kGlobalAveragePool:
    case OpKind::kGlobalMaxPool:
    case OpKind::kGlobalLpPool: return EvalGlobalPool(node, in);
    case OpKind::kGemm: return EvalGemm(node, UnpackedB(node, in));
    case OpKind::kMatMul:
      return EvalMatMul(node, U8S8Operands(node, UnpackedB(node, in)));
    case OpKind::kBatchNormalization: return EvalBatchNorm(node, in);
    case OpKind::kSoftmax:
    case OpKind::kLogSoftmax: return EvalSoftmax(node, in);
    default:
      return absl::UnimplementedError(NodePrefix(node) + "not an nn op");
  }
}

}  // namespace kiln::reference
