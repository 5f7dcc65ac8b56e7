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
