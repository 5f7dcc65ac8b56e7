// Measuring candidates: correct ones are timed, a wrong one is rejected with the element that
// differs, a crash and a hang each cost one candidate, and a schedule that does not apply is
// reported without being run.
#include "compiler_core/tuning/measure.h"

#include "compiler_core/runtime/cuda/cuda_driver.h"
#include "compiler_core/support/sanitizer.h"
#include "compiler_core/tuning/build.h"
#include "compiler_core/tuning/measure_proto.h"
#include "compiler_core/tuning/space.h"
#include "compiler_core/tuning/tuning_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::tuning {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

using testing::Host;
using testing::LoweredMatMul;

MeasureOptions Quick() {
  MeasureOptions o;
  o.min_measure_ms = 2;
  o.min_repeats = 3;
  o.timeout_s = 5;
  return o;
}

TEST(MeasureTest, TimesCorrectCandidatesAgainstTheReference) {
  loop::Func lowered = LoweredMatMul();
  const Target target = Host();
  ScheduleSpace space(lowered, target);
  std::mt19937_64 rng(5);
  std::vector<schedule::Schedule> candidates = {space.Default().schedule};
  for (int i = 0; i < 3; ++i) candidates.push_back(space.Sample(rng).schedule);
  candidates.push_back(schedule::Schedule{});  // unscheduled: serial loops, still correct
  absl::StatusOr<CandidateBatch> batch = BuildCandidates(lowered, candidates, target);
  ASSERT_TRUE(batch.ok()) << batch.status();
  absl::StatusOr<BatchMeasurement> m = RunCandidates(lowered, *batch, Quick());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->reference.status.ok());
  EXPECT_GT(m->reference.median_ms, 0);
  EXPECT_GE(m->reference.repeats, 3);
  ASSERT_EQ(m->candidates.size(), candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Measurement& c = m->candidates[i];
    EXPECT_TRUE(c.status.ok()) << i << ": " << c.status;
    EXPECT_GT(c.median_ms, 0);
    EXPECT_LE(c.p10_ms, c.median_ms);
    EXPECT_LE(c.median_ms, c.p90_ms);
    EXPECT_LT(c.max_abs_error, 1e-4);
  }
  // The default schedule is the reference: bit-identical.
  EXPECT_EQ(m->candidates[0].max_abs_error, 0);
}

TEST(MeasureTest, CacheFlushBetweenRunsKeepsResultsAndTravelsInTheProtocol) {
  HardwareInfo zen;
  zen.cache_bytes = {32768, 1048576, 33554432};
  EXPECT_EQ(CacheFlushBytesFor(zen), 2 * 1048576);  // twice L2: the data ends up in L3
  HardwareInfo one_level;
  one_level.cache_bytes = {65536};
  EXPECT_EQ(CacheFlushBytesFor(one_level), 131072);
  EXPECT_EQ(CacheFlushBytesFor(HardwareInfo{}), 0);

  loop::Func lowered = LoweredMatMul();
  const Target target = Host();
  absl::StatusOr<CandidateBatch> batch =
      BuildCandidates(lowered, {ScheduleSpace(lowered, target).Default().schedule}, target);
  ASSERT_TRUE(batch.ok()) << batch.status();
  MeasureOptions flushed = Quick();
  flushed.cache_flush_bytes = 2 << 20;
  absl::StatusOr<BatchMeasurement> m = RunCandidates(lowered, *batch, flushed);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->reference.status.ok()) << m->reference.status;
  ASSERT_EQ(m->candidates.size(), 1u);
  EXPECT_TRUE(m->candidates[0].status.ok()) << m->candidates[0].status;
  EXPECT_EQ(m->candidates[0].max_abs_error, 0);
  EXPECT_GT(m->candidates[0].median_ms, 0);

  EXPECT_EQ(MeasureOptionsFromProto(MeasureOptionsToProto(flushed)).cache_flush_bytes, 2 << 20);
  v1::MeasureOptions huge = MeasureOptionsToProto(flushed);
  huge.set_cache_flush_bytes(int64_t{1} << 40);
  EXPECT_EQ(MeasureOptionsFromProto(huge).cache_flush_bytes, int64_t{1} << 30);
  huge.set_cache_flush_bytes(-5);
  EXPECT_EQ(MeasureOptionsFromProto(huge).cache_flush_bytes, 0);
}

