// OpInfo table generated from ops.def.
#include "compiler_core/ir/graph/op.h"

#include <iterator>

namespace kiln::graph {
namespace {

constexpr OpInfo kOpInfos[] = {
#define KILN_OP(kind, name, fusion, min_in, max_in, n_out, sym) \
  {OpKind::kind, name, FusionClass::fusion, min_in, max_in, n_out, sym},
#include "compiler_core/ir/graph/ops.def"
#undef KILN_OP
};

}  // namespace

const OpInfo& GetOpInfo(OpKind kind) { return kOpInfos[static_cast<int>(kind)]; }

bool SupportsSymbolic(OpKind kind, SymbolicSupport support) {
  return (GetOpInfo(kind).symbolic & support) == support;
}

std::optional<OpKind> OpKindFromName(std::string_view name) {
  for (const OpInfo& info : kOpInfos) {
    if (name == info.name) return info.kind;
  }
  return std::nullopt;
}

bool IsViewOp(OpKind kind) {
  return kind == OpKind::kReshape || kind == OpKind::kFlatten || kind == OpKind::kSqueeze ||
         kind == OpKind::kUnsqueeze || kind == OpKind::kIdentity || kind == OpKind::kBitcast;
}

bool IsTensorOp(OpKind kind) {
  switch (kind) {
#define KILN_OP(kind, name, fusion, min_in, max_in, n_out, sym)
#define KILN_NN_OP(kind, name, fusion, min_in, max_in, n_out, sym)
#define KILN_TENSOR_OP(kind, name, fusion, min_in, max_in, n_out, sym) case OpKind::kind:
#include "compiler_core/ir/graph/ops.def"
#undef KILN_TENSOR_OP
#undef KILN_NN_OP
#undef KILN_OP
      return true;
    default:
      return false;
  }
}

bool IsNnOp(OpKind kind) {
  switch (kind) {
#define KILN_OP(kind, name, fusion, min_in, max_in, n_out, sym)
#define KILN_TENSOR_OP(kind, name, fusion, min_in, max_in, n_out, sym)
#define KILN_NN_OP(kind, name, fusion, min_in, max_in, n_out, sym) case OpKind::kind:
#include "compiler_core/ir/graph/ops.def"
#undef KILN_NN_OP
#undef KILN_TENSOR_OP
#undef KILN_OP
      return true;
    default:
      return false;
  }
}

const char* FusionClassName(FusionClass fusion_class) {
  switch (fusion_class) {
    case FusionClass::kElementwise: return "elementwise";
    case FusionClass::kBroadcast: return "broadcast";
    case FusionClass::kInjective: return "injective";
    case FusionClass::kReduction: return "reduction";
    case FusionClass::kOutEwiseFusable: return "out-ewise-fusable";
    case FusionClass::kOpaque: return "opaque";
  }
  return "?";
}

}  // namespace kiln::graph
