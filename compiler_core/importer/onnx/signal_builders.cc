// Signal-processing ops of opset 17 imported as constants and compositions of other ops
// (onnx.ai/onnx/operators, onnx/reference/ops/op_dft.py, op_stft.py):
// - HannWindow / HammingWindow / BlackmanWindow: a constant of the window's values,
//   w[n] = a0 - a1 cos(2 pi n / N') + a2 cos(4 pi n / N') with N' = size (periodic) or size - 1.
// - DFT: the transformed axis moved last, interleaved with the complex dim, then one MatMul
//   with a constant [N * C, K * 2] DFT matrix (C = 1 real or 2 complex components; K output
//   bins); zero padding / truncation to dft_length and the 1/L of the inverse are in the matrix.
// - STFT: the frames gathered with a constant index table, multiplied by the window, then the
//   same DFT matrix.
// - MelWeightMatrix: elementwise ops over its (possibly runtime) scalar inputs; the output
//   shape must be statically known.
// Size operands (the window size, dft_length, frame_step, frame_length) may arrive at run time
// when the statically known output type determines them uniquely.
#include <cmath>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compiler_core/importer/onnx/import_context.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/ir/graph/tensor_size.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::importer {

using graph::AttrMap;
using graph::OpKind;
using graph::Value;

namespace {

using Ints = std::vector<int64_t>;

constexpr double kPi = 3.14159265358979323846;

// The scalar integer input `i` if constant, nullopt if it arrives at run time or is absent.
absl::StatusOr<std::optional<int64_t>> ConstScalarInput(const ImportContext& ctx,
                                                        const OnnxNode& node, int i) {
  const Value* v = node.input(i);
  if (v == nullptr || !v->is_constant()) return std::optional<int64_t>();
  KILN_ASSIGN_OR_RETURN(Ints values, ctx.ConstInts(node, i));
  if (values.size() != 1) {
    return absl::InvalidArgumentError(node.Prefix() +
                                      absl::StrCat("input ", i, " must be a scalar"));
  }
  return std::optional<int64_t>(values[0]);
}

absl::StatusOr<TensorType> KnownOutput(const ImportContext& ctx, const OnnxNode& node,
                                       const std::string& what) {
  if (std::optional<TensorType> t = ctx.KnownType(node.proto->output(0))) return *t;
  return absl::UnimplementedError(
      node.Prefix() + absl::StrCat(what, " arrives at run time and the output shape is unknown"));
}

absl::StatusOr<BuiltOutputs> BuildWindow(ImportContext& ctx, const OnnxNode& node) {
  KILN_ASSIGN_OR_RETURN(const graph::WindowAttrs attrs,
                        graph::WindowAttrs::Parse(node.attrs, node.Prefix()));
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> size, ConstScalarInput(ctx, node, 0));
  if (!size) {
    KILN_ASSIGN_OR_RETURN(TensorType t, KnownOutput(ctx, node, "size"));
    if (t.rank() != 1) return absl::InvalidArgumentError(node.Prefix() + "output is not 1-D");
    size = t.shape[0];
  }
  std::optional<DType> dtype = DTypeFromOnnx(static_cast<int>(attrs.output_datatype));
  if (!dtype || !IsFloat(*dtype)) {
    return absl::UnimplementedError(node.Prefix() + "output_datatype must be a float type");
  }
  // Before the window is computed: a constant size may ask for anything.
  KILN_RETURN_IF_ERROR(CheckTensorSize(TensorType{*dtype, {*size}}, ctx.max_tensor_bytes(),
                                       node.Prefix() + "output 0"));
  double a0 = 0.5, a1 = 0.5, a2 = 0;
  if (node.op == OpKind::kHammingWindow) {
    a0 = 25.0 / 46.0;
    a1 = 1 - a0;
  } else if (node.op == OpKind::kBlackmanWindow) {
    a0 = 0.42;
    a2 = 0.08;
  }
  bool periodic = attrs.periodic;
  double denom = static_cast<double>(periodic ? *size : *size - 1);
  std::vector<double> w(*size);
  for (int64_t n = 0; n < *size; ++n) {
    double x = 2 * kPi * static_cast<double>(n) / denom;
    w[n] = a0 - a1 * std::cos(x) + a2 * std::cos(2 * x);
  }
  return BuiltOutputs{ctx.ConstFloats(node.name, *dtype, {*size}, w)};
}

