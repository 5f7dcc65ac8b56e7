// Tests that the graph hash ignores serialization details and sees every semantic change.
#include "compiler_core/ir/graph/graph_hash.h"

#include <gtest/gtest.h>

namespace kiln::graph {
namespace {

std::shared_ptr<Tensor> Filled(std::vector<int64_t> shape, float start) {
  auto t = Tensor::Zeros({DType::kFloat32, std::move(shape)});
  float* p = t->mutable_data<float>();
  for (int64_t i = 0; i < t->type.NumElements(); ++i) p[i] = start + 0.25f * i;
  return t;
}

/// What can vary between two builds of "the same" two-branch graph
/// y = Relu(Gemm(x, w, b)) + Sigmoid(x * s), plus deliberate semantic changes.
struct Variant {
  bool swap_node_order = false;
  std::string name_prefix = "a";  // inner values, nodes, constants and the graph
  std::string input_name = "x";
  std::string output_name = "y";
  float weight_start = 1.0f;
  float scale_start = 0.5f;
  int64_t trans_b = 1;
  DType input_dtype = DType::kFloat32;
  int64_t hidden = 4;
  bool swap_add_operands = false;
  bool add_dead_node = false;
};

std::string BuildAndHash(const Variant& v) {
  Graph g;
  g.set_name(v.name_prefix + "_graph");
  const std::string p = v.name_prefix;
  Value* x = g.AddInput(v.input_name, {v.input_dtype, {1, 4}});
  Value* w = g.AddConstant(p + "w", Filled({v.hidden, 4}, v.weight_start));
  Value* b = g.AddConstant(p + "b", Filled({v.hidden}, 0.0f));
  Value* s = g.AddConstant(p + "s", Filled({1, 4}, v.scale_start));
  AttrMap gemm_attrs;
  gemm_attrs.Set("alpha", 1.0f);
  gemm_attrs.Set("transB", v.trans_b);
  TensorType hidden_type{DType::kFloat32, {1, v.hidden}};
  TensorType in_type{DType::kFloat32, {1, 4}};

  Value* relu_out = nullptr;
  Value* sig_out = nullptr;
  auto build_left = [&] {
    Node* gemm = g.AddNode(OpKind::kGemm, p + "gemm", {x, w, b}, {hidden_type}, gemm_attrs);
    relu_out = g.AddNode(OpKind::kRelu, p + "relu", {gemm->output(0)}, {hidden_type})->output(0);
  };
  auto build_right = [&] {
    Node* mul = g.AddNode(OpKind::kMul, p + "mul", {x, s}, {in_type});
    sig_out = g.AddNode(OpKind::kSigmoid, p + "sig", {mul->output(0)}, {in_type})->output(0);
  };
  if (v.swap_node_order) {
    build_right();
    build_left();
  } else {
    build_left();
    build_right();
  }
  if (v.add_dead_node) g.AddNode(OpKind::kExp, p + "dead", {x}, {in_type});
  std::vector<Value*> add_inputs = {relu_out, sig_out};
  if (v.swap_add_operands) std::swap(add_inputs[0], add_inputs[1]);
  Node* add = g.AddNode(OpKind::kAdd, p + "add", add_inputs, {hidden_type});
  add->output(0)->set_name(v.output_name);
  g.SetOutputs({add->output(0)});
  return GraphHash(g);
}

TEST(GraphHashTest, IsSha256Hex) {
  std::string h = BuildAndHash({});
  EXPECT_EQ(h.size(), 64u);
  EXPECT_EQ(h.find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(GraphHashTest, IgnoresNodeOrderInnerNamesAndDeadNodes) {
  std::string base = BuildAndHash({});
  EXPECT_EQ(base, BuildAndHash({.swap_node_order = true}));
  EXPECT_EQ(base, BuildAndHash({.name_prefix = "other_"}));
  EXPECT_EQ(base, BuildAndHash({.add_dead_node = true}));
}

TEST(GraphHashTest, SeesEverySemanticChange) {
  std::string base = BuildAndHash({});
  EXPECT_NE(base, BuildAndHash({.weight_start = 1.5f})) << "weights must be covered";
  EXPECT_NE(base, BuildAndHash({.scale_start = 0.75f})) << "a small constant must be covered";
  EXPECT_NE(base, BuildAndHash({.trans_b = 0})) << "attributes must be covered";
  EXPECT_NE(base, BuildAndHash({.input_dtype = DType::kFloat64})) << "dtypes must be covered";
  EXPECT_NE(base, BuildAndHash({.hidden = 5})) << "shapes must be covered";
  EXPECT_NE(base, BuildAndHash({.swap_add_operands = true})) << "input order must be covered";
  // The artifact embeds the graph's input and output names (and refuses others at run time),
  // so two models that differ only there must not share an artifact.
  EXPECT_NE(base, BuildAndHash({.input_name = "images"})) << "input names must be covered";
  EXPECT_NE(base, BuildAndHash({.output_name = "logits"})) << "output names must be covered";
}

TEST(GraphHashTest, OneWeightBitFlipChangesHash) {
  auto hash_with = [](float value) {
    Graph g;
    Value* x = g.AddInput("x", {DType::kFloat32, {2}});
    auto w = Filled({2}, 1.0f);
    w->mutable_data<float>()[1] = value;
    Value* c = g.AddConstant("w", w);
    Node* n = g.AddNode(OpKind::kMul, "m", {x, c}, {{DType::kFloat32, {2}}});
    g.SetOutputs({n->output(0)});
    return GraphHash(g);
  };
  float a = 1.25f, b;
  uint32_t bits;
  std::memcpy(&bits, &a, 4);
  bits ^= 1;  // lowest mantissa bit
  std::memcpy(&b, &bits, 4);
  EXPECT_NE(hash_with(a), hash_with(b));
  EXPECT_EQ(hash_with(a), hash_with(a));
}

// The hash is part of every artifact cache key: a fixed graph's digest must never change
// (this one is what `kiln compile` printed for the same model, "graph 478de542e11e80a8",
// before the hash walk became iterative), and a 100k-deep chain hashes without recursing per
// node.
TEST(GraphHashTest, FixedGraphDigestAndDeepChain) {
  Graph g;
  Value* x = g.AddInput("x", {DType::kFloat32, {2}});
  auto c = Filled({2}, 1.0f);
  c->mutable_data<float>()[1] = 2.0f;
  Value* cv = g.AddConstant("c", c);
  Node* relu = g.AddNode(OpKind::kRelu, "r", {x}, {{DType::kFloat32, {2}}});
  Node* add = g.AddNode(OpKind::kAdd, "y", {relu->output(0), cv}, {{DType::kFloat32, {2}}});
  add->output(0)->set_name("y");
  g.SetOutputs({add->output(0)});
  EXPECT_EQ(GraphHash(g).substr(0, 16), "478de542e11e80a8");

  Graph deep;
  Value* v = deep.AddInput("x", {DType::kFloat32, {2}});
  for (int i = 0; i < 100000; ++i) {
    v = deep.AddNode(OpKind::kRelu, "r", {v}, {{DType::kFloat32, {2}}})->output(0);
  }
  deep.SetOutputs({v});
  EXPECT_EQ(GraphHash(deep).size(), 64u);
}

}  // namespace
}  // namespace kiln::graph
