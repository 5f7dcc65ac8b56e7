// Resize (opsets 10..17) and Upsample (opsets 7..9), decomposed per resized axis into Gathers
// of constant index tables and weighted sums with constant weight tables (nearest, linear and
// cubic modes; every coordinate transformation mode, nearest mode, exclude_outside and
// tf_crop_and_resize's extrapolation). The tables follow the ONNX reference implementation
// (onnx/reference/ops/op_resize.py): per output position, the n nearest neighbours of the
// original coordinate in the edge-padded input (ties to the lower index) and their
// coefficients. Interpolating the innermost axis first matches the reference's recursion.
//
// Static parameters: roi, scales and sizes must be constants, except that a runtime `sizes`
// input is accepted when the output shape is statically known (ONNX shape inference or the
// declared graph output): the scale is then output/input exactly, as the spec defines it for
// `sizes`. Runtime `scales` need the static output shape too, but the coordinate mapping
// depends on their exact values (floor(in * s) is the same for many s): ResizeTap ops compute
// the tables from them at run time (BuildRuntimeScalesResize).
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/importer/onnx/import_context.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/ir/graph/tensor_size.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::importer {

using graph::AttrMap;
using graph::CoordinateTransform;
using graph::NearestMode;
using graph::Node;
using graph::OpKind;
using graph::ResizeMode;
using graph::Value;

namespace {

using Ints = std::vector<int64_t>;

struct ResizeParams {
  ResizeMode mode = ResizeMode::kNearest;
  CoordinateTransform coord = CoordinateTransform::kHalfPixel;
  NearestMode nearest_mode = NearestMode::kRoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
};

/// One output position along an axis: input indices (already clamped) with coefficients, or
/// out of range (tf_crop_and_resize extrapolation).
struct Tap {
  std::vector<int64_t> index;
  std::vector<double> coeff;
  bool extrapolate = false;
};

std::vector<double> Coeffs(const ResizeParams& p, double ratio, bool integral) {
  if (p.mode == ResizeMode::kNearest) {
    if (integral) return {0, 1};
    if (p.nearest_mode == NearestMode::kRoundPreferCeil) {
      return {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
    }
    if (p.nearest_mode == NearestMode::kFloor) return {1, 0};
    if (p.nearest_mode == NearestMode::kCeil) return {0, 1};
    return {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};  // round_prefer_floor
  }
  if (p.mode == ResizeMode::kLinear) return {1 - ratio, ratio};
  double a = p.cubic_a, r = ratio, s = 1 - ratio;
  return {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
          ((a + 2) * r - (a + 3)) * r * r + 1,
          ((a + 2) * s - (a + 3)) * s * s + 1,
          ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a};
}

/// The taps of output position `x` of an axis of length `in` resized to `out` with `scale`.
Tap AxisTap(const ResizeParams& p, int64_t x, int64_t in, int64_t out, double scale,
            double roi_start, double roi_end) {
  Tap tap;
  double out_width = scale * static_cast<double>(in);  // as the reference: not the integer size
  double xr = static_cast<double>(x), x_ori = 0;
  const CoordinateTransform c = p.coord;
  if (c == CoordinateTransform::kAlignCorners) {
    x_ori = out_width == 1 ? 0.0 : xr * static_cast<double>(in - 1) / (out_width - 1);
  } else if (c == CoordinateTransform::kAsymmetric) {
    x_ori = xr / scale;
  } else if (c == CoordinateTransform::kTfCropAndResize) {
    x_ori = out_width == 1 ? (roi_end - roi_start) * static_cast<double>(in - 1) / 2
                           : xr * (roi_end - roi_start) * static_cast<double>(in - 1) /
                                 (out_width - 1);
    x_ori += roi_start * static_cast<double>(in - 1);
    if (x_ori < 0 || x_ori > static_cast<double>(in - 1)) {
      tap.extrapolate = true;
      return tap;
    }
  } else if (c == CoordinateTransform::kTfHalfPixelForNn) {
    x_ori = (xr + 0.5) / scale;
  } else if (c == CoordinateTransform::kPytorchHalfPixel) {
    x_ori = out_width == 1 ? -0.5 : (xr + 0.5) / scale - 0.5;
  } else {  // half_pixel (and output_half_pixel, RoiAlign's)
    x_ori = (xr + 0.5) / scale - 0.5;
  }
  double fl = std::floor(x_ori);
  bool integral = x_ori == fl;
  double ratio = integral ? 1.0 : x_ori - fl;
  std::vector<double> coeff = Coeffs(p, ratio, integral);
  int64_t n = static_cast<int64_t>(coeff.size());
  // The n indices nearest to x_ori (ties to the lower index) among [-pad, in + pad).
  int64_t pad = (n + 1) / 2;
  std::vector<int64_t> cand;
  int64_t base = static_cast<int64_t>(fl);
  for (int64_t i = std::max(-pad, base - n); i < std::min(in + pad, base + n + 1); ++i) {
    cand.push_back(i);
  }
  std::stable_sort(cand.begin(), cand.end(), [&](int64_t a, int64_t b) {
    return std::fabs(x_ori - static_cast<double>(a)) < std::fabs(x_ori - static_cast<double>(b));
  });
  cand.resize(std::min<size_t>(cand.size(), static_cast<size_t>(n)));
  std::sort(cand.begin(), cand.end());
  if (p.exclude_outside) {
    double sum = 0;
    for (int64_t k = 0; k < n; ++k) {
      if (cand[k] < 0 || cand[k] >= in) coeff[k] = 0;
      sum += coeff[k];
    }
    for (double& v : coeff) v /= sum;
  }
  for (int64_t k = 0; k < n; ++k) {
    tap.index.push_back(std::clamp<int64_t>(cand[k], 0, in - 1));  // edge padding
    tap.coeff.push_back(coeff[k]);
  }
  return tap;
}

/// The float values of constant input `i` (empty when absent or empty).
absl::StatusOr<std::vector<double>> ConstFloats(const OnnxNode& node, int i, bool* runtime) {
  const Value* v = node.input(i);
  *runtime = false;
  if (v == nullptr || v->type().NumElements() == 0) return std::vector<double>();
  if (!v->is_constant()) {
    *runtime = true;
    return std::vector<double>();
  }
  std::vector<double> out;
  for (int64_t k = 0; k < v->type().NumElements(); ++k) out.push_back(v->constant()->GetAsDouble(k));
  return out;
}

/// Resizes axis `d` of `x` to `out` positions described by `taps`.
absl::StatusOr<Value*> ResizeAxis(ImportContext& ctx, const std::string& name, Value* x,
                                  int64_t d, const std::vector<Tap>& taps,
                                  const ResizeParams& p) {
  const TensorType& xt = x->type();
  int64_t out = static_cast<int64_t>(taps.size());
  int64_t in = xt.shape[d];
  // Identity axis: every position reads its own index with weight 1.
  bool identity = out == in;
  size_t n = 0;
  for (int64_t j = 0; j < out; ++j) {
    const Tap& t = taps[j];
    n = std::max(n, t.index.size());
    if (t.extrapolate) {
      identity = false;
      continue;
    }
    double w = 0;
    for (size_t k = 0; k < t.index.size(); ++k) {
      if (t.coeff[k] != 0 && t.index[k] != j) identity = false;
      if (t.index[k] == j) w += t.coeff[k];
    }
    if (w != 1) identity = false;
  }
  if (identity) return x;
  AttrMap ga;
  ga.Set("axis", d);
  Ints table_shape(xt.shape.size(), 1);
  table_shape[d] = out;
  bool nearest = p.mode == ResizeMode::kNearest;
  bool any_extrapolate = false;
  for (const Tap& t : taps) any_extrapolate |= t.extrapolate;
  if (nearest && !any_extrapolate) {
    // Nearest: every position has one tap with coefficient 1: a single Gather.
    Ints merged(out, 0);
    for (int64_t j = 0; j < out; ++j) {
      for (size_t q = 0; q < taps[j].index.size(); ++q) {
        if (taps[j].coeff[q] != 0) merged[j] = taps[j].index[q];
      }
    }
    std::string gn = absl::StrCat(name, "/axis", d);
    KILN_ASSIGN_OR_RETURN(Node * g, ctx.Emit(OpKind::kGather, gn,
                                             {x, ctx.ConstI64(gn + "/index", merged)}, ga));
    return g->output(0);
  }
  Value* acc = nullptr;
  for (size_t k = 0; k < n; ++k) {
    Ints index(out, 0);
    std::vector<double> coeff(out, 0.0);
    bool used = false;
    for (int64_t j = 0; j < out; ++j) {
      if (taps[j].extrapolate) continue;
      index[j] = taps[j].index[k];
      coeff[j] = taps[j].coeff[k];
      used |= coeff[j] != 0;
    }
    if (!used) continue;
    std::string tn = absl::StrCat(name, "/axis", d, "_tap", k);
    KILN_ASSIGN_OR_RETURN(Node * g, ctx.Emit(OpKind::kGather, tn,
                                             {x, ctx.ConstI64(tn + "/index", index)}, ga));
    Value* term = g->output(0);
    Value* w = ctx.ConstFloats(tn + "/coeff", xt.dtype, table_shape, coeff);
    KILN_ASSIGN_OR_RETURN(Node * m, ctx.Emit(OpKind::kMul, tn + "/weighted", {term, w}, {}));
    if (acc == nullptr) {
      acc = m->output(0);
    } else {
      KILN_ASSIGN_OR_RETURN(Node * s, ctx.Emit(OpKind::kAdd, tn + "/sum", {acc, m->output(0)}, {}));
      acc = s->output(0);
    }
  }
  if (any_extrapolate) {
    std::vector<double> extra(out, 0.0);
    for (int64_t j = 0; j < out; ++j) extra[j] = taps[j].extrapolate ? p.extrapolation : 0.0;
    std::string en = absl::StrCat(name, "/axis", d, "_extrapolation");
    Value* e = ctx.ConstFloats(en, xt.dtype, table_shape, extra);
    if (acc == nullptr) {
      return absl::UnimplementedError(absl::StrCat("node '", name,
                                                   "': every position extrapolates"));
    }
    KILN_ASSIGN_OR_RETURN(Node * s, ctx.Emit(OpKind::kAdd, en, {acc, e}, {}));
    acc = s->output(0);
  }
  return acc;
}

// Resize whose scales arrive at run time: per axis (innermost first), ResizeTap ops compute each
// tap's index and weight table from the scales at run time, and Gathers with weighted sums apply
// them, as the constant tables do. The output shape must be statically known (ONNX shape
// inference or the declared graph output); tap 0's index kernel of each axis checks it against
// floor(scale * in) at run time.
absl::StatusOr<BuiltOutputs> BuildRuntimeScalesResize(ImportContext& ctx, const OnnxNode& node,
                                                      const ResizeParams& p) {
  Value* x = node.input(0);
  const TensorType& xt = x->type();
  const int64_t rank = xt.rank();
  Value* scales = node.input(node.op == OpKind::kUpsample || ctx.opset() < 11 ? 1 : 2);
  if (p.coord == CoordinateTransform::kTfCropAndResize) {
    return absl::UnimplementedError(node.Prefix() +
                                    "scales arrive at run time with "
                                    "tf_crop_and_resize (its roi mapping needs "
                                    "them constant)");
  }
  if (scales->type().dtype != DType::kFloat32 || scales->type().shape != Ints{rank}) {
    return absl::InvalidArgumentError(node.Prefix() + absl::StrCat("scales have type ",
                                                                   scales->type().ToString(),
                                                                   "; expected f32 [", rank, "]"));
  }
  std::optional<TensorType> known = ctx.KnownType(node.proto->output(0));
  if (!known || known->rank() != rank) {
    return absl::UnimplementedError(node.Prefix() +
                                    "scales arrive at run time and the output "
                                    "shape is unknown (give the graph output a "
                                    "static shape, or make scales a constant)");
  }
  const int64_t taps = p.mode == ResizeMode::kNearest ? 1 : p.mode == ResizeMode::kLinear ? 2 : 4;
  Value* cur = x;
  Ints unresized;  // axes of length 1 in and out: no taps, but their scales are checked
  for (int64_t d = rank - 1; d >= 0; --d) {
    const int64_t in = xt.shape[d], out = known->shape[d];
    if (in <= 0 || out <= 0) {
      return absl::UnimplementedError(node.Prefix() + "empty input or output dims");
    }
    if (in == 1 && out == 1) {  // every tap reads position 0 and the weights sum to 1
      unresized.insert(unresized.begin(), d);
      continue;
    }
    AttrMap a;
    a.Set("axis", d);
    a.Set("in", in);
    a.Set("out", out);
    a.Set("mode", std::string(graph::AttrEnumName(p.mode)));
    a.Set("coordinate_transformation_mode", std::string(graph::AttrEnumName(p.coord)));
    a.Set("nearest_mode", std::string(graph::AttrEnumName(p.nearest_mode)));
    a.Set("cubic_coeff_a", static_cast<float>(p.cubic_a));
    a.Set("exclude_outside", int64_t{p.exclude_outside ? 1 : 0});
    a.Set("what", absl::StrCat(node.Prefix(), "scales[", d, "]"));
    AttrMap ga;
    ga.Set("axis", d);
    Value* acc = nullptr;
    for (int64_t k = 0; k < taps; ++k) {
      const std::string tn = absl::StrCat(node.name, "/axis", d, "_tap", k);
      a.Set("tap", k);
      a.Set("part", "index");
      KILN_ASSIGN_OR_RETURN(Value * index,
                            ctx.EmitValue(OpKind::kResizeTap, tn + "/index", {scales}, a));
      KILN_ASSIGN_OR_RETURN(Value * term, ctx.EmitValue(OpKind::kGather, tn, {cur, index}, ga));
      if (taps > 1) {
        a.Set("part", "coeff");
        KILN_ASSIGN_OR_RETURN(Value * w,
                              ctx.EmitValue(OpKind::kResizeTap, tn + "/coeff", {scales}, a));
        if (xt.dtype != DType::kFloat32) {
          AttrMap c;
          c.Set("to", static_cast<int64_t>(DTypeToOnnx(xt.dtype)));
          KILN_ASSIGN_OR_RETURN(w, ctx.EmitValue(OpKind::kCast, tn + "/coeff_cast", {w}, c));
        }
        KILN_ASSIGN_OR_RETURN(term, ctx.EmitValue(OpKind::kMul, tn + "/weighted", {term, w}));
      }
      if (acc == nullptr) {
        acc = term;
      } else {
        KILN_ASSIGN_OR_RETURN(acc, ctx.EmitValue(OpKind::kAdd, tn + "/sum", {acc, term}));
      }
    }
    cur = acc;
  }
  if (!unresized.empty()) {
    // floor(scale) must be 1 on each: the output keeps length 1 there.
    const std::string n = node.name + "/unresized";
    AttrMap ga, cast;
    ga.Set("axis", int64_t{0});
    cast.Set("to", static_cast<int64_t>(DTypeToOnnx(DType::kInt64)));
    KILN_ASSIGN_OR_RETURN(Value * s,
                          ctx.EmitValue(OpKind::kGather, n + "/scales",
                                        {scales, ctx.ConstI64(n + "/axes", unresized)}, ga));
    KILN_ASSIGN_OR_RETURN(s, ctx.EmitValue(OpKind::kFloor, n + "/floor", {s}));
    KILN_ASSIGN_OR_RETURN(s, ctx.EmitValue(OpKind::kCast, n + "/lengths", {s}, cast));
    std::vector<std::string> names;
    for (int64_t d : unresized) names.push_back(absl::StrCat("scales[", d, "]"));
    AttrMap check;
    check.Set("expected", Ints(unresized.size(), 1));
    check.Set("what", node.Prefix() + absl::StrCat("the output lengths floor(scale * 1) of the "
                                                   "axes of length 1 (",
                                                   absl::StrJoin(names, ", "), ")"));
    KILN_ASSIGN_OR_RETURN(
        cur, ctx.EmitValue(OpKind::kRuntimeCheck, node.name + "/checked", {cur, s}, check));
  }
  if (cur == x) {
    KILN_ASSIGN_OR_RETURN(cur, ctx.EmitValue(OpKind::kIdentity, node.name, {x}));
  }
  return BuiltOutputs{cur};
}

}  // namespace

absl::StatusOr<BuiltOutputs> BuildResize(ImportContext& ctx, const OnnxNode& node) {
  Value* x = node.input(0);
  const TensorType& xt = x->type();
  int64_t rank = xt.rank();
  KILN_ASSIGN_OR_RETURN(const graph::ResizeAttrs a,
                        graph::ResizeAttrs::Parse(node.attrs, node.Prefix()));
  ResizeParams p;
  // A string in the schema: Upsample-7 also spells linear "bilinear".
  if (a.mode == "nearest") {
    p.mode = ResizeMode::kNearest;
  } else if (a.mode == "linear" || a.mode == "bilinear") {
    p.mode = ResizeMode::kLinear;
  } else if (a.mode == "cubic") {
    p.mode = ResizeMode::kCubic;
  } else {
    return absl::UnimplementedError(node.Prefix() +
                                    absl::StrCat("unsupported mode '", a.mode, "'"));
  }
  std::vector<double> scales, roi;
  Ints sizes;
  bool runtime = false, runtime_roi = false, runtime_scales_used = false;
  if (node.op == OpKind::kUpsample || ctx.opset() < 11) {
    // Upsample and Resize-10: asymmetric coordinates, nearest rounds down.
    p.coord = CoordinateTransform::kAsymmetric;
    p.nearest_mode = NearestMode::kFloor;
    if (node.op == OpKind::kUpsample && ctx.opset() < 9) {
      for (float s : a.scales) scales.push_back(s);
    } else {
      KILN_ASSIGN_OR_RETURN(scales, ConstFloats(node, 1, &runtime_scales_used));
    }
  } else {
    p.coord = a.coordinate_transformation_mode;
    p.nearest_mode = a.nearest_mode;
    p.cubic_a = a.cubic_coeff_a;
    p.exclude_outside = a.exclude_outside;
    p.extrapolation = a.extrapolation_value;
    KILN_ASSIGN_OR_RETURN(roi, ConstFloats(node, 1, &runtime_roi));
    bool runtime_scales = false, runtime_sizes = false;
    KILN_ASSIGN_OR_RETURN(scales, ConstFloats(node, 2, &runtime_scales));
    if (node.input(3) != nullptr && node.input(3)->type().NumElements() > 0) {
      if (node.input(3)->is_constant()) {
        KILN_ASSIGN_OR_RETURN(sizes, ctx.ConstInts(node, 3));
      } else {
        runtime_sizes = true;
      }
    }
    bool sizes_given = node.input(3) != nullptr && node.input(3)->type().NumElements() > 0;
    if (!sizes_given && runtime_scales) runtime_scales_used = true;
    runtime = runtime_sizes;
  }
  if (runtime_scales_used) return BuildRuntimeScalesResize(ctx, node, p);
  if (runtime_roi && p.coord == CoordinateTransform::kTfCropAndResize) {
    return absl::UnimplementedError(node.Prefix() + "roi must be a constant");
  }
  Ints out_shape;
  if (runtime) {
    std::optional<TensorType> known = ctx.KnownType(node.proto->output(0));
    if (!known) {
      return absl::UnimplementedError(node.Prefix() + "sizes arrive at run time and the "
                                                      "output shape is unknown");
    }
    out_shape = known->shape;
  } else if (!sizes.empty()) {
    out_shape = sizes;
  } else {
    if (static_cast<int64_t>(scales.size()) != rank) {
      return absl::InvalidArgumentError(node.Prefix() + "scales must have one value per dim");
    }
    for (int64_t d = 0; d < rank; ++d) {
      const double size = std::floor(static_cast<double>(static_cast<float>(scales[d])) *
                                     static_cast<double>(xt.shape[d]));
      std::optional<int64_t> dim = CheckedToInt64(size);
      if (!dim) {
        return absl::InvalidArgumentError(
            node.Prefix() + absl::StrCat("scale ", scales[d], " of dim ", d, " gives output size ",
                                         size, ", not an int64"));
      }
      out_shape.push_back(*dim);
    }
  }
  if (static_cast<int64_t>(out_shape.size()) != rank) {
    return absl::InvalidArgumentError(node.Prefix() + "output rank differs from the input's");
  }
  // Before the per-index taps below are built: sizes may ask for anything.
  KILN_RETURN_IF_ERROR(CheckTensorSize(TensorType{xt.dtype, out_shape}, ctx.max_tensor_bytes(),
                                       node.Prefix() + "output 0"));
  if (runtime || !sizes.empty()) {
    scales.clear();
    for (int64_t d = 0; d < rank; ++d) {
      scales.push_back(xt.shape[d] == 0 ? 1.0
                                        : static_cast<double>(out_shape[d]) / xt.shape[d]);
    }
  }
  if (roi.empty()) {
    roi.assign(rank, 0.0);
    roi.insert(roi.end(), rank, 1.0);
  }
  if (static_cast<int64_t>(roi.size()) != 2 * rank) {
    return absl::InvalidArgumentError(node.Prefix() + "roi must have 2 * rank values");
  }
  Value* cur = x;
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (out_shape[d] <= 0 || xt.shape[d] <= 0) {
      return absl::UnimplementedError(node.Prefix() + "empty input or output dims");
    }
    std::vector<Tap> taps;
    for (int64_t j = 0; j < out_shape[d]; ++j) {
      taps.push_back(AxisTap(p, j, xt.shape[d], out_shape[d], scales[d], roi[d], roi[d + rank]));
    }
    KILN_ASSIGN_OR_RETURN(cur, ResizeAxis(ctx, node.name, cur, d, taps, p));
  }
  if (cur == x) {
    KILN_ASSIGN_OR_RETURN(Node * id, ctx.Emit(OpKind::kIdentity, node.name, {x}, {}));
    cur = id->output(0);
  }
  return BuiltOutputs{cur};
}

}  // namespace kiln::importer