// The [n_in * c, k * 2] matrix taking interleaved (re[, im]) samples of an axis of n_in to K
// interleaved (re, im) bins of the length-`length` DFT (zero-padded or truncated input).
std::vector<double> DftMatrix(int64_t n_in, int64_t c, int64_t length, int64_t k, bool inverse) {
  std::vector<double> m(n_in * c * k * 2, 0.0);
  double sign = inverse ? 1.0 : -1.0;
  double scale = inverse ? 1.0 / static_cast<double>(length) : 1.0;
  for (int64_t n = 0; n < std::min(n_in, length); ++n) {
    for (int64_t j = 0; j < k; ++j) {
      double theta = 2 * kPi * static_cast<double>((n * j) % length) / static_cast<double>(length);
      double re = std::cos(theta) * scale, im = sign * std::sin(theta) * scale;
      // (xr + i xi)(re + i im) = (xr re - xi im) + i (xr im + xi re)
      m[(n * c) * k * 2 + j * 2] = re;
      m[(n * c) * k * 2 + j * 2 + 1] = im;
      if (c == 2) {
        m[(n * c + 1) * k * 2 + j * 2] = -im;
        m[(n * c + 1) * k * 2 + j * 2 + 1] = re;
      }
    }
  }
  return m;
}

// `x` [..., n_in, c] (the axis just before the component dim) transformed into
// [..., k, 2]: one MatMul with the DFT matrix.
absl::StatusOr<Value*> EmitDft(ImportContext& ctx, const std::string& name, Value* x,
                               int64_t length, int64_t k, bool inverse) {
  const Ints& shape = x->type().shape;
  int64_t r = x->type().rank();
  int64_t n_in = shape[r - 2], c = shape[r - 1];
  int64_t rows = x->type().NumElements() / std::max<int64_t>(1, n_in * c);
  // The matrix is built in f64 on the host: check its size before allocating it.
  KILN_RETURN_IF_ERROR(CheckTensorSize(TensorType{DType::kFloat64, {n_in * c, k, 2}},
                                       ctx.max_tensor_bytes(),
                                       absl::StrCat("node '", name, "': the DFT matrix")));
  KILN_ASSIGN_OR_RETURN(Value * flat, ctx.EmitReshape(name + "/rows", x, {rows, n_in * c}));
  Value* m = ctx.ConstFloats(name + "/dft_matrix", x->type().dtype, {n_in * c, k * 2},
                             DftMatrix(n_in, c, length, k, inverse));
  KILN_ASSIGN_OR_RETURN(Value * y, ctx.EmitValue(OpKind::kMatMul, name + "/matmul", {flat, m}));
  Ints out(shape.begin(), shape.end() - 2);
  out.push_back(k);
  out.push_back(2);
  return ctx.EmitReshape(name + "/bins", y, out);
}

absl::Status CheckComponents(const OnnxNode& node, const Value* x, int64_t min_rank) {
  int64_t r = x->type().rank();
  if (r < min_rank || (x->type().shape[r - 1] != 1 && x->type().shape[r - 1] != 2) ||
      !IsFloat(x->type().dtype)) {
    return absl::InvalidArgumentError(
        node.Prefix() + absl::StrCat("input must be a float tensor of rank >= ", min_rank,
                                     " whose last dim is 1 (real) or 2 (complex)"));
  }
  return absl::OkStatus();
}

// The spec's note on onesided: a one-sided output exists only for a real input.
absl::Status CheckOnesided(const OnnxNode& node, const Value* x, bool onesided) {
  if (onesided && x->type().shape.back() == 2) {
    return absl::InvalidArgumentError(
        node.Prefix() + "onesided=1 needs a real input (last dim 1), not a complex one");
  }
  return absl::OkStatus();
}

absl::StatusOr<Value*> TransposeIfNeeded(ImportContext& ctx, const std::string& name, Value* x,
                                         const Ints& perm) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == static_cast<int64_t>(i);
  if (identity) return x;
  AttrMap a;
  a.Set("perm", perm);
  return ctx.EmitValue(OpKind::kTranspose, name, {x}, a);
}

