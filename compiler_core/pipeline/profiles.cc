// MergeProfilePlans: one artifact holding a model's kernel plans for several shape profiles.
#include "compiler_core/pipeline/profiles.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace kiln::pipeline {
namespace {

constexpr size_t kAlignment = 64;

// The specs of `a` with every dim that differs in `b` set to -1.
void MarkVaryingDims(google::protobuf::RepeatedPtrField<kiln::v1::TensorSpec>& a,
                     const google::protobuf::RepeatedPtrField<kiln::v1::TensorSpec>& b) {
  for (int i = 0; i < a.size() && i < b.size(); ++i) {
    for (int d = 0; d < a[i].shape_size() && d < b[i].shape_size(); ++d) {
      if (a[i].shape(d) != b[i].shape(d)) a[i].set_shape(d, -1);
    }
  }
}

}  // namespace

KernelPlan MergeProfilePlans(std::vector<KernelPlan> plans) {
  KernelPlan merged;
  kiln::v1::Manifest& m = merged.manifest;
  std::vector<std::pair<size_t, size_t>> placed;  // (offset, size) of each profile's weights
  for (size_t k = 0; k < plans.size(); ++k) {
    KernelPlan& plan = plans[k];
    const std::string prefix = absl::StrCat("p", k, "_");
    // Weights: shared with an earlier profile when identical, else appended (64-byte aligned).
    int64_t base = -1;
    for (const auto& [offset, size] : placed) {
      if (merged.weights.compare(offset, size, plan.weights) == 0) {
        base = static_cast<int64_t>(offset);
      }
    }
    if (base < 0) {
      base = static_cast<int64_t>(merged.weights.size());
      placed.emplace_back(merged.weights.size(), plan.weights.size());
      merged.weights.append(plan.weights);
      merged.weights.resize((merged.weights.size() + kAlignment - 1) / kAlignment * kAlignment,
                            '\0');
    }
    kiln::v1::Manifest profile = std::move(plan.manifest);
    profile.set_weights_bytes(0);  // the weights section is the artifact's, not the profile's
    RelocateCalls(profile, prefix, base);
    for (loop::Func& func : plan.funcs) {
      func.name = prefix + func.name;
      merged.funcs.push_back(std::move(func));
    }
    if (k == 0) {
      *m.mutable_inputs() = profile.inputs();
      *m.mutable_outputs() = profile.outputs();
    } else {
      MarkVaryingDims(*m.mutable_inputs(), profile.inputs());
      MarkVaryingDims(*m.mutable_outputs(), profile.outputs());
    }
    *m.add_profiles() = std::move(profile);
  }
  m.set_weights_bytes(static_cast<int64_t>(merged.weights.size()));
  return merged;
}

}  // namespace kiln::pipeline
