// Numeric tests of the NN-op lowerings and of Det, GridSample and RoiAlign: each
// small group is lowered, run with the loop IR interpreter and compared with the reference
// evaluator.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/shape_rules.h"
#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/lowering/lowering_test_util.h"
#include "compiler_core/reference/evaluator.h"
#include "gtest/gtest.h"

namespace kiln::lowering {
namespace {

using graph::AttrMap;
using graph::Graph;
using graph::Node;
using graph::OpKind;
using graph::Value;
using testing::F32;
using testing::Floats;
using testing::FromInts;
using testing::Random;
using testing::TensorPtr;
using testing::ValueMap;

/// Adds `op` typed by its shape rule.
Node* Add(Graph& g, OpKind op, std::vector<Value*> in, AttrMap a = {}) {
  Node* n = g.AddNode(op, "n", std::move(in), {TensorType{}}, std::move(a));
  auto types = graph::InferOutputTypes(*n);
  EXPECT_TRUE(types.ok()) << types.status();
  if (types.ok()) n->output(0)->set_type((*types)[0]);
  return n;
}

void CheckGroup(const std::vector<const Node*>& nodes, const ValueMap& inputs) {
  auto kernel = LowerGroup(nodes, "k");
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  auto got = testing::RunKernel(*kernel, inputs);
  ASSERT_TRUE(got.ok()) << got.status() << "\n" << loop::PrintFunc(kernel->func);
  ValueMap env = inputs;
  for (const Node* n : nodes) {
    std::vector<TensorPtr> ins;
    for (const Value* v : n->inputs()) {
      ins.push_back(v == nullptr ? nullptr : v->is_constant() ? v->constant() : env.at(v));
    }
    auto outs = reference::EvaluateNode(*n, ins);
    ASSERT_TRUE(outs.ok()) << outs.status();
    env[n->output(0)] = (*outs)[0];
  }
  std::vector<float> g = Floats(**got), w = Floats(*env.at(nodes.back()->output(0)));
  ASSERT_EQ(g.size(), w.size());
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_NEAR(g[i], w[i], 1e-4 * (1 + std::fabs(w[i])))
        << "element " << i << "\n" << loop::PrintFunc(kernel->func);
  }
}

TEST(LowerNnTest, LayerNormWithFusedRelu) {
  Graph g;
  Value* x = g.AddInput("x", F32({2, 3, 8}));
  Value* s = g.AddConstant("s", Random(F32({8}), 1));
  Value* b = g.AddConstant("b", Random(F32({8}), 2));
  AttrMap a;
  a.Set("axis", int64_t{1});
  a.Set("epsilon", 1e-5f);
  Node* ln = Add(g, OpKind::kLayerNormalization, {x, s, b}, a);
  Node* relu = Add(g, OpKind::kRelu, {ln->output(0)});
  CheckGroup({ln, relu}, {{x, Random(x->type(), 3)}});
}

TEST(LowerNnTest, InstanceNormAndMvn) {
  Graph g;
  Value* x = g.AddInput("x", F32({2, 3, 4, 5}));
  Value* s = g.AddConstant("s", Random(F32({3}), 1));
  Value* b = g.AddConstant("b", Random(F32({3}), 2));
  AttrMap a;
  a.Set("epsilon", 1e-5f);
  CheckGroup({Add(g, OpKind::kInstanceNormalization, {x, s, b}, a)}, {{x, Random(x->type(), 3)}});
  AttrMap m;
  m.Set("axes", std::vector<int64_t>{0, 2, 3});
  CheckGroup({Add(g, OpKind::kMeanVarianceNormalization, {x}, m)}, {{x, Random(x->type(), 4)}});
}

TEST(LowerNnTest, LrnHardmaxLpNorm) {
  Graph g;
  Value* x = g.AddInput("x", F32({2, 6, 3, 3}));
  AttrMap l;
  l.Set("size", int64_t{3});
  l.Set("alpha", 0.01f);
  l.Set("beta", 0.75f);
  l.Set("bias", 1.0f);
  CheckGroup({Add(g, OpKind::kLRN, {x}, l)}, {{x, Random(x->type(), 1)}});
  AttrMap h;
  h.Set("axis", int64_t{1});
  CheckGroup({Add(g, OpKind::kHardmax, {x}, h)}, {{x, Random(x->type(), 2)}});
  h.Set("p", int64_t{1});
  CheckGroup({Add(g, OpKind::kLpNormalization, {x}, h)}, {{x, Random(x->type(), 3)}});
}

TEST(LowerNnTest, ConvTransposeStridedGroupedPadded) {
  Graph g;
  Value* x = g.AddInput("x", F32({1, 4, 3, 4}));
  Value* w = g.AddConstant("w", Random(F32({4, 3, 3, 2}), 1));
  Value* b = g.AddConstant("b", Random(F32({6}), 2));
  AttrMap a;
  a.Set("kernel_shape", std::vector<int64_t>{3, 2});
  a.Set("strides", std::vector<int64_t>{2, 3});
  a.Set("dilations", std::vector<int64_t>{1, 2});
  a.Set("pads", std::vector<int64_t>{1, 0, 0, 1});
  a.Set("output_padding", std::vector<int64_t>{1, 0});
  a.Set("group", int64_t{2});
  CheckGroup({Add(g, OpKind::kConvTranspose, {x, w, b}, a)}, {{x, Random(x->type(), 3)}});
}

TEST(LowerNnTest, NllLossReductions) {
  Graph g;
  Value* x = g.AddInput("x", F32({3, 4, 2}));
  Value* t = g.AddInput("t", TensorType{DType::kInt64, {3, 2}});
  Value* w = g.AddConstant("w", Random(F32({4}), 1));
  TensorPtr tv = FromInts(t->type(), {0, 3, 2, 1, 1, 2});
  for (const char* reduction : {"none", "sum", "mean"}) {
    AttrMap a;
    a.Set("reduction", std::string(reduction));
    a.Set("ignore_index", int64_t{1});
    CheckGroup({Add(g, OpKind::kNegativeLogLikelihoodLoss, {x, t, w}, a)},
               {{x, Random(x->type(), 2)}, {t, tv}});
  }
}

TEST(LowerNnTest, ActivationsChain) {
  Graph g;
  Value* x = g.AddInput("x", F32({4, 5}));
  Value* slope = g.AddConstant("slope", Random(F32({5}), 1));
  std::vector<const Node*> nodes;
  Value* cur = x;
  for (OpKind op : {OpKind::kElu, OpKind::kSelu, OpKind::kCelu, OpKind::kHardSigmoid,
                    OpKind::kHardSwish, OpKind::kSoftplus, OpKind::kSoftsign,
                    OpKind::kThresholdedRelu, OpKind::kMish, OpKind::kGelu}) {
    Node* n = Add(g, op, {cur});
    nodes.push_back(n);
    cur = n->output(0);
  }
  Node* p = Add(g, OpKind::kPRelu, {cur, slope});
  nodes.push_back(p);
  ValueMap in{{x, Random(x->type(), 2)}};
  // Scale the input so that every branch of the activations is exercised.
  auto scaled = Tensor::Zeros(x->type());
  std::vector<float> v = Floats(*in[x]);
  for (size_t i = 0; i < v.size(); ++i) scaled->mutable_data<float>()[i] = 3 * v[i];
  in[x] = scaled;
  CheckGroup(nodes, in);
}

/// `t` with every element multiplied by `k`.
TensorPtr Scaled(const TensorPtr& t, float k) {
  auto out = Tensor::Zeros(t->type);
  std::vector<float> v = Floats(*t);
  for (size_t i = 0; i < v.size(); ++i) out->mutable_data<float>()[i] = k * v[i];
  return out;
}

TEST(LowerTensorTest, DetPivotsAndSingular) {
  Graph g;
  Value* x = g.AddInput("x", F32({3, 2, 2}));
  // A zero leading pivot (needs a row swap), a singular matrix, a general one.
  std::vector<float> v = {0, 1, 2, 3, 1, 2, 2, 4, 1.5f, -2, 0.5f, 3};
  CheckGroup({Add(g, OpKind::kDet, {x})}, {{x, testing::FromFloats(x->type(), v)}});
  Value* y = g.AddInput("y", F32({2, 3, 5, 5}));
  CheckGroup({Add(g, OpKind::kDet, {y})}, {{y, Random(y->type(), 7)}});
}

TEST(LowerNnTest, GridSampleModesAndPadding) {
  Graph g;
  Value* x = g.AddInput("x", F32({1, 2, 3, 4}));
  Value* grid = g.AddInput("grid", F32({1, 3, 5, 2}));
  // Grid points up to 1.6 outside [-1, 1] exercise every padding mode.
  ValueMap in{{x, Random(x->type(), 1)}, {grid, Scaled(Random(grid->type(), 2), 2.6f)}};
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    for (const char* padding : {"zeros", "border", "reflection"}) {
      for (int64_t align : {0, 1}) {
        AttrMap a;
        a.Set("mode", std::string(mode));
        a.Set("padding_mode", std::string(padding));
        a.Set("align_corners", align);
        SCOPED_TRACE(absl::StrCat(mode, " ", padding, " ", align));
        CheckGroup({Add(g, OpKind::kGridSample, {x, grid}, a)}, in);
      }
    }
  }
}

