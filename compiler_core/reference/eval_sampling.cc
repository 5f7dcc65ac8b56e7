// Reference kernels of GridSample-16 (4-D) and RoiAlign-16, in double, following
// onnx/reference/ops/op_grid_sample.py and op_roi_align.py (ONNX Runtime's algorithm).
#include <algorithm>
#include <cmath>

#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/reference/eval_internal.h"

namespace kiln::reference {
namespace {

using graph::CoordinateTransform;
using graph::GridSampleMode;
using graph::GridSamplePadding;
using graph::NearestMode;
using graph::OpKind;
using graph::ResizeMode;

// Reflects `x` into [lo, hi] (the reference's _gs_reflect).
double Reflect(double x, double lo, double hi) {
  double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    double dx = lo - x;
    double n = std::floor(dx / range);
    double r = dx - n * range;
    return std::fmod(n, 2) == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    double dx = x - hi;
    double n = std::floor(dx / range);
    double r = dx - n * range;
    return std::fmod(n, 2) == 0 ? hi - r : lo + r;
  }
  return x;
}

// Cubic convolution coefficients (A = -0.75) of the 4 taps around a fraction t in [0, 1).
void CubicCoeffs(double t, double c[4]) {
  const double a = -0.75;
  double x = t;
  c[0] = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a;
  c[1] = ((a + 2) * x - (a + 3)) * x * x + 1;
  c[2] = ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1;
  c[3] = ((a * (2 - x) - 5 * a) * (2 - x) + 8 * a) * (2 - x) - 4 * a;
}

struct GridSampler {
  const std::vector<double>* x;
  int64_t h, w, plane;  // plane: offset of the (n, c) image
  GridSamplePadding padding;
  double lo[2], hi[2];  // borders of (y, x)

