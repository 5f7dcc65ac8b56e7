// Hostile models at import: 100k-node chains import in linear time without recursing per
// node.
#include <cstdint>
#include <string>
#include <vector>

#include "compiler_core/importer/onnx/importer_test_util.h"
#include "gtest/gtest.h"

namespace kiln::importer {
namespace {

using graph::OpKind;
using testing_util::Import;
using testing_util::ModelBuilder;

TEST(HostileModelTest, HundredThousandNodeChainImports) {
  constexpr int kDepth = 100000;
  ModelBuilder b;
  b.Input("x", {4});
  std::string prev = "x";
  for (int i = 0; i < kDepth; ++i) {
    std::string out = i + 1 == kDepth ? "y" : "v" + std::to_string(i);
    b.Node("Relu", {prev}, {out});
    prev = out;
  }
  b.Output("y", {4});
  auto g = Import(b);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ((*g)->num_nodes(), kDepth);
  EXPECT_EQ((*g)->outputs()[0]->producer()->input(0)->producer()->op(), OpKind::kRelu);
}

// c0 + c + c + ... (50k Adds of constants) folds at import, node by node: the output Add reads
// one constant holding c0 + 50000.
TEST(HostileModelTest, FiftyThousandNodeConstantChainFoldsAtImport) {
  constexpr int kDepth = 50000;
  ModelBuilder b;
  b.Input("x", {4});
  b.Init("c0", {4}, {0, 1, 2, 3});
  b.Init("c", {4}, {1, 1, 1, 1});
  std::string prev = "c0";
  for (int i = 0; i < kDepth; ++i) {
    std::string out = "v" + std::to_string(i);
    b.Node("Add", {prev, "c"}, {out});
    prev = out;
  }
  b.Node("Add", {"x", prev}, {"y"});
  b.Output("y", {4});
  auto g = Import(b);
  ASSERT_TRUE(g.ok()) << g.status();
  const graph::Value* folded = (*g)->outputs()[0]->producer()->input(1);
  ASSERT_TRUE(folded->is_constant());
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(folded->constant()->data<float>()[i], static_cast<float>(i + kDepth));
  }
}

}  // namespace
}  // namespace kiln::importer
