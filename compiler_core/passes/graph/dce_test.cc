// Tests for dead-code elimination: printed IR before/after.
#include "compiler_core/passes/graph/dce.h"

#include "gtest/gtest.h"
#include "compiler_core/passes/graph/test_util.h"

namespace kiln::passes {
namespace {

using testing::RunPassOnText;

TEST(DceTest, RemovesDeadChainsAndUnusedConstants) {
  bool changed = false;
  auto out = RunPassOnText("dce", R"(
graph @g(%0 "x": f32[4]) -> (%3 "y") {
  %1 = const f32[4] splat<2.0>
  %2 = Exp(%0) : f32[4]
  %3 = Relu(%0) : f32[4]
  %4 = Mul(%2, %1) : f32[4]
  %5 = Log(%4) : f32[4]
  return %3
}
)", &changed);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(changed);
  EXPECT_EQ(*out,
            "graph @g(%0 \"x\": f32[4]) -> (%1 \"y\") {\n"
            "  %1 = Relu(%0) : f32[4]\n"
            "  return %1\n"
            "}\n");
}

TEST(DceTest, KeepsMultiOutputNodeWithOneLiveResult) {
  constexpr char kIr[] =
      "graph @g(%0 \"x\": f32[1,1,4,4]) -> (%1 \"y\") {\n"
      "  %1, %2 = MaxPool(%0) {kernel_shape=[2,2], strides=[2,2]} : f32[1,1,2,2], "
      "i64[1,1,2,2]\n"
      "  return %1\n"
      "}\n";
  bool changed = true;
  auto out = RunPassOnText("dce", kIr, &changed);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(changed);
  EXPECT_EQ(*out, kIr);
}

TEST(DceTest, RefusesToRunAfterFusion) {
  auto out = RunPassOnText("dce", R"(
graph @g(%0 "x": f32[2]) -> (%0 "x") {
  %1 = Relu(%0) : f32[2] group=0
  return %0
}
)");
  EXPECT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace kiln::passes
