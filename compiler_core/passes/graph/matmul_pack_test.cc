// Tests for the matmul-pack pass: printed IR of packed Gemm/MatMul weights, nodes it must leave
// alone, the shape rule's checks of a packed B, and bit-identical reference results before and
// after (the reference evaluator unpacks B).
#include "compiler_core/passes/graph/matmul_pack.h"

#include <random>

#include "compiler_core/ir/graph/parser.h"
#include "compiler_core/ir/graph/printer.h"
#include "compiler_core/ir/graph/verifier.h"
#include "compiler_core/passes/graph/test_util.h"
#include "compiler_core/reference/evaluator.h"
#include "gtest/gtest.h"

namespace kiln::passes {
namespace {

/// Runs matmul-pack with panels of 2 × `lanes` on `ir`; the printed result.
std::string PackText(const char* ir, int lanes, bool* changed) {
  auto graph = graph::ParseGraph(ir);
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return "";
  auto result = MatMulPack(MatMulPackOptions{lanes}).Run(**graph);
  EXPECT_TRUE(result.ok()) << result.status();
  *changed = result.ok() && *result;
  EXPECT_TRUE(graph::VerifyGraph(**graph).ok());
  return graph::PrintGraph(**graph);
}

TEST(MatMulPackTest, PacksGemmAndMatMulWeights) {
  // N = 3 with nr = 2: two panels, the second zero-padded.
  bool changed = false;
  std::string out = PackText(R"(
graph @g(%0 "x": f32[1,2], %1 "z": f32[2,1,2]) -> (%3 "y", %4 "u") {
  %2 = const f32[2,3] dense<[1.0,2.0,3.0,4.0,5.0,6.0]>
  %3 = Gemm(%0, %2) {transB=0} : f32[1,3]
  %4 = MatMul(%1, %2) : f32[2,1,3]
  return %3, %4
}
)", 1, &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(out,
            "graph @g(%0 \"x\": f32[1,2], %1 \"z\": f32[2,1,2]) -> (%3 \"y\", %4 \"u\") {\n"
            "  %2 = const f32[2,2,2] dense<[1.0,2.0,4.0,5.0,3.0,0.0,6.0,0.0]>\n"
            "  %3 = Gemm(%0, %2) {b_cols=3, b_layout=\"packed2\", transB=0} : f32[1,3]\n"
            "  %4 = MatMul(%1, %2) {b_cols=3, b_layout=\"packed2\"} : f32[2,1,3]\n"
            "  return %3, %4\n"
            "}\n");
}

TEST(MatMulPackTest, LeavesOtherMatMulsAlone) {
  // transB=1, a runtime B, a 1-D A, N < nr, and the pass disabled.
  constexpr char kIr[] = R"(
graph @g(%0 "x": f32[2,2], %1 "w": f32[2,2], %5 "v": f32[2]) -> (%3 "y", %4 "z", %6 "u") {
  %2 = const f32[2,2] dense<[1.0,2.0,3.0,4.0]>
  %3 = Gemm(%0, %2) {transB=1} : f32[2,2]
  %4 = Gemm(%0, %1) {transB=0} : f32[2,2]
  %6 = MatMul(%5, %2) : f32[2]
  return %3, %4, %6
}
)";
  bool changed = true;
  PackText(kIr, 1, &changed);
  EXPECT_FALSE(changed);
  auto graph = graph::ParseGraph(kIr);
  ASSERT_TRUE(graph.ok());
  auto wide = MatMulPack(MatMulPackOptions{16}).Run(**graph);  // N = 2 < nr = 32
  ASSERT_TRUE(wide.ok());
  EXPECT_FALSE(*wide);
  auto off = MatMulPack(MatMulPackOptions{1, /*enabled=*/false}).Run(**graph);
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(*off);
}

TEST(MatMulPackTest, ShapeRuleChecksPackedB) {
  // [2,2,2] is not [ceil(5/2), K, 2].
  auto bad = graph::ParseGraph(R"(
graph @g(%0 "x": f32[1,2], %1 "b": f32[2,2,2]) -> (%2 "y") {
  %2 = Gemm(%0, %1) {b_cols=5, b_layout="packed2"} : f32[1,5]
  return %2
}
)");
  EXPECT_FALSE(bad.ok() && graph::VerifyGraph(**bad).ok());
  auto good = graph::ParseGraph(R"(
graph @g(%0 "x": f32[1,2], %1 "b": f32[3,2,2]) -> (%2 "y") {
  %2 = Gemm(%0, %1) {b_cols=5, b_layout="packed2"} : f32[1,5]
  return %2
}
)");
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_TRUE(graph::VerifyGraph(**good).ok());
}

TEST(MatMulPackTest, SameResultsAsBefore) {
  constexpr char kIr[] = R"(
graph @g(%0 "x": f32[3,5], %4 "z": f32[2,3,5]) -> (%3 "y", %5 "u") {
  %1 = const f32[5,11] splat<0.5>
  %2 = const f32[11] splat<0.25>
  %3 = Gemm(%0, %1, %2) {alpha=0.5, beta=2.0, transB=0} : f32[3,11]
  %5 = MatMul(%4, %1) : f32[2,3,11]
  return %3, %5
}
)";
  auto before = graph::ParseGraph(kIr);
  auto after = graph::ParseGraph(kIr);
  ASSERT_TRUE(before.ok() && after.ok());
  auto w = Tensor::Zeros((*before)->constants()[0]->type());
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (int64_t i = 0; i < w->type.NumElements(); ++i) w->mutable_data<float>()[i] = dist(gen);
  for (auto* g : {before->get(), after->get()}) {
    graph::Value* wv = g->AddConstant("w", w);
    g->nodes()[0]->set_input(1, wv);
    g->nodes()[1]->set_input(1, wv);
  }
  auto packed = MatMulPack(MatMulPackOptions{2}).Run(**after);  // nr = 4: a tail of 3
  ASSERT_TRUE(packed.ok() && *packed);
  ASSERT_TRUE(graph::VerifyGraph(**after).ok());
  std::vector<std::shared_ptr<const Tensor>> in;
  for (auto* v : (*before)->inputs()) {
    auto x = Tensor::Zeros(v->type());
    for (int64_t i = 0; i < x->type.NumElements(); ++i) x->mutable_data<float>()[i] = dist(gen);
    in.push_back(x);
  }
  auto want = reference::EvaluateGraph(**before, in);
  auto got = reference::EvaluateGraph(**after, in);
  ASSERT_TRUE(want.ok() && got.ok());
  for (size_t o = 0; o < want->size(); ++o) EXPECT_EQ((*want)[o]->bytes, (*got)[o]->bytes);
}

}  // namespace
}  // namespace kiln::passes
