// Tests for the layout-nchwc pass: the printed IR of small conv chains (packed weights, edge
// transforms), cases left alone, and numeric equality with the reference evaluator on a random
// residual convnet at block sizes 8 and 16 (channel counts that need padding included).
#include "compiler_core/passes/graph/layout_nchwc.h"

#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "compiler_core/ir/graph/parser.h"
#include "compiler_core/ir/graph/verifier.h"
#include "compiler_core/passes/graph/test_util.h"
#include "compiler_core/reference/evaluator.h"

namespace kiln::passes {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::RunPassOnText;

TEST(LayoutNchwcTest, BlocksConvChainAndUnblocksBeforeFlatten) {
  bool changed = false;
  auto out = RunPassOnText("layout-nchwc", R"(
graph @g(%0 "x": f32[1,16,4,4]) -> (%6 "y") {
  %1 = const f32[32,16,3,3] splat<0.5>
  %2 = const f32[32] splat<1.0>
  %3 = Conv(%0, %1, %2) {dilations=[1,1], group=1, kernel_shape=[3,3], pads=[1,1,1,1], strides=[1,1]} : f32[1,32,4,4]
  %4 = Relu(%3) : f32[1,32,4,4]
  %5 = GlobalAveragePool(%4) : f32[1,32,1,1]
  %6 = Flatten(%5) {axis=1} : f32[1,32]
  return %6
}
)", &changed);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(changed);
  EXPECT_THAT(*out, HasSubstr("const f32[2,1,3,3,16,16]"));
  EXPECT_THAT(*out, HasSubstr("LayoutTransform(%0) {dst_layout=\"NCHW16c\", src_layout=\"NCHW\"} "
                              ": f32[1,1,4,4,16]"));
  EXPECT_THAT(*out, HasSubstr("layout=\"NCHW16c\", pads=[1,1,1,1], strides=[1,1]} : "
                              "f32[1,2,4,4,16]"));
  EXPECT_THAT(*out, HasSubstr("Relu(%"));
  EXPECT_THAT(*out, HasSubstr(": f32[1,2,1,1,16]"));
  EXPECT_THAT(*out, HasSubstr("{channels=32, dst_layout=\"NCHW\", src_layout=\"NCHW16c\"} : "
                              "f32[1,32,1,1]"));
  auto parsed = graph::ParseGraph(*out);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(graph::VerifyGraph(**parsed).ok());
}

// A symbolic batch and image size (channels static): the chain is blocked all the same, and a
// padded conv reads a Pad node's padded copy of its blocked input (a kernel's padding workspace
// has a static size), its own pads cleared.
TEST(LayoutNchwcTest, BlocksSymbolicImagesAndPadsInANodeOfItsOwn) {
  auto out = RunPassOnText("layout-nchwc", R"(
graph @g<H=[0,inf], N=[0,inf], W=[0,inf]>(%0 "x": f32["N",16,"H","W"]) -> (%4 "y") {
  %1 = const f32[32,16,3,3] splat<0.5>
  %2 = Conv(%0, %1) {dilations=[1,1], group=1, kernel_shape=[3,3], pads=[1,2,1,0], strides=[1,1]} : f32["N",32,"H","W"]
  %3 = Relu(%2) : f32["N",32,"H","W"]
  %4 = GlobalAveragePool(%3) : f32["N",32,1,1]
  return %4
}
)");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(*out, HasSubstr(": f32[\"N\",1,\"H\",\"W\",16]"));
  EXPECT_THAT(*out, HasSubstr("const i64[10] dense<[0,0,1,2,0,0,0,1,0,0]>"));
  EXPECT_THAT(*out, HasSubstr("{mode=\"constant\"} : f32[\"N\",1,\"H + 2\",\"W + 2\",16]"));
  EXPECT_THAT(*out, HasSubstr("layout=\"NCHW16c\", pads=[0,0,0,0], strides=[1,1]} : "
                              "f32[\"N\",2,\"H\",\"W\",16]"));
  EXPECT_THAT(*out, Not(HasSubstr("pads=[1,2,1,0]")));
  auto parsed = graph::ParseGraph(*out);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(graph::VerifyGraph(**parsed).ok());
}

