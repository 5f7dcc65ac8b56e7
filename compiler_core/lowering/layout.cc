// LayoutTransform between NC[spatial] and the blocked NC[spatial]<x>c layout: one nest over the
// output. Blocking reads channel cb*x + c through a clamped index under a select (zeros for the
// padded channels, never an out-of-bounds load); unblocking reads lane c % x of block c / x.
// N and the spatial dims may be symbolic (the loops run to the dims the kernel receives).
// Bitcast of 8-bit elements to i32 words (a view unless it must be copied) assembles each word.
#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/layout_rules.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/lowering/op_lowering.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::lowering {

using loop::BinaryOp;
using loop::Expr;

absl::StatusOr<std::vector<loop::Stmt>> LowerLayoutTransform(KernelBuilder& b,
                                                             const graph::Node& node,
                                                             const Epilogue& epi) {
  KILN_RETURN_IF_ERROR(epi.CheckSameDType(node));
  const std::vector<int64_t>& xs = node.input(0)->type().shape;
  const DType dt = node.output(0)->type().dtype;
  const int64_t dst = graph::LayoutBlock(graph::LayoutTransformAttrs::Of(node).dst_layout);
  loop::BufferRef x = b.Input(node.input(0));
  loop::BufferRef out = b.out();
  const size_t nsp = xs.size() - (dst > 0 ? 2 : 3);
  std::vector<std::string> names = {"n", dst > 0 ? "cb" : "c"};
  for (const std::string& s : SpatialNames("", nsp)) names.push_back(s);
  if (dst > 0) names.push_back("c");
  std::vector<loop::Var> vars = b.NewVars("", names);
  std::vector<Expr> idx = Refs(vars);
  std::vector<Expr> in_idx = {idx[0]};
  Expr value;
  if (dst > 0) {
    const int64_t channels = xs[1];
    Expr c = IdxAdd(IdxMul(idx[1], dst), idx.back());
    in_idx.push_back(channels % dst == 0 ? c : IdxClamp(c, channels));
    for (size_t d = 0; d < nsp; ++d) in_idx.push_back(idx[2 + d]);
    value = loop::Load(x, in_idx);
    if (channels % dst != 0) {
      value = loop::Select(loop::Binary(BinaryOp::kLt, c, Idx(channels)), value, Const(0, dt));
    }
  } else {
    const int64_t block = xs.back();
    in_idx.push_back(loop::Binary(BinaryOp::kFloorDiv, idx[1], Idx(block)));
    for (size_t d = 0; d < nsp; ++d) in_idx.push_back(idx[2 + d]);
    in_idx.push_back(loop::Binary(BinaryOp::kFloorMod, idx[1], Idx(block)));
    value = loop::Load(x, in_idx);
  }
  KILN_ASSIGN_OR_RETURN(value, epi.Apply(value, idx));
  return std::vector<loop::Stmt>{NestDims(vars, loop::BufferDims(*out), loop::Store(out, idx, value))};
}

absl::StatusOr<std::vector<loop::Stmt>> LowerBitcast(KernelBuilder& b, const graph::Node& node,
                                                     const Epilogue& epi) {
  const TensorType& in = node.input(0)->type();
  const TensorType& ot = node.output(0)->type();
  if (DTypeSize(in.dtype) != 1 || ot.dtype != DType::kInt32 || !epi.empty()) {
    return NoLowering(node, "a bitcast other than 8-bit elements to i32 words");
  }
  // out[..., j] = sum over k of zext(in[..., 4j + k]) << 8k: the little-endian word.
  loop::BufferRef x = b.Input(node.input(0));
  loop::BufferRef out = b.out();
  std::vector<std::string> names;
  for (size_t d = 0; d < ot.shape.size(); ++d) names.push_back(absl::StrCat("d", d));
  std::vector<loop::Var> vars = b.NewVars("", names);
  std::vector<Expr> idx = Refs(vars);
  Expr value;
  for (int64_t k = 0; k < 4; ++k) {
    std::vector<Expr> in_idx = idx;
    in_idx.back() = IdxAdd(IdxMul(idx.back(), 4), k);
    Expr byte = loop::Cast(DType::kInt32, loop::Cast(DType::kUInt8, loop::Load(x, in_idx)));
    if (k > 0) byte = loop::Binary(BinaryOp::kShl, byte, Const(8 * k, DType::kInt32));
    value = value ? value + byte : byte;
  }
  return std::vector<loop::Stmt>{Nest(vars, ot.shape, loop::Store(out, idx, value))};
}

}  // namespace kiln::lowering
