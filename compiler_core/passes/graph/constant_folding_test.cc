// Tests for constant folding: printed IR before/after, via the reference evaluator.
#include "compiler_core/passes/graph/constant_folding.h"

#include <memory>
#include <string>

#include "compiler_core/passes/graph/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::passes {
namespace {

using testing::RunPassOnText;

TEST(ConstantFoldingTest, FoldsChainOfConstantNodes) {
  bool changed = false;
  auto out = RunPassOnText("constant-folding", R"(
graph @g(%0 "x": f32[2]) -> (%4 "y") {
  %1 = const f32[2] dense<[1.0,4.0]>
  %2 = Sqrt(%1) : f32[2]
  %3 = Neg(%2) : f32[2]
  %4 = Add(%0, %3) : f32[2]
  return %4
}
)", &changed);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(changed);
  EXPECT_EQ(*out,
            "graph @g(%0 \"x\": f32[2]) -> (%2 \"y\") {\n"
            "  %1 = const f32[2] dense<[-1.0,-2.0]>\n"
            "  %2 = Add(%0, %1) : f32[2]\n"
            "  return %2\n"
            "}\n");
}

TEST(ConstantFoldingTest, FoldedGraphOutputKeepsItsName) {
  auto out = RunPassOnText("constant-folding", R"(
graph @g() -> (%3 "y") {
  %1 = const f32[2,2] dense<[1.0,2.0,3.0,4.0]>
  %2 = const f32[2] dense<[10.0,20.0]>
  %3 = Add(%1, %2) : f32[2,2]
  return %3
}
)");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out,
            "graph @g() -> (%0 \"y\") {\n"
            "  %0 = const f32[2,2] dense<[11.0,22.0,13.0,24.0]>\n"
            "  return %0\n"
            "}\n");
}

TEST(ConstantFoldingTest, LeavesNodesWithNonConstantInputs) {
  constexpr char kIr[] =
      "graph @g(%0 \"x\": f32[2]) -> (%2 \"y\") {\n"
      "  %1 = const f32[2] splat<3.0>\n"
      "  %2 = Mul(%0, %1) : f32[2]\n"
      "  return %2\n"
      "}\n";
  bool changed = true;
  auto out = RunPassOnText("constant-folding", kIr, &changed);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(changed);
  EXPECT_EQ(*out, kIr);
}

// Materializing is not folding: an Expand of a scalar to 2^25 f32 (128 MiB, far more than its
// inputs) stays a node; to 16 elements it folds. Nothing past 1 TiB is evaluated (an Expand
// to 2^40 f32 would otherwise exhaust memory at compile time).
TEST(ConstantFoldingTest, LeavesResultsTooLargeToMaterialize) {
  constexpr char kLarge[] =
      "graph @g() -> (%2 \"y\") {\n"
      "  %0 = const f32[] dense<[2.5]>\n"
      "  %1 = const i64[1] dense<[33554432]>\n"
      "  %2 = Expand(%0, %1) : f32[33554432]\n"
      "  return %2\n"
      "}\n";
  bool changed = true;
  auto out = RunPassOnText("constant-folding", kLarge, &changed);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(changed);
  EXPECT_EQ(*out, kLarge);
  auto huge = RunPassOnText("constant-folding",
                            "graph @g() -> (%3 \"y\") {\n"
                            "  %1 = const f32[] splat<2.5>\n"
                            "  %2 = const i64[1] dense<[1099511627776]>\n"
                            "  %3 = Expand(%1, %2) : f32[1099511627776]\n"
                            "  return %3\n"
                            "}\n");
  EXPECT_TRUE(huge.ok()) << huge.status();
  auto small = RunPassOnText("constant-folding",
                             "graph @g() -> (%3 \"y\") {\n"
                             "  %1 = const f32[] splat<2.5>\n"
                             "  %2 = const i64[1] dense<[16]>\n"
                             "  %3 = Expand(%1, %2) : f32[16]\n"
                             "  return %3\n"
                             "}\n",
                             &changed);
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_TRUE(changed);
  EXPECT_EQ(*small,
            "graph @g() -> (%0 \"y\") {\n"
            "  %0 = const f32[16] splat<2.5>\n"
            "  return %0\n"
            "}\n");
}

// A 50k-node chain c0 + c + c + ... folds in one sweep to one constant whose values are
// checked; the rewrites go through the use lists, so the pass stays linear (it took minutes when
// every rewrite scanned every node).
TEST(ConstantFoldingTest, FoldsFiftyThousandNodeChain) {
  constexpr int kDepth = 50000;
  const TensorType type{DType::kFloat32, {4}};
  graph::Graph g;
  graph::Value* x = g.AddInput("x", type);
  auto c0 = Tensor::Zeros(type);
  for (int i = 0; i < 4; ++i) c0->mutable_data<float>()[i] = static_cast<float>(i);
  auto ones = Tensor::Zeros(type);
  for (int i = 0; i < 4; ++i) ones->mutable_data<float>()[i] = 1.0f;
  graph::Value* c = g.AddConstant("c", ones);
  graph::Value* v = g.AddConstant("c0", c0);
  for (int i = 0; i < kDepth; ++i) {
    v = g.AddNode(graph::OpKind::kAdd, "n" + std::to_string(i), {v, c}, {type})->output(0);
  }
  graph::Node* out = g.AddNode(graph::OpKind::kAdd, "out", {x, v}, {type});
  g.SetOutputs({out->output(0)});
  absl::StatusOr<bool> changed = ConstantFolding().Run(g);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  ASSERT_EQ(g.num_nodes(), 1);
  const graph::Value* folded = out->input(1);
  ASSERT_TRUE(folded->is_constant());
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(folded->constant()->data<float>()[i], static_cast<float>(i + kDepth));
  }
  EXPECT_EQ(g.LiveConstants().size(), 1u);
}

TEST(ConstantFoldingTest, RefusesToRunAfterFusion) {
  auto out = RunPassOnText("constant-folding", R"(
graph @g(%0 "x": f32[2]) -> (%1 "y") {
  %1 = Relu(%0) : f32[2] group=0
  return %1
}
)");
  EXPECT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(out.status().message(),
            "pass 'constant-folding' must run before 'fusion': node '%1' (Relu) already has "
            "fusion group 0");
}

}  // namespace
}  // namespace kiln::passes
