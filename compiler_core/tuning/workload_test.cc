// Workload keys: independent of model names, node order and weights; sensitive to shape,
// dtype, stride, layout and fused epilogue.
#include "compiler_core/tuning/workload.h"

#include "absl/strings/str_replace.h"
#include "compiler_core/ir/loop/parser.h"
#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/lowering/lower.h"
#include "compiler_core/lowering/lowering_test_util.h"
#include "gtest/gtest.h"

namespace kiln::tuning {
namespace {

using graph::AttrMap;
using graph::OpKind;
using lowering::testing::F32;
using lowering::testing::Random;

struct ConvSpec {
  std::string prefix = "m";
  int64_t channels = 8;
  int64_t stride = 1;
  bool relu = false;
  unsigned seed = 1;
  std::string kernel_name = "kernel_0";
};

/// Lowers Conv(x, w, b) [+ Relu] on a [1, C, 8, 8] input with 3x3 weights, pad 1.
std::string ConvKey(const ConvSpec& s, std::string* canonical = nullptr) {
  graph::Graph g;
  graph::Value* x = g.AddInput(s.prefix + "_input", F32({1, s.channels, 8, 8}));
  graph::Value* w = g.AddConstant(s.prefix + "_w", Random(F32({4, s.channels, 3, 3}), s.seed));
  graph::Value* b = g.AddConstant(s.prefix + "_b", Random(F32({4}), s.seed + 1));
  AttrMap a;
  a.Set("kernel_shape", std::vector<int64_t>{3, 3});
  a.Set("strides", std::vector<int64_t>{s.stride, s.stride});
  a.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  a.Set("dilations", std::vector<int64_t>{1, 1});
  a.Set("group", int64_t{1});
  const int64_t o = (8 + 2 - 3) / s.stride + 1;
  graph::Node* conv =
      g.AddNode(OpKind::kConv, s.prefix + "_conv", {x, w, b}, {F32({1, 4, o, o})}, a);
  std::vector<const graph::Node*> group = {conv};
  if (s.relu) {
    group.push_back(
        g.AddNode(OpKind::kRelu, s.prefix + "_relu", {conv->output(0)}, {F32({1, 4, o, o})}));
  }
  auto k = lowering::LowerGroup(group, s.kernel_name);
  EXPECT_TRUE(k.ok()) << k.status();
  if (!k.ok()) return "";
  if (canonical != nullptr) *canonical = CanonicalWorkloadText(k->func);
  return WorkloadKey(k->func);
}

TEST(WorkloadTest, KeyIsSha256OfTheCanonicalText) {
  std::string text;
  const std::string key = ConvKey({}, &text);
  EXPECT_EQ(key.size(), 64u);
  EXPECT_EQ(text.rfind("func @workload(%p0: f32[1,8,8,8], %p1: f32[4,8,3,3] const, "
                       "%p2: f32[4] const, %p3: f32[1,4,8,8]) workspace(%w0: f32[1,8,10,10]) "
                       "anchor=Conv {",
                       0),
            0u)
      << text;
}

TEST(WorkloadTest, SameConvInTwoModelsHasOneKey) {
  ConvSpec other;
  other.prefix = "resnet_layer3";
  other.seed = 99;  // other weights
  other.kernel_name = "kernel_17";
  EXPECT_EQ(ConvKey({}), ConvKey(other));
}

TEST(WorkloadTest, ShapeStrideAndEpilogueChangeTheKey) {
  const std::string base = ConvKey({});
  ConvSpec wider;
  wider.channels = 16;
  ConvSpec strided;
  strided.stride = 2;
  ConvSpec fused;
  fused.relu = true;
  EXPECT_NE(ConvKey(wider), base);
  EXPECT_NE(ConvKey(strided), base);
  EXPECT_NE(ConvKey(fused), base);
  EXPECT_NE(ConvKey(strided), ConvKey(fused));
}

TEST(WorkloadTest, DtypeChangesTheKey) {
  graph::Graph g;
  graph::Value* a32 = g.AddInput("a", F32({4, 16}));
  graph::Value* a64 = g.AddInput("b", TensorType{DType::kFloat64, {4, 16}});
  graph::Node* r32 = g.AddNode(OpKind::kRelu, "r32", {a32}, {F32({4, 16})});
  graph::Node* r64 =
      g.AddNode(OpKind::kRelu, "r64", {a64}, {TensorType{DType::kFloat64, {4, 16}}});
  auto k32 = lowering::LowerGroup({r32}, "k0");
  auto k64 = lowering::LowerGroup({r64}, "k0");
  ASSERT_TRUE(k32.ok() && k64.ok());
  EXPECT_NE(WorkloadKey(k32->func), WorkloadKey(k64->func));
}

TEST(WorkloadTest, ConstantWeightsChangeTheKey) {
  // Weights bound to constants are "const" params (a schedule may precompute from them at
  // load); the same conv reading its weights at run time is another workload.
  std::string text;
  const std::string key = ConvKey({}, &text);
  absl::StatusOr<loop::Func> parsed = loop::ParseFunc(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(WorkloadKey(*parsed), key);
  std::string runtime_weights = absl::StrReplaceAll(text, {{" const", ""}});
  ASSERT_NE(runtime_weights, text);
  absl::StatusOr<loop::Func> runtime = loop::ParseFunc(runtime_weights);
  ASSERT_TRUE(runtime.ok()) << runtime.status();
  EXPECT_NE(WorkloadKey(*runtime), key);
}

TEST(WorkloadTest, CountsFlopsOfAConv) {
  graph::Graph g;
  graph::Value* x = g.AddInput("x", F32({1, 2, 4, 4}));
  graph::Value* w = g.AddConstant("w", Random(F32({3, 2, 1, 1}), 1));
  AttrMap a;
  a.Set("kernel_shape", std::vector<int64_t>{1, 1});
  a.Set("strides", std::vector<int64_t>{1, 1});
  a.Set("pads", std::vector<int64_t>{0, 0, 0, 0});
  a.Set("dilations", std::vector<int64_t>{1, 1});
  a.Set("group", int64_t{1});
  graph::Node* conv = g.AddNode(OpKind::kConv, "c", {x, w}, {F32({1, 3, 4, 4})}, a);
  auto k = lowering::LowerGroup({conv}, "k");
  ASSERT_TRUE(k.ok()) << k.status();
  // Update nest: 3 output channels x 16 pixels x 2 input channels, one multiply and one add.
  EXPECT_EQ(CountFlops(k->func), 3 * 16 * 2 * 2) << loop::PrintFunc(k->func);
}

}  // namespace
}  // namespace kiln::tuning
