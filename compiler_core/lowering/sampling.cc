// GridSample and RoiAlign: one nest over the output; coordinates, weights and sums in f64
// (as the reference, onnx/reference/ops/op_grid_sample.py and op_roi_align.py). Every tap's
// index is computed from the loaded grid / roi values and clamped in float before it becomes an
// index, so no load is out of bounds; taps outside the image read 0 (zeros padding, RoiAlign's
// outside samples) through a Select.
// - GridSample: bilinear (2x2 taps), nearest (1 tap), bicubic (4x4 taps, A = -0.75); border
//   padding clamps and reflection padding reflects the coordinates and the taps.
// - RoiAlign: per output bin a serial sampling_ratio x sampling_ratio grid of bilinear samples
//   ("iy", "ix"), averaged (avg) or maxed (max) in the f64 workspace "acc". The adaptive
//   sampling_ratio 0 (a grid size that depends on the roi values) has no lowering.
#include <limits>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/lowering/op_lowering.h"

namespace kiln::lowering {
namespace {

using graph::CoordinateTransform;
using graph::GridSamplePadding;
using graph::OpKind;
using loop::BinaryOp;
using loop::Expr;
using loop::Stmt;
using loop::UnaryOp;

constexpr DType kF64 = DType::kFloat64;

Expr F(double v) { return Const(v, kF64); }
Expr Floor(Expr a) { return loop::Unary(UnaryOp::kFloor, std::move(a)); }
Expr Div(Expr a, Expr b) { return Bin(BinaryOp::kDiv, std::move(a), std::move(b)); }
Expr Lt(Expr a, Expr b) { return Bin(BinaryOp::kLt, std::move(a), std::move(b)); }
Expr Gt(Expr a, Expr b) { return Bin(BinaryOp::kGt, std::move(a), std::move(b)); }
Expr Or(Expr a, Expr b) { return Bin(BinaryOp::kOr, std::move(a), std::move(b)); }
Expr ToF64(Expr a) { return a->dtype == kF64 ? a : loop::Cast(kF64, std::move(a)); }
Expr Clamp(Expr a, double lo, double hi) {
  return loop::Min(loop::Max(std::move(a), F(lo)), F(hi));
}
/// An f64 coordinate already inside [0, extent - 1] (up to truncation) as an i64 index.
Expr Index(Expr f, int64_t extent) {
  return loop::Cast(DType::kInt64, Clamp(std::move(f), 0, static_cast<double>(extent - 1)));
}

// `v` reflected into [lo, hi] (the reference's _gs_reflect).
Expr Reflect(const Expr& v, double lo, double hi) {
  double range = hi - lo;
  if (range <= 0) return F(lo);
  // dx past a border folds n = floor(dx / range) times, leaving r: an even n lands r inside
  // that border, an odd one r inside the other.
  auto fold = [&](Expr dx, double near, double far, double dir) {
    Expr n = Floor(Div(dx, F(range)));
    Expr r = dx - n * F(range);
    Expr even = Bin(BinaryOp::kEq, n, F(2) * Floor(Div(n, F(2))));
    return loop::Select(even, F(near) + F(dir) * r, F(far) - F(dir) * r);
  };
  Expr below = fold(F(lo) - v, lo, hi, 1);
  Expr above = fold(v - F(hi), hi, lo, -1);
  return loop::Select(Lt(v, F(lo)), below, loop::Select(Gt(v, F(hi)), above, v));
}

// The four cubic convolution coefficients (A = -0.75) of fraction t.
std::vector<Expr> CubicCoeffs(const Expr& t) {
  const double a = -0.75;
  Expr t1 = t + F(1), s = F(1) - t, s1 = F(2) - t;
  return {((F(a) * t1 - F(5 * a)) * t1 + F(8 * a)) * t1 - F(4 * a),
          ((F(a + 2) * t - F(a + 3)) * t) * t + F(1), ((F(a + 2) * s - F(a + 3)) * s) * s + F(1),
          ((F(a) * s1 - F(5 * a)) * s1 + F(8 * a)) * s1 - F(4 * a)};
}

struct GridSampleLowering {
  loop::BufferRef x;
  std::vector<Expr> nc;  // the (n, c) index prefix of the image
  int64_t dims[2];       // H, W
  double lo[2], hi[2];   // coordinate borders of (y, x)
  GridSamplePadding padding = GridSamplePadding::kZeros;

