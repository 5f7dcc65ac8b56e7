// Shape profiles in one artifact: the kernel plans of one model compiled at several sets of
// input shapes, merged into one plan whose manifest holds one manifest per profile.
#ifndef KILN_COMPILER_CORE_PIPELINE_PROFILES_H_
#define KILN_COMPILER_CORE_PIPELINE_PROFILES_H_

#include <vector>

#include "compiler_core/pipeline/kernel_plan.h"

namespace kiln::pipeline {

/// Merges `plans` (one per shape profile, in profile order, each with its manifest's
/// graph_hash set) into one plan: profile K's kernels are renamed "p<K>_<name>" (their init
/// entry points follow), all kernels go into `funcs` in profile order, the weights are
/// concatenated (a profile whose packed weights equal an earlier profile's shares them) with
/// WEIGHT offsets shifted, and the manifest lists each profile's manifest in `profiles`. The
/// merged manifest's inputs and outputs are the profiles' with -1 for every dim that differs;
/// the caller sets its graph hash, target, versions and names. `plans` must agree in the
/// names, dtypes and ranks of their inputs and outputs (they come from one model).
KernelPlan MergeProfilePlans(std::vector<KernelPlan> plans);

}  // namespace kiln::pipeline

#endif  // KILN_COMPILER_CORE_PIPELINE_PROFILES_H_
