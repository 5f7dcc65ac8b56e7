// The matmul-u8s8 pass: int32 matrix products of 8-bit operands as u8s8 products on packed
// words (see matmul_u8s8.h).
#include "compiler_core/passes/graph/matmul_u8s8.h"

#include <algorithm>
#include <limits>

#include "compiler_core/ir/graph/matmul_packing.h"
#include "compiler_core/passes/graph/rewrite.h"
#include "compiler_core/passes/graph/u8s8_words.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::passes {
namespace {

using graph::Graph;
using graph::Node;
using graph::OpKind;
using graph::Value;

/// Rewrites `mm` if it matches (see matmul_u8s8.h); returns whether it did.
bool Rewrite(Graph& graph, Node& mm, int64_t nr,
             std::unordered_map<const Value*, Value*>& converted) {
  if (mm.op() != OpKind::kMatMul || mm.attrs().Has("quant") || mm.attrs().Has("b_layout") ||
      mm.output(0)->type().dtype != DType::kInt32) {
    return false;
  }
  const Value* b = mm.input(1);
  if (b == nullptr || !b->is_constant() || b->type().rank() != 2) return false;
  std::optional<u8s8::U8Operand> op = u8s8::MatchU8Operand(mm.input(0));
  if (!op || op->u->type().rank() < 2) return false;
  const int64_t k = b->type().shape[0], n = b->type().shape[1];
  if (k % 4 != 0 || op->u->type().shape.back() != k) return false;

  std::vector<int64_t> sums;
  std::shared_ptr<Tensor> words;
  graph::AttrMap attrs;
  attrs.Set("quant", std::string("u8s8"));
  if (n >= nr) {
    std::shared_ptr<Tensor> panels = graph::PackMatMulB(*b->constant(), nr);
    const int64_t p = panels->type.shape[0];
    words = u8s8::PackWords(*panels, p, k, nr, 1, sums);
    if (words == nullptr) return false;
    words->type.shape = {p, k / 4, nr};
    attrs.Set("b_layout", graph::PackedBLayout(nr));
    attrs.Set("b_cols", n);
  } else {
    words = u8s8::PackWords(*b->constant(), 1, k, n, 1, sums);
    if (words == nullptr) return false;
    words->type.shape = {k / 4, n};
  }
  // -sum_k B[k, n], and the constant part of the correction -za * sum_k B[k, n] (both i32;
  // int32 arithmetic wraps as the int32 product it replaces does).
  auto neg_sums = Tensor::Zeros(TensorType{DType::kInt32, {n}});
  std::shared_ptr<Tensor> corr;
  if (op->zero_point != 0) corr = Tensor::Zeros(TensorType{DType::kInt32, {n}});
  for (int64_t c = 0; c < n; ++c) {
    neg_sums->mutable_data<uint32_t>()[c] = 0u - static_cast<uint32_t>(sums[c]);
    if (corr != nullptr) {
      corr->mutable_data<uint32_t>()[c] =
          static_cast<uint32_t>(op->zero_point) * neg_sums->data<uint32_t>()[c];
    }
  }

  // za * -sum_k B[k, n] for a zero point computed at run time ([n], broadcast over rows), made
  // before the product so that the Add of it can join the product's kernel.
  Value* runtime_corr = nullptr;
  if (op->runtime_zero_point != nullptr) {
    Value* zp = op->runtime_zero_point;
    Value* ns = graph.AddConstant(mm.name() + "_neg_col_sums_u8s8", std::move(neg_sums));
    if (zp->type().rank() > 1) {
      auto shape = Tensor::Zeros(TensorType{DType::kInt64, {1}});
      shape->mutable_data<int64_t>()[0] = 1;
      zp = graph
               .InsertNodeBefore(&mm, OpKind::kReshape, "",
                                 {zp, graph.AddConstant(mm.name() + "_zp_shape", shape)},
                                 {TensorType{DType::kInt32, {1}}}, {})
               ->output(0);
    }
    runtime_corr =
        graph
            .InsertNodeBefore(&mm, OpKind::kMul, "", {zp, ns}, {TensorType{DType::kInt32, {n}}}, {})
            ->output(0);
  }
  Value* u = u8s8::ToUnsigned(graph, mm, op->u, converted);
  Value* a_words = u8s8::BitcastToWords(graph, mm, u);
  Value* bv = graph.AddConstant(b->name() + "_u8s8", std::move(words));
  const TensorType& out = mm.output(0)->type();
  Value* result =
      graph.InsertNodeBefore(&mm, OpKind::kMatMul, mm.name(), {a_words, bv}, {out}, attrs)
          ->output(0);
  auto add = [&](Value* v) {
    result = graph.InsertNodeBefore(&mm, OpKind::kAdd, "", {result, v}, {out}, {})->output(0);
  };
  if (corr != nullptr) add(graph.AddConstant(mm.name() + "_zero_point_u8s8", std::move(corr)));
  if (runtime_corr != nullptr) add(runtime_corr);
  u8s8::ReplaceContraction(graph, mm, result, op->chain);
  return true;
}

}  // namespace

absl::StatusOr<bool> MatMulU8S8::Run(Graph& graph) {
  KILN_RETURN_IF_ERROR(CheckRunsBeforeFusion(graph, name()));
  if (!options_.int8_dot4) return false;
  const int64_t nr = 2 * std::max(1, options_.f32_lanes);
  bool changed = false;
  std::unordered_map<const Value*, Value*> converted;  // i8 values made uint8
  for (Node* node : graph.nodes()) changed |= Rewrite(graph, *node, nr, converted);
  return changed;
}

}  // namespace kiln::passes
