// Unit tests of the reference evaluator with hand-computed values.
#include "compiler_core/reference/evaluator.h"

#include <cmath>

#include "gtest/gtest.h"

namespace kiln::reference {
namespace {

using graph::AttrMap;
using graph::Graph;
using graph::Node;
using graph::OpKind;
using Shape = std::vector<int64_t>;

std::shared_ptr<Tensor> F32(Shape shape, std::vector<float> v) {
  auto t = Tensor::Zeros(TensorType{DType::kFloat32, std::move(shape)});
  for (size_t i = 0; i < v.size(); ++i) t->mutable_data<float>()[i] = v[i];
  return t;
}
std::shared_ptr<Tensor> I64(Shape shape, std::vector<int64_t> v) {
  auto t = Tensor::Zeros(TensorType{DType::kInt64, std::move(shape)});
  for (size_t i = 0; i < v.size(); ++i) t->mutable_data<int64_t>()[i] = v[i];
  return t;
}
std::vector<double> Values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.type.NumElements(); ++i) v.push_back(t.GetAsDouble(i));
  return v;
}

// Runs a single node on constant inputs.
std::vector<double> Run1(OpKind op, std::vector<TensorPtr> ins, TensorType out_type,
                         AttrMap attrs = {}) {
  Graph g;
  std::vector<graph::Value*> vals;
  for (const auto& t : ins) vals.push_back(t ? g.AddConstant("c", t) : nullptr);
  Node* n = g.AddNode(op, "n", vals, {out_type}, attrs);
  auto r = EvaluateNode(*n, ins);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return {};
  EXPECT_EQ((*r)[0]->type, out_type);
  return Values(*(*r)[0]);
}

TEST(EvaluatorTest, BroadcastArithmetic) {
  TensorType t{DType::kFloat32, {2, 3}};
  EXPECT_EQ(Run1(OpKind::kAdd, {F32({2, 1}, {1, 2}), F32({3}, {10, 20, 30})}, t),
            (std::vector<double>{11, 21, 31, 12, 22, 32}));
  EXPECT_EQ(Run1(OpKind::kDiv, {F32({2, 3}, {2, 4, 6, 8, 10, 12}), F32({}, {2})}, t),
            (std::vector<double>{1, 2, 3, 4, 5, 6}));
  TensorType i{DType::kInt64, {3}};
  EXPECT_EQ(Run1(OpKind::kDiv, {I64({3}, {7, -7, 9}), I64({1}, {2})}, i),
            (std::vector<double>{3, -3, 4}));
  EXPECT_EQ(Run1(OpKind::kMax, {F32({3}, {1, 5, 3}), F32({3}, {4, 2, 6}), F32({1}, {5})},
                 TensorType{DType::kFloat32, {3}}),
            (std::vector<double>{5, 5, 6}));
}

