// Reference kernel of Det: the determinant of each [M, M] matrix of a [*, M, M] input by
// Gaussian elimination with partial pivoting, in double (onnx.ai/onnx/operators Det-11).
#include <cmath>
#include <utility>

#include "compiler_core/reference/eval_internal.h"

namespace kiln::reference {

absl::StatusOr<TensorVec> EvalDet(const graph::Node& node, const TensorVec& in) {
  const Tensor& x = *in[0];
  const Shape& xs = x.type.shape;
  int64_t m = xs.back();
  int64_t count = m == 0 ? 0 : x.type.NumElements() / (m * m);
  std::vector<double> all = ToDoubles(x);
  std::vector<double> det(count, 1.0);
  for (int64_t b = 0; b < count; ++b) {
    std::vector<double> a(all.begin() + b * m * m, all.begin() + (b + 1) * m * m);
    double d = 1.0;
    for (int64_t k = 0; k < m; ++k) {
      int64_t piv = k;
      for (int64_t i = k + 1; i < m; ++i) {
        if (std::fabs(a[i * m + k]) > std::fabs(a[piv * m + k])) piv = i;
      }
      if (piv != k) {
        for (int64_t j = 0; j < m; ++j) std::swap(a[k * m + j], a[piv * m + j]);
        d = -d;
      }
      double p = a[k * m + k];
      d *= p;
      if (p == 0) break;
      for (int64_t i = k + 1; i < m; ++i) {
        double f = a[i * m + k] / p;
        for (int64_t j = k; j < m; ++j) a[i * m + j] -= f * a[k * m + j];
      }
    }
    det[b] = d;
  }
  return TensorVec{FromDoubles(node.output(0)->type(), det)};
}

}  // namespace kiln::reference
