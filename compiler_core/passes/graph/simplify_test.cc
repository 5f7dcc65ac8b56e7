// Tests for the simplify pass: exact printed IR for each rewrite, cases that must stay, and a
// numeric check (reference evaluator, random inputs) that every rewrite keeps the results.
#include "compiler_core/passes/graph/simplify.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "compiler_core/ir/graph/parser.h"
#include "compiler_core/passes/graph/test_util.h"
#include "compiler_core/reference/evaluator.h"

namespace kiln::passes {
namespace {

using testing::RunPassOnText;

/// Runs simplify on `ir` and returns the printed result (failing the test on errors).
std::string Simplified(std::string_view ir, bool* changed = nullptr) {
  absl::StatusOr<std::string> out = RunPassOnText("simplify", ir, changed);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : "";
}

/// Evaluates `ir` before and after simplify on random f32 inputs in [-3, 3]; returns the largest
/// |before - after| / max(1, |before|) over all outputs.
double MaxRelDiff(std::string_view ir) {
  auto before_graph = graph::ParseGraph(ir);
  auto after_graph = graph::ParseGraph(ir);
  EXPECT_TRUE(before_graph.ok()) << before_graph.status();
  if (!before_graph.ok() || !after_graph.ok()) return INFINITY;
  Simplify pass;
  absl::StatusOr<bool> changed = pass.Run(**after_graph);
  EXPECT_TRUE(changed.ok()) << changed.status();
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-3, 3);
  std::vector<reference::TensorPtr> inputs;
  for (const graph::Value* in : (*before_graph)->inputs()) {
    auto t = Tensor::Zeros(in->type());
    for (int64_t i = 0; i < in->type().NumElements(); ++i) t->mutable_data<float>()[i] = dist(rng);
    inputs.push_back(t);
  }
  auto before = reference::EvaluateGraph(**before_graph, inputs);
  auto after = reference::EvaluateGraph(**after_graph, inputs);
  EXPECT_TRUE(before.ok()) << before.status();
  EXPECT_TRUE(after.ok()) << after.status();
  if (!before.ok() || !after.ok()) return INFINITY;
  EXPECT_EQ(before->size(), after->size());
  double max_rel = 0;
  for (size_t k = 0; k < before->size(); ++k) {
    const Tensor& want = *(*before)[k];
    const Tensor& got = *(*after)[k];
    EXPECT_EQ(got.type, want.type);
    if (got.type != want.type) return INFINITY;
    for (int64_t i = 0; i < want.type.NumElements(); ++i) {
      double a = want.GetAsDouble(i), c = got.GetAsDouble(i);
      max_rel = std::max(max_rel, std::abs(a - c) / std::max(1.0, std::abs(a)));
    }
  }
  return max_rel;
}

TEST(SimplifyTest, CancelsInverseTransposes) {
  constexpr char kIr[] = R"(
graph @g(%0 "x": f32[2,3,4]) -> (%3 "y") {
  %1 = Transpose(%0) {perm=[1,2,0]} : f32[3,4,2]
  %2 = Transpose(%1) {perm=[2,0,1]} : f32[2,3,4]
  %3 = Relu(%2) : f32[2,3,4]
  return %3
}
)";
  bool changed = false;
  EXPECT_EQ(Simplified(kIr, &changed),
            "graph @g(%0 \"x\": f32[2,3,4]) -> (%1 \"y\") {\n"
            "  %1 = Relu(%0) : f32[2,3,4]\n"
            "  return %1\n"
            "}\n");
  EXPECT_TRUE(changed);
  EXPECT_EQ(MaxRelDiff(kIr), 0);
}

TEST(SimplifyTest, MergesTransposesIntoComposedPermutation) {
  constexpr char kIr[] = R"(
graph @g(%0 "x": f32[2,3,4]) -> (%2 "y") {
  %1 = Transpose(%0) {perm=[1,0,2]} : f32[3,2,4]
  %2 = Transpose(%1) {perm=[0,2,1]} : f32[3,4,2]
  return %2
}
)";
  EXPECT_EQ(Simplified(kIr),
            "graph @g(%0 \"x\": f32[2,3,4]) -> (%1 \"y\") {\n"
            "  %1 = Transpose(%0) {perm=[1,2,0]} : f32[3,4,2]\n"
            "  return %1\n"
            "}\n");
  EXPECT_EQ(MaxRelDiff(kIr), 0);
}

