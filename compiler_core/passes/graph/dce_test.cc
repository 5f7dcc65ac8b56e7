// Tests for dead-code elimination: printed IR before/after.
#include "compiler_core/passes/graph/dce.h"

#include <string>

#include "compiler_core/passes/graph/test_util.h"
#include "gtest/gtest.h"

namespace kiln::passes {
namespace {

using testing::RunPassOnText;

TEST(DceTest, RemovesDeadChainsAndUnusedConstants) {
  bool changed = false;
  auto out = RunPassOnText("dce", R"(
graph @g(%0 "x": f32[4]) -> (%3 "y") {
  %1 = const f32[4] splat<2.0>
  %2 = Exp(%0) : f32[4]
  %3 = Relu(%0) : f32[4]
  %4 = Mul(%2, %1) : f32[4]
  %5 = Log(%4) : f32[4]
  return %3
}
)", &changed);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(changed);
  EXPECT_EQ(*out,
            "graph @g(%0 \"x\": f32[4]) -> (%1 \"y\") {\n"
            "  %1 = Relu(%0) : f32[4]\n"
            "  return %1\n"
            "}\n");
}

TEST(DceTest, KeepsMultiOutputNodeWithOneLiveResult) {
  constexpr char kIr[] =
      "graph @g(%0 \"x\": f32[1,1,4,4]) -> (%1 \"y\") {\n"
      "  %1, %2 = MaxPool(%0) {kernel_shape=[2,2], strides=[2,2]} : f32[1,1,2,2], "
      "i64[1,1,2,2]\n"
      "  return %1\n"
      "}\n";
  bool changed = true;
  auto out = RunPassOnText("dce", kIr, &changed);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(changed);
  EXPECT_EQ(*out, kIr);
}

// A dead 100k-node chain beside a live node: erased in reverse order through the use lists,
// linear in the chain.
TEST(DceTest, ErasesHundredThousandNodeDeadChain) {
  constexpr int kDepth = 100000;
  const TensorType type{DType::kFloat32, {4}};
  graph::Graph g;
  graph::Value* x = g.AddInput("x", type);
  graph::Value* v = x;
  for (int i = 0; i < kDepth; ++i) {
    v = g.AddNode(graph::OpKind::kExp, "e" + std::to_string(i), {v}, {type})->output(0);
  }
  graph::Node* live = g.AddNode(graph::OpKind::kRelu, "live", {x}, {type});
  g.SetOutputs({live->output(0)});
  absl::StatusOr<bool> changed = DeadCodeElimination().Run(g);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  ASSERT_EQ(g.num_nodes(), 1);
  EXPECT_EQ(g.nodes()[0], live);
  EXPECT_EQ(g.Users(x), std::vector<graph::Node*>{live});
}

TEST(DceTest, RefusesToRunAfterFusion) {
  auto out = RunPassOnText("dce", R"(
graph @g(%0 "x": f32[2]) -> (%0 "x") {
  %1 = Relu(%0) : f32[2] group=0
  return %0
}
)");
  EXPECT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace kiln::passes