  // The image value at integer (r, c) under the padding mode.
  double Pixel(int64_t r, int64_t c) const {
    if (padding == GridSamplePadding::kZeros) {
      if (r < 0 || r >= h || c < 0 || c >= w) return 0;
    } else if (padding == GridSamplePadding::kBorder) {
      r = std::clamp<int64_t>(r, 0, h - 1);
      c = std::clamp<int64_t>(c, 0, w - 1);
    } else {
      r = std::clamp<int64_t>(static_cast<int64_t>(Reflect(static_cast<double>(r), lo[0], hi[0])),
                              0, h - 1);
      c = std::clamp<int64_t>(static_cast<int64_t>(Reflect(static_cast<double>(c), lo[1], hi[1])),
                              0, w - 1);
    }
    return (*x)[plane + r * w + c];
  }
};

absl::StatusOr<TensorVec> EvalGridSample(const graph::Node& node, const TensorVec& in) {
  const Shape& xs = in[0]->type.shape;
  const Shape& gs = in[1]->type.shape;
  std::vector<double> x = ToDoubles(*in[0]);
  std::vector<double> grid = ToDoubles(*in[1]);
  const graph::GridSampleAttrs a = graph::GridSampleAttrs::Of(node);
  const GridSampleMode mode = a.mode;
  bool align = a.align_corners;
  int64_t n_ = xs[0], c_ = xs[1], ho = gs[1], wo = gs[2];
  GridSampler s{&x, xs[2], xs[3], 0, a.padding_mode, {}, {}};
  int64_t dims[2] = {s.h, s.w};
  for (int i = 0; i < 2; ++i) {
    s.lo[i] = align ? 0.0 : -0.5;
    s.hi[i] = align ? static_cast<double>(dims[i] - 1) : static_cast<double>(dims[i]) - 0.5;
  }
  std::vector<double> out(n_ * c_ * ho * wo);
  for (int64_t n = 0; n < n_; ++n) {
    for (int64_t c = 0; c < c_; ++c) {
      s.plane = (n * c_ + c) * s.h * s.w;
      for (int64_t oy = 0; oy < ho; ++oy) {
        for (int64_t ox = 0; ox < wo; ++ox) {
          const double* g = &grid[((n * ho + oy) * wo + ox) * 2];
          double p[2] = {g[1], g[0]};  // (y, x)
          for (int i = 0; i < 2; ++i) {
            double d = static_cast<double>(dims[i]);
            p[i] = align ? (p[i] + 1) / 2 * (d - 1) : ((p[i] + 1) * d - 1) / 2;
            if (mode == GridSampleMode::kNearest) p[i] = std::nearbyint(p[i]);
            if (p[i] < s.lo[i] || p[i] > s.hi[i]) {
              if (s.padding == GridSamplePadding::kBorder) p[i] = std::clamp(p[i], 0.0, d - 1);
              if (s.padding == GridSamplePadding::kReflection) {
                p[i] = Reflect(p[i], s.lo[i], s.hi[i]);
              }
            }
          }
          double v = 0;
          if (mode == GridSampleMode::kNearest) {
            v = s.Pixel(static_cast<int64_t>(p[0]), static_cast<int64_t>(p[1]));
          } else {
            int taps = mode == GridSampleMode::kBicubic ? 4 : 2;
            double fy = std::floor(p[0]), fx = std::floor(p[1]);
            double cy[4], cx[4];
            if (taps == 4) {
              CubicCoeffs(p[0] - fy, cy);
              CubicCoeffs(p[1] - fx, cx);
            } else {
              cy[0] = 1 - (p[0] - fy), cy[1] = p[0] - fy;
              cx[0] = 1 - (p[1] - fx), cx[1] = p[1] - fx;
            }
            int64_t y0 = static_cast<int64_t>(fy) - (taps == 4 ? 1 : 0);
            int64_t x0 = static_cast<int64_t>(fx) - (taps == 4 ? 1 : 0);
            for (int i = 0; i < taps; ++i) {
              for (int j = 0; j < taps; ++j) v += cy[i] * cx[j] * s.Pixel(y0 + i, x0 + j);
            }
          }
          out[((n * c_ + c) * ho + oy) * wo + ox] = v;
        }
      }
    }
  }
  return TensorVec{FromDoubles(node.output(0)->type(), out)};
}

absl::StatusOr<TensorVec> EvalRoiAlign(const graph::Node& node, const TensorVec& in) {
  const Shape& xs = in[0]->type.shape;
  std::vector<double> x = ToDoubles(*in[0]);
  std::vector<double> rois = ToDoubles(*in[1]);
  const Tensor& batch = *in[2];
  const graph::RoiAlignAttrs a = graph::RoiAlignAttrs::Of(node);
  bool avg = a.mode == graph::RoiAlignMode::kAvg;
  bool half_pixel = a.coordinate_transformation_mode == CoordinateTransform::kHalfPixel;
  int64_t oh = a.output_height, ow = a.output_width;
  int64_t ratio = a.sampling_ratio;
  double scale = a.spatial_scale;
  int64_t r_ = in[1]->type.shape[0], c_ = xs[1], h = xs[2], w = xs[3];
  std::vector<double> out(r_ * c_ * oh * ow, 0.0);
  for (int64_t r = 0; r < r_; ++r) {
    int64_t b = batch.GetAsInt64(r);
    if (b < 0 || b >= xs[0]) {
      return absl::InvalidArgumentError(NodePrefix(node) + "batch index out of range");
    }
    double offset = half_pixel ? 0.5 : 0.0;
    double x1 = rois[r * 4] * scale - offset, y1 = rois[r * 4 + 1] * scale - offset;
    double x2 = rois[r * 4 + 2] * scale - offset, y2 = rois[r * 4 + 3] * scale - offset;
    double rw = x2 - x1, rh = y2 - y1;
    if (!half_pixel) {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    double bh = rh / static_cast<double>(oh), bw = rw / static_cast<double>(ow);
    int64_t gh = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(rh / static_cast<double>(oh)));
    int64_t gw = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(rw / static_cast<double>(ow)));
    double count = static_cast<double>(std::max<int64_t>(gh * gw, 1));
    for (int64_t c = 0; c < c_; ++c) {
      const double* img = &x[(b * c_ + c) * h * w];
      for (int64_t ph = 0; ph < oh; ++ph) {
        for (int64_t pw = 0; pw < ow; ++pw) {
          double acc = 0;
          bool first = true;
          for (int64_t iy = 0; iy < gh; ++iy) {
            for (int64_t ix = 0; ix < gw; ++ix) {
              double y = y1 + ph * bh + (iy + 0.5) * bh / static_cast<double>(gh);
              double xx = x1 + pw * bw + (ix + 0.5) * bw / static_cast<double>(gw);
              double v[4] = {0, 0, 0, 0}, wt[4] = {0, 0, 0, 0};
              if (!(y < -1.0 || y > h || xx < -1.0 || xx > w)) {
                y = std::max(y, 0.0);
                xx = std::max(xx, 0.0);
                int64_t yl = static_cast<int64_t>(y), xl = static_cast<int64_t>(xx), yh, xh;
                if (yl >= h - 1) {
                  yh = yl = h - 1;
                  y = static_cast<double>(yl);
                } else {
                  yh = yl + 1;
                }
                if (xl >= w - 1) {
                  xh = xl = w - 1;
                  xx = static_cast<double>(xl);
                } else {
                  xh = xl + 1;
                }
                double ly = y - yl, lx = xx - xl, hy = 1 - ly, hx = 1 - lx;
                wt[0] = hy * hx, wt[1] = hy * lx, wt[2] = ly * hx, wt[3] = ly * lx;
                v[0] = img[yl * w + xl], v[1] = img[yl * w + xh];
                v[2] = img[yh * w + xl], v[3] = img[yh * w + xh];
              }
              if (avg) {
                for (int k = 0; k < 4; ++k) acc += wt[k] * v[k];
              } else {
                double m = std::max({wt[0] * v[0], wt[1] * v[1], wt[2] * v[2], wt[3] * v[3]});
                acc = first ? m : std::max(acc, m);
                first = false;
              }
            }
          }
          out[((r * c_ + c) * oh + ph) * ow + pw] = avg ? acc / count : acc;
        }
      }
    }
  }
  return TensorVec{FromDoubles(node.output(0)->type(), out)};
}