TEST(EvaluatorTest, LpPoolHandComputed) {
  AttrMap a;
  a.Set("kernel_shape", Shape{2});
  a.Set("strides", Shape{1});
  a.Set("pads", Shape{0, 0});
  a.Set("p", int64_t{2});
  TensorType one{DType::kFloat32, {1, 1, 1}};
  EXPECT_EQ(Run1(OpKind::kLpPool, {F32({1, 1, 2}, {3, 4})}, one, a), (std::vector<double>{5}));
  a.Set("p", int64_t{1});
  EXPECT_EQ(Run1(OpKind::kLpPool, {F32({1, 1, 2}, {-3, 4})}, one, a), (std::vector<double>{7}));
  a.Set("p", int64_t{3});
  auto cube = Run1(OpKind::kLpPool, {F32({1, 1, 2}, {-1, 2})}, one, a);
  ASSERT_EQ(cube.size(), 1u);
  EXPECT_NEAR(cube[0], std::cbrt(9.0), 1e-6);
  // Pads contribute 0: windows [pad, 3], [3, -4], [-4, pad] with p = 2.
  a.Set("p", int64_t{2});
  a.Set("pads", Shape{1, 1});
  EXPECT_EQ(Run1(OpKind::kLpPool, {F32({1, 1, 2}, {3, -4})},
                 TensorType{DType::kFloat32, {1, 1, 3}}, a),
            (std::vector<double>{3, 5, 4}));
  // Stride 2, kernel 2 over [1, 2, 2, 4] (p defaults to 2): sqrt(5), sqrt(20).
  AttrMap s;
  s.Set("kernel_shape", Shape{2});
  s.Set("strides", Shape{2});
  auto strided = Run1(OpKind::kLpPool, {F32({1, 1, 4}, {1, 2, 2, 4})},
                      TensorType{DType::kFloat32, {1, 1, 2}}, s);
  ASSERT_EQ(strided.size(), 2u);
  EXPECT_NEAR(strided[0], std::sqrt(5.0), 1e-6);
  EXPECT_NEAR(strided[1], std::sqrt(20.0), 1e-6);
  // GlobalLpPool, p = 2 over [1, -2, 2, 4]: sqrt(25) = 5; p = 1: 9.
  AttrMap g;
  TensorType gt{DType::kFloat32, {1, 1, 1, 1}};
  EXPECT_EQ(Run1(OpKind::kGlobalLpPool, {F32({1, 1, 2, 2}, {1, -2, 2, 4})}, gt, g),
            (std::vector<double>{5}));
  g.Set("p", int64_t{1});
  EXPECT_EQ(Run1(OpKind::kGlobalLpPool, {F32({1, 1, 2, 2}, {1, -2, 2, 4})}, gt, g),
            (std::vector<double>{9}));
}

TEST(EvaluatorTest, ConvWithPadsAndBias) {
  AttrMap a;
  a.Set("kernel_shape", Shape{2, 2});
  a.Set("pads", Shape{0, 0, 1, 1});
  a.Set("strides", Shape{1, 1});
  a.Set("dilations", Shape{1, 1});
  a.Set("group", int64_t{1});
  // x = [[1,2],[3,4]], w = all ones, bias 0.5: sums of 2x2 windows with bottom/right padding.
  auto out = Run1(OpKind::kConv,
                  {F32({1, 1, 2, 2}, {1, 2, 3, 4}), F32({1, 1, 2, 2}, {1, 1, 1, 1}),
                   F32({1}, {0.5})},
                  TensorType{DType::kFloat32, {1, 1, 2, 2}}, a);
  EXPECT_EQ(out, (std::vector<double>{10.5, 6.5, 7.5, 4.5}));
}

TEST(EvaluatorTest, PoolsAndGemm) {
  AttrMap a;
  a.Set("kernel_shape", Shape{2, 2});
  a.Set("strides", Shape{2, 2});
  a.Set("pads", Shape{0, 0, 1, 1});
  auto x = F32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  TensorType t{DType::kFloat32, {1, 1, 2, 2}};
  EXPECT_EQ(Run1(OpKind::kMaxPool, {x}, t, a), (std::vector<double>{5, 6, 8, 9}));
  EXPECT_EQ(Run1(OpKind::kAveragePool, {x}, t, a), (std::vector<double>{3, 4.5, 7.5, 9}));
  a.Set("count_include_pad", int64_t{1});
  EXPECT_EQ(Run1(OpKind::kAveragePool, {x}, t, a), (std::vector<double>{3, 2.25, 3.75, 2.25}));
  EXPECT_EQ(Run1(OpKind::kGlobalAveragePool, {x}, TensorType{DType::kFloat32, {1, 1, 1, 1}}),
            (std::vector<double>{5}));
  AttrMap g;
  g.Set("transB", int64_t{1});
  g.Set("alpha", 2.0f);
  g.Set("beta", 1.0f);
  EXPECT_EQ(Run1(OpKind::kGemm, {F32({1, 2}, {1, 2}), F32({2, 2}, {1, 0, 1, 1}), F32({2}, {1, 2})},
                 TensorType{DType::kFloat32, {1, 2}}, g),
            (std::vector<double>{3, 8}));
}

TEST(EvaluatorTest, SoftmaxAndMatMul) {
  AttrMap a;
  a.Set("axis", int64_t{1});
  auto s = Run1(OpKind::kSoftmax, {F32({1, 2}, {0, std::log(3.0f)})},
                TensorType{DType::kFloat32, {1, 2}}, a);
  EXPECT_NEAR(s[0], 0.25, 1e-6);
  EXPECT_NEAR(s[1], 0.75, 1e-6);
  EXPECT_EQ(Run1(OpKind::kMatMul, {F32({2, 2}, {1, 2, 3, 4}), F32({2}, {1, 1})},
                 TensorType{DType::kFloat32, {2}}),
            (std::vector<double>{3, 7}));
}

