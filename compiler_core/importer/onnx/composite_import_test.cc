// Tests of the ops the importer decomposes into other ops (composite_builders.cc and
// signal_builders.cc): the canonical nodes they become and their errors. Their numerics are
// checked against the conformance data by reference_onnx_data_test. Also the binding of
// inferred symbolic dims to declared output dims, which the expanded window functions need.
#include <cmath>

#include "compiler_core/importer/onnx/importer_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::importer {
namespace {

using graph::OpKind;
using ::testing::HasSubstr;
using testing_util::Import;
using testing_util::ModelBuilder;
using testing_util::Only;
using testing_util::SetFloat;
using testing_util::SetInt;

int Count(const graph::Graph& g, OpKind op) {
  int n = 0;
  for (const graph::Node* node : g.nodes()) n += node->op() == op;
  return n;
}

TEST(CompositeImportTest, ScatterIsScatterElements) {
  ModelBuilder b(10);
  b.Input("data", {2, 5});
  b.Input("updates", {2, 2});
  b.InitI64("indices", {1, 3, 0, 4});
  b.g()->mutable_initializer(0)->clear_dims();
  b.g()->mutable_initializer(0)->add_dims(2);
  b.g()->mutable_initializer(0)->add_dims(2);
  SetInt(b.Node("Scatter", {"data", "indices", "updates"}, {"y"}), "axis", -1);
  b.Output("y", {2, 5});
  auto g = Import(b);
  ASSERT_TRUE(g.ok()) << g.status();
  const graph::Node* s = Only(**g, OpKind::kScatterElements);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->attrs().GetInt("axis", -1), 1);
  EXPECT_EQ(s->attrs().GetString("reduction", ""), "none");
}

TEST(CompositeImportTest, ShrinkIsWhereOverComparisons) {
  ModelBuilder b(9);
  b.Input("x", {5});
  auto* n = b.Node("Shrink", {"x"}, {"y"});
  SetFloat(n, "lambd", 1.5f);
  SetFloat(n, "bias", 0.5f);
  b.Output("y", {5});
  auto g = Import(b);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(Count(**g, OpKind::kWhere), 2);
  EXPECT_EQ(Count(**g, OpKind::kLess), 1);
  EXPECT_EQ(Count(**g, OpKind::kGreater), 1);
}

TEST(CompositeImportTest, WindowWithRuntimeSizeIsAConstant) {
  ModelBuilder b(17);
  b.Input("size", {}, "", onnx::TensorProto::INT64);
  SetInt(b.Node("HannWindow", {"size"}, {"y"}), "periodic", 0);
  b.Output("y", {5});
  auto g = Import(b);
  ASSERT_TRUE(g.ok()) << g.status();
  const graph::Value* y = (*g)->outputs()[0];
  ASSERT_TRUE(y->is_constant());
  // Symmetric Hann of 5: 0, 0.5, 1, 0.5, 0.
  std::vector<double> want = {0, 0.5, 1, 0.5, 0};
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(y->constant()->GetAsDouble(i), want[i], 1e-7);
}

TEST(CompositeImportTest, DftIsOneMatMul) {
  ModelBuilder b(17);
  b.Input("x", {2, 8, 3, 1});
  auto* n = b.Node("DFT", {"x"}, {"y"});
  SetInt(n, "axis", 1);
  SetInt(n, "onesided", 1);
  b.Output("y", {2, 5, 3, 2});
  auto g = Import(b);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(Count(**g, OpKind::kMatMul), 1);
  EXPECT_EQ((*g)->outputs()[0]->type().shape, (std::vector<int64_t>{2, 5, 3, 2}));
}

TEST(CompositeImportTest, OnesidedDftOfComplexInputIsAnError) {
  ModelBuilder b(17);
  b.Input("x", {1, 8, 2});
  SetInt(b.Node("DFT", {"x"}, {"y"}), "onesided", 1);
  b.Output("y", {1, 5, 2});
  auto g = Import(b);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(g.status().message(), HasSubstr("onesided=1 needs a real input"));
}

TEST(CompositeImportTest, StftAmbiguousRuntimeStepIsAnError) {
  ModelBuilder b(17);
  b.Input("signal", {1, 20, 1});
  b.Input("step", {}, "", onnx::TensorProto::INT64);
  b.Input("window", {4});
  b.Node("STFT", {"signal", "step", "window"}, {"y"});
  // floor(16 / step) + 1 = 3 frames for steps 6, 7 and 8.
  b.Output("y", {1, 3, 3, 2});
  auto g = Import(b);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(g.status().message(), HasSubstr("node 'y_node' (STFT): frame_step or frame_length"));
}

TEST(InferredDimsTest, RangeOverRuntimeLimitTakesTheDeclaredOutputLength) {
  ModelBuilder b(17);
  b.Input("n", {});
  b.Init("zero", {}, {0});
  b.Init("one", {}, {1});
  b.Node("Range", {"zero", "n", "one"}, {"r"});
  b.Node("Cos", {"r"}, {"y"});
  b.Output("y", {6});
  auto g = Import(b);
  ASSERT_TRUE(g.ok()) << g.status();
  const graph::Node* range = Only(**g, OpKind::kRange);
  ASSERT_NE(range, nullptr);
  EXPECT_EQ(range->attrs().GetInt("count", -1), 6);
}

}  // namespace
}  // namespace kiln::importer