TEST(LowerNnTest, RoiAlignModes) {
  Graph g;
  Value* x = g.AddInput("x", F32({2, 2, 6, 5}));
  Value* rois = g.AddInput("rois", F32({3, 4}));
  Value* batch = g.AddInput("batch", TensorType{DType::kInt64, {3}});
  ValueMap in{
      {x, Random(x->type(), 1)},
      {rois, testing::FromFloats(rois->type(), {0, 0, 4, 3, 1, 1.5f, 3.5f, 5.5f, -2, 0, 7, 9})},
      {batch, FromInts(batch->type(), {0, 1, 1})}};
  for (const char* mode : {"avg", "max"}) {
    for (const char* coord : {"half_pixel", "output_half_pixel"}) {
      AttrMap a;
      a.Set("mode", std::string(mode));
      a.Set("coordinate_transformation_mode", std::string(coord));
      a.Set("output_height", int64_t{3});
      a.Set("output_width", int64_t{2});
      a.Set("sampling_ratio", int64_t{2});
      a.Set("spatial_scale", 0.8f);
      SCOPED_TRACE(absl::StrCat(mode, " ", coord));
      CheckGroup({Add(g, OpKind::kRoiAlign, {x, rois, batch}, a)}, in);
    }
  }
}

}  // namespace
}  // namespace kiln::lowering