TEST(MeasureTest, RejectsWrongCrashingAndHangingCandidates) {
  loop::Func lowered = LoweredMatMul();
  const Target target = Host();
  loop::Func reference = lowered;
  ASSERT_TRUE(schedule::ApplySchedule(schedule::DefaultSchedule(lowered, target), reference).ok());
  const loop::BufferRef out = lowered.params.back();
  // Wrong: the correct kernel, then one element overwritten.
  loop::Func wrong = reference;
  wrong.body = loop::Block(
      {reference.body, loop::Store(out, {loop::IntImm(3), loop::IntImm(5)}, loop::FloatImm(42))});
  // Crash: a store far outside any mapping.
  loop::Func crash = reference;
  crash.body = loop::Block(
      {reference.body,
       loop::Store(out, {loop::IntImm(int64_t{1} << 40), loop::IntImm(0)}, loop::FloatImm(1))});
  // Hang: 2^40 dependent float additions.
  loop::Func hang = reference;
  loop::Var v = loop::MakeVar("spin");
  hang.body = loop::For(
      v, int64_t{1} << 40,
      loop::Store(out, {loop::IntImm(0), loop::IntImm(0)},
                  loop::Load(out, {loop::IntImm(0), loop::IntImm(0)}) + loop::FloatImm(1)),
      loop::ForKind::kSerial, true);
  absl::StatusOr<CandidateBatch> batch = BuildFuncs(reference, {wrong, crash, hang, reference},
                                                    target);
  ASSERT_TRUE(batch.ok()) << batch.status();
  MeasureOptions o = Quick();
  o.timeout_s = 1;
  absl::StatusOr<BatchMeasurement> m = RunCandidates(lowered, *batch, o);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->candidates.size(), 4u);
  EXPECT_EQ(m->candidates[0].status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(m->candidates[0].status.message()),
              StartsWith("wrong output: param 2 (%out) element 125 is 42, the reference has "));
  EXPECT_EQ(m->candidates[0].repeats, 0);
  EXPECT_EQ(m->candidates[1].status.code(), absl::StatusCode::kAborted);
  // Under ASan its SEGV handler reports the fault and aborts the child instead.
  EXPECT_THAT(
      std::string(m->candidates[1].status.message()),
      HasSubstr(kAddressSanitizerBuild ? "crashed with signal 6" : "crashed with signal 11"));
  EXPECT_EQ(m->candidates[2].status,
            absl::DeadlineExceededError("ran past the 1 s timeout"));
  // The batch goes on after them.
  EXPECT_TRUE(m->candidates[3].status.ok()) << m->candidates[3].status;
}

TEST(MeasureTest, ScheduleThatDoesNotApplyIsNotBuilt) {
  loop::Func lowered = LoweredMatMul();
  schedule::Schedule bad;
  bad.steps.push_back({schedule::Primitive::Kind::kVectorize, {"k"}, 0});  // a reduction
  absl::StatusOr<CandidateBatch> batch = BuildCandidates(lowered, {bad}, Host());
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_EQ(batch->candidates.size(), 1u);
  EXPECT_EQ(batch->candidates[0].status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(batch->candidates[0].symbol, "");
  absl::StatusOr<BatchMeasurement> m = RunCandidates(lowered, *batch, Quick());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->candidates[0].status.code(), absl::StatusCode::kFailedPrecondition);
}

TEST(MeasureTest, WinogradCandidatesMatchTheDirectConv) {
  // Through LLVM: the Winograd nests (local tiles, guarded edge tiles, the GEMM planned as a
  // blocked 1x1 conv) compute the direct conv's outputs within the measurer's tolerance, for a
  // ragged output (11 = 2*5 + 1 = 4*2 + 3) and random template samples around them.
  lowering::testing::BlockedConvGraph conv(1, 11, 1, 1);
  auto kernel = lowering::LowerGroup(conv.nodes, "k");
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  const Target target = Host();
  ScheduleSpace space(kernel->func, target);
  std::vector<schedule::Schedule> candidates;
  for (int64_t m : {2, 4}) {
    Candidate c = space.Instantiate({{"conv.winograd", m}});
    ASSERT_EQ(c.config.at("conv.winograd"), m);
    candidates.push_back(c.schedule);
  }
  std::mt19937_64 rng(11);
  for (int i = 0; i < 6; ++i) candidates.push_back(space.Sample(rng).schedule);
  absl::StatusOr<CandidateBatch> batch = BuildCandidates(kernel->func, candidates, target);
  ASSERT_TRUE(batch.ok()) << batch.status();
  absl::StatusOr<BatchMeasurement> m = RunCandidates(kernel->func, *batch, Quick());
  ASSERT_TRUE(m.ok()) << m.status();
  int winograd = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const std::string text = candidates[i].ToString();
    const bool is_winograd = text.rfind("winograd(", 0) == 0;
    winograd += is_winograd;
    EXPECT_TRUE(m->candidates[i].status.ok()) << m->candidates[i].status << "\n" << text;
    // A different rounding: the Winograd nests ran, not a copy of the direct conv.
    if (is_winograd) EXPECT_GT(m->candidates[i].max_abs_error, 0) << text;
  }
  EXPECT_GE(winograd, 2);
}

}  // namespace
}  // namespace kiln::tuning


