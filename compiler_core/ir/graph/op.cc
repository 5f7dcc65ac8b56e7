// OpInfo table generated from ops.def.
#include "compiler_core/ir/graph/op.h"

#include <iterator>

namespace kiln::graph {
namespace {

constexpr OpInfo kOpInfos[] = {
#define KILN_OP(kind, name, fusion, min_in, max_in, n_out) \
  {OpKind::kind, name, FusionClass::fusion, min_in, max_in, n_out},
#include "compiler_core/ir/graph/ops.def"
#undef KILN_OP
};

}  // namespace

const OpInfo& GetOpInfo(OpKind kind) { return kOpInfos[static_cast<int>(kind)]; }

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
#define KILN_OP(kind, name, fusion, min_in, max_in, n_out)
#define KILN_NN_OP(kind, name, fusion, min_in, max_in, n_out)
#define KILN_TENSOR_OP(kind, name, fusion, min_in, max_in, n_out) case OpKind::kind:
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
#define KILN_OP(kind, name, fusion, min_in, max_in, n_out)
#define KILN_TENSOR_OP(kind, name, fusion, min_in, max_in, n_out)
#define KILN_NN_OP(kind, name, fusion, min_in, max_in, n_out) case OpKind::kind:
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