absl::StatusOr<BuiltOutputs> BuildDft(ImportContext& ctx, const OnnxNode& node) {
  Value* x = node.input(0);
  KILN_RETURN_IF_ERROR(CheckComponents(node, x, 2));
  int64_t r = x->type().rank();
  KILN_ASSIGN_OR_RETURN(const graph::DFTAttrs attrs,
                        graph::DFTAttrs::Parse(node.attrs, node.Prefix()));
  int64_t axis = attrs.axis;
  if (axis < 0) axis += r;
  if (axis < 0 || axis > r - 2) {
    return absl::InvalidArgumentError(
        node.Prefix() +
        absl::StrCat("axis ", attrs.axis, " is out of range [-r, -2] or [0, r - 2] for rank ", r));
  }
  bool inverse = attrs.inverse;
  bool onesided = attrs.onesided;
  KILN_RETURN_IF_ERROR(CheckOnesided(node, x, onesided));
  if (onesided && inverse) {
    return absl::UnimplementedError(node.Prefix() + "onesided=1 with inverse=1 is not supported");
  }
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> length, ConstScalarInput(ctx, node, 1));
  if (!length && node.input(1) == nullptr) length = x->type().shape[axis];
  if (!length) {
    KILN_ASSIGN_OR_RETURN(TensorType t, KnownOutput(ctx, node, "dft_length"));
    if (onesided) {
      return absl::UnimplementedError(
          node.Prefix() +
          "dft_length arrives at run time and, with onesided=1, the output "
          "shape does not determine it");
    }
    length = t.shape[axis];
  }
  if (*length <= 0)
    return absl::InvalidArgumentError(node.Prefix() + "dft_length must be positive");
  int64_t k = onesided ? *length / 2 + 1 : *length;
  // Move the axis just before the component dim, transform, move it back.
  Ints perm;
  for (int64_t d = 0; d < r - 1; ++d) {
    if (d != axis) perm.push_back(d);
  }
  perm.push_back(axis);
  perm.push_back(r - 1);
  Ints back(r);
  for (int64_t i = 0; i < r; ++i) back[perm[i]] = i;
  KILN_ASSIGN_OR_RETURN(Value * moved, TransposeIfNeeded(ctx, node.name + "/to_last", x, perm));
  KILN_ASSIGN_OR_RETURN(Value * y, EmitDft(ctx, node.name, moved, *length, k, inverse));
  KILN_ASSIGN_OR_RETURN(Value * out, TransposeIfNeeded(ctx, node.name + "/from_last", y, back));
  return BuiltOutputs{out};
}

// frame_length and frame_step: the constants (or the window's length), else the unique pair
// that yields the statically known output shape [batch, frames, bins, 2].
absl::StatusOr<std::pair<int64_t, int64_t>> StftFrames(const ImportContext& ctx,
                                                       const OnnxNode& node, int64_t signal_len,
                                                       bool onesided) {
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> step, ConstScalarInput(ctx, node, 1));
  KILN_ASSIGN_OR_RETURN(std::optional<int64_t> length, ConstScalarInput(ctx, node, 3));
  if (const Value* w = node.input(2)) {
    if (w->type().rank() != 1)
      return absl::InvalidArgumentError(node.Prefix() + "window is not 1-D");
    if (length && *length != w->type().shape[0]) {
      return absl::InvalidArgumentError(node.Prefix() + "frame_length differs from the window's");
    }
    length = w->type().shape[0];
  }
  if (step && length) return std::make_pair(*length, *step);
  if (!length && node.input(3) == nullptr) {
    return absl::InvalidArgumentError(node.Prefix() + "needs a window or a frame_length");
  }
  KILN_ASSIGN_OR_RETURN(TensorType t, KnownOutput(ctx, node, "frame_step or frame_length"));
  if (t.rank() != 4) return absl::InvalidArgumentError(node.Prefix() + "output is not 4-D");
  int64_t frames = t.shape[1], bins = t.shape[2];
  Ints lengths = length ? Ints{*length} : onesided ? Ints{2 * bins - 2, 2 * bins - 1} : Ints{bins};
  std::set<std::pair<int64_t, int64_t>> found;  // (length, step; 0 when one frame)
  for (int64_t l : lengths) {
    if (l <= 0 || l > signal_len) continue;
    for (int64_t s = 1; s <= signal_len; ++s) {
      if ((step && s != *step) || (signal_len - l) / s + 1 != frames) continue;
      found.insert({l, frames == 1 ? 0 : s});
    }
  }
  if (found.size() != 1) {
    return absl::UnimplementedError(
        node.Prefix() +
        "frame_step or frame_length arrives at run time and the output shape "
        "does not determine it");
  }
  return *found.begin();
}