TEST(SimplifyTest, FoldsReshapeChainsIntoOneReshape) {
  constexpr char kIr[] = R"(
graph @g(%0 "x": f32[2,3,4]) -> (%6 "y") {
  %1 = const i64[1] dense<[1]>
  %2 = const i64[2] dense<[6,4]>
  %3 = Flatten(%0) {axis=2} : f32[6,4]
  %4 = Unsqueeze(%3, %1) : f32[6,1,4]
  %5 = Squeeze(%4, %1) : f32[6,4]
  %6 = Reshape(%5, %2) : f32[6,4]
  return %6
}
)";
  EXPECT_EQ(Simplified(kIr),
            "graph @g(%0 \"x\": f32[2,3,4]) -> (%2 \"y\") {\n"
            "  %1 = const i64[2] dense<[6,4]>\n"
            "  %2 = Reshape(%0, %1) : f32[6,4]\n"
            "  return %2\n"
            "}\n");
  EXPECT_EQ(MaxRelDiff(kIr), 0);
}

TEST(SimplifyTest, RemovesNoOpNodes) {
  constexpr char kIr[] = R"(
graph @g(%0 "x": f32[2,3]) -> (%14 "y") {
  %1 = const i64[4] dense<[0,0,0,0]>
  %2 = const i64[2] dense<[0,0]>
  %3 = const i64[2] dense<[2,3]>
  %4 = Identity(%0) : f32[2,3]
  %5 = Relu(%4) : f32[2,3]
  %6 = Dropout(%5) : f32[2,3]
  %7 = Pad(%6, %1) {mode="constant"} : f32[2,3]
  %8 = Transpose(%7) {perm=[0,1]} : f32[2,3]
  %9 = Cast(%8) {to=1} : f32[2,3]
  %10 = Slice(%9, %2, %3) : f32[2,3]
  %11 = Expand(%10, %3) : f32[2,3]
  %12 = Concat(%11) {axis=0} : f32[2,3]
  %13 = Reshape(%12, %3) : f32[2,3]
  %14 = Neg(%13) : f32[2,3]
  return %14
}
)";
  EXPECT_EQ(Simplified(kIr),
            "graph @g(%0 \"x\": f32[2,3]) -> (%2 \"y\") {\n"
            "  %1 = Relu(%0) : f32[2,3]\n"
            "  %2 = Neg(%1) : f32[2,3]\n"
            "  return %2\n"
            "}\n");
  EXPECT_EQ(MaxRelDiff(kIr), 0);
}

TEST(SimplifyTest, KeepsNodesThatChangeTheTensor) {
  constexpr char kIr[] =
      "graph @g(%0 \"x\": f32[2,3]) -> (%6 \"a\", %7 \"b\", %8 \"c\", %9 \"d\") {\n"
      "  %1 = const i64[4] dense<[0,1,0,-1]>\n"
      "  %2 = const i64[2] dense<[1,2]>\n"
      "  %3 = const i64[2] splat<-1>\n"
      "  %4 = const i64[2] splat<-10>\n"
      "  %5 = const i64[2] dense<[0,1]>\n"
      "  %6 = Pad(%0, %1) {mode=\"constant\"} : f32[2,3]\n"
      "  %7 = Slice(%0, %2, %4, %5, %3) : f32[2,3]\n"
      "  %8 = Transpose(%0) : f32[3,2]\n"
      "  %9 = Cast(%0) {to=7} : i64[2,3]\n"
      "  return %6, %7, %8, %9\n"
      "}\n";
  bool changed = true;
  EXPECT_EQ(Simplified(kIr, &changed), kIr);
  EXPECT_FALSE(changed);
}

TEST(SimplifyTest, GraphOutputsKeepTheirNames) {
  // %2 may be forwarded (its input is an interior value, which takes the name "y"); %3 reads a
  // graph input directly, so removing it would rename an interface value: it stays.
  constexpr char kIr[] = R"(
graph @g(%0 "x": f32[2]) -> (%2 "y", %3 "z") {
  %1 = Relu(%0) : f32[2]
  %2 = Identity(%1) : f32[2]
  %3 = Identity(%0) : f32[2]
  return %2, %3
}
)";
  EXPECT_EQ(Simplified(kIr),
            "graph @g(%0 \"x\": f32[2]) -> (%1 \"y\", %2 \"z\") {\n"
            "  %1 = Relu(%0) : f32[2]\n"
            "  %2 = Identity(%0) : f32[2]\n"
            "  return %1, %2\n"
            "}\n");
  EXPECT_EQ(MaxRelDiff(kIr), 0);
}