TEST(LayoutNchwcTest, ReadsAPlainStemInPlace) {
  auto out = RunPassOnText("layout-nchwc", R"(
graph @g(%0 "x": f32[1,3,8,8]) -> (%2 "y") {
  %1 = const f32[8,3,3,3] splat<0.5>
  %2 = Conv(%0, %1) {dilations=[1,1], group=1, kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]} : f32[1,8,4,4]
  return %2
}
)");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(*out, HasSubstr("const f32[1,1,3,3,3,16]"));
  EXPECT_THAT(*out, HasSubstr("= Conv(%0, %"));
  EXPECT_THAT(*out, HasSubstr("{channels=8, dst_layout=\"NCHW\", src_layout=\"NCHW16c\"} : "
                              "f32[1,8,4,4]"));
  EXPECT_THAT(*out, HasSubstr("-> (%3 \"y\")"));
}

TEST(LayoutNchwcTest, LeavesNonConstantWeightsAndGroupedConvsAlone) {
  bool changed = true;
  auto out = RunPassOnText("layout-nchwc", R"(
graph @g(%0 "x": f32[1,4,4,4], %1 "w": f32[4,4,1,1]) -> (%3 "y", %4 "z") {
  %2 = const f32[4,2,1,1] splat<0.5>
  %3 = Conv(%0, %1) {dilations=[1,1], group=1, kernel_shape=[1,1], pads=[0,0,0,0], strides=[1,1]} : f32[1,4,4,4]
  %4 = Conv(%0, %2) {dilations=[1,1], group=2, kernel_shape=[1,1], pads=[0,0,0,0], strides=[1,1]} : f32[1,4,4,4]
  return %3, %4
}
)", &changed);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(changed);
  EXPECT_THAT(*out, Not(HasSubstr("layout")));
}

TEST(LayoutNchwcTest, LeavesMaxPoolWithUsedIndicesPlain) {
  auto out = RunPassOnText("layout-nchwc", R"(
graph @g(%0 "x": f32[1,16,4,4]) -> (%3 "y", %4 "i") {
  %1 = const f32[16,16,1,1] splat<0.5>
  %2 = Conv(%0, %1) {dilations=[1,1], group=1, kernel_shape=[1,1], pads=[0,0,0,0], strides=[1,1]} : f32[1,16,4,4]
  %3, %4 = MaxPool(%2) {ceil_mode=0, dilations=[1,1], kernel_shape=[2,2], pads=[0,0,0,0], storage_order=0, strides=[2,2]} : f32[1,16,2,2], i64[1,16,2,2]
  return %3, %4
}
)");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(*out, HasSubstr("layout=\"NCHW16c\""));  // the conv is blocked
  EXPECT_THAT(*out, HasSubstr("strides=[2,2]} : f32[1,16,2,2], i64[1,16,2,2]"));
}

TEST(LayoutNchwcTest, LeavesLpPoolsPlain) {
  auto out = RunPassOnText("layout-nchwc", R"(
graph @g(%0 "x": f32[1,16,4,4]) -> (%3 "y", %4 "z") {
  %1 = const f32[16,16,1,1] splat<0.5>
  %2 = Conv(%0, %1) {dilations=[1,1], group=1, kernel_shape=[1,1], pads=[0,0,0,0], strides=[1,1]} : f32[1,16,4,4]
  %3 = LpPool(%2) {ceil_mode=0, dilations=[1,1], kernel_shape=[2,2], p=2, pads=[0,0,0,0], strides=[2,2]} : f32[1,16,2,2]
  %4 = GlobalLpPool(%2) {p=3} : f32[1,16,1,1]
  return %3, %4
}
)");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(*out, HasSubstr("layout=\"NCHW16c\""));  // the conv is blocked
  EXPECT_THAT(*out, HasSubstr("strides=[2,2]} : f32[1,16,2,2]"));
  EXPECT_THAT(*out, HasSubstr("GlobalLpPool(%"));
  EXPECT_THAT(*out, HasSubstr("{p=3} : f32[1,16,1,1]"));
  EXPECT_THAT(*out, Not(HasSubstr(": f32[1,1,2,2,16]")));
}

/// A dense<> constant of `shape` with values in [-1, 1).
std::string RandomConst(int id, const std::vector<int64_t>& shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<std::string> values;
  for (int64_t i = 0; i < n; ++i) values.push_back(absl::StrCat(dist(rng)));
  return absl::StrCat("  %", id, " = const f32[", absl::StrJoin(shape, ","), "] dense<[",
                      absl::StrJoin(values, ","), "]>\n");
}

