// Packing and unpacking of matmul B panels (see matmul_packing.h).
#include "compiler_core/ir/graph/matmul_packing.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/op_attrs.h"

namespace kiln::graph {

std::string PackedBLayout(int64_t nr) { return absl::StrCat("packed", nr); }

namespace {

// The packed-B attributes of a MatMul or Gemm (op_attrs.def declares them on both).
std::pair<std::string, int64_t> PackedB(const Node& node) {
  if (node.op() == OpKind::kGemm) {
    const GemmAttrs a = GemmAttrs::Of(node);
    return {a.b_layout, a.b_cols};
  }
  const MatMulAttrs a = MatMulAttrs::Of(node);
  return {a.b_layout, a.b_cols};
}

}  // namespace

int64_t PackedBPanelWidth(const Node& node) {
  const std::string layout = PackedB(node).first;
  if (layout.empty()) return 0;
  int64_t nr = 0;
  if (!absl::StartsWith(layout, "packed") ||
      !absl::SimpleAtoi(absl::string_view(layout).substr(6), &nr) || nr <= 0) {
    return -1;
  }
  return nr;
}

int64_t PackedBCols(const Node& node) { return PackedB(node).second; }

std::shared_ptr<Tensor> PackMatMulB(const Tensor& b, int64_t nr) {
  const int64_t k = b.type.shape[0], n = b.type.shape[1];
  const int64_t panels = (n + nr - 1) / nr;
  const size_t es = DTypeSize(b.type.dtype);
  auto out = Tensor::Zeros(TensorType{b.type.dtype, {panels, k, nr}});
  for (int64_t p = 0; p < panels; ++p) {
    const int64_t width = std::min(nr, n - p * nr);
    for (int64_t kk = 0; kk < k; ++kk) {
      std::memcpy(out->bytes.data() + ((p * k + kk) * nr) * es,
                  b.bytes.data() + (kk * n + p * nr) * es, width * es);
    }
  }
  return out;
}

std::shared_ptr<Tensor> UnpackMatMulB(const Tensor& packed, int64_t n) {
  const int64_t panels = packed.type.shape[0], k = packed.type.shape[1];
  const int64_t nr = packed.type.shape[2];
  const size_t es = DTypeSize(packed.type.dtype);
  auto out = Tensor::Zeros(TensorType{packed.type.dtype, {k, n}});
  for (int64_t p = 0; p < panels; ++p) {
    const int64_t width = std::min(nr, n - p * nr);
    if (width <= 0) break;
    for (int64_t kk = 0; kk < k; ++kk) {
      std::memcpy(out->bytes.data() + (kk * n + p * nr) * es,
                  packed.bytes.data() + ((p * k + kk) * nr) * es, width * es);
    }
  }
  return out;
}

}  // namespace kiln::graph
