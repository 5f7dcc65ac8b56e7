// LowerGroup: validates a fusion group, binds its buffers and dispatches the anchor to its op
// family's lowering; LowerCopy: the copy kernel for aliased graph outputs.
#include "compiler_core/lowering/lower.h"

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/nn_op_rules.h"
#include "compiler_core/lowering/kernel_builder.h"
#include "compiler_core/lowering/op_lowering.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::lowering {
namespace {

using graph::FusionClass;
using graph::OpKind;

absl::StatusOr<std::vector<loop::Stmt>> LowerAnchor(KernelBuilder& b, const graph::Node& node,
                                                    const Epilogue& epi) {
  switch (node.op()) {
    case OpKind::kConv:
      return LowerConv(b, node, epi);
    case OpKind::kGemm: case OpKind::kMatMul:
      return LowerMatMul(b, node, epi);
    case OpKind::kMaxPool: case OpKind::kAveragePool: case OpKind::kGlobalAveragePool:
    case OpKind::kGlobalMaxPool: case OpKind::kLpPool: case OpKind::kGlobalLpPool:
      return LowerPool(b, node, epi);
    case OpKind::kSoftmax: case OpKind::kLogSoftmax:
      return LowerSoftmax(b, node, epi);
    case OpKind::kTopK:
      return LowerTopK(b, node, epi);
    case OpKind::kLayoutTransform:
      return LowerLayoutTransform(b, node, epi);
    case OpKind::kBitcast:
      return LowerBitcast(b, node, epi);
    case OpKind::kFlatten: case OpKind::kReshape: case OpKind::kSqueeze: case OpKind::kUnsqueeze:
    case OpKind::kTranspose: case OpKind::kConcat: case OpKind::kPad: case OpKind::kGather:
    case OpKind::kSlice:
      return LowerDataMovement(b, node, epi);
    case OpKind::kShape: case OpKind::kConstant:
      return NoLowering(node, "this op (it must be folded before lowering)");
    default:
      if (graph::IsNnOp(node.op())) return LowerNnOp(b, node, epi);
      if (node.info().fusion_class == FusionClass::kElementwise ||
          node.info().fusion_class == FusionClass::kBroadcast) {
        return LowerElementwiseAnchor(b, node, epi);
      }
      return LowerTensorOp(b, node, epi);
  }
}

// Whether some input or output of `node` has a symbolic dim.
bool HasSymbolicType(const graph::Node& node) {
  for (const graph::Value* v : node.inputs()) {
    if (v != nullptr && !v->type().is_static()) return true;
  }
  for (const graph::Value* v : node.outputs()) {
    if (v != nullptr && !v->type().is_static()) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<LoweredKernel> LowerGroup(const std::vector<const graph::Node*>& nodes,
                                         const std::string& kernel_name,
                                         const KernelSymbols* symbols) {
  if (nodes.empty()) return absl::InvalidArgumentError("cannot lower an empty fusion group");
  const graph::Node& anchor = *nodes[0];
  for (size_t i = 1; i < nodes.size(); ++i) {
    FusionClass fc = nodes[i]->info().fusion_class;
    if (fc != FusionClass::kElementwise && fc != FusionClass::kBroadcast) {
      return NoLowering(*nodes[i], "a fused consumer that is not elementwise");
    }
    if (nodes[i]->output(0)->type().dims() != anchor.output(0)->type().dims()) {
      return NoLowering(*nodes[i], "a fused consumer that changes the shape");
    }
  }
  if (HasSymbolicType(anchor) && !graph::SupportsSymbolic(anchor.op(), graph::kSymLower)) {
    return NoLowering(anchor, "symbolic dims (its lowering reads static shapes)");
  }
  for (const graph::Node* n : nodes) {
    for (size_t k = 1; k < n->outputs().size(); ++k) {
      if (n->output(k) != nullptr && n->op() != OpKind::kMaxPool && n->op() != OpKind::kTopK &&
          n->op() != OpKind::kUnique &&
          n->op() != OpKind::kBatchNormalization && n->op() != OpKind::kDropout) {
        return NoLowering(*n, "multiple outputs");
      }
    }
  }
  KernelBuilder b(kernel_name, anchor.op(), symbols);
  b.Output(nodes.back()->output(0));
  std::vector<const graph::Node*> consumers(nodes.begin() + 1, nodes.end());
  Epilogue epi(b, anchor.output(0), consumers);
  KILN_ASSIGN_OR_RETURN(std::vector<loop::Stmt> nests, LowerAnchor(b, anchor, epi));
  KILN_RETURN_IF_ERROR(b.SymbolStatus());
  return b.Finish(std::move(nests));
}

absl::StatusOr<LoweredKernel> LowerCopy(const graph::Value* source, const graph::Value* result,
                                        const std::string& kernel_name,
                                        const KernelSymbols* symbols) {
  if (!source->type().is_static() || !result->type().is_static()) {
    // Symbolic: a copy of the same dims up to size-1 dims (an output that is an input, listed
    // twice, or a view that only drops or adds 1s, such as Flatten after a global pool).
    auto non_unit = [](const TensorType& t) {
      std::vector<sym::Expr> kept;
      for (size_t d = 0; d < t.shape.size(); ++d) {
        if (t.shape[d] != 1) kept.push_back(t.dim(static_cast<int64_t>(d)));
      }
      return kept;
    };
    if (non_unit(source->type()) != non_unit(result->type()) ||
        source->type().dtype != result->type().dtype) {
      return absl::UnimplementedError(absl::StrCat("cannot copy ", source->type().ToString(),
                                                   " into ", result->type().ToString(),
                                                   " (a reshape over symbolic dims)"));
    }
    KernelBuilder b(kernel_name, OpKind::kIdentity, symbols);
    loop::BufferRef out = b.Output(result);
    loop::BufferRef in = b.Input(source);
    std::vector<loop::Var> vars = b.NewVars("", AxisNames(out->shape.size()));
    std::vector<loop::Expr> idx = Refs(vars);
    std::vector<loop::Expr> in_idx;
    size_t next = 0;  // the output's next dim that is not a static 1
    for (int64_t n : source->type().shape) {
      if (n == 1) {
        in_idx.push_back(Idx(0));
        continue;
      }
      while (result->type().shape[next] == 1) ++next;
      in_idx.push_back(idx[next++]);
    }
    loop::Stmt nest = NestDims(vars, loop::BufferDims(*out),
                               loop::Store(out, idx, loop::Load(in, in_idx)));
    KILN_RETURN_IF_ERROR(b.SymbolStatus());
    return b.Finish({nest});
  }
  if (source->type().NumElements() != result->type().NumElements() ||
      source->type().dtype != result->type().dtype) {
    return absl::InvalidArgumentError(absl::StrCat("cannot copy ", source->type().ToString(),
                                                   " into ", result->type().ToString()));
  }
  KernelBuilder b(kernel_name, OpKind::kIdentity);
  loop::BufferRef out = b.Output(result);
  loop::BufferRef in = b.Input(source);
  const std::vector<int64_t>& os = result->type().shape;
  std::vector<loop::Var> vars = b.NewVars("", AxisNames(os.size()));
  std::vector<loop::Expr> idx = Refs(vars);
  loop::Stmt body = loop::Store(out, idx, loop::Load(in, ReshapeIndices(source->type().shape,
                                                                        os, idx)));
  return b.Finish({Nest(vars, os, body)});
}

}  // namespace kiln::lowering