/// Stem conv (3 → 12, stride 2), Relu, MaxPool, conv 12 → 12, residual Add with a channel
/// constant, depthwise 3×3 conv with Clip (also a graph output), AveragePool,
/// GlobalAveragePool, Flatten.
void ExpectSameOutputs(int lanes) {
  std::mt19937 rng(7);
  std::string ir = "graph @g(%0 \"x\": f32[1,3,12,12]) -> (%18 \"y\", %15 \"z\") {\n";
  ir += RandomConst(1, {12, 3, 3, 3}, rng) + RandomConst(2, {12}, rng) +
        RandomConst(3, {12, 12, 3, 3}, rng) + RandomConst(4, {12, 1, 1}, rng) +
        RandomConst(5, {12, 1, 3, 3}, rng);
  const std::string conv = "dilations=[1,1], group=1, kernel_shape=[3,3], pads=[1,1,1,1]";
  ir += absl::StrCat(
      "  %6 = Conv(%0, %1, %2) {", conv, ", strides=[2,2]} : f32[1,12,6,6]\n",
      "  %7 = Relu(%6) : f32[1,12,6,6]\n",
      "  %8 = MaxPool(%7) {kernel_shape=[3,3], pads=[1,1,1,1], strides=[1,1]} : f32[1,12,6,6]\n",
      "  %9 = Conv(%8, %3) {", conv, ", strides=[1,1]} : f32[1,12,6,6]\n",
      "  %10 = Add(%9, %8) : f32[1,12,6,6]\n",
      "  %11 = Mul(%10, %4) : f32[1,12,6,6]\n",
      "  %12 = Conv(%11, %5) {dilations=[1,1], group=12, kernel_shape=[3,3], pads=[0,1,1,0], "
      "strides=[2,2]} : f32[1,12,3,3]\n",
      "  %13 = const f32[] dense<[0.0]>\n  %14 = const f32[] dense<[0.5]>\n",
      "  %15 = Clip(%12, %13, %14) : f32[1,12,3,3]\n",
      "  %16 = AveragePool(%15) {kernel_shape=[2,2], pads=[0,0,0,1], strides=[1,1]} : "
      "f32[1,12,2,3]\n",
      "  %17 = GlobalAveragePool(%16) : f32[1,12,1,1]\n",
      "  %18 = Flatten(%17) {axis=1} : f32[1,12]\n  return %18, %15\n}\n");
  auto original = graph::ParseGraph(ir);
  ASSERT_TRUE(original.ok()) << original.status();
  auto converted = graph::ParseGraph(ir);
  ASSERT_TRUE(converted.ok());
  LayoutNchwc pass(LayoutNchwcOptions{lanes});
  auto changed = pass.Run(**converted);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  absl::Status verified = graph::VerifyGraph(**converted);
  ASSERT_TRUE(verified.ok()) << verified << "\n" << graph::PrintGraph(**converted);
  int blocked = 0;
  for (const graph::Node* n : (*converted)->nodes()) blocked += n->attrs().Has("layout");
  EXPECT_EQ(blocked, 6) << graph::PrintGraph(**converted);

  auto x = Tensor::Zeros(TensorType{DType::kFloat32, {1, 3, 12, 12}});
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < 3 * 144; ++i) x->mutable_data<float>()[i] = dist(rng);
  auto want = reference::EvaluateGraph(**original, {x});
  auto got = reference::EvaluateGraph(**converted, {x});
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(want->size(), got->size());
  for (size_t o = 0; o < want->size(); ++o) {
    ASSERT_EQ((*want)[o]->type, (*got)[o]->type);
    for (int64_t i = 0; i < (*want)[o]->type.NumElements(); ++i) {
      EXPECT_NEAR((*want)[o]->GetAsDouble(i), (*got)[o]->GetAsDouble(i), 1e-5) << o << ":" << i;
    }
  }
}

TEST(LayoutNchwcTest, MatchesReferenceAtBlock8) { ExpectSameOutputs(8); }
TEST(LayoutNchwcTest, MatchesReferenceAtBlock16) { ExpectSameOutputs(16); }

}  // namespace
}  // namespace kiln::passes