// The PyTorch export of exact Gelu: Mul(Mul(x, 0.5), Add(Erf(Div(x, 1.4142135)), 1)).
constexpr char kTorchGelu[] = R"(
graph @g(%0 "x": f32[4,8]) -> (%9 "y") {
  %1 = const f32[] dense<[1.4142135]>
  %2 = const f32[] dense<[1.0]>
  %3 = const f32[] dense<[0.5]>
  %4 = Div(%0, %1) : f32[4,8]
  %5 = Erf(%4) : f32[4,8]
  %6 = Add(%5, %2) : f32[4,8]
  %7 = Mul(%0, %3) : f32[4,8]
  %8 = Mul(%7, %6) : f32[4,8]
  %9 = Relu(%8) : f32[4,8]
  return %9
}
)";

TEST(SimplifyTest, FormsExactGeluFromTorchExport) {
  EXPECT_EQ(Simplified(kTorchGelu),
            "graph @g(%0 \"x\": f32[4,8]) -> (%2 \"y\") {\n"
            "  %1 = Gelu(%0) {approximate=\"none\"} : f32[4,8]\n"
            "  %2 = Relu(%1) : f32[4,8]\n"
            "  return %2\n"
            "}\n");
  EXPECT_LT(MaxRelDiff(kTorchGelu), 1e-6);
}

TEST(SimplifyTest, FormsExactGeluInOtherAssociations) {
  // 0.5 * (x * (1 + erf(x * 0.70710677))), with the output being the graph output.
  constexpr char kIr[] = R"(
graph @g(%0 "x": f32[16]) -> (%8 "y") {
  %1 = const f32[] dense<[0.70710677]>
  %2 = const f32[] dense<[1.0]>
  %3 = const f32[] dense<[0.5]>
  %4 = Mul(%1, %0) : f32[16]
  %5 = Erf(%4) : f32[16]
  %6 = Add(%2, %5) : f32[16]
  %7 = Mul(%0, %6) : f32[16]
  %8 = Mul(%3, %7) : f32[16]
  return %8
}
)";
  EXPECT_EQ(Simplified(kIr),
            "graph @g(%0 \"x\": f32[16]) -> (%1 \"y\") {\n"
            "  %1 = Gelu(%0) {approximate=\"none\"} : f32[16]\n"
            "  return %1\n"
            "}\n");
  EXPECT_LT(MaxRelDiff(kIr), 1e-6);
  // x * (1 + erf(x / sqrt2)) / 2.
  constexpr char kDiv[] = R"(
graph @g(%0 "x": f32[16]) -> (%8 "y") {
  %1 = const f32[] dense<[1.4142135]>
  %2 = const f32[] dense<[1.0]>
  %3 = const f32[] dense<[2.0]>
  %4 = Div(%0, %1) : f32[16]
  %5 = Erf(%4) : f32[16]
  %6 = Add(%5, %2) : f32[16]
  %7 = Mul(%6, %0) : f32[16]
  %8 = Div(%7, %3) : f32[16]
  return %8
}
)";
  EXPECT_EQ(Simplified(kDiv),
            "graph @g(%0 \"x\": f32[16]) -> (%1 \"y\") {\n"
            "  %1 = Gelu(%0) {approximate=\"none\"} : f32[16]\n"
            "  return %1\n"
            "}\n");
  EXPECT_LT(MaxRelDiff(kDiv), 1e-6);
}

