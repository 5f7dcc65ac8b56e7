// Tests of the graph's use lists (Users, ReplaceAllUsesWith, RemoveNode, InsertNodeBefore,
// SetOutputs, SortTopologically) and of 100k-node chains through every whole-graph walk
// (verifier, hash, printer, sort), which must neither recurse per node nor scan per node.
#include "compiler_core/ir/graph/graph.h"

#include <memory>
#include <string>
#include <vector>

#include "compiler_core/ir/graph/graph_hash.h"
#include "compiler_core/ir/graph/printer.h"
#include "compiler_core/ir/graph/verifier.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::graph {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

const TensorType kF32x4{DType::kFloat32, {4}};

Node* Unary(Graph& g, OpKind op, const std::string& name, Value* x) {
  return g.AddNode(op, name, {x}, {x->type()});
}

Node* Binary(Graph& g, OpKind op, const std::string& name, Value* a, Value* b) {
  return g.AddNode(op, name, {a, b}, {a->type()});
}

TEST(GraphTest, UsersAreInGraphOrderOncePerNode) {
  Graph g;
  Value* x = g.AddInput("x", kF32x4);
  Node* c = Unary(g, OpKind::kExp, "c", x);
  Node* a = Binary(g, OpKind::kMul, "a", x, x);  // reads x twice
  Node* b = g.InsertNodeBefore(c, OpKind::kRelu, "b", {x}, {kF32x4});
  EXPECT_THAT(g.Users(x), ElementsAre(b, c, a));
  EXPECT_EQ(x->uses().size(), 4u);
  EXPECT_TRUE(g.HasUsers(x));
  EXPECT_FALSE(g.HasUsers(a->output(0)));
  EXPECT_TRUE(g.Users(nullptr).empty());
}

TEST(GraphTest, SetInputMovesTheUse) {
  Graph g;
  Value* x = g.AddInput("x", kF32x4);
  Value* y = g.AddInput("y", kF32x4);
  Node* add = Binary(g, OpKind::kAdd, "add", x, y);
  Node* neg = Unary(g, OpKind::kNeg, "neg", x);
  add->set_input(0, y);
  EXPECT_THAT(g.Users(x), ElementsAre(neg));
  EXPECT_THAT(g.Users(y), ElementsAre(add));
  EXPECT_EQ(y->uses().size(), 2u);
  add->set_input(1, nullptr);
  add->set_input(0, nullptr);
  EXPECT_FALSE(g.HasUsers(y));
  EXPECT_TRUE(y->uses().empty());
}

TEST(GraphTest, ReplaceAllUsesWithRewritesNodeInputsAndGraphOutputs) {
  Graph g;
  Value* x = g.AddInput("x", kF32x4);
  Node* r = Unary(g, OpKind::kRelu, "r", x);
  Node* e = Unary(g, OpKind::kExp, "e", r->output(0));
  Node* m = Binary(g, OpKind::kMul, "m", r->output(0), e->output(0));
  g.SetOutputs({r->output(0), m->output(0), r->output(0)});
  EXPECT_TRUE(g.IsGraphOutput(r->output(0)));
  g.ReplaceAllUsesWith(r->output(0), x);
  EXPECT_THAT(g.outputs(), ElementsAre(x, m->output(0), x));
  EXPECT_THAT(g.Users(x), ElementsAre(r, e, m));
  EXPECT_FALSE(g.HasUsers(r->output(0)));
  EXPECT_FALSE(g.IsGraphOutput(r->output(0)));
  EXPECT_TRUE(g.IsGraphOutput(x));
  EXPECT_TRUE(g.IsGraphInput(x));
  EXPECT_FALSE(g.IsGraphInput(m->output(0)));
  g.RemoveNode(r);
  EXPECT_THAT(g.nodes(), ElementsAre(e, m));
  EXPECT_THAT(g.Users(x), ElementsAre(e, m));
}

TEST(GraphTest, SetOutputsCountsEachListing) {
  Graph g;
  Value* x = g.AddInput("x", kF32x4);
  Node* r = Unary(g, OpKind::kRelu, "r", x);
  g.SetOutputs({r->output(0), r->output(0)});
  g.SetOutputs({r->output(0)});
  EXPECT_TRUE(g.IsGraphOutput(r->output(0)));
  g.SetOutputs({x});
  EXPECT_FALSE(g.IsGraphOutput(r->output(0)));
  EXPECT_TRUE(g.IsGraphOutput(x));
}

TEST(GraphTest, RemoveNodeDropsItsUsesAndLiveConstantsFollow) {
  Graph g;
  Value* x = g.AddInput("x", kF32x4);
  Value* c = g.AddConstant("c", Tensor::Zeros(kF32x4));
  Node* add = Binary(g, OpKind::kAdd, "add", x, c);
  Node* neg = Unary(g, OpKind::kNeg, "neg", x);
  g.SetOutputs({neg->output(0)});
  EXPECT_THAT(g.LiveConstants(), ElementsAre(c));
  g.RemoveNode(add);
  EXPECT_TRUE(g.LiveConstants().empty());
  EXPECT_THAT(g.Users(x), ElementsAre(neg));
}

