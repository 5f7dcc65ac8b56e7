// Every kernel of the real models in ../shared/models, lowered and scheduled as a compile does:
// its loop IR round-trips through the parser (print → parse → print) before and after
// scheduling and verifies, and its recorded schedule, parsed from text and replayed onto the
// parsed unscheduled kernel, reproduces the scheduled kernel exactly.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "compiler_core/codegen/llvm/codegen.h"
#include "compiler_core/importer/onnx/importer.h"
#include "compiler_core/ir/loop/parser.h"
#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/ir/loop/verifier.h"
#include "compiler_core/passes/graph/pass.h"
#include "compiler_core/pipeline/kernel_plan.h"
#include "compiler_core/schedule/schedule.h"
#include "compiler_core/schedule/schedule_parser.h"
#include "gtest/gtest.h"
#include "tests/e2e/shared_data.h"

namespace kiln {
namespace {

constexpr char kModelsDir[] = "../shared/models";

/// Printed loop IR of every kernel of one model, by kernel name.
struct ModelKernels {
  std::map<std::string, std::string> lowered, scheduled, schedule;
  std::vector<loop::Func> funcs;
};

absl::StatusOr<ModelKernels> CompileKernels(const std::string& model, const Target& target) {
  // A model with symbolic input dims at the shapes of its first test data set.
  absl::StatusOr<std::vector<importer::InputSignature>> inputs =
      importer::ReadInputSignaturesFile(model);
  if (!inputs.ok()) return inputs.status();
  const std::string dir = std::filesystem::path(model).parent_path().string();
  absl::StatusOr<importer::InputShapes> shapes =
      importer::DataSetInputShapes(*inputs, dir + "/test_data_set_0");
  if (!shapes.ok()) return shapes.status();
  absl::StatusOr<std::unique_ptr<graph::Graph>> graph =
      importer::ImportOnnxFile(model, {*shapes});
  if (!graph.ok()) return graph.status();
  passes::PipelineOptions options;
  options.f32_lanes = target.f32_lanes();
  absl::Status passed = passes::RunPasses(**graph, passes::DefaultPassPipeline(), options);
  if (!passed.ok()) return passed;
  ModelKernels kernels;
  auto print = [&](const std::string& stage, const std::string& ir) {
    std::string name = ir.substr(6, ir.find('(') - 6);  // "func @NAME(..."
    (stage == "lower" ? kernels.lowered : kernels.scheduled)[name] = ir;
  };
  const schedule::DefaultScheduleSource defaults;
  absl::StatusOr<pipeline::KernelPlan> plan = pipeline::BuildKernelPlan(
      **graph, target, defaults, [](const std::string&) { return true; }, print);
  if (!plan.ok()) return plan.status();
  for (const auto& call : plan->manifest.kernels()) {
    kernels.schedule[call.symbol()] = call.schedule();
  }
  kernels.funcs = plan->funcs;
  return kernels;
}

/// Parses `text`, checking that it prints back identically and verifies.
absl::StatusOr<loop::Func> ParseChecked(const std::string& text) {
  absl::StatusOr<loop::Func> func = loop::ParseFunc(text);
  if (!func.ok()) return func.status();
  EXPECT_EQ(loop::PrintFunc(*func), text);
  absl::Status verified = loop::VerifyFunc(*func);
  if (!verified.ok()) return verified;
  return func;
}

/// Round-trips every kernel of the model in `dir`; adds the kernel count to `*total`.
void CheckModel(const std::filesystem::path& dir, const Target& target, size_t* total) {
  SCOPED_TRACE(dir.string());
  absl::StatusOr<ModelKernels> kernels = CompileKernels((dir / "model.onnx").string(), target);
  if (absl::IsUnimplemented(kernels.status())) {
    // The compiler itself does not take this model (e.g. dynamic shapes); nothing to print.
    std::cout << "not compiled: " << dir.string() << ": " << kernels.status() << "\n";
    return;
  }
  ASSERT_TRUE(kernels.ok()) << kernels.status();
  EXPECT_FALSE(kernels->lowered.empty());
  auto start = std::chrono::steady_clock::now();
  for (const loop::Func& f : kernels->funcs) {
    absl::Status verified = loop::VerifyFunc(f);
    EXPECT_TRUE(verified.ok()) << verified;
  }
  std::cout << dir.filename().string() << ": verified " << kernels->funcs.size() << " kernels in "
            << std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                   .count()
            << " ms\n";
  for (const auto& [name, lowered_text] : kernels->lowered) {
    SCOPED_TRACE(name);
    ++*total;
    absl::StatusOr<loop::Func> lowered = ParseChecked(lowered_text);
    ASSERT_TRUE(lowered.ok()) << lowered.status() << "\n" << lowered_text;
    const std::string& scheduled_text = kernels->scheduled[name];
    absl::StatusOr<loop::Func> scheduled = ParseChecked(scheduled_text);
    ASSERT_TRUE(scheduled.ok()) << scheduled.status() << "\n" << scheduled_text;
    // The schedule as data: parse it from the manifest's text and replay it.
    absl::StatusOr<schedule::Schedule> sched = schedule::ParseSchedule(kernels->schedule[name]);
    ASSERT_TRUE(sched.ok()) << sched.status();
    EXPECT_EQ(sched->ToString(), kernels->schedule[name]);
    absl::Status applied = schedule::ApplySchedule(*sched, *lowered);
    ASSERT_TRUE(applied.ok()) << applied;
    EXPECT_EQ(loop::PrintFunc(*lowered), scheduled_text);
  }
}

TEST(LoopRoundTripTest, EveryKernelOfEveryModel) {
  KILN_REQUIRE_PATH_OR_SKIP(kModelsDir);
  absl::StatusOr<Target> target = kiln::ResolveTarget("cpu:skylake-avx512");
  ASSERT_TRUE(target.ok()) << target.status();
  std::vector<std::filesystem::path> models;
  for (const auto& entry : std::filesystem::directory_iterator(kModelsDir)) {
    if (std::filesystem::exists(entry.path() / "model.onnx")) models.push_back(entry.path());
  }
  std::sort(models.begin(), models.end());
  ASSERT_FALSE(models.empty()) << "no model.onnx under " << kModelsDir;
  size_t total = 0;
  for (const std::filesystem::path& dir : models) CheckModel(dir, *target, &total);
  EXPECT_GT(total, 0u);
  std::cout << "round-tripped " << total << " kernels of " << models.size() << " models\n";
}

}  // namespace
}  // namespace kiln
