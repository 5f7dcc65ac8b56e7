// Numeric tests of kernels with several results (TopK values + indices, MaxPool + Indices):
// each node is lowered, run with the loop IR interpreter and compared, result by result, with
// the reference evaluator.
#include <cmath>
#include <cstring>

#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/lowering/lower.h"
#include "compiler_core/lowering/lowering_test_util.h"
#include "compiler_core/reference/evaluator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::lowering {
namespace {

using graph::AttrMap;
using graph::Graph;
using graph::Node;
using graph::OpKind;
using graph::Value;
using testing::F32;
using testing::FromFloats;
using testing::FromInts;
using testing::Random;
using testing::TensorPtr;
using testing::ValueMap;
using ::testing::ElementsAre;

TensorType I64(std::vector<int64_t> shape) { return {DType::kInt64, std::move(shape)}; }

std::vector<int64_t> Ints(const Tensor& t) {
  std::vector<int64_t> v(t.type.NumElements());
  std::memcpy(v.data(), t.bytes.data(), v.size() * sizeof(int64_t));
  return v;
}

/// Lowers `node` alone, checks that its results are all its outputs in order, runs it and
/// compares every result (f32 values, i64 indices) with the reference evaluator.
void CheckAllResults(const Node* node, const ValueMap& inputs) {
  auto kernel = LowerGroup({node}, "k");
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  ASSERT_EQ(kernel->results.size(), node->outputs().size());
  for (size_t i = 0; i < node->outputs().size(); ++i) {
    EXPECT_EQ(kernel->results[i], node->output(static_cast<int>(i)));
    // Results are the last params, in order.
    size_t p = kernel->param_values.size() - node->outputs().size() + i;
    EXPECT_EQ(kernel->param_values[p], node->output(static_cast<int>(i)));
  }
  auto got = testing::RunFuncAll(*kernel, kernel->func, inputs);
  ASSERT_TRUE(got.ok()) << got.status() << "\n" << loop::PrintFunc(kernel->func);
  std::vector<TensorPtr> ins;
  for (const Value* v : node->inputs()) {
    ins.push_back(v->is_constant() ? v->constant() : inputs.at(v));
  }
  auto want = reference::EvaluateNode(*node, ins);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_EQ(got->size(), want->size());
  for (size_t r = 0; r < want->size(); ++r) {
    const Tensor& g = *(*got)[r];
    const Tensor& w = *(*want)[r];
    ASSERT_EQ(g.type, w.type) << "result " << r;
    if (w.type.dtype == DType::kInt64) {
      EXPECT_EQ(Ints(g), Ints(w)) << "result " << r << "\n" << loop::PrintFunc(kernel->func);
    } else {
      EXPECT_EQ(testing::Floats(g), testing::Floats(w))
          << "result " << r << "\n" << loop::PrintFunc(kernel->func);
    }
  }
}

Node* AddTopK(Graph& g, Value* x, int64_t k, int64_t axis, int64_t largest) {
  Value* kv = g.AddConstant("k", FromInts(I64({1}), {k}));
  std::vector<int64_t> shape = x->type().shape;
  shape[axis < 0 ? axis + shape.size() : axis] = k;
  AttrMap a;
  a.Set("axis", axis);
  a.Set("largest", largest);
  a.Set("sorted", int64_t{1});
  return g.AddNode(OpKind::kTopK, "topk", {x, kv}, {F32(shape), I64(shape)}, a);
}

TEST(LowerTopKTest, LargestLastAxisWithTies) {
  Graph g;
  Value* x = g.AddInput("x", F32({3, 5}));
  Node* topk = AddTopK(g, x, 3, 1, 1);
  ValueMap in = {{x, FromFloats(x->type(), {1, 3, 3, 2, 3,  //
                                            -1, -1, -1, -1, -1,  //
                                            -INFINITY, 0, 5, -INFINITY, 4})}};
  CheckAllResults(topk, in);
  auto kernel = LowerGroup({topk}, "k");
  ASSERT_TRUE(kernel.ok());
  auto got = testing::RunFuncAll(*kernel, kernel->func, in);
  ASSERT_TRUE(got.ok());
  // Ties go to the lower index.
  EXPECT_THAT(Ints(*(*got)[1]), ElementsAre(1, 2, 4, 0, 1, 2, 2, 4, 1));
}

TEST(LowerTopKTest, SmallestMiddleAxis) {
  Graph g;
  Value* x = g.AddInput("x", F32({2, 6, 3}));
  Node* topk = AddTopK(g, x, 4, 1, 0);
  CheckAllResults(topk, {{x, Random(x->type(), 7)}});
}

TEST(LowerTopKTest, LastAndFirstAxisAndFullK) {
  Graph g;
  Value* x = g.AddInput("x", F32({4, 3}));
  Value* y = g.AddInput("y", F32({5, 2}));
  CheckAllResults(AddTopK(g, x, 2, 1, 1), {{x, Random(x->type(), 8)}});
  CheckAllResults(AddTopK(g, y, 5, 0, 1), {{y, Random(y->type(), 9)}});
}

Node* AddMaxPool(Graph& g, Value* x, std::vector<int64_t> out_shape, std::vector<int64_t> kernel,
                 std::vector<int64_t> strides, std::vector<int64_t> pads,
                 std::vector<int64_t> dilations, int64_t ceil_mode, int64_t storage_order) {
  AttrMap a;
  a.Set("kernel_shape", kernel);
  a.Set("strides", strides);
  a.Set("pads", pads);
  a.Set("dilations", dilations);
  a.Set("ceil_mode", ceil_mode);
  a.Set("storage_order", storage_order);
  return g.AddNode(OpKind::kMaxPool, "mp", {x}, {F32(out_shape), I64(out_shape)}, a);
}

TEST(LowerMaxPoolIndicesTest, PadsStridesRowMajor) {
  Graph g;
  Value* x = g.AddInput("x", F32({2, 3, 5, 5}));
  Node* mp = AddMaxPool(g, x, {2, 3, 3, 3}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0, 0);
  CheckAllResults(mp, {{x, Random(x->type(), 11)}});
}

TEST(LowerMaxPoolIndicesTest, CeilModeDilationsColumnMajor) {
  Graph g;
  Value* x = g.AddInput("x", F32({1, 2, 6, 7}));
  // Rows: (6 + 1 - 2*(2-1) - 1) / 2 rounded up + 1 = 3; cols: (7 + 0 - 3) / 2 rounded up + 1 = 3.
  Node* mp = AddMaxPool(g, x, {1, 2, 3, 3}, {2, 2}, {2, 2}, {1, 0, 0, 0}, {2, 2}, 1, 1);
  CheckAllResults(mp, {{x, Random(x->type(), 12)}});
}

TEST(LowerMaxPoolIndicesTest, TiesKeepFirstMaximum) {
  Graph g;
  Value* x = g.AddInput("x", F32({1, 1, 4, 4}));
  Node* mp = AddMaxPool(g, x, {1, 1, 2, 2}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 0, 0);
  std::vector<float> ones(16, 1.0f);
  CheckAllResults(mp, {{x, FromFloats(x->type(), ones)}});
}

}  // namespace
}  // namespace kiln::lowering