TEST(GraphTest, InsertionsAtOneSpotKeepUsersInOrder) {
  // Far more insertions before one node than the gap between order keys holds at first.
  Graph g;
  Value* x = g.AddInput("x", kF32x4);
  Node* last = Unary(g, OpKind::kRelu, "last", x);
  Node* first = g.InsertNodeBefore(last, OpKind::kNeg, "first", {x}, {kF32x4});
  std::vector<Node*> inserted;
  for (int i = 0; i < 100; ++i) {
    inserted.push_back(
        g.InsertNodeBefore(last, OpKind::kExp, "e" + std::to_string(i), {x}, {kF32x4}));
  }
  std::vector<Node*> want{first};
  want.insert(want.end(), inserted.begin(), inserted.end());
  want.push_back(last);
  EXPECT_EQ(g.Users(x), want);
  EXPECT_EQ(g.nodes(), want);
}

TEST(GraphTest, SortTopologicallyIsStableAndNamesACycle) {
  Graph g;
  Value* x = g.AddInput("x", kF32x4);
  Node* b = Unary(g, OpKind::kRelu, "b", x);
  Node* c = Unary(g, OpKind::kExp, "c", x);
  Node* a = g.InsertNodeBefore(b, OpKind::kNeg, "a", {x}, {kF32x4});
  b->set_input(0, c->output(0));  // b now reads c, which comes after it
  ASSERT_TRUE(g.SortTopologically().ok());
  EXPECT_THAT(g.nodes(), ElementsAre(a, c, b));
  EXPECT_THAT(g.Users(x), ElementsAre(a, c));
  c->set_input(0, b->output(0));
  absl::Status cycle = g.SortTopologically();
  EXPECT_EQ(cycle.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cycle.message(), "graph has a cycle through node 'c' (Exp)");
  EXPECT_THAT(g.nodes(), ElementsAre(a, c, b));
}

/// x -> Relu -> Relu -> ... (`depth` nodes); returns the last value.
Value* ReluChain(Graph& g, int depth) {
  Value* v = g.AddInput("x", kF32x4);
  for (int i = 0; i < depth; ++i)
    v = Unary(g, OpKind::kRelu, "r" + std::to_string(i), v)->output(0);
  g.SetOutputs({v});
  return v;
}

// Every whole-graph walk over a 100k-deep chain, on the default 8 MiB stack: recursion per node
// would overflow it, a scan per node would take minutes.
TEST(GraphTest, HundredThousandDeepChainWalks) {
  constexpr int kDepth = 100000;
  Graph g;
  ReluChain(g, kDepth);
  ASSERT_TRUE(VerifyGraph(g).ok());
  EXPECT_EQ(GraphHash(g).size(), 64u);
  std::string printed = PrintGraph(g);
  EXPECT_THAT(printed, HasSubstr("%100000 = Relu(%99999) : f32[4]\n  return %100000\n"));
  EXPECT_TRUE(g.SortTopologically().ok());
  // Remove the chain from the back, as DCE does, through the use lists.
  std::vector<Node*> nodes = g.nodes();
  g.SetOutputs({g.inputs()[0]});
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) g.RemoveNode(*it);
  EXPECT_EQ(g.num_nodes(), 0);
  EXPECT_FALSE(g.HasUsers(g.inputs()[0]));
}

// Replacing the head of a chain while the rest reads one shared value: each rewrite costs
// O(uses), so 100k of them on a value with 100k uses stays fast.
TEST(GraphTest, SharedValueWithHundredThousandUses) {
  constexpr int kDepth = 100000;
  Graph g;
  Value* x = g.AddInput("x", kF32x4);
  Value* c = g.AddConstant("c", Tensor::Zeros(kF32x4));
  Value* v = x;
  for (int i = 0; i < kDepth; ++i) {
    v = Binary(g, OpKind::kAdd, "a" + std::to_string(i), v, c)->output(0);
  }
  g.SetOutputs({v});
  EXPECT_EQ(c->uses().size(), static_cast<size_t>(kDepth));
  // Bypass every Add (x + c + c ... becomes x), front to back, erasing each.
  for (Node* node : g.nodes()) {
    g.ReplaceAllUsesWith(node->output(0), node->input(0));
    g.RemoveNode(node);
  }
  EXPECT_THAT(g.outputs(), ElementsAre(x));
  EXPECT_TRUE(c->uses().empty());
  EXPECT_TRUE(g.LiveConstants().empty());
  EXPECT_THAT(g.Users(x), UnorderedElementsAre());
}

// ops.def's symbolic column: a builder or lowering that takes symbolic dims is only reachable
// through a shape rule that reads them; MatMul (llama's decoder) and Conv (squeezenet1_1_dynhw)
// have all three, TopK none yet (docs/symbolic-shapes.md).
TEST(OpTableTest, SymbolicSupportNeedsTheShapeRule) {
  const std::vector<OpKind> kinds = {
#define KILN_OP(kind, name, fusion, min_in, max_in, n_out, sym) OpKind::kind,
#include "compiler_core/ir/graph/ops.def"
#undef KILN_OP
  };
  ASSERT_GT(kinds.size(), 100u);
  for (OpKind k : kinds) {
    const OpInfo& info = GetOpInfo(k);
    EXPECT_EQ(info.kind, k);
    if ((info.symbolic & (kSymBuild | kSymLower)) != 0) {
      EXPECT_TRUE(SupportsSymbolic(k, kSymRule)) << info.name;
    }
  }
  EXPECT_TRUE(SupportsSymbolic(OpKind::kMatMul, kSymAll));
  EXPECT_TRUE(SupportsSymbolic(OpKind::kConv, kSymAll));
  EXPECT_FALSE(SupportsSymbolic(OpKind::kTopK, kSymRule));
}

}  // namespace
}  // namespace kiln::graph
