// The kernels of a model as the tuner sees them: each kernel's workload (its lowered,
// unscheduled loop IR and key), what it fuses, its FLOPs, and how often it occurs.
#ifndef KILN_COMPILER_CORE_PIPELINE_WORKLOADS_H_
#define KILN_COMPILER_CORE_PIPELINE_WORKLOADS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/ir/loop/loop_ir.h"
#include "compiler_core/pipeline/compile.h"

namespace kiln::pipeline {

/// One distinct workload of a model.
struct ModelWorkload {
  std::string workload_key;
  loop::Func lowered;            // the first kernel with this key, as lowered (unscheduled)
  std::vector<std::string> symbols;  // every kernel of the model with this key ("kernel_3")
  std::string fused_ops;         // of the first such kernel, e.g. "Conv+Add+Relu"
  int64_t flops = 0;             // per call (tuning::CountFlops)
};

/// Plans `model_path` with `options` (PlanModelFile: no code generation) and returns its
/// distinct workloads in order of first kernel, together with the target they were lowered for
/// (via `target`, when not null). Errors: those of PlanModelFile.
absl::StatusOr<std::vector<ModelWorkload>> ExtractWorkloads(const std::string& model_path,
                                                            const CompileOptions& options,
                                                            Target* target = nullptr);
/// The same for a model imported by `import` (PlanImported). Errors: those of PlanImported.
absl::StatusOr<std::vector<ModelWorkload>> ExtractImportedWorkloads(const GraphImporter& import,
                                                                    const CompileOptions& options,
                                                                    Target* target = nullptr);
/// The same for an imported graph (PlanGraph). Errors: those of PlanGraph.
absl::StatusOr<std::vector<ModelWorkload>> ExtractGraphWorkloads(
    std::unique_ptr<graph::Graph> graph, const CompileOptions& options, Target* target = nullptr);

}  // namespace kiln::pipeline

#endif  // KILN_COMPILER_CORE_PIPELINE_WORKLOADS_H_
