// The compile pipeline: the named stages from model to artifact.
#include "compiler_core/pipeline/compile.h"

#include <algorithm>
#include <chrono>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/codegen/llvm/codegen.h"
#include "compiler_core/importer/onnx/importer.h"
#include "compiler_core/ir/graph/graph_hash.h"
#include "compiler_core/ir/graph/printer.h"
#include "compiler_core/ir/loop/verifier.h"
#include "compiler_core/passes/graph/pass.h"
#include "compiler_core/pipeline/kernel_plan.h"
#include "compiler_core/runtime/abi.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::pipeline {
namespace {

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// The default pass pipeline minus `disabled`; every disabled name must be a registered pass.
absl::StatusOr<std::vector<std::string>> EnabledPasses(const std::vector<std::string>& disabled) {
  std::vector<std::string> registered = passes::RegisteredPassNames();
  for (const std::string& name : disabled) {
    if (std::find(registered.begin(), registered.end(), name) == registered.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("disabled pass '", name, "' is not a registered graph pass"));
    }
  }
  std::vector<std::string> enabled;
  for (const std::string& name : passes::DefaultPassPipeline()) {
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

}  // namespace

absl::StatusOr<PlannedGraph> PlanGraph(std::unique_ptr<graph::Graph> graph,
                                       const CompileOptions& options) {
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
  KILN_ASSIGN_OR_RETURN(result.target, codegen::ResolveTarget(options.target));
  result.graph_hash = graph::GraphHash(*graph);
  if (print_stage("import")) print("import", graph::PrintGraph(*graph));

  auto passes_start = std::chrono::steady_clock::now();
  passes::PipelineOptions pass_options;
  pass_options.print_after = options.print_ir_after;
  pass_options.f32_lanes = result.target.f32_lanes();
  pass_options.on_stage = options.on_stage;
  pass_options.printer = [&](std::string_view pass, const std::string& ir) {
    print(std::string(pass), ir);
  };
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> pass_names,
                        EnabledPasses(options.disabled_passes));
  KILN_RETURN_IF_ERROR(passes::RunPasses(*graph, pass_names, pass_options));
  result.timings.passes_ms = MsSince(passes_start);

  auto lower_start = std::chrono::steady_clock::now();
  const schedule::DefaultScheduleSource default_schedules;
  const schedule::ScheduleSource& schedules =
      options.schedules != nullptr ? *options.schedules : default_schedules;
  KILN_ASSIGN_OR_RETURN(KernelPlan plan,
                        BuildKernelPlan(*graph, result.target, schedules, print_stage, print,
                                        options.on_stage));
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
  planned.graph = std::move(graph);
  planned.plan = std::move(plan);
  return planned;
}

absl::StatusOr<CompileResult> CompileGraph(std::unique_ptr<graph::Graph> graph,
                                           const CompileOptions& options) {
  auto start = std::chrono::steady_clock::now();
  KILN_ASSIGN_OR_RETURN(PlannedGraph planned, PlanGraph(std::move(graph), options));
  CompileResult result = std::move(planned.result);
  KernelPlan& plan = planned.plan;
  // One optimized module per kernel, so that each kernel's LLVM IR can be diffed on its own.
  for (size_t k = 0; WantsIr(options, "llvm") && k < plan.funcs.size(); ++k) {
    KILN_ASSIGN_OR_RETURN(std::string llvm_ir, codegen::EmitLlvmIr({plan.funcs[k]}, result.target));
    PrintIr(options, "llvm", llvm_ir);
  }

  auto codegen_start = std::chrono::steady_clock::now();
  KILN_ASSIGN_OR_RETURN(std::string code,
                        codegen::CompileToSharedObject(plan.funcs, result.target,
                                                       options.on_stage));
  result.timings.codegen_ms = MsSince(codegen_start);

  kiln::v1::Manifest& m = plan.manifest;
  m.set_abi_version(KILN_ABI_VERSION);
  m.set_graph_hash(result.graph_hash);
  m.set_target_key(result.target.Key());
  m.set_compiler_version(kCompilerVersion);
  m.set_model_name(planned.graph->name());
  result.artifact.manifest = std::move(m);
  result.artifact.code = std::move(code);
  result.artifact.weights = std::move(plan.weights);
  result.timings.total_ms = MsSince(start);
  return result;
}

absl::StatusOr<PlannedGraph> PlanModelFile(const std::string& model_path,
                                           const CompileOptions& options) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<graph::Graph> graph,
                        importer::ImportOnnxFile(model_path, {options.input_shapes}));
  return PlanGraph(std::move(graph), options);
}

absl::StatusOr<CompileResult> CompileModelFile(const std::string& model_path,
                                               const CompileOptions& options) {
  auto start = std::chrono::steady_clock::now();
  ScopedStageTimer import_timer(options.on_stage, "import");
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<graph::Graph> graph,
                        importer::ImportOnnxFile(model_path, {options.input_shapes}));
  import_timer.Stop();
  double import_ms = MsSince(start);
  KILN_ASSIGN_OR_RETURN(CompileResult result, CompileGraph(std::move(graph), options));
  result.timings.import_ms = import_ms;
  result.timings.total_ms += import_ms;
  return result;
}

}  // namespace kiln::pipeline