absl::StatusOr<BuiltOutputs> BuildStft(ImportContext& ctx, const OnnxNode& node) {
  Value* signal = node.input(0);
  KILN_RETURN_IF_ERROR(CheckComponents(node, signal, 3));
  if (signal->type().rank() != 3) {
    return absl::InvalidArgumentError(node.Prefix() + "signal must be [batch, length, 1 or 2]");
  }
  const Ints& shape = signal->type().shape;
  KILN_ASSIGN_OR_RETURN(const graph::STFTAttrs attrs,
                        graph::STFTAttrs::Parse(node.attrs, node.Prefix()));
  bool onesided = attrs.onesided;
  KILN_RETURN_IF_ERROR(CheckOnesided(node, signal, onesided));
  KILN_ASSIGN_OR_RETURN(auto length_step, StftFrames(ctx, node, shape[1], onesided));
  auto [length, step] = length_step;
  if (length <= 0 || length > shape[1] || (step <= 0 && shape[1] - length >= 1)) {
    return absl::InvalidArgumentError(node.Prefix() +
                                      absl::StrCat("frame_length ", length, " and frame_step ",
                                                   step, " do not fit a signal of ", shape[1]));
  }
  int64_t frames = step <= 0 ? 1 : (shape[1] - length) / step + 1;
  Ints index;
  for (int64_t f = 0; f < frames; ++f) {
    for (int64_t j = 0; j < length; ++j) index.push_back(f * step + j);
  }
  const std::string& name = node.name;
  AttrMap ga;
  ga.Set("axis", int64_t{1});
  auto table = Tensor::Zeros({DType::kInt64, {frames, length}});
  std::copy(index.begin(), index.end(), table->mutable_data<int64_t>());
  Value* index_table = ctx.graph().AddConstant(name + "/frame_index", std::move(table));
  KILN_ASSIGN_OR_RETURN(
      Value * framed, ctx.EmitValue(OpKind::kGather, name + "/frames", {signal, index_table}, ga));
  if (Value* window = node.input(2)) {
    KILN_ASSIGN_OR_RETURN(Value * column, ctx.EmitReshape(name + "/window", window, {length, 1}));
    KILN_ASSIGN_OR_RETURN(framed,
                          ctx.EmitValue(OpKind::kMul, name + "/windowed", {framed, column}));
  }
  int64_t bins = onesided ? length / 2 + 1 : length;
  KILN_ASSIGN_OR_RETURN(Value * y, EmitDft(ctx, name, framed, length, bins, /*inverse=*/false));
  return BuiltOutputs{y};
}