  // The image value (f64) at the integral-valued f64 tap (row, col).
  Expr Pixel(Expr row, Expr col) const {
    Expr rc[2] = {std::move(row), std::move(col)};
    Expr valid;
    std::vector<Expr> idx = nc;
    for (int i = 0; i < 2; ++i) {
      if (padding == GridSamplePadding::kReflection) rc[i] = Reflect(rc[i], lo[i], hi[i]);
      if (padding == GridSamplePadding::kZeros) {
        Expr inside = Bin(BinaryOp::kAnd, Bin(BinaryOp::kGe, rc[i], F(0)),
                          Bin(BinaryOp::kLe, rc[i], F(static_cast<double>(dims[i] - 1))));
        valid = AndCond(valid, inside);
      }
      idx.push_back(Index(rc[i], dims[i]));
    }
    Expr v = ToF64(loop::Load(x, idx));
    return valid ? loop::Select(valid, v, F(0)) : v;
  }
};

absl::StatusOr<std::vector<Stmt>> LowerGridSample(KernelBuilder& b, const graph::Node& node) {
  const graph::GridSampleAttrs attrs = graph::GridSampleAttrs::Of(node);
  const graph::GridSampleMode mode = attrs.mode;
  const bool align = attrs.align_corners;
  const std::vector<int64_t>& xs = node.input(0)->type().shape;
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  GridSampleLowering s;
  s.x = b.Input(node.input(0));
  s.padding = attrs.padding_mode;
  loop::BufferRef grid = b.Input(node.input(1));
  std::vector<loop::Var> vars = b.NewVars("", {"n", "c", "oy", "ox"});
  std::vector<Expr> o = Refs(vars);
  s.nc = {o[0], o[1]};
  Expr p[2];
  for (int i = 0; i < 2; ++i) {
    s.dims[i] = xs[2 + i];
    double d = static_cast<double>(s.dims[i]);
    s.lo[i] = align ? 0.0 : -0.5;
    s.hi[i] = align ? d - 1 : d - 0.5;
    // The grid holds (x, y): component 1 - i is this (y, x) axis.
    Expr g = ToF64(loop::Load(grid, {o[0], o[2], o[3], Idx(1 - i)}));
    p[i] = align ? (g + F(1)) * F((d - 1) / 2) : Div((g + F(1)) * F(d) - F(1), F(2));
    if (mode == graph::GridSampleMode::kNearest) p[i] = loop::Unary(UnaryOp::kRound, p[i]);
    Expr outside = Or(Lt(p[i], F(s.lo[i])), Gt(p[i], F(s.hi[i])));
    if (s.padding == GridSamplePadding::kBorder) {
      p[i] = loop::Select(outside, Clamp(p[i], 0, d - 1), p[i]);
    }
    if (s.padding == GridSamplePadding::kReflection) p[i] = Reflect(p[i], s.lo[i], s.hi[i]);
  }
  Expr v;
  if (mode == graph::GridSampleMode::kNearest) {
    v = s.Pixel(p[0], p[1]);
  } else {
    const bool cubic = mode == graph::GridSampleMode::kBicubic;
    std::vector<Expr> base(2), coeff[2];
    for (int i = 0; i < 2; ++i) {
      Expr fl = Floor(p[i]);
      Expr t = p[i] - fl;
      base[i] = cubic ? fl - F(1) : fl;
      coeff[i] = cubic ? CubicCoeffs(t) : std::vector<Expr>{F(1) - t, t};
    }
    for (size_t r = 0; r < coeff[0].size(); ++r) {
      Expr row;
      for (size_t c = 0; c < coeff[1].size(); ++c) {
        Expr term = coeff[1][c] * s.Pixel(base[0] + F(static_cast<double>(r)),
                                          base[1] + F(static_cast<double>(c)));
        row = row ? row + term : term;
      }
      Expr term = coeff[0][r] * row;
      v = v ? v + term : term;
    }
  }
  Stmt store = loop::Store(b.out(), o, loop::Cast(node.output(0)->type().dtype, v));
  return std::vector<Stmt>{Nest(vars, os, store)};
}

absl::StatusOr<std::vector<Stmt>> LowerRoiAlign(KernelBuilder& b, const graph::Node& node) {
  const graph::RoiAlignAttrs attrs = graph::RoiAlignAttrs::Of(node);
  const int64_t ratio = attrs.sampling_ratio;
  if (ratio <= 0) {
    return NoLowering(node, "sampling_ratio 0 (the adaptive grid size depends on the roi values)");
  }
  const bool avg = attrs.mode == graph::RoiAlignMode::kAvg;
  const bool half_pixel = attrs.coordinate_transformation_mode == CoordinateTransform::kHalfPixel;
  const double scale = attrs.spatial_scale;
  const double offset = half_pixel ? 0.5 : 0.0;
  const std::vector<int64_t>& xs = node.input(0)->type().shape;
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  const int64_t dims[2] = {xs[2], xs[3]};
  const int64_t bins[2] = {os[2], os[3]};
  loop::BufferRef x = b.Input(node.input(0));
  loop::BufferRef rois = b.Input(node.input(1));
  loop::BufferRef batch = b.Input(node.input(2));
  loop::BufferRef acc = b.Workspace("acc", kF64, os);
  std::vector<loop::Var> vars = b.NewVars("", {"r", "c", "ph", "pw"});
  std::vector<Expr> o = Refs(vars);
  loop::Var grid_vars[2] = {b.NewVar("iy"), b.NewVar("ix")};
  Expr image = IdxClamp(loop::Load(batch, {o[0]}), xs[0]);
  // Per axis (y, x): the sample coordinate, then its low/high taps and weights.
  Expr low[2], high[2], frac[2], outside;
  for (int i = 0; i < 2; ++i) {
    // rois hold (x1, y1, x2, y2): axis i reads components 1 - i and 3 - i.
    Expr start = ToF64(loop::Load(rois, {o[0], Idx(1 - i)})) * F(scale) - F(offset);
    Expr end = ToF64(loop::Load(rois, {o[0], Idx(3 - i)})) * F(scale) - F(offset);
    Expr size = end - start;
    if (!half_pixel) size = loop::Max(size, F(1));
    Expr bin = Div(size, F(static_cast<double>(bins[i])));
    Expr pos =
        start + ToF64(o[2 + i]) * bin +
        Div((ToF64(loop::VarRef(grid_vars[i])) + F(0.5)) * bin, F(static_cast<double>(ratio)));
    double d = static_cast<double>(dims[i]);
    Expr out_i = Or(Lt(pos, F(-1)), Gt(pos, F(d)));
    outside = outside ? Or(outside, out_i) : out_i;
    pos = loop::Max(pos, F(0));
    Expr fl = Floor(pos);
    Expr at_end = Bin(BinaryOp::kGe, fl, F(d - 1));
    low[i] = loop::Select(at_end, F(d - 1), fl);
    high[i] = loop::Select(at_end, F(d - 1), fl + F(1));
    frac[i] = loop::Select(at_end, F(d - 1), pos) - low[i];
  }
  auto pixel = [&](const Expr& row, const Expr& col) {
    return ToF64(loop::Load(x, {image, o[1], Index(row, dims[0]), Index(col, dims[1])}));
  };
  Expr hy = F(1) - frac[0], hx = F(1) - frac[1];
  Expr terms[4] = {hy * hx * pixel(low[0], low[1]), hy * frac[1] * pixel(low[0], high[1]),
                   frac[0] * hx * pixel(high[0], low[1]),
                   frac[0] * frac[1] * pixel(high[0], high[1])};
  Expr sample = avg ? terms[0] + terms[1] + terms[2] + terms[3]
                    : loop::Max(loop::Max(terms[0], terms[1]), loop::Max(terms[2], terms[3]));
  sample = loop::Select(outside, F(0), sample);
  Expr cur = loop::Load(acc, o);
  Stmt update = loop::Store(acc, o, avg ? cur + sample : loop::Max(cur, sample));
  Stmt samples = Nest({grid_vars[0], grid_vars[1]}, {ratio, ratio}, update, {true, true});
  Expr result =
      avg ? Div(loop::Load(acc, o), F(static_cast<double>(ratio * ratio))) : loop::Load(acc, o);
  Stmt body = loop::Block({
      loop::Store(acc, o, avg ? F(0) : Lowest(kF64)),
      samples,
      loop::Store(b.out(), o, loop::Cast(node.output(0)->type().dtype, result)),
  });
  return std::vector<Stmt>{Nest(vars, os, body)};
}

// ResizeTap (ops.def): one nest over the output; the tap's position and weight in f64 from the
// loaded scale, as EvalResizeTap computes them.
absl::StatusOr<std::vector<Stmt>> LowerResizeTap(KernelBuilder& b, const graph::Node& node) {
  const graph::ResizeTapAttrs t = graph::ResizeTapAttrs::Of(node);
  const int64_t axis = t.axis, len = t.in, out = t.out, tap = t.tap;
  const graph::ResizeMode mode = t.mode;
  const graph::NearestMode nearest = t.nearest_mode;
  const CoordinateTransform coord = t.coordinate_transformation_mode;
  const double ca = t.cubic_coeff_a;
  const bool exclude = t.exclude_outside, index = t.part == graph::TapPart::kIndex;
  if (coord == CoordinateTransform::kTfCropAndResize) {
    return NoLowering(node, "tf_crop_and_resize");
  }
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  std::vector<loop::Var> vars = b.NewVars("", AxisNames(os.size()));
  const Expr j = ToF64(loop::VarRef(vars[index ? 0 : axis]));
  const Expr scale = ToF64(loop::Load(b.Input(node.input(0)), {Idx(axis)}));
  const double n = static_cast<double>(len);
  const Expr width = scale * F(n);
  Expr x;
  if (coord == CoordinateTransform::kAlignCorners) {
    x = loop::Select(Bin(BinaryOp::kEq, width, F(1)), F(0), Div(j * F(n - 1), width - F(1)));
  } else if (coord == CoordinateTransform::kAsymmetric) {
    x = Div(j, scale);
  } else if (coord == CoordinateTransform::kTfHalfPixelForNn) {
    x = Div(j + F(0.5), scale);
  } else {
    x = Div(j + F(0.5), scale) - F(0.5);
    if (coord == CoordinateTransform::kPytorchHalfPixel)
      x = loop::Select(Bin(BinaryOp::kEq, width, F(1)), F(-0.5), x);
  }
  const Expr base = Floor(x), r = x - base, s = F(1) - r;
  std::vector<Expr> pos, w;
  if (mode == graph::ResizeMode::kNearest) {
    Expr up = F(0);
    Expr frac = Gt(r, F(0));
    if (nearest == graph::NearestMode::kCeil) {
      up = loop::Select(frac, F(1), F(0));
    } else if (nearest == graph::NearestMode::kRoundPreferCeil) {
      up = loop::Select(Bin(BinaryOp::kGe, r, F(0.5)), F(1), F(0));
    } else if (nearest == graph::NearestMode::kRoundPreferFloor) {
      up = loop::Select(Gt(r, F(0.5)), F(1), F(0));
    }
    pos = {base + up};
    w = {F(1)};
  } else if (mode == graph::ResizeMode::kLinear) {
    pos = {base, base + F(1)};
    w = {s, r};
  } else {
    pos = {base - F(1), base, base + F(1), base + F(2)};
    const Expr r1 = r + F(1), s1 = s + F(1);
    w = {((F(ca) * r1 - F(5 * ca)) * r1 + F(8 * ca)) * r1 - F(4 * ca),
         ((F(ca + 2) * r - F(ca + 3)) * r) * r + F(1), ((F(ca + 2) * s - F(ca + 3)) * s) * s + F(1),
         ((F(ca) * s1 - F(5 * ca)) * s1 + F(8 * ca)) * s1 - F(4 * ca)};
  }
  if (tap < 0 || tap >= static_cast<int64_t>(pos.size())) return NoLowering(node, "this tap");
  Expr value;
  if (index) {
    value = Index(pos[tap], len);
  } else if (exclude) {
    auto kept = [&](size_t k) {
      return loop::Select(Or(Lt(pos[k], F(0)), Bin(BinaryOp::kGe, pos[k], F(n))), F(0), w[k]);
    };
    Expr sum = kept(0);
    for (size_t k = 1; k < w.size(); ++k) sum = sum + kept(k);
    value = loop::Cast(DType::kFloat32, Div(kept(tap), sum));
  } else {
    value = loop::Cast(DType::kFloat32, w[tap]);
  }
  std::vector<Stmt> nests;
  if (index && tap == 0) {
    // The output length the run-time scale gives, floor(scale * in), against the compiled one.
    nests.push_back(
        b.ShapeCheck({loop::Cast(DType::kInt64, Floor(scale * F(n)))}, {out},
                     t.what.empty() ? "node '" + node.name() + "' (ResizeTap)" : t.what));
  }
  nests.push_back(Nest(vars, os, loop::Store(b.out(), Refs(vars), value)));
  return nests;
}

}  // namespace

absl::StatusOr<std::vector<Stmt>> LowerSampling(KernelBuilder& b, const graph::Node& node,
                                                const Epilogue& epi) {
  if (!epi.empty()) return NoLowering(node, "fused consumers");
  if (node.op() == OpKind::kGridSample) return LowerGridSample(b, node);
  if (node.op() == OpKind::kResizeTap) return LowerResizeTap(b, node);
  return LowerRoiAlign(b, node);
}

}  // namespace kiln::lowering
