// Tests for folding BatchNormalization into Conv: exact printed IR on hand-computed weights, and
// a numeric check with the reference evaluator on random data.
#include "compiler_core/passes/graph/fold_batchnorm.h"

#include <cmath>
#include <random>

#include "gtest/gtest.h"
#include "compiler_core/ir/graph/printer.h"
#include "compiler_core/passes/graph/test_util.h"
#include "compiler_core/reference/evaluator.h"

namespace kiln::passes {
namespace {

using graph::Graph;
using graph::OpKind;
using graph::Value;
using testing::RunPassOnText;

TEST(FoldBatchNormTest, RewritesConvWeightsAndBias) {
  // s = scale / sqrt(var + 0) = [0.5, 6]; w' = w * s; b' = (0 - mean) * s + bias.
  bool changed = false;
  auto out = RunPassOnText("fold-batchnorm", R"(
graph @g(%0 "x": f32[1,2,3,3]) -> (%7 "y") {
  %1 = const f32[2,2,1,1] dense<[1.0,2.0,3.0,4.0]>
  %2 = const f32[2] dense<[1.0,3.0]>
  %3 = const f32[2] dense<[0.5,-1.0]>
  %4 = const f32[2] dense<[1.0,2.0]>
  %5 = const f32[2] dense<[4.0,0.25]>
  %6 = Conv(%0, %1) {dilations=[1,1], group=1, kernel_shape=[1,1], pads=[0,0,0,0], strides=[1,1]} : f32[1,2,3,3]
  %7 = BatchNormalization(%6, %2, %3, %4, %5) {epsilon=0.0} : f32[1,2,3,3]
  return %7
}
)", &changed);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(changed);
  EXPECT_EQ(*out,
            "graph @g(%0 \"x\": f32[1,2,3,3]) -> (%3 \"y\") {\n"
            "  %1 = const f32[2,2,1,1] dense<[0.5,1.0,18.0,24.0]>\n"
            "  %2 = const f32[2] dense<[0.0,-13.0]>\n"
            "  %3 = Conv(%0, %1, %2) {dilations=[1,1], group=1, kernel_shape=[1,1], "
            "pads=[0,0,0,0], strides=[1,1]} : f32[1,2,3,3]\n"
            "  return %3\n"
            "}\n");
}

TEST(FoldBatchNormTest, LeavesBatchNormWhenConvOutputHasOtherUsers) {
  constexpr char kIr[] =
      "graph @g(%0 \"x\": f32[1,2,3,3]) -> (%4 \"y\", %5 \"z\") {\n"
      "  %1 = const f32[2,2,1,1] splat<1.0>\n"
      "  %2 = const f32[2] splat<1.0>\n"
      "  %3 = Conv(%0, %1) {dilations=[1,1], group=1, kernel_shape=[1,1], pads=[0,0,0,0], "
      "strides=[1,1]} : f32[1,2,3,3]\n"
      "  %4 = BatchNormalization(%3, %2, %2, %2, %2) {epsilon=1e-05} : f32[1,2,3,3]\n"
      "  %5 = Relu(%3) : f32[1,2,3,3]\n"
      "  return %4, %5\n"
      "}\n";
  bool changed = true;
  auto out = RunPassOnText("fold-batchnorm", kIr, &changed);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(changed);
  EXPECT_EQ(*out, kIr);
}

TEST(FoldBatchNormTest, LeavesBatchNormWithNonConstantParams) {
  constexpr char kIr[] =
      "graph @g(%0 \"x\": f32[1,2,3,3], %1 \"scale\": f32[2]) -> (%4 \"y\") {\n"
      "  %2 = const f32[2,2,1,1] splat<1.0>\n"
      "  %3 = Conv(%0, %2) {dilations=[1,1], group=1, kernel_shape=[1,1], pads=[0,0,0,0], "
      "strides=[1,1]} : f32[1,2,3,3]\n"
      "  %4 = BatchNormalization(%3, %1, %1, %1, %1) {epsilon=1e-05} : f32[1,2,3,3]\n"
      "  return %4\n"
      "}\n";
  bool changed = true;
  auto out = RunPassOnText("fold-batchnorm", kIr, &changed);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(changed);
  EXPECT_EQ(*out, kIr);
}

std::shared_ptr<Tensor> Random(std::mt19937& rng, TensorType type, float lo, float hi) {
  auto t = Tensor::Zeros(type);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < type.NumElements(); ++i) t->mutable_data<float>()[i] = dist(rng);
  return t;
}

// Conv (3x3, padded, strided, grouped, with bias) → BN, evaluated before and after folding.
TEST(FoldBatchNormTest, FoldedGraphMatchesReferenceNumerically) {
  std::mt19937 rng(42);
  for (int64_t group : {1, 2}) {
    Graph g;
    TensorType x_type{DType::kFloat32, {2, 4, 7, 7}};
    Value* x = g.AddInput("x", x_type);
    Value* w = g.AddConstant("w", Random(rng, {DType::kFloat32, {6, 4 / group, 3, 3}}, -1, 1));
    Value* b = g.AddConstant("b", Random(rng, {DType::kFloat32, {6}}, -1, 1));
    graph::AttrMap conv_attrs;
    conv_attrs.Set("dilations", std::vector<int64_t>{1, 1});
    conv_attrs.Set("group", group);
    conv_attrs.Set("kernel_shape", std::vector<int64_t>{3, 3});
    conv_attrs.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
    conv_attrs.Set("strides", std::vector<int64_t>{2, 2});
    TensorType y_type{DType::kFloat32, {2, 6, 4, 4}};
    graph::Node* conv = g.AddNode(OpKind::kConv, "conv", {x, w, b}, {y_type}, conv_attrs);
    std::vector<Value*> params;
    params.push_back(g.AddConstant("scale", Random(rng, {DType::kFloat32, {6}}, 0.5, 2)));
    params.push_back(g.AddConstant("bias", Random(rng, {DType::kFloat32, {6}}, -1, 1)));
    params.push_back(g.AddConstant("mean", Random(rng, {DType::kFloat32, {6}}, -1, 1)));
    params.push_back(g.AddConstant("var", Random(rng, {DType::kFloat32, {6}}, 0.1, 2)));
    graph::AttrMap bn_attrs;
    bn_attrs.Set("epsilon", 1e-5f);
    graph::Node* bn = g.AddNode(OpKind::kBatchNormalization, "bn",
                                {conv->output(0), params[0], params[1], params[2], params[3]},
                                {y_type}, bn_attrs);
    bn->output(0)->set_name("y");
    g.SetOutputs({bn->output(0)});

    std::vector<reference::TensorPtr> inputs = {Random(rng, x_type, -2, 2)};
    auto before = reference::EvaluateGraph(g, inputs);
    ASSERT_TRUE(before.ok()) << before.status();
    FoldBatchNorm pass;
    auto changed = pass.Run(g);
    ASSERT_TRUE(changed.ok()) << changed.status();
    EXPECT_TRUE(*changed);
    ASSERT_EQ(g.num_nodes(), 1);
    EXPECT_EQ(g.nodes()[0]->op(), OpKind::kConv);
    EXPECT_EQ(g.outputs()[0]->name(), "y");
    auto after = reference::EvaluateGraph(g, inputs);
    ASSERT_TRUE(after.ok()) << after.status();
    const Tensor& want = *(*before)[0];
    const Tensor& got = *(*after)[0];
    ASSERT_EQ(got.type, want.type);
    double max_rel = 0;
    for (int64_t i = 0; i < want.type.NumElements(); ++i) {
      double a = want.GetAsDouble(i), c = got.GetAsDouble(i);
      max_rel = std::max(max_rel, std::abs(a - c) / std::max(1.0, std::abs(a)));
    }
    EXPECT_LT(max_rel, 1e-5) << "group=" << group;
  }
}

}  // namespace
}  // namespace kiln::passes
