// Reference kernel of TfIdfVectorizer over integer tokens (onnx.ai/onnx/operators
// TfIdfVectorizer-9; onnx/reference/ops/op_tfidf_vectorizer.py): every n-gram of the pool is
// counted over each row, for every skip in [0, max_skip_count] (unigrams once), then the mode
// weights the counts.
#include <algorithm>

#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/reference/eval_internal.h"

namespace kiln::reference {

absl::StatusOr<TensorVec> EvalTfIdfVectorizer(const graph::Node& node, const TensorVec& in) {
  const Tensor& x = *in[0];
  const Tensor& pool = *in[1];
  const Tensor& lengths = *in[2];
  const Tensor& indexes = *in[3];
  const std::vector<double> weights = ToDoubles(*in[4]);
  const Shape& xs = x.type.shape;
  const int64_t rows = xs.size() == 2 ? xs[0] : 1;
  const int64_t cols = xs.back();
  const int64_t num = pool.type.shape[0], width = pool.type.shape[1];
  const int64_t outs = static_cast<int64_t>(weights.size());
  const graph::TfIdfVectorizerAttrs a = graph::TfIdfVectorizerAttrs::Of(node);
  const int64_t min_n = a.min_gram_length;
  const int64_t max_n = a.max_gram_length;
  const int64_t max_skip = a.max_skip_count;
  const graph::TfIdfMode mode = a.mode;
  std::vector<double> count(static_cast<size_t>(rows * outs), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < num; ++j) {
      const int64_t n = lengths.GetAsInt64(j);
      const int64_t o = indexes.GetAsInt64(j);
      if (n < min_n || n > max_n || o < 0 || o >= outs) continue;
      for (int64_t skip = 0; skip <= (n == 1 ? 0 : max_skip); ++skip) {
        for (int64_t i = 0; i + (n - 1) * (skip + 1) < cols; ++i) {
          bool match = true;
          for (int64_t k = 0; k < n && match; ++k) {
            match = x.GetAsInt64(r * cols + i + k * (skip + 1)) == pool.GetAsInt64(j * width + k);
          }
          if (match) count[r * outs + o] += 1;
        }
      }
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < outs; ++o) {
      double& c = count[r * outs + o];
      if (mode == graph::TfIdfMode::kIDF) c = std::min(c, 1.0) * weights[o];
      if (mode == graph::TfIdfMode::kTFIDF) c *= weights[o];
    }
  }
  return TensorVec{FromDoubles(node.output(0)->type(), count)};
}

}  // namespace kiln::reference
