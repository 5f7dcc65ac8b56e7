// Tests for the constant matmul operand layout pass: printed IR of a pre-transposed Gemm weight,
// nodes it must leave alone, and bit-identical reference results before and after.
#include "compiler_core/passes/graph/matmul_layout.h"

#include <random>

#include "compiler_core/ir/graph/parser.h"
#include "compiler_core/passes/graph/test_util.h"
#include "compiler_core/reference/evaluator.h"
#include "gtest/gtest.h"

namespace kiln::passes {
namespace {

using testing::RunPassOnText;

TEST(MatMulLayoutTest, PretransposesConstantGemmWeight) {
  bool changed = false;
  auto out = RunPassOnText("matmul-layout", R"(
graph @g(%0 "x": f32[1,2]) -> (%3 "y") {
  %1 = const f32[3,2] dense<[1.0,2.0,3.0,4.0,5.0,6.0]>
  %2 = const f32[3] dense<[0.5,0.25,0.125]>
  %3 = Gemm(%0, %1, %2) {alpha=1.0, beta=1.0, transA=0, transB=1} : f32[1,3]
  return %3
}
)", &changed);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(changed);
  EXPECT_EQ(*out,
            "graph @g(%0 \"x\": f32[1,2]) -> (%3 \"y\") {\n"
            "  %1 = const f32[3] dense<[0.5,0.25,0.125]>\n"
            "  %2 = const f32[2,3] dense<[1.0,3.0,5.0,2.0,4.0,6.0]>\n"
            "  %3 = Gemm(%0, %2, %1) {alpha=1.0, beta=1.0, transA=0, transB=0} : f32[1,3]\n"
            "  return %3\n"
            "}\n");
}

TEST(MatMulLayoutTest, LeavesOtherMatMulsAlone) {
  // transB=0 already, a runtime B, and MatMul (whose B is always [K, N]).
  constexpr char kIr[] =
      "graph @g(%0 \"x\": f32[2,2], %1 \"w\": f32[2,2]) -> (%4 \"y\", %5 \"z\", %6 \"u\") {\n"
      "  %2 = const f32[2,2] dense<[1.0,2.0,3.0,4.0]>\n"
      "  %4 = Gemm(%0, %2) {transB=0} : f32[2,2]\n"
      "  %5 = Gemm(%0, %1) {transB=1} : f32[2,2]\n"
      "  %6 = MatMul(%0, %2) : f32[2,2]\n"
      "  return %4, %5, %6\n"
      "}\n";
  bool changed = true;
  auto out = RunPassOnText("matmul-layout", kIr, &changed);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(changed);
}

TEST(MatMulLayoutTest, SameResultsAsBefore) {
  constexpr char kIr[] = R"(
graph @g(%0 "x": f32[3,5]) -> (%3 "y") {
  %1 = const f32[7,5] splat<0.5>
  %2 = const f32[7] splat<0.25>
  %3 = Gemm(%0, %1, %2) {alpha=0.5, beta=2.0, transB=1} : f32[3,7]
  return %3
}
)";
  auto before = graph::ParseGraph(kIr);
  auto after = graph::ParseGraph(kIr);
  ASSERT_TRUE(before.ok() && after.ok());
  // Distinct weight values so that a wrong transpose would show.
  auto w = Tensor::Zeros((*before)->constants()[0]->type());
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (int64_t i = 0; i < w->type.NumElements(); ++i) w->mutable_data<float>()[i] = dist(gen);
  for (auto* g : {before->get(), after->get()}) {
    g->nodes()[0]->set_input(1, g->AddConstant("w", w));
  }
  ASSERT_TRUE(MatMulWeightLayout().Run(**after).ok());
  EXPECT_EQ((*after)->nodes()[0]->attrs().GetInt("transB", 1), 0);
  auto x = Tensor::Zeros((*before)->inputs()[0]->type());
  for (int64_t i = 0; i < x->type.NumElements(); ++i) x->mutable_data<float>()[i] = dist(gen);
  auto want = reference::EvaluateGraph(**before, {x});
  auto got = reference::EvaluateGraph(**after, {x});
  ASSERT_TRUE(want.ok() && got.ok());
  EXPECT_EQ((*want)[0]->bytes, (*got)[0]->bytes);
}

}  // namespace
}  // namespace kiln::passes
