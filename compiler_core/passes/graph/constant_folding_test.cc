// Tests for constant folding: printed IR before/after, via the reference evaluator.
#include "compiler_core/passes/graph/constant_folding.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "compiler_core/passes/graph/test_util.h"

namespace kiln::passes {
namespace {

using testing::RunPassOnText;

TEST(ConstantFoldingTest, FoldsChainOfConstantNodes) {
  bool changed = false;
  auto out = RunPassOnText("constant-folding", R"(
graph @g(%0 "x": f32[2]) -> (%4 "y") {
  %1 = const f32[2] dense<[1.0,4.0]>
  %2 = Sqrt(%1) : f32[2]
  %3 = Neg(%2) : f32[2]
  %4 = Add(%0, %3) : f32[2]
  return %4
}
)", &changed);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(changed);
  EXPECT_EQ(*out,
            "graph @g(%0 \"x\": f32[2]) -> (%2 \"y\") {\n"
            "  %1 = const f32[2] dense<[-1.0,-2.0]>\n"
            "  %2 = Add(%0, %1) : f32[2]\n"
            "  return %2\n"
            "}\n");
}

TEST(ConstantFoldingTest, FoldedGraphOutputKeepsItsName) {
  auto out = RunPassOnText("constant-folding", R"(
graph @g() -> (%3 "y") {
  %1 = const f32[2,2] dense<[1.0,2.0,3.0,4.0]>
  %2 = const f32[2] dense<[10.0,20.0]>
  %3 = Add(%1, %2) : f32[2,2]
  return %3
}
)");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out,
            "graph @g() -> (%0 \"y\") {\n"
            "  %0 = const f32[2,2] dense<[11.0,22.0,13.0,24.0]>\n"
            "  return %0\n"
            "}\n");
}

TEST(ConstantFoldingTest, LeavesNodesWithNonConstantInputs) {
  constexpr char kIr[] =
      "graph @g(%0 \"x\": f32[2]) -> (%2 \"y\") {\n"
      "  %1 = const f32[2] splat<3.0>\n"
      "  %2 = Mul(%0, %1) : f32[2]\n"
      "  return %2\n"
      "}\n";
  bool changed = true;
  auto out = RunPassOnText("constant-folding", kIr, &changed);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(changed);
  EXPECT_EQ(*out, kIr);
}

// Materializing is not folding: an Expand of a scalar to 2^25 f32 (128 MiB, far more than its
// inputs) stays a node; to 16 elements it folds. Nothing past 1 TiB is evaluated (an Expand
// to 2^40 f32 would otherwise exhaust memory at compile time).
TEST(ConstantFoldingTest, LeavesResultsTooLargeToMaterialize) {
  constexpr char kLarge[] =
      "graph @g() -> (%2 \"y\") {\n"
      "  %0 = const f32[] dense<[2.5]>\n"
      "  %1 = const i64[1] dense<[33554432]>\n"
      "  %2 = Expand(%0, %1) : f32[33554432]\n"
      "  return %2\n"
      "}\n";
  bool changed = true;
  auto out = RunPassOnText("constant-folding", kLarge, &changed);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(changed);
  EXPECT_EQ(*out, kLarge);
  auto huge = RunPassOnText("constant-folding",
                            "graph @g() -> (%3 \"y\") {\n"
                            "  %1 = const f32[] splat<2.5>\n"
                            "  %2 = const i64[1] dense<[1099511627776]>\n"
                            "  %3 = Expand(%1, %2) : f32[1099511627776]\n"
                            "  return %3\n"
                            "}\n");
  EXPECT_TRUE(huge.ok()) << huge.status();
  auto small = RunPassOnText("constant-folding",
                             "graph @g() -> (%3 \"y\") {\n"
                             "  %1 = const f32[] splat<2.5>\n"
                             "  %2 = const i64[1] dense<[16]>\n"
                             "  %3 = Expand(%1, %2) : f32[16]\n"
                             "  return %3\n"
                             "}\n",
                             &changed);
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_TRUE(changed);
  EXPECT_EQ(*small,
            "graph @g() -> (%0 \"y\") {\n"
            "  %0 = const f32[16] splat<2.5>\n"
            "  return %0\n"
            "}\n");
}

TEST(ConstantFoldingTest, RefusesToRunAfterFusion) {
  auto out = RunPassOnText("constant-folding", R"(
graph @g(%0 "x": f32[2]) -> (%1 "y") {
  %1 = Relu(%0) : f32[2] group=0
  return %1
}
)");
  EXPECT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(out.status().message(),
            "pass 'constant-folding' must run before 'fusion': node '%1' (Relu) already has "
            "fusion group 0");
}

}  // namespace
}  // namespace kiln::passes
