// The compile pipeline: the named stages from model to artifact.
#include "compiler_core/pipeline/compile.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/codegen/llvm/codegen.h"
#include "compiler_core/importer/onnx/importer.h"
#include "compiler_core/ir/graph/graph_hash.h"
#include "compiler_core/ir/graph/printer.h"
#include "compiler_core/ir/loop/gpu_launch.h"
#include "compiler_core/ir/loop/verifier.h"
#include "compiler_core/passes/graph/pass.h"
#include "compiler_core/pipeline/compiler_version.h"
#include "compiler_core/pipeline/kernel_plan.h"
#include "compiler_core/pipeline/profiles.h"
#include "compiler_core/runtime/abi.h"
#include "compiler_core/runtime/manifest_calls.h"
#include "compiler_core/support/sha256.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::pipeline {
namespace {

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// The default pass pipeline of `target_kind` minus `disabled`; every disabled name must be a
// registered pass.
absl::StatusOr<std::vector<std::string>> EnabledPasses(const std::vector<std::string>& disabled,
                                                       const std::string& target_kind) {
  std::vector<std::string> registered = passes::RegisteredPassNames();
  for (const std::string& name : disabled) {
    if (std::find(registered.begin(), registered.end(), name) == registered.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("disabled pass '", name, "' is not a registered graph pass"));
    }
  }
  std::vector<std::string> enabled;
  for (const std::string& name : passes::DefaultPassPipeline(target_kind)) {
    if (std::find(disabled.begin(), disabled.end(), name) == disabled.end()) {
      enabled.push_back(name);
    }
  }
  return enabled;
}

// Whether --print-ir-after asked for `stage`; printing goes to options.printer or stderr.
bool WantsIr(const CompileOptions& options, const std::string& stage) {
  const auto& want = options.print_ir_after;
  return std::find(want.begin(), want.end(), stage) != want.end() ||
         std::find(want.begin(), want.end(), "all") != want.end();
}

void PrintIr(const CompileOptions& options, const std::string& stage, const std::string& ir) {
  if (options.printer) {
    options.printer(stage, ir);
  } else {
    std::cerr << "// ----- IR after " << stage << " -----\n" << ir;
  }
}

// `status` (kUnimplemented: an op of a graph with symbolic dims that cannot be compiled so
// yet) with what to give instead: each input with symbolic dims and the --input-shape flag.
absl::Status SymbolicShapeHint(const absl::Status& status, const graph::Graph& graph) {
  std::vector<std::string> inputs;
  for (const graph::Value* in : graph.inputs()) {
    if (in->type().is_static()) continue;
    std::vector<std::string> dims, example;
    for (size_t d = 0; d < in->type().shape.size(); ++d) {
      const bool fixed = in->type().shape[d] != kSymbolicDim;
      dims.push_back(fixed ? absl::StrCat(in->type().shape[d]) : in->type().dim(d).ToString());
      example.push_back(fixed ? absl::StrCat(in->type().shape[d]) : absl::StrCat("D", d));
    }
    inputs.push_back(absl::StrCat("--input-shape ", in->name(), "=", absl::StrJoin(example, ","),
                                  " for [", absl::StrJoin(dims, ","), "]"));
  }
  return absl::UnimplementedError(absl::StrCat(
      status.message(), "; compile this model with fixed shapes for now: ",
      absl::StrJoin(inputs, ", ")));
}

}  // namespace

