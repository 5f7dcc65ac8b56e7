// Tests for operator fusion: group ids in the printed IR for the contract's cases.
#include "compiler_core/passes/graph/fusion.h"

#include <string>
#include <vector>

#include "compiler_core/ir/graph/parser.h"
#include "compiler_core/ir/graph/printer.h"
#include "compiler_core/passes/graph/test_util.h"
#include "gtest/gtest.h"

namespace kiln::passes {
namespace {

using testing::RunPassOnText;

TEST(FusionTest, ConvAddReluAndGemmReluFuseOthersStayAlone) {
  bool changed = false;
  auto out = RunPassOnText("fusion", R"(
graph @g(%0 "x": f32[1,2,4,4]) -> (%10 "y") {
  %1 = const f32[2,2,3,3] splat<0.5>
  %2 = const f32[3,8] splat<0.25>
  %3 = Conv(%0, %1) {kernel_shape=[3,3], pads=[1,1,1,1]} : f32[1,2,4,4]
  %4 = Add(%3, %0) : f32[1,2,4,4]
  %5 = Relu(%4) : f32[1,2,4,4]
  %6 = MaxPool(%5) {kernel_shape=[2,2], strides=[2,2]} : f32[1,2,2,2]
  %7 = Flatten(%6) {axis=1} : f32[1,8]
  %8 = Gemm(%7, %2) {transB=1} : f32[1,3]
  %9 = Relu(%8) : f32[1,3]
  %10 = Softmax(%9) {axis=1} : f32[1,3]
  return %10
}
)", &changed);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(changed);
  EXPECT_EQ(*out,
            "graph @g(%0 \"x\": f32[1,2,4,4]) -> (%10 \"y\") {\n"
            "  %1 = const f32[2,2,3,3] splat<0.5>\n"
            "  %2 = const f32[3,8] splat<0.25>\n"
            "  %3 = Conv(%0, %1) {kernel_shape=[3,3], pads=[1,1,1,1]} : f32[1,2,4,4] group=0\n"
            "  %4 = Add(%3, %0) : f32[1,2,4,4] group=0\n"
            "  %5 = Relu(%4) : f32[1,2,4,4] group=0\n"
            "  %6 = MaxPool(%5) {kernel_shape=[2,2], strides=[2,2]} : f32[1,2,2,2] group=1\n"
            "  %7 = Flatten(%6) {axis=1} : f32[1,8] group=2\n"
            "  %8 = Gemm(%7, %2) {transB=1} : f32[1,3] group=3\n"
            "  %9 = Relu(%8) : f32[1,3] group=3\n"
            "  %10 = Softmax(%9) {axis=1} : f32[1,3] group=4\n"
            "  return %10\n"
            "}\n");
}

TEST(FusionTest, ChainStopsAtTypeChangeSharedOutputGraphOutputAndOpaqueOrViewAnchors) {
  auto out = RunPassOnText("fusion", R"(
graph @g(%0 "x": f32[1,4]) -> (%6 "a", %8 "b", %10 "c") {
  %1 = const f32[4,3] splat<1.0>
  %2 = MatMul(%0, %1) : f32[1,3]
  %3 = Cast(%2) {to=7} : i64[1,3]
  %4 = Exp(%0) : f32[1,4]
  %5 = Neg(%4) : f32[1,4]
  %6 = Sigmoid(%4) : f32[1,4]
  %7 = Softmax(%0) {axis=1} : f32[1,4]
  %8 = Relu(%7) : f32[1,4]
  %9 = Tanh(%5) : f32[1,4]
  %10 = Identity(%9) : f32[1,4]
  %11 = Abs(%10) : f32[1,4]
  return %6, %8, %10
}
)");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out,
            "graph @g(%0 \"x\": f32[1,4]) -> (%6 \"a\", %8 \"b\", %10 \"c\") {\n"
            "  %1 = const f32[4,3] splat<1.0>\n"
            "  %2 = MatMul(%0, %1) : f32[1,3] group=0\n"
            "  %3 = Cast(%2) {to=7} : i64[1,3] group=1\n"
            "  %4 = Exp(%0) : f32[1,4] group=2\n"
            "  %5 = Neg(%4) : f32[1,4] group=3\n"
            "  %6 = Sigmoid(%4) : f32[1,4] group=4\n"
            "  %7 = Softmax(%0) {axis=1} : f32[1,4] group=5\n"
            "  %8 = Relu(%7) : f32[1,4] group=6\n"
            "  %9 = Tanh(%5) : f32[1,4] group=3\n"
            "  %10 = Identity(%9) : f32[1,4] group=7\n"
            "  %11 = Abs(%10) : f32[1,4] group=8\n"
            "  return %6, %8, %10\n"
            "}\n");
}

TEST(FusionTest, ResidualProducedLaterJoinsTheLaterGroup) {
  // %4 reads %2 and %3; %3 is computed after %2's group starts, so %4 (and %5) join %3's group
  // and the groups can run in id order.
  auto out = RunPassOnText("fusion", R"(
graph @g(%0 "x": f32[4], %1 "z": f32[4]) -> (%5 "y") {
  %2 = Exp(%0) : f32[4]
  %3 = Log(%1) : f32[4]
  %4 = Add(%2, %3) : f32[4]
  %5 = Relu(%4) : f32[4]
  return %5
}
)");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out,
            "graph @g(%0 \"x\": f32[4], %1 \"z\": f32[4]) -> (%5 \"y\") {\n"
            "  %2 = Exp(%0) : f32[4] group=0\n"
            "  %3 = Log(%1) : f32[4] group=1\n"
            "  %4 = Add(%2, %3) : f32[4] group=1\n"
            "  %5 = Relu(%4) : f32[4] group=1\n"
            "  return %5\n"
            "}\n");
}

TEST(FusionTest, RerunRecomputesIdsAndReportsNoChange) {
  auto graph = graph::ParseGraph(R"(
graph @g(%0 "x": f32[4]) -> (%2 "y") {
  %1 = Exp(%0) : f32[4] group=7
  %2 = Relu(%1) : f32[4]
  return %2
}
)");
  ASSERT_TRUE(graph.ok()) << graph.status();
  OperatorFusion pass;
  auto first = pass.Run(**graph);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(*first);
  auto second = pass.Run(**graph);
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(*second);
  EXPECT_EQ(graph::PrintGraph(**graph),
            "graph @g(%0 \"x\": f32[4]) -> (%2 \"y\") {\n"
            "  %1 = Exp(%0) : f32[4] group=0\n"
            "  %2 = Relu(%1) : f32[4] group=0\n"
            "  return %2\n"
            "}\n");
}

// A 100k-node Relu chain is cut into groups of kMaxFusedNodes (the lowering nests a group's
// chain into one expression, which codegen walks recursively), numbered in order.
TEST(FusionTest, LongChainsAreCutIntoGroupsOfAtMostMaxFusedNodes) {
  constexpr int kDepth = 100000;
  const TensorType type{DType::kFloat32, {4}};
  graph::Graph g;
  graph::Value* v = g.AddInput("x", type);
  for (int i = 0; i < kDepth; ++i) {
    v = g.AddNode(graph::OpKind::kRelu, "r" + std::to_string(i), {v}, {type})->output(0);
  }
  g.SetOutputs({v});
  ASSERT_TRUE(OperatorFusion().Run(g).ok());
  std::vector<graph::Node*> nodes = g.nodes();
  for (int i = 0; i < kDepth; ++i) {
    ASSERT_EQ(nodes[i]->fusion_group(), i / kMaxFusedNodes) << "node " << i;
  }
}

}  // namespace
}  // namespace kiln::passes