namespace kiln::tuning {
namespace {

// A CUDA target's batch: PTX with every kernel's launches, which survive the protocol; on a
// machine without a GPU the reference's child reports why and nothing else runs.
TEST(MeasureProtoTest, GpuBatchesCarryPtxAndLaunches) {
  loop::Func lowered = LoweredMatMul(64, 96, 48);
  absl::StatusOr<Target> gpu = ParseCudaTarget("cuda:sm_80");
  ASSERT_TRUE(gpu.ok());
  ScheduleSpace space(lowered, *gpu);
  std::mt19937_64 rng(3);
  absl::StatusOr<CandidateBatch> batch =
      BuildCandidates(lowered, {space.Sample(rng).schedule, space.Default().schedule}, *gpu);
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_TRUE(batch->ptx);
  EXPECT_NE(batch->code.find(".target sm_80"), std::string::npos);
  for (const BuiltKernel* k : {&batch->reference, &batch->candidates[0], &batch->candidates[1]}) {
    ASSERT_TRUE(k->status.ok()) << k->status;
    ASSERT_FALSE(k->launches.empty());
    for (const KernelLaunch& l : k->launches) {
      EXPECT_NE(batch->code.find(".entry " + l.entry + "("), std::string::npos) << l.entry;
      EXPECT_LE(l.block[0] * l.block[1] * l.block[2], 1024);
    }
  }
  v1::CandidateBatch wire = BatchToProto(lowered, *batch);
  EXPECT_EQ(wire.code_format(), "ptx");
  ASSERT_EQ(wire.reference().launches_size(), static_cast<int>(batch->reference.launches.size()));
  EXPECT_EQ(wire.reference().launches(0).entry(), batch->reference.launches[0].entry);
  EXPECT_EQ(wire.reference().launches(0).block(0), batch->reference.launches[0].block[0]);
  MeasureOptions on_gpu1 = Quick();
  on_gpu1.device = 1;
  EXPECT_EQ(MeasureOptionsFromProto(MeasureOptionsToProto(on_gpu1)).device, 1);
  if (!runtime::cuda::CudaDriver::Get().ok()) {
    absl::StatusOr<BatchMeasurement> m = RunCandidates(lowered, *batch, Quick());
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(std::string(m.status().message()), HasSubstr("no CUDA driver"));
  }
}

TEST(MeasureProtoTest, ABatchSentAsAMessageMeasuresTheSame) {
  loop::Func lowered = LoweredMatMul();
  const Target target = Host();
  ScheduleSpace space(lowered, target);
  std::mt19937_64 rng(2);
  schedule::Schedule bad;
  bad.steps.push_back({schedule::Primitive::Kind::kVectorize, {"k"}, 0});
  absl::StatusOr<CandidateBatch> batch =
      BuildCandidates(lowered, {space.Sample(rng).schedule, bad}, target);
  ASSERT_TRUE(batch.ok()) << batch.status();
  // Over the wire: serialized bytes, as a measure worker receives them.
  v1::CandidateBatch wire;
  ASSERT_TRUE(wire.ParseFromString(BatchToProto(lowered, *batch).SerializeAsString()));
  EXPECT_EQ(wire.code_format(), "elf-shared-object");
  EXPECT_EQ(wire.candidates(1).error_code(), static_cast<int>(absl::StatusCode::kFailedPrecondition));
  absl::StatusOr<v1::BatchMeasurement> m = RunBatchMessage(wire, MeasureOptionsToProto(Quick()));
  ASSERT_TRUE(m.ok()) << m.status();
  BatchMeasurement back = MeasurementFromProto(*m);
  EXPECT_TRUE(back.reference.status.ok());
  EXPECT_GT(back.reference.median_ms, 0);
  ASSERT_EQ(back.candidates.size(), 2u);
  EXPECT_TRUE(back.candidates[0].status.ok()) << back.candidates[0].status;
  EXPECT_GT(back.candidates[0].repeats, 0);
  EXPECT_EQ(back.candidates[1].status.code(), absl::StatusCode::kFailedPrecondition);

  // ELF code claimed to be PTX: the reference fails in its child (no driver here, or the
  // driver refuses the bytes), never the measuring process.
  v1::CandidateBatch ptx = wire;
  ptx.set_code_format("ptx");
  EXPECT_EQ(RunBatchMessage(ptx, {}).status().code(), absl::StatusCode::kFailedPrecondition);
  v1::CandidateBatch cubin = wire;
  cubin.set_code_format("cubin");
  EXPECT_EQ(
      RunBatchMessage(cubin, {}).status(),
      absl::InvalidArgumentError("code format 'cubin' is neither 'elf-shared-object' nor 'ptx'"));
  v1::CandidateBatch garbage = wire;
  garbage.set_workload("func @x(");
  EXPECT_EQ(RunBatchMessage(garbage, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kiln::tuning