namespace {

// PlanGraph on a graph the caller keeps (a Loop's body, optimized in place): `planned.graph`
// stays null.
absl::StatusOr<PlannedGraph> PlanGraphInPlace(graph::Graph& graph_ref,
                                              const CompileOptions& options,
                                              const passes::BoundedDims* bounded) {
  graph::Graph* graph = &graph_ref;
  auto print = [&](const std::string& stage, const std::string& ir) {
    PrintIr(options, stage, ir);
  };
  auto print_stage = [&](const std::string& stage) { return WantsIr(options, stage); };

  // A misspelled stage must not be silently ignored.
  for (const std::string& stage : options.print_ir_after) {
    std::vector<std::string> known = passes::RegisteredPassNames();
    known.insert(known.end(), {"import", "lower", "schedule", "llvm", "all"});
    if (std::find(known.begin(), known.end(), stage) == known.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--print-ir-after: unknown stage '", stage, "' (known: ", absl::StrJoin(known, ", "), ")"));
    }
  }

  PlannedGraph planned;
  CompileResult& result = planned.result;
  KILN_ASSIGN_OR_RETURN(result.target, kiln::ResolveTarget(options.target));
  KILN_RETURN_IF_ERROR(SetPrecision(result.target, options.precision));
  if (bounded != nullptr && result.target.IsGpu()) {
    return absl::UnimplementedError(absl::StrCat(
        "bounded dims (--input-shape NAME=MIN..MAX) are not supported for target ",
        options.target, " yet; compile a static shape or several shape profiles"));
  }
  result.graph_hash = graph::GraphHash(*graph);
  if (bounded != nullptr) {
    result.graph_hash = passes::BoundedGraphHash(*graph, *bounded);
  }
  if (print_stage("import")) print("import", graph::PrintGraph(*graph));

  auto passes_start = std::chrono::steady_clock::now();
  passes::PipelineOptions pass_options;
  pass_options.print_after = options.print_ir_after;
  pass_options.f32_lanes = result.target.f32_lanes();
  pass_options.int8_dot4 = result.target.HasInt8Dot4();
  pass_options.on_stage = options.on_stage;
  pass_options.printer = [&](std::string_view pass, const std::string& ir) {
    print(std::string(pass), ir);
  };
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> pass_names,
                        EnabledPasses(options.disabled_passes, result.target.kind));
  KILN_RETURN_IF_ERROR(passes::RunPasses(*graph, pass_names, pass_options));
  KILN_ASSIGN_OR_RETURN(std::vector<sym::Symbol> symbols, graph::GraphSymbols(*graph));
  if (!symbols.empty()) {
    if (result.target.IsGpu()) {
      return absl::UnimplementedError(absl::StrCat(
          "symbolic dims are not supported for target ", options.target,
          " yet; give fixed shapes (--input-shape NAME=D0,D1,...)"));
    }
    // The kernels read the symbols' values through this input (kernel_plan.h).
    graph->AddInput(kSymbolDimsInput,
                    TensorType{DType::kInt64, {static_cast<int64_t>(symbols.size())}});
  }
  std::optional<passes::BoundedDims> final_bounded;
  if (bounded != nullptr) {
    final_bounded = *bounded;
    passes::RecomputeValueLengths(*graph, *final_bounded);
  }
  result.timings.passes_ms = MsSince(passes_start);

  auto lower_start = std::chrono::steady_clock::now();
  const schedule::DefaultScheduleSource default_schedules;
  const schedule::ScheduleSource& schedules =
      options.schedules != nullptr ? *options.schedules : default_schedules;
  // A Loop's body is planned, with the same options, when the kernel plan reaches the Loop.
  const BodyPlanner plan_body = [&](graph::Graph& body) -> absl::StatusOr<KernelPlan> {
    KILN_ASSIGN_OR_RETURN(PlannedGraph planned_body, PlanGraphInPlace(body, options, nullptr));
    return std::move(planned_body.plan);
  };
  absl::StatusOr<KernelPlan> built =
      BuildKernelPlan(*graph, result.target, schedules, print_stage, print, options.on_stage,
                      final_bounded ? &*final_bounded : nullptr, plan_body);
  if (!built.ok() && !symbols.empty() && built.status().code() == absl::StatusCode::kUnimplemented) {
    return SymbolicShapeHint(built.status(), *graph);
  }
  KILN_ASSIGN_OR_RETURN(KernelPlan plan, std::move(built));
  result.timings.lower_ms = MsSince(lower_start);
  // Always on: verifying costs far below 1% of a compile (one walk per kernel).
  ScopedStageTimer verify_timer(options.on_stage, "verify: loop IR");
  for (const loop::Func& func : plan.funcs) {
    absl::Status verified = loop::VerifyFunc(func);
    if (!verified.ok()) {
      return absl::InternalError(
          absl::StrCat("loop IR verifier after schedule: ", verified.message()));
    }
  }
  planned.plan = std::move(plan);
  return planned;
}

}  // namespace

absl::StatusOr<PlannedGraph> PlanGraph(std::unique_ptr<graph::Graph> graph,
                                       const CompileOptions& options,
                                       const passes::BoundedDims* bounded) {
  KILN_ASSIGN_OR_RETURN(PlannedGraph planned, PlanGraphInPlace(*graph, options, bounded));
  planned.graph = std::move(graph);
  return planned;
}