TEST(EvaluatorTest, DataMovement) {
  auto x = F32({2, 3}, {0, 1, 2, 3, 4, 5});
  AttrMap tp;
  tp.Set("perm", Shape{1, 0});
  EXPECT_EQ(Run1(OpKind::kTranspose, {x}, TensorType{DType::kFloat32, {3, 2}}, tp),
            (std::vector<double>{0, 3, 1, 4, 2, 5}));
  AttrMap ca;
  ca.Set("axis", int64_t{1});
  EXPECT_EQ(Run1(OpKind::kConcat, {x, F32({2, 1}, {9, 8})},
                 TensorType{DType::kFloat32, {2, 4}}, ca),
            (std::vector<double>{0, 1, 2, 9, 3, 4, 5, 8}));
  AttrMap pa;
  pa.Set("mode", std::string("reflect"));
  EXPECT_EQ(Run1(OpKind::kPad, {F32({3}, {1, 2, 3}), I64({2}, {2, 1}), nullptr},
                 TensorType{DType::kFloat32, {6}}, pa),
            (std::vector<double>{3, 2, 1, 2, 3, 2}));
  pa.Set("mode", std::string("constant"));
  EXPECT_EQ(Run1(OpKind::kPad, {F32({3}, {1, 2, 3}), I64({2}, {1, 0}), F32({}, {7})},
                 TensorType{DType::kFloat32, {4}}, pa),
            (std::vector<double>{7, 1, 2, 3}));
  EXPECT_EQ(Run1(OpKind::kGather, {x, I64({2}, {2, -3})}, TensorType{DType::kFloat32, {2, 2}},
                 ca),
            (std::vector<double>{2, 0, 5, 3}));
  EXPECT_EQ(Run1(OpKind::kSlice,
                 {x, I64({1}, {-1}), I64({1}, {-100}), I64({1}, {1}), I64({1}, {-2})},
                 TensorType{DType::kFloat32, {2, 2}}),
            (std::vector<double>{2, 0, 5, 3}));
}

TEST(EvaluatorTest, ClipCastBatchNorm) {
  EXPECT_EQ(Run1(OpKind::kClip, {F32({3}, {-5, 0.5, 9}), F32({}, {0}), F32({}, {6})},
                 TensorType{DType::kFloat32, {3}}),
            (std::vector<double>{0, 0.5, 6}));
  AttrMap c;
  c.Set("to", int64_t{7});  // INT64
  EXPECT_EQ(Run1(OpKind::kCast, {F32({2}, {2.7f, -1.5f})}, TensorType{DType::kInt64, {2}}, c),
            (std::vector<double>{2, -1}));
  AttrMap bn;
  bn.Set("epsilon", 0.0f);
  EXPECT_EQ(Run1(OpKind::kBatchNormalization,
                 {F32({1, 2, 1}, {3, 5}), F32({2}, {2, 1}), F32({2}, {1, 0}), F32({2}, {1, 1}),
                  F32({2}, {4, 16})},
                 TensorType{DType::kFloat32, {1, 2, 1}}, bn),
            (std::vector<double>{3, 1}));
}

TEST(EvaluatorTest, GraphAndErrors) {
  Graph g;
  graph::Value* x = g.AddInput("x", TensorType{DType::kFloat32, {2}});
  Node* r = g.AddNode(OpKind::kRelu, "r", {x}, {TensorType{DType::kFloat32, {2}}});
  Node* n = g.AddNode(OpKind::kNeg, "n", {r->output(0)}, {TensorType{DType::kFloat32, {2}}});
  g.SetOutputs({n->output(0)});
  auto out = EvaluateGraph(g, {F32({2}, {-1, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values(*(*out)[0]), (std::vector<double>{0, -2}));
  auto bad = EvaluateGraph(g, {F32({3}, {1, 2, 3})});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kiln::reference
