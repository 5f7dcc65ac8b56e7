// winograd(m) on lowered blocked convs: the rewritten kernel computes the direct conv's outputs
// (within Winograd's rounding) for tile-aligned and ragged outputs, with and without padding
// and batch, alone and with the template's schedule of the new nests; what it refuses.
#include "compiler_core/schedule/winograd.h"

#include <cmath>

#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/ir/loop/verifier.h"
#include "compiler_core/lowering/lower.h"
#include "compiler_core/lowering/lowering_test_util.h"
#include "compiler_core/schedule/knobs.h"
#include "compiler_core/schedule/schedule.h"
#include "compiler_core/schedule/schedule_parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::schedule {
namespace {

using lowering::testing::Floats;
using lowering::testing::Random;
using ::testing::HasSubstr;

Target Avx512() {
  Target t;
  t.vector_bits = 512;
  t.num_cores = 2;
  return t;
}

struct Case {
  int64_t n, hw, pad, stride;
};

/// |got - want| <= 1e-4 + 1e-3 |want| everywhere (the measurer's tolerance).
void ExpectClose(const std::vector<float>& got, const std::vector<float>& want,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  double max_err = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(double(got[i]) - want[i]);
    max_err = std::max(max_err, err);
    if (!(err <= 1e-4 + 1e-3 * std::fabs(want[i]))) ++bad;
  }
  EXPECT_EQ(bad, 0) << what << ": max abs error " << max_err;
}

class WinogradTest : public ::testing::TestWithParam<Case> {};

TEST_P(WinogradTest, MatchesTheDirectConv) {
  const Case& c = GetParam();
  lowering::testing::BlockedConvGraph conv(c.n, c.hw, c.pad, c.stride);
  auto kernel = lowering::LowerGroup(conv.nodes, "k");
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  ASSERT_TRUE(CanApplyWinograd(kernel->func));
  lowering::testing::ValueMap in = {{conv.x, Random(conv.x->type(), 3)}};
  auto want = lowering::testing::RunKernel(*kernel, in);
  ASSERT_TRUE(want.ok()) << want.status();
  // The output depends on the input: a different input changes it.
  auto other = lowering::testing::RunKernel(*kernel, {{conv.x, Random(conv.x->type(), 4)}});
  ASSERT_TRUE(other.ok());
  ASSERT_NE(Floats(**other), Floats(**want));
  for (int64_t m : {2, 4}) {
    SCOPED_TRACE(absl::StrCat("winograd(", m, ")"));
    loop::Func f = kernel->func;
    ASSERT_TRUE(ApplyWinograd(f, m).ok());
    EXPECT_TRUE(loop::VerifyFunc(f).ok()) << loop::VerifyFunc(f) << "\n" << loop::PrintFunc(f);
    EXPECT_FALSE(CanApplyWinograd(f));
    auto got = lowering::testing::RunFunc(*kernel, f, in);
    ASSERT_TRUE(got.ok()) << got.status();
    ExpectClose(Floats(**got), Floats(**want), loop::PrintFunc(f));

    // The template with the knob set: winograd(m) first, then the new nests planned; the
    // schedule replays from its text.
    KnobContext knobs(KnobConfig{{"conv.winograd", m}});
    Schedule s = PlanSchedule(kernel->func, Avx512(), knobs);
    ASSERT_FALSE(s.steps.empty());
    EXPECT_EQ(s.steps[0].kind, Primitive::Kind::kWinograd);
    EXPECT_EQ(knobs.taken().at("conv.winograd"), m);
    auto parsed = ParseSchedule(s.ToString());
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->ToString(), s.ToString());
    loop::Func scheduled = kernel->func;
    ASSERT_TRUE(ApplySchedule(*parsed, scheduled).ok()) << s.ToString();
    EXPECT_THAT(loop::PrintFunc(scheduled), HasSubstr("vectorized"));
    // The weights are constants, so the weight transform runs at load (Func::init) and U is
    // the one persistent workspace; the body no longer reads the weights.
    ASSERT_TRUE(scheduled.init) << loop::PrintFunc(scheduled);
    std::vector<loop::BufferRef> persistent = loop::PersistentWorkspaces(scheduled);
    ASSERT_EQ(persistent.size(), 1u);
    EXPECT_EQ(persistent[0]->name, "wino.u");
    EXPECT_THAT(loop::PrintStmt(scheduled.init), HasSubstr("%wino.u["));
    EXPECT_THAT(loop::PrintStmt(scheduled.body), ::testing::Not(HasSubstr("%in1[")));
    EXPECT_TRUE(loop::VerifyFunc(scheduled).ok()) << loop::VerifyFunc(scheduled);
    auto sched_got = lowering::testing::RunFunc(*kernel, scheduled, in);
    ASSERT_TRUE(sched_got.ok()) << sched_got.status();
    EXPECT_EQ(Floats(**sched_got), Floats(**got)) << s.ToString();
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, WinogradTest,
                         ::testing::Values(Case{1, 8, 1, 1},    // tiles divide the output
                                           Case{1, 11, 1, 1},   // ragged last tiles
                                           Case{2, 9, 0, 1},    // batch 2, unpadded input
                                           Case{1, 3, 1, 1}));  // one partial tile

TEST(WinogradRefusalTest, OnlyThreeByThreeStrideOne) {
  lowering::testing::BlockedConvGraph strided(1, 9, 1, 2);
  auto kernel = lowering::LowerGroup(strided.nodes, "k");
  ASSERT_TRUE(kernel.ok());
  EXPECT_FALSE(CanApplyWinograd(kernel->func));
  KnobContext knobs;
  PlanSchedule(kernel->func, Avx512(), knobs);
  for (const Knob& k : knobs.knobs()) EXPECT_NE(k.name, "conv.winograd");
  Schedule s;
  s.steps.push_back({Primitive::Kind::kWinograd, {}, 2});
  loop::Func f = kernel->func;
  absl::Status st = ApplySchedule(s, f);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("step 0 winograd(2): winograd: no unscheduled 3x3 "
                                      "stride-1 blocked conv update nest"));

  lowering::testing::BlockedConvGraph conv(1, 8, 1, 1);
  kernel = lowering::LowerGroup(conv.nodes, "k");
  ASSERT_TRUE(kernel.ok());
  f = kernel->func;
  st = ApplyWinograd(f, 3);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("output tile 3 is not supported (2 or 4)"));
  // Once the update nest is scheduled it is no longer the form winograd rewrites.
  s.steps = {{Primitive::Kind::kSplit, {"ow"}, 4}, {Primitive::Kind::kWinograd, {}, 4}};
  EXPECT_EQ(ApplySchedule(s, f).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(WinogradParseTest, PrintsAndParses) {
  auto s = ParseSchedule("winograd(4); split(tw, 2)");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->ToString(), "winograd(4)\nsplit(tw, 2)");
  auto bad = ParseSchedule("winograd(ocb)");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("expected the output tile size (an integer)"));
}

}  // namespace
}  // namespace kiln::schedule
