// The worker's tune steps without RPC: a batch built from schedule texts (a bad one fails only
// its candidate), measured on this machine; a target or hardware key mismatch is refused; the
// wrong_outputs fault makes every candidate fail the output check; a real model's workloads
// print loop IR that parses back to their keys.
#include "workers/tune_tasks.h"

#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "compiler_core/codegen/llvm/codegen.h"
#include "compiler_core/ir/loop/parser.h"
#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/tuning/measure_proto.h"
#include "compiler_core/tuning/space.h"
#include "compiler_core/tuning/tuning_test_util.h"
#include "compiler_core/tuning/workload.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::workers {
namespace {

using ::testing::HasSubstr;

using tuning::testing::Host;
using tuning::testing::LoweredMatMul;

/// A build task of two schedules of the space, one that does not apply and one that does not
/// parse.
kiln::v1::BuildTask TwoSamplesAndGarbage(const loop::Func& lowered, const Target& target) {
  tuning::ScheduleSpace space(lowered, target);
  std::mt19937_64 rng(7);
  kiln::v1::BuildTask task;
  task.set_workload(loop::PrintFunc(lowered));
  task.set_target("host");
  task.set_target_key(target.Key());
  task.add_schedules(space.Default().schedule.ToString());
  task.add_schedules(space.Sample(rng).schedule.ToString());
  task.add_schedules("split(no_such_loop, 4)\n");
  task.add_schedules("%%% not a schedule (\n");
  return task;
}

kiln::v1::MeasureTask MeasureTaskOf(const kiln::v1::BuildResult& built) {
  kiln::v1::MeasureTask task;
  *task.mutable_batch() = built.batch();
  tuning::MeasureOptions quick;
  quick.min_measure_ms = 2;
  quick.min_repeats = 3;
  quick.timeout_s = 5;
  *task.mutable_options() = tuning::MeasureOptionsToProto(quick);
  task.set_hardware_key("hw-under-test");
  return task;
}

TEST(TuneTasksTest, BuildsAndMeasuresABatchWhereABadScheduleFailsOnlyItsCandidate) {
  const loop::Func lowered = LoweredMatMul();
  const Target target = Host();
  absl::StatusOr<kiln::v1::BuildResult> built =
      BuildBatch(TwoSamplesAndGarbage(lowered, target));
  ASSERT_TRUE(built.ok()) << built.status();
  const kiln::v1::CandidateBatch& batch = built->batch();
  EXPECT_EQ(batch.code_format(), tuning::kElfSharedObject);
  EXPECT_FALSE(batch.code().empty());
  EXPECT_FALSE(batch.reference().symbol().empty());
  ASSERT_EQ(batch.candidates_size(), 4);
  EXPECT_FALSE(batch.candidates(0).symbol().empty());
  EXPECT_FALSE(batch.candidates(1).symbol().empty());
  EXPECT_TRUE(batch.candidates(2).symbol().empty());
  EXPECT_EQ(batch.candidates(2).error_code(),
            static_cast<int>(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(batch.candidates(2).error_message(), HasSubstr("no loop named 'no_such_loop'"));
  EXPECT_TRUE(batch.candidates(3).symbol().empty());
  EXPECT_EQ(batch.candidates(3).error_code(),
            static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(batch.candidates(3).error_message(), HasSubstr("schedule 3 does not parse"));

  absl::StatusOr<kiln::v1::MeasureResult> measured =
      MeasureBatch(MeasureTaskOf(*built), "hw-under-test", 1);
  ASSERT_TRUE(measured.ok()) << measured.status();
  const kiln::v1::BatchMeasurement& m = measured->measurement();
  EXPECT_EQ(m.hardware_key(), "hw-under-test");
  EXPECT_EQ(m.reference().error_code(), 0) << m.reference().error_message();
  EXPECT_GT(m.reference().median_ms(), 0);
  ASSERT_EQ(m.candidates_size(), 4);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(m.candidates(i).error_code(), 0) << m.candidates(i).error_message();
    EXPECT_GT(m.candidates(i).median_ms(), 0);
    EXPECT_LE(m.candidates(i).max_abs_error(), 1e-3);
  }
  EXPECT_NE(m.candidates(2).error_code(), 0);
  EXPECT_NE(m.candidates(3).error_code(), 0);
}

TEST(TuneTasksTest, WrongOutputsFaultIsCaughtByTheOutputCheck) {
  const loop::Func lowered = LoweredMatMul();
  const Target target = Host();
  BuildFaults faults;
  faults.wrong_outputs = true;
  absl::StatusOr<kiln::v1::BuildResult> built =
      BuildBatch(TwoSamplesAndGarbage(lowered, target), faults);
  ASSERT_TRUE(built.ok()) << built.status();
  absl::StatusOr<kiln::v1::MeasureResult> measured =
      MeasureBatch(MeasureTaskOf(*built), "hw-under-test", 1);
  ASSERT_TRUE(measured.ok()) << measured.status();
  const kiln::v1::BatchMeasurement& m = measured->measurement();
  EXPECT_EQ(m.reference().error_code(), 0) << "the reference is never faulted";
  for (int i = 0; i < 2; ++i) {
    EXPECT_NE(m.candidates(i).error_code(), 0) << "a wrong candidate was accepted";
    EXPECT_GT(m.candidates(i).max_abs_error(), 0.5);
  }
}

TEST(TuneTasksTest, RefusesAnotherTargetOrHardwareKey) {
  const loop::Func lowered = LoweredMatMul();
  const Target target = Host();
  kiln::v1::BuildTask task = TwoSamplesAndGarbage(lowered, target);
  task.set_target_key("cpu:other:key");
  absl::StatusOr<kiln::v1::BuildResult> built = BuildBatch(task);
  EXPECT_EQ(built.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(built.status().message(), HasSubstr("cpu:other:key"));
  EXPECT_THAT(built.status().message(), HasSubstr(target.Key()));

  task.set_target_key(target.Key());
  task.set_workload("not loop IR");
  EXPECT_EQ(BuildBatch(task).status().code(), absl::StatusCode::kInvalidArgument);

  kiln::v1::MeasureTask measure;
  measure.set_hardware_key("elsewhere");
  absl::StatusOr<kiln::v1::MeasureResult> m = MeasureBatch(measure, "here", 1);
  EXPECT_EQ(m.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(m.status().message(), HasSubstr("elsewhere"));
  EXPECT_THAT(m.status().message(), HasSubstr("here"));
}

TEST(TuneTasksTest, ListsAModelsWorkloadsAsLoopIrThatParsesBackToTheirKeys) {
  const std::string path = "../shared/models/mlp/model.onnx";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not found";
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  const std::string scratch = ::testing::TempDir() + "/tune-tasks-scratch";
  std::filesystem::create_directories(scratch);
  kiln::v1::WorkloadsTask task;
  task.set_target("host");
  task.set_target_key(Host().Key());
  absl::StatusOr<kiln::v1::WorkloadsResult> r = ListWorkloads(bytes.str(), task, scratch);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->target_key(), Host().Key());
  ASSERT_EQ(r->workloads_size(), 4);  // three Gemms (two with Relu) and the Softmax
  EXPECT_EQ(r->workloads(0).fused_ops(), "Gemm+Relu");
  EXPECT_EQ(r->workloads(3).fused_ops(), "Softmax");
  for (const kiln::v1::Workload& w : r->workloads()) {
    absl::StatusOr<loop::Func> parsed = loop::ParseFunc(w.loop_ir());
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(tuning::WorkloadKey(*parsed), w.workload_key());
    EXPECT_EQ(w.weight(), 1);
    EXPECT_GT(w.flops(), 0);
  }
  EXPECT_EQ(r->workloads(0).flops(), 803328);

  task.set_target_key("cpu:other:key");
  EXPECT_EQ(ListWorkloads(bytes.str(), task, scratch).status().code(),
            absl::StatusCode::kInternal);
  EXPECT_EQ(ListWorkloads("not onnx", kiln::v1::WorkloadsTask(), scratch).status().code(),
            absl::StatusCode::kInvalidArgument);
}

std::string WorkerBinary() {
  const char* dir = std::getenv("KILN_BIN_DIR");
  return std::string(dir != nullptr ? dir : "build/bin") + "/kiln-worker";
}

// Tune steps in a `kiln-worker --run-step` child: the same results as in this process; a
// crashing child is a clear kInternal and the caller lives on.
TEST(TuneTasksTest, StepsInAChildMatchTheInProcessSteps) {
  if (!std::filesystem::exists(WorkerBinary())) GTEST_SKIP() << WorkerBinary() << " not built";
  ::signal(SIGPIPE, SIG_IGN);
  const CompileSandbox sandbox{WorkerBinary(), server::ProcessLimits{}};
  const kiln::v1::BuildTask build = TwoSamplesAndGarbage(LoweredMatMul(), Host());
  absl::StatusOr<kiln::v1::BuildResult> here = BuildBatch(build);
  absl::StatusOr<kiln::v1::BuildResult> child =
      BuildBatchInChild(build, BuildFaults{}, sandbox, absl::Minutes(5));
  ASSERT_TRUE(here.ok() && child.ok()) << child.status();
  ASSERT_EQ(child->batch().candidates_size(), here->batch().candidates_size());
  for (int i = 0; i < here->batch().candidates_size(); ++i) {
    EXPECT_EQ(child->batch().candidates(i).error_code(), here->batch().candidates(i).error_code());
    EXPECT_EQ(child->batch().candidates(i).symbol().empty(),
              here->batch().candidates(i).symbol().empty());
  }
  const std::string path = "../shared/models/mlp/model.onnx";
  if (std::filesystem::exists(path)) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    kiln::v1::WorkloadsTask task;
    task.set_target("host");
    task.set_target_key(Host().Key());
    absl::StatusOr<kiln::v1::WorkloadsResult> w =
        ListWorkloadsInChild(bytes.str(), task, sandbox, absl::Minutes(5));
    ASSERT_TRUE(w.ok()) << w.status();
    EXPECT_EQ(w->workloads_size(), 4);
  }
  const std::string crasher = ::testing::TempDir() + "/kiln-crashing-step";
  std::ofstream(crasher) << "#!/bin/sh\nkill -SEGV $$\n";
  std::filesystem::permissions(crasher, std::filesystem::perms::owner_all);
  absl::Status crashed =
      BuildBatchInChild(build, BuildFaults{}, CompileSandbox{crasher, server::ProcessLimits{}},
                        absl::Minutes(1))
          .status();
  EXPECT_EQ(crashed.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(crashed.message(),
            "the tune step's compiler was killed by signal 11 (Segmentation fault)");
}

}  // namespace
}  // namespace kiln::workers