// MelWeightMatrix as the conformance reference computes it (onnx/backend/test/case/node/
// melweightmatrix.py): the band edges in mel (f32), their bins
// floor((dft_length + 1) * hz / sample_rate) (f64), then per (spectrogram bin j, mel bin i) the
// triangle rising over [lower, center] and falling over [center, higher).
absl::StatusOr<BuiltOutputs> BuildMelWeightMatrix(ImportContext& ctx, const OnnxNode& node) {
  KILN_ASSIGN_OR_RETURN(const graph::WindowAttrs attrs,
                        graph::WindowAttrs::Parse(node.attrs, node.Prefix()));
  KILN_ASSIGN_OR_RETURN(TensorType out, KnownOutput(ctx, node, "num_mel_bins or dft_length"));
  std::optional<DType> dtype = DTypeFromOnnx(static_cast<int>(attrs.output_datatype));
  if (out.rank() != 2 || !dtype || *dtype != out.dtype) {
    return absl::InvalidArgumentError(node.Prefix() + "output must be 2-D of output_datatype");
  }
  const int64_t spectrogram_bins = out.shape[0], mel_bins = out.shape[1];
  const std::string& name = node.name;
  int step = 0;
  // Emits `op` over `in`, named after the node.
  auto op = [&](OpKind kind, std::vector<Value*> in, AttrMap a = {}) {
    return ctx.EmitValue(kind, absl::StrCat(name, "/", OpName(kind), step++), std::move(in),
                         std::move(a));
  };
  auto cast = [&](Value* v, DType to) -> absl::StatusOr<Value*> {
    if (v->type().dtype == to) return v;
    AttrMap a;
    a.Set("to", static_cast<int64_t>(DTypeToOnnx(to)));
    return op(OpKind::kCast, {v}, a);
  };
  auto scalar = [&](DType dt, double v) {
    return ctx.ConstScalar(absl::StrCat(name, "/c", step++), dt, v);
  };
  const DType f32 = DType::kFloat32, f64 = DType::kFloat64, i64 = DType::kInt64;
  // mel(v) = 2595 log10(1 + v / 700), in f32.
  auto mel = [&](Value* hz) -> absl::StatusOr<Value*> {
    KILN_ASSIGN_OR_RETURN(Value * v, cast(hz, f32));
    KILN_ASSIGN_OR_RETURN(v, op(OpKind::kDiv, {v, scalar(f32, 700)}));
    KILN_ASSIGN_OR_RETURN(v, op(OpKind::kAdd, {v, scalar(f32, 1)}));
    KILN_ASSIGN_OR_RETURN(v, op(OpKind::kLog, {v}));
    KILN_ASSIGN_OR_RETURN(v, op(OpKind::kDiv, {v, scalar(f32, std::log(10.0))}));
    return op(OpKind::kMul, {v, scalar(f32, 2595)});
  };
  KILN_ASSIGN_OR_RETURN(Value * low, mel(node.input(3)));
  KILN_ASSIGN_OR_RETURN(Value * high, mel(node.input(4)));
  KILN_ASSIGN_OR_RETURN(Value * mel_step, op(OpKind::kSub, {high, low}));
  KILN_ASSIGN_OR_RETURN(
      mel_step, op(OpKind::kDiv, {mel_step, scalar(f32, static_cast<double>(mel_bins + 2))}));
  std::vector<double> ramp(mel_bins + 2);
  for (int64_t i = 0; i < mel_bins + 2; ++i) ramp[i] = static_cast<double>(i);
  KILN_ASSIGN_OR_RETURN(mel_step, cast(mel_step, f64));
  KILN_ASSIGN_OR_RETURN(low, cast(low, f64));
  KILN_ASSIGN_OR_RETURN(
      Value * edges,
      op(OpKind::kMul, {ctx.ConstFloats(name + "/ramp", f64, {mel_bins + 2}, ramp), mel_step}));
  KILN_ASSIGN_OR_RETURN(edges, op(OpKind::kAdd, {edges, low}));
  // hz = 700 (10^(mel / 2595) - 1); bin = floor((dft_length + 1) hz / sample_rate).
  KILN_ASSIGN_OR_RETURN(edges, op(OpKind::kDiv, {edges, scalar(f64, 2595)}));
  KILN_ASSIGN_OR_RETURN(edges, op(OpKind::kPow, {scalar(f64, 10), edges}));
  KILN_ASSIGN_OR_RETURN(edges, op(OpKind::kSub, {edges, scalar(f64, 1)}));
  KILN_ASSIGN_OR_RETURN(edges, op(OpKind::kMul, {edges, scalar(f64, 700)}));
  KILN_ASSIGN_OR_RETURN(Value * length, cast(node.input(1), f64));
  KILN_ASSIGN_OR_RETURN(length, op(OpKind::kAdd, {length, scalar(f64, 1)}));
  KILN_ASSIGN_OR_RETURN(edges, op(OpKind::kMul, {length, edges}));
  KILN_ASSIGN_OR_RETURN(Value * rate, cast(node.input(2), f64));
  KILN_ASSIGN_OR_RETURN(edges, op(OpKind::kDiv, {edges, rate}));
  KILN_ASSIGN_OR_RETURN(edges, op(OpKind::kFloor, {edges}));
  KILN_ASSIGN_OR_RETURN(edges, cast(edges, i64));
  // lower, center, higher: edges[i], edges[i + 1], edges[i + 2] for mel bin i.
  Value* band[3];
  for (int64_t k = 0; k < 3; ++k) {
    std::string sn = absl::StrCat(name, "/band", k);
    KILN_ASSIGN_OR_RETURN(band[k], op(OpKind::kSlice, {edges, ctx.ConstI64(sn + "/starts", {k}),
                                                       ctx.ConstI64(sn + "/ends", {k + mel_bins}),
                                                       ctx.ConstI64(sn + "/axes", {0}),
                                                       ctx.ConstI64(sn + "/steps", {1})}));
  }
  auto j_values = Tensor::Zeros({i64, {spectrogram_bins, 1}});
  for (int64_t j = 0; j < spectrogram_bins; ++j) j_values->mutable_data<int64_t>()[j] = j;
  Value* j = ctx.graph().AddConstant(name + "/j", std::move(j_values));
  Value* zero = scalar(i64, 0);
  // The ramp (a - b) / (c - d) in f64, and the conditions over j.
  auto ratio = [&](Value* a, Value* b, Value* c, Value* d) -> absl::StatusOr<Value*> {
    KILN_ASSIGN_OR_RETURN(Value * num, op(OpKind::kSub, {a, b}));
    KILN_ASSIGN_OR_RETURN(Value * den, op(OpKind::kSub, {c, d}));
    KILN_ASSIGN_OR_RETURN(num, cast(num, f64));
    KILN_ASSIGN_OR_RETURN(den, cast(den, f64));
    return op(OpKind::kDiv, {num, den});
  };
  auto all = [&](std::vector<Value*> conds) -> absl::StatusOr<Value*> {
    Value* acc = conds[0];
    for (size_t i = 1; i < conds.size(); ++i) {
      KILN_ASSIGN_OR_RETURN(acc, op(OpKind::kAnd, {acc, conds[i]}));
    }
    return acc;
  };
  KILN_ASSIGN_OR_RETURN(Value * rising, ratio(j, band[0], band[1], band[0]));
  KILN_ASSIGN_OR_RETURN(Value * falling, ratio(band[2], j, band[2], band[1]));
  KILN_ASSIGN_OR_RETURN(Value * low_to_center, op(OpKind::kSub, {band[1], band[0]}));
  KILN_ASSIGN_OR_RETURN(Value * center_to_high, op(OpKind::kSub, {band[2], band[1]}));
  KILN_ASSIGN_OR_RETURN(Value * c0, op(OpKind::kGreaterOrEqual, {j, band[0]}));
  KILN_ASSIGN_OR_RETURN(Value * c1, op(OpKind::kLessOrEqual, {j, band[1]}));
  KILN_ASSIGN_OR_RETURN(Value * c2, op(OpKind::kGreater, {low_to_center, zero}));
  KILN_ASSIGN_OR_RETURN(Value * up, all({c0, c1, c2}));
  KILN_ASSIGN_OR_RETURN(Value * c3, op(OpKind::kEqual, {low_to_center, zero}));
  KILN_ASSIGN_OR_RETURN(Value * c4, op(OpKind::kEqual, {j, band[1]}));
  KILN_ASSIGN_OR_RETURN(Value * spike, all({c3, c4}));
  KILN_ASSIGN_OR_RETURN(Value * c5, op(OpKind::kGreaterOrEqual, {j, band[1]}));
  KILN_ASSIGN_OR_RETURN(Value * c6, op(OpKind::kLess, {j, band[2]}));
  KILN_ASSIGN_OR_RETURN(Value * c7, op(OpKind::kGreater, {center_to_high, zero}));
  KILN_ASSIGN_OR_RETURN(Value * down, all({c5, c6, c7}));
  KILN_ASSIGN_OR_RETURN(Value * w, op(OpKind::kWhere, {spike, scalar(f64, 1), scalar(f64, 0)}));
  KILN_ASSIGN_OR_RETURN(w, op(OpKind::kWhere, {up, rising, w}));
  KILN_ASSIGN_OR_RETURN(w, op(OpKind::kWhere, {down, falling, w}));
  KILN_ASSIGN_OR_RETURN(w, cast(w, out.dtype));
  return BuiltOutputs{w};
}

}  // namespace

absl::StatusOr<BuiltOutputs> BuildSignalOp(ImportContext& ctx, const OnnxNode& node) {
  switch (node.op) {
    case OpKind::kHannWindow:
    case OpKind::kHammingWindow:
    case OpKind::kBlackmanWindow:
      return BuildWindow(ctx, node);
    case OpKind::kDFT:
      return BuildDft(ctx, node);
    case OpKind::kSTFT:
      return BuildStft(ctx, node);
    case OpKind::kMelWeightMatrix:
      return BuildMelWeightMatrix(ctx, node);
    default:
      return absl::UnimplementedError(node.Prefix() + "is not supported");
  }
}

}  // namespace kiln::importer
