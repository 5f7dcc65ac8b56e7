// Builder of TfIdfVectorizer (opset 9) over integer tokens: the pool attributes become constant
// tables (pool [J, L] i64 zero-padded, lengths [J], indexes [J]) and per-output-column weights
// [O] f32 (default 1), O = max(ngram_indexes) + 1. String pools (and string tensors) are not
// supported.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "compiler_core/importer/onnx/import_context.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::importer {

using graph::AttrMap;
using graph::OpKind;
using graph::Value;

absl::StatusOr<BuiltOutputs> BuildTfIdfVectorizer(ImportContext& ctx, const OnnxNode& node) {
  if (node.attrs.Has("pool_strings")) {
    return absl::UnimplementedError(node.Prefix() +
                                    "string pools are not supported: Kiln "
                                    "compiles numeric tensors only");
  }
  KILN_ASSIGN_OR_RETURN(const graph::TfIdfVectorizerAttrs a,
                        graph::TfIdfVectorizerAttrs::Parse(node.attrs, node.Prefix()));
  const std::vector<int64_t>& pool = a.pool_int64s;
  const std::vector<int64_t>& starts = a.ngram_counts;
  const std::vector<int64_t>& indexes = a.ngram_indexes;
  const std::vector<float>& weights = a.weights;
  const int64_t size = static_cast<int64_t>(pool.size());
  // The pool's n-grams in order: (first token offset, n).
  std::vector<std::pair<int64_t, int64_t>> grams;
  for (size_t k = 0; k < starts.size(); ++k) {
    const int64_t n = static_cast<int64_t>(k) + 1;
    const int64_t begin = starts[k];
    const int64_t end = k + 1 < starts.size() ? starts[k + 1] : size;
    if (begin < 0 || end < begin || end > size || (end - begin) % n != 0) {
      return absl::InvalidArgumentError(
          node.Prefix() + absl::StrCat("ngram_counts ", k, " gives pool_int64s [", begin, ", ", end,
                                       "), which is not a whole number of ", n,
                                       "-grams in a pool of ", size));
    }
    for (int64_t g = begin; g < end; g += n) grams.push_back({g, n});
  }
  if (grams.empty()) {
    return absl::UnimplementedError(node.Prefix() + "an empty n-gram pool");
  }
  if (indexes.size() != grams.size() || (!weights.empty() && weights.size() != grams.size())) {
    return absl::InvalidArgumentError(
        node.Prefix() + absl::StrCat("the pool holds ", grams.size(),
                                     " n-grams but ngram_indexes has ", indexes.size(),
                                     " entries and weights ", weights.size()));
  }
  int64_t width = 1, outs = 0;
  for (const auto& [g, n] : grams) width = std::max(width, n);
  for (int64_t o : indexes) {
    if (o < 0) return absl::InvalidArgumentError(node.Prefix() + "a negative ngram_indexes entry");
    outs = std::max(outs, o + 1);
  }
  const int64_t num = static_cast<int64_t>(grams.size());
  std::vector<int64_t> table(static_cast<size_t>(num * width), 0), lengths;
  std::vector<double> column_weights(static_cast<size_t>(outs), 1.0);
  for (int64_t j = 0; j < num; ++j) {
    const auto [g, n] = grams[j];
    for (int64_t k = 0; k < n; ++k) table[j * width + k] = pool[g + k];
    lengths.push_back(n);
    if (!weights.empty()) column_weights[indexes[j]] = weights[j];
  }
  const std::string& nm = node.name;
  Value* pool_table = ctx.ConstI64(nm + "/pool", table);
  KILN_ASSIGN_OR_RETURN(pool_table, ctx.EmitReshape(nm + "/pool_rows", pool_table, {num, width}));
  AttrMap attrs;
  attrs.Set("min_gram_length", a.min_gram_length);
  attrs.Set("max_gram_length", a.max_gram_length);
  attrs.Set("max_skip_count", a.max_skip_count);
  attrs.Set("mode", std::string(graph::AttrEnumName(a.mode)));
  return Single(
      ctx.Emit(OpKind::kTfIdfVectorizer, nm,
               {node.input(0), pool_table, ctx.ConstI64(nm + "/lengths", lengths),
                ctx.ConstI64(nm + "/indexes", indexes),
                ctx.ConstFloats(nm + "/weights", DType::kFloat32, {outs}, column_weights)},
               attrs));
}

}  // namespace kiln::importer
