// The one entry point of compiler_core: CompileOptions + model + target → artifact.
// Stages: import → graph passes → lowering of each fused group → schedule → LLVM codegen →
// memory planning → artifact.
#ifndef KILN_COMPILER_CORE_PIPELINE_COMPILE_H_
#define KILN_COMPILER_CORE_PIPELINE_COMPILE_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/importer/onnx/importer.h"
#include "compiler_core/importer/onnx/input_shapes.h"
#include "compiler_core/ir/graph/graph.h"
#include "compiler_core/passes/graph/bounded_dims.h"
#include "compiler_core/pipeline/compiler_version.h"
#include "compiler_core/pipeline/kernel_plan.h"
#include "compiler_core/runtime/artifact.h"
#include "compiler_core/schedule/schedule_source.h"
#include "compiler_core/support/stage_timer.h"
#include "compiler_core/support/target.h"

namespace kiln::pipeline {

/// Options of one compile. No global state: everything a compile depends on is here.
struct CompileOptions {
  /// Target spec: "host", "cpu:<llvm cpu name>" or "cuda:sm_NN" (see kiln::ResolveTarget).
  std::string target = "host";
  /// Matmul and conv precision on a cuda target (`--precision`): "fp32" (the default, CUDA
  /// cores), or tensor cores with inputs rounded to "tf32", "fp16" or "bf16" and f32
  /// accumulation (Target::gpu.precision; part of the target key, so of the cache key).
  std::string precision = "fp32";
  /// Shapes of graph inputs with symbolic dims (`--input-shape`), used by the import of
  /// CompileModelFile / CompileProfiles / PlanModelFile: one InputShapes per shape profile
  /// (importer::ProfilesOf). They become the graph's static input shapes, so they are part of
  /// the graph hash: two shapes are two artifacts, and several profiles are one artifact with
  /// a variant per profile.
  importer::ShapeProfiles shape_profiles;
  /// Bounded dims (`--input-shape x=1..4,1..64,256`): per input, the minimum of every dim, for
  /// the one profile in `shape_profiles`, which holds the maximums. Empty: no bounded dim. The
  /// graph is compiled at the maximums with every bounded dim's length read at run time
  /// (passes::BoundDims); the artifact's Manifest.bound_symbols give the ranges.
  importer::InputShapes bounded_min_shapes;
  /// Graph inputs compiled as constants (`--constant-input NAME=FILE.pb`): input name →
  /// serialized onnx.TensorProto (importer::ImportOptions::constant_inputs). Their values are
  /// part of the graph hash.
  std::map<std::string, std::string> constant_inputs;
  /// The size budget of the import (importer::ImportOptions::max_tensor_bytes; the daemon's
  /// `--max-tensor-bytes`): a model with a tensor whose static size passes it, a negative dim
  /// or a size past int64 is kInvalidArgument. It refuses models and changes no artifact, so
  /// it is not part of the cache key.
  int64_t max_tensor_bytes = kMaxTensorBytes;
  /// Graph pass names after which to print the graph IR ("all" for every pass), plus the
  /// pseudo-stages "import" (graph IR as imported), "lower" (loop IR before scheduling),
  /// "schedule" (loop IR after scheduling) and "llvm" (each kernel's optimized LLVM IR, one
  /// module per kernel).
  std::vector<std::string> print_ir_after;
  /// Graph passes of the default pipeline to skip (registry names, e.g. "fusion"). A name that
  /// is not a registered pass is kInvalidArgument.
  std::vector<std::string> disabled_passes;
  /// Where kernel schedules come from (e.g. tuning::RecordScheduleSource over tuning records);
  /// null: the default schedules. Not owned; must outlive the compile.
  const schedule::ScheduleSource* schedules = nullptr;
  /// Receives the time of every stage (import, each graph pass and its verifier, each
  /// kernel's lowering and scheduling, the loop IR verifier, memory planning, codegen per
  /// kernel, optimization, object file, link): `kiln compile --time-passes`.
  StageTimeFn on_stage;
  /// Tests only: with a GPU `target`, plan as for it (its passes, its GPU schedules) but
  /// generate host code (Target::emulate_gpu: bound loops serial, the GPU math library), so the
  /// artifact runs on this CPU and its numbers check the GPU schedules and math.
  bool emulate_gpu_on_host = false;
  /// Receives printed IR; stderr when unset.
  std::function<void(const std::string& stage, const std::string& ir)> printer;
};

/// Wall-clock time per stage, in ms.
struct CompileTimings {
  double import_ms = 0, passes_ms = 0, lower_ms = 0, codegen_ms = 0, total_ms = 0;
};

struct CompileResult {
  runtime::Artifact artifact;
  std::string graph_hash;  // of the imported graph, before optimization
  Target target;
  CompileTimings timings;
};

/// The import options of a compile with `options` at the input shapes `shapes` (one profile):
/// its constant inputs and size budget. Importers other than the file's (a worker's, the
/// server's) build theirs with it, so every import of a compile applies the same budget.
importer::ImportOptions ImportOptionsFor(const CompileOptions& options,
                                         const importer::InputShapes& shapes);

/// Compiles the ONNX model at `model_path` (CompileProfiles with the file's importer).
/// Errors: those of the importer (kNotFound, kInvalidArgument, kUnimplemented), of target
/// resolution (kInvalidArgument), of lowering (kUnimplemented naming the node) and kInternal
/// for a failed pass or loop IR verification or code generation.
absl::StatusOr<CompileResult> CompileModelFile(const std::string& model_path,
                                               const CompileOptions& options);

/// Imports a model with the given input shapes (one shape profile; empty: the model's own).
using GraphImporter =
    std::function<absl::StatusOr<std::unique_ptr<graph::Graph>>(const importer::InputShapes&)>;

/// Imports and compiles the model once per shape profile in `options.shape_profiles` (once,
/// with no shapes, when there is none). With several profiles the artifact holds one variant
/// per profile (MergeProfilePlans: Manifest.profiles, one shared object and weights section),
/// its graph hash is graph::ProfilesGraphHash of the profiles' hashes and its tuning digest
/// the SHA-256 of theirs. With `options.bounded_min_shapes` the one profile's bounded dims are
/// compiled into one variant (passes::BoundDims over the import at the maximums and a probe
/// import at passes::ProbeShapes). Errors: CompileGraph's; with several profiles, prefixed with the
/// failing profile's index and shapes.
absl::StatusOr<CompileResult> CompileProfiles(const GraphImporter& import,
                                              const CompileOptions& options);

/// A graph through every stage before code generation: the optimized graph, its kernel plan
/// (scheduled kernels, manifest without code) and the result so far (graph hash, target,
/// pass and lowering timings; no artifact).
struct PlannedGraph {
  CompileResult result;
  KernelPlan plan;
  std::unique_ptr<graph::Graph> graph;
};

/// The stages of CompileGraph before code generation (for the tuner, which needs the kernels
/// only). Errors as CompileGraph's, without codegen's.
/// `bounded`: what passes::BoundDims left on `graph` (bounded dims), or null; the graph hash
/// then also covers the symbols' ranges.
absl::StatusOr<PlannedGraph> PlanGraph(std::unique_ptr<graph::Graph> graph,
                                       const CompileOptions& options,
                                       const passes::BoundedDims* bounded = nullptr);
/// Imports the model with `import` at the one shape profile of `options` and plans it
/// (PlanGraph), with the bounded dims of `options.bounded_min_shapes` when set (passes::BoundDims
/// over probe imports, as CompileProfiles does): the kernels a compile with the same options
/// schedules. Errors: the importer's and PlanGraph's; kInvalidArgument for more than one shape
/// profile (the tuner plans one).
absl::StatusOr<PlannedGraph> PlanImported(const GraphImporter& import,
                                          const CompileOptions& options);
/// PlanImported of the model file at `model_path`.
absl::StatusOr<PlannedGraph> PlanModelFile(const std::string& model_path,
                                           const CompileOptions& options);

/// Compiles an already imported graph (consumed: passes rewrite it).
absl::StatusOr<CompileResult> CompileGraph(std::unique_ptr<graph::Graph> graph,
                                           const CompileOptions& options,
                                           const passes::BoundedDims* bounded = nullptr);

}  // namespace kiln::pipeline

#endif  // KILN_COMPILER_CORE_PIPELINE_COMPILE_H_