namespace {

// Sets what every manifest (a model's, or a shape profile's) records besides its plan.
void StampManifest(kiln::v1::Manifest& m, const std::string& graph_hash, const Target& target,
                   const std::string& model_name) {
  m.set_abi_version(KILN_ABI_VERSION);
  m.set_graph_hash(graph_hash);
  m.set_target_key(target.Key());
  m.set_compiler_version(kCompilerVersion);
  m.set_model_name(model_name);
}

// Records each PTX kernel call's launches (loop::SplitGpuLaunches of its func and its init).
absl::Status RecordGpuLaunches(const std::vector<loop::Func>& funcs, kiln::v1::Manifest& m) {
  std::map<std::string, const loop::Func*> by_name;
  for (const loop::Func& func : funcs) by_name[func.name] = &func;
  auto add = [](const loop::Stmt& body, const std::string& name,
                google::protobuf::RepeatedPtrField<kiln::v1::GpuLaunch>& out) -> absl::Status {
    KILN_ASSIGN_OR_RETURN(std::vector<loop::GpuLaunch> launches, loop::SplitGpuLaunches(body));
    for (size_t i = 0; i < launches.size(); ++i) {
      kiln::v1::GpuLaunch* l = out.Add();
      l->set_entry(loop::GpuLaunchSymbol(name, i));
      for (int d = 0; d < 3; ++d) {
        l->add_grid(launches[i].grid[d]);
        l->add_block(launches[i].block[d]);
      }
    }
    return absl::OkStatus();
  };
  absl::Status status;
  m.set_code_kind(kiln::v1::PTX);
  runtime::ForEachKernelCall(m, [&](kiln::v1::KernelCall& call) {
    if (!status.ok() || call.symbol().empty()) return;
    auto it = by_name.find(call.symbol());
    if (it == by_name.end()) {
      status = absl::InternalError(absl::StrCat("kernel call ", call.symbol(), " has no func"));
      return;
    }
    call.set_code_kind(kiln::v1::PTX);
    status = add(it->second->body, call.symbol(), *call.mutable_launches());
    if (status.ok() && it->second->init != nullptr) {
      status = add(it->second->init, loop::InitSymbol(call.symbol()),
                   *call.mutable_init_launches());
    }
  });
  for (kiln::v1::Manifest& profile : *m.mutable_profiles()) profile.set_code_kind(kiln::v1::PTX);
  return status;
}

// Codegen of `plan`'s kernels into `result`'s artifact (manifest, code, weights).
absl::Status GenerateCode(KernelPlan& plan, const CompileOptions& options, CompileResult& result) {
  // One optimized module per kernel, so that each kernel's LLVM IR can be diffed on its own.
  for (size_t k = 0; WantsIr(options, "llvm") && k < plan.funcs.size(); ++k) {
    KILN_ASSIGN_OR_RETURN(std::string llvm_ir, codegen::EmitLlvmIr({plan.funcs[k]}, result.target));
    PrintIr(options, "llvm", llvm_ir);
  }
  auto codegen_start = std::chrono::steady_clock::now();
  std::string code;
  if (result.target.IsGpu() && options.emulate_gpu_on_host) {
    KILN_ASSIGN_OR_RETURN(result.target, kiln::ResolveTarget("host"));
    result.target.emulate_gpu = true;
    plan.manifest.set_target_key(result.target.Key());
    for (kiln::v1::Manifest& p : *plan.manifest.mutable_profiles()) {
      p.set_target_key(result.target.Key());
    }
  }
  if (result.target.IsGpu()) {
    KILN_RETURN_IF_ERROR(RecordGpuLaunches(plan.funcs, plan.manifest));
    KILN_ASSIGN_OR_RETURN(code, codegen::CompileToPtx(plan.funcs, result.target, options.on_stage));
  } else {
    KILN_ASSIGN_OR_RETURN(code, codegen::CompileToSharedObject(plan.funcs, result.target,
                                                               options.on_stage));
  }
  result.timings.codegen_ms = MsSince(codegen_start);
  result.artifact.manifest = std::move(plan.manifest);
  result.artifact.code = std::move(code);
  result.artifact.weights = std::move(plan.weights);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CompileResult> CompileGraph(std::unique_ptr<graph::Graph> graph,
                                           const CompileOptions& options,
                                           const passes::BoundedDims* bounded) {
  auto start = std::chrono::steady_clock::now();
  KILN_ASSIGN_OR_RETURN(PlannedGraph planned, PlanGraph(std::move(graph), options, bounded));
  CompileResult result = std::move(planned.result);
  StampManifest(planned.plan.manifest, result.graph_hash, result.target, planned.graph->name());
  KILN_RETURN_IF_ERROR(GenerateCode(planned.plan, options, result));
  result.timings.total_ms = MsSince(start);
  return result;
}

absl::StatusOr<CompileResult> CompileProfiles(const GraphImporter& import,
                                              const CompileOptions& options) {
  auto start = std::chrono::steady_clock::now();
  double import_ms = 0;
  // Imports `shapes`, timed as stage `stage` and added to import_ms.
  auto import_profile = [&](const importer::InputShapes& shapes, const std::string& stage)
      -> absl::StatusOr<std::unique_ptr<graph::Graph>> {
    auto import_start = std::chrono::steady_clock::now();
    ScopedStageTimer import_timer(options.on_stage, stage);
    absl::StatusOr<std::unique_ptr<graph::Graph>> graph = import(shapes);
    import_ms += MsSince(import_start);
    return graph;
  };
  if (options.shape_profiles.size() <= 1) {
    importer::InputShapes shapes;
    if (!options.shape_profiles.empty()) shapes = options.shape_profiles.front();
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<graph::Graph> graph, import_profile(shapes, "import"));
    std::optional<passes::BoundedDims> bounded;
    if (!options.bounded_min_shapes.empty()) {
      // The probe imports are timed as imports; the analysis itself is a walk of the graph.
      KILN_ASSIGN_OR_RETURN(bounded,
                            passes::BoundDims(*graph, shapes, options.bounded_min_shapes,
                                              [&](const importer::InputShapes& probe_shapes) {
                                                return import_profile(probe_shapes,
                                                                      "import: bounded-dims probe");
                                              }));
    }
    KILN_ASSIGN_OR_RETURN(CompileResult result,
                          CompileGraph(std::move(graph), options, bounded ? &*bounded : nullptr));
    result.timings.import_ms = import_ms;
    result.timings.total_ms = MsSince(start);
    return result;
  }
  if (!options.bounded_min_shapes.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("bounded dims and several shape profiles (",
                     importer::FormatProfiles(options.shape_profiles),
                     ") cannot be combined; give one bounded profile"));
  }
  CompileResult result;
  std::vector<KernelPlan> plans;
  std::vector<std::string> profile_hashes;
  std::string model_name;
  std::string tuning_digests;
  for (size_t k = 0; k < options.shape_profiles.size(); ++k) {
    const importer::InputShapes& shapes = options.shape_profiles[k];
    const std::string profile = absl::StrCat("profile ", k, " (",
                                             importer::FormatInputShapes(shapes), ")");
    absl::StatusOr<std::unique_ptr<graph::Graph>> graph =
        import_profile(shapes, "import: " + profile);
    absl::StatusOr<PlannedGraph> planned =
        graph.ok() ? PlanGraph(std::move(*graph), options) : graph.status();
    if (!planned.ok()) {
      return absl::Status(planned.status().code(),
                          absl::StrCat("shape ", profile, ": ", planned.status().message()));
    }
    result.target = planned->result.target;
    result.timings.passes_ms += planned->result.timings.passes_ms;
    result.timings.lower_ms += planned->result.timings.lower_ms;
    model_name = planned->graph->name();
    profile_hashes.push_back(planned->result.graph_hash);
    StampManifest(planned->plan.manifest, planned->result.graph_hash, result.target, model_name);
    absl::StrAppend(&tuning_digests, planned->plan.manifest.tuning_digest(), "\n");
    plans.push_back(std::move(planned->plan));
  }
  KernelPlan merged = MergeProfilePlans(std::move(plans));
  result.graph_hash = graph::ProfilesGraphHash(profile_hashes);
  StampManifest(merged.manifest, result.graph_hash, result.target, model_name);
  if (tuning_digests.find_first_not_of('\n') != std::string::npos) {
    merged.manifest.set_tuning_digest(Sha256Hex(tuning_digests));
  }
  KILN_RETURN_IF_ERROR(GenerateCode(merged, options, result));
  result.timings.import_ms = import_ms;
  result.timings.total_ms = MsSince(start);
  return result;
}