TEST(SimplifyTest, FormsTanhGelu) {
  // 0.5 * x * (1 + tanh(0.7978846 * (x + 0.044715 * pow(x, 3)))), and the x*x*x variant.
  for (const char* cube : {"  %8 = Pow(%0, %6) : f32[3,5]\n",
                           "  %7 = Mul(%0, %0) : f32[3,5]\n  %8 = Mul(%7, %0) : f32[3,5]\n"}) {
    std::string ir = std::string(R"(
graph @g(%0 "x": f32[3,5]) -> (%15 "y") {
  %1 = const f32[] dense<[0.5]>
  %2 = const f32[] dense<[1.0]>
  %3 = const f32[] dense<[0.7978846]>
  %4 = const f32[] dense<[0.044715]>
  %6 = const f32[] dense<[3.0]>
)") + cube + R"(  %9 = Mul(%4, %8) : f32[3,5]
  %10 = Add(%0, %9) : f32[3,5]
  %11 = Mul(%10, %3) : f32[3,5]
  %12 = Tanh(%11) : f32[3,5]
  %13 = Add(%12, %2) : f32[3,5]
  %14 = Mul(%1, %0) : f32[3,5]
  %15 = Mul(%14, %13) : f32[3,5]
  return %15
}
)";
    EXPECT_EQ(Simplified(ir),
              "graph @g(%0 \"x\": f32[3,5]) -> (%1 \"y\") {\n"
              "  %1 = Gelu(%0) {approximate=\"tanh\"} : f32[3,5]\n"
              "  return %1\n"
              "}\n")
        << ir;
    EXPECT_LT(MaxRelDiff(ir), 1e-6) << ir;
  }
}

TEST(SimplifyTest, KeepsGeluSubgraphWithSharedIntermediateOrWrongConstant) {
  // The Erf result is also a graph output.
  constexpr char kShared[] =
      "graph @g(%0 \"x\": f32[4]) -> (%8 \"y\", %5 \"e\") {\n"
      "  %1 = const f32[] dense<[1.4142135381698608]>\n"
      "  %2 = const f32[] dense<[1.0]>\n"
      "  %3 = const f32[] dense<[0.5]>\n"
      "  %4 = Div(%0, %1) : f32[4]\n"
      "  %5 = Erf(%4) : f32[4]\n"
      "  %6 = Add(%5, %2) : f32[4]\n"
      "  %7 = Mul(%0, %3) : f32[4]\n"
      "  %8 = Mul(%7, %6) : f32[4]\n"
      "  return %8, %5\n"
      "}\n";
  bool changed = true;
  EXPECT_EQ(Simplified(kShared, &changed), kShared);
  EXPECT_FALSE(changed);
  // sqrt(3) instead of sqrt(2).
  constexpr char kWrong[] =
      "graph @g(%0 \"x\": f32[4]) -> (%8 \"y\") {\n"
      "  %1 = const f32[] dense<[1.7320507764816284]>\n"
      "  %2 = const f32[] dense<[1.0]>\n"
      "  %3 = const f32[] dense<[0.5]>\n"
      "  %4 = Div(%0, %1) : f32[4]\n"
      "  %5 = Erf(%4) : f32[4]\n"
      "  %6 = Add(%5, %2) : f32[4]\n"
      "  %7 = Mul(%0, %3) : f32[4]\n"
      "  %8 = Mul(%7, %6) : f32[4]\n"
      "  return %8\n"
      "}\n";
  EXPECT_EQ(Simplified(kWrong, &changed), kWrong);
  EXPECT_FALSE(changed);
}

TEST(SimplifyTest, RefusesAfterFusion) {
  auto out = RunPassOnText("simplify",
                           "graph @g(%0 \"x\": f32[2]) -> (%1 \"y\") {\n"
                           "  %1 = Identity(%0) : f32[2] group=0\n  return %1\n}\n");
  EXPECT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition);
}

// A 100k-node Identity chain collapses: every node is forwarded and erased in one sweep, each
// rewrite costing O(uses), and the graph output keeps its name.
TEST(SimplifyTest, RemovesHundredThousandNodeIdentityChain) {
  constexpr int kDepth = 100000;
  const TensorType type{DType::kFloat32, {4}};
  graph::Graph g;
  graph::Value* x = g.AddInput("x", type);
  graph::Value* v = x;
  for (int i = 0; i < kDepth; ++i) {
    v = g.AddNode(graph::OpKind::kIdentity, "i" + std::to_string(i), {v}, {type})->output(0);
  }
  graph::Node* relu = g.AddNode(graph::OpKind::kRelu, "relu", {v}, {type});
  relu->output(0)->set_name("y");
  g.SetOutputs({relu->output(0)});
  absl::StatusOr<bool> changed = Simplify().Run(g);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  ASSERT_EQ(g.num_nodes(), 1);
  EXPECT_EQ(relu->input(0), x);
  EXPECT_EQ(g.outputs()[0]->name(), "y");
}

}  // namespace
}  // namespace kiln::passes