// ResizeTap (ops.def): the coordinate output position `j` maps to.
double ResizeCoordinate(CoordinateTransform coord, double j, int64_t in, double scale) {
  const double width = scale * static_cast<double>(in);  // not the integer size, as the reference
  if (coord == CoordinateTransform::kAlignCorners)
    return width == 1 ? 0.0 : j * static_cast<double>(in - 1) / (width - 1);
  if (coord == CoordinateTransform::kAsymmetric) return j / scale;
  if (coord == CoordinateTransform::kTfHalfPixelForNn) return (j + 0.5) / scale;
  if (coord == CoordinateTransform::kPytorchHalfPixel && width == 1) return -0.5;
  return (j + 0.5) / scale - 0.5;  // half_pixel, pytorch_half_pixel
}

absl::StatusOr<TensorVec> EvalResizeTap(const graph::Node& node, const TensorVec& in) {
  const graph::ResizeTapAttrs t = graph::ResizeTapAttrs::Of(node);
  const int64_t len = t.in, tap = t.tap;
  const ResizeMode mode = t.mode;
  const NearestMode nearest = t.nearest_mode;
  const CoordinateTransform coord = t.coordinate_transformation_mode;
  const double ca = t.cubic_coeff_a;
  const bool exclude = t.exclude_outside, index = t.part == graph::TapPart::kIndex;
  const double scale = in[0]->GetAsDouble(t.axis);
  std::vector<double> values;
  for (int64_t j = 0; j < t.out; ++j) {
    const double x = ResizeCoordinate(coord, static_cast<double>(j), len, scale);
    const double b = std::floor(x), r = x - b;
    std::vector<double> pos, w;
    if (mode == ResizeMode::kNearest) {
      bool up = r > 0 && (nearest == NearestMode::kCeil ||
                          (nearest == NearestMode::kRoundPreferCeil && r >= 0.5) ||
                          (nearest == NearestMode::kRoundPreferFloor && r > 0.5));
      pos = {up ? b + 1 : b};
      w = {1};
    } else if (mode == ResizeMode::kLinear) {
      pos = {b, b + 1};
      w = {1 - r, r};
    } else {
      const double s = 1 - r;
      pos = {b - 1, b, b + 1, b + 2};
      w = {((ca * (r + 1) - 5 * ca) * (r + 1) + 8 * ca) * (r + 1) - 4 * ca,
           ((ca + 2) * r - (ca + 3)) * r * r + 1, ((ca + 2) * s - (ca + 3)) * s * s + 1,
           ((ca * (s + 1) - 5 * ca) * (s + 1) + 8 * ca) * (s + 1) - 4 * ca};
    }
    if (exclude) {
      double sum = 0;
      for (size_t k = 0; k < w.size(); ++k) {
        if (pos[k] < 0 || pos[k] >= static_cast<double>(len)) w[k] = 0;
        sum += w[k];
      }
      for (double& v : w) v /= sum;
    }
    values.push_back(index ? std::clamp(pos[tap], 0.0, static_cast<double>(len - 1)) : w[tap]);
  }
  return TensorVec{FromDoubles(node.output(0)->type(), values)};
}

}  // namespace

absl::StatusOr<TensorVec> EvalSampling(const graph::Node& node, const TensorVec& in) {
  if (node.op() == OpKind::kGridSample) return EvalGridSample(node, in);
  if (node.op() == OpKind::kResizeTap) return EvalResizeTap(node, in);
  return EvalRoiAlign(node, in);
}

}  // namespace kiln::reference