absl::StatusOr<PlannedGraph> PlanImported(const GraphImporter& import,
                                          const CompileOptions& options) {
  KILN_ASSIGN_OR_RETURN(importer::InputShapes shapes,
                        importer::SingleProfile(options.shape_profiles, "tuning"));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<graph::Graph> graph, import(shapes));
  if (options.bounded_min_shapes.empty()) return PlanGraph(std::move(graph), options);
  KILN_ASSIGN_OR_RETURN(passes::BoundedDims bounded,
                        passes::BoundDims(*graph, shapes, options.bounded_min_shapes, import));
  return PlanGraph(std::move(graph), options, &bounded);
}

importer::ImportOptions ImportOptionsFor(const CompileOptions& options,
                                         const importer::InputShapes& shapes) {
  importer::ImportOptions import;
  import.input_shapes = shapes;
  import.constant_inputs = options.constant_inputs;
  import.max_tensor_bytes = options.max_tensor_bytes;
  // With no shapes given, dynamic dims stay symbolic: one artifact runs every shape.
  import.symbolic_dims = true;
  return import;
}

namespace {

// Imports the model file at `model_path` with `options`' constant inputs and size budget.
GraphImporter FileImporter(const std::string& model_path, const CompileOptions& options) {
  return [&model_path, &options](const importer::InputShapes& shapes) {
    return importer::ImportOnnxFile(model_path, ImportOptionsFor(options, shapes));
  };
}

}  // namespace

absl::StatusOr<PlannedGraph> PlanModelFile(const std::string& model_path,
                                           const CompileOptions& options) {
  return PlanImported(FileImporter(model_path, options), options);
}

absl::StatusOr<CompileResult> CompileModelFile(const std::string& model_path,
                                               const CompileOptions& options) {
  return CompileProfiles(FileImporter(model_path, options), options);
}

}  // namespace kiln::pipeline
