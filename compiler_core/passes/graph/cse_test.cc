// Tests for common-subexpression elimination: printed IR before/after.
#include "compiler_core/passes/graph/cse.h"

#include "gtest/gtest.h"
#include "compiler_core/passes/graph/test_util.h"

namespace kiln::passes {
namespace {

using testing::RunPassOnText;

TEST(CseTest, MergesEqualNodesAndCascades) {
  bool changed = false;
  auto out = RunPassOnText("cse", R"(
graph @g(%0 "x": f32[4]) -> (%6 "y") {
  %1 = const f32[4] splat<2.0>
  %2 = Relu(%0) : f32[4]
  %3 = Relu(%0) : f32[4]
  %4 = Mul(%2, %1) : f32[4]
  %5 = Mul(%3, %1) : f32[4]
  %6 = Add(%4, %5) : f32[4]
  return %6
}
)", &changed);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(changed);
  EXPECT_EQ(*out,
            "graph @g(%0 \"x\": f32[4]) -> (%4 \"y\") {\n"
            "  %1 = const f32[4] splat<2.0>\n"
            "  %2 = Relu(%0) : f32[4]\n"
            "  %3 = Mul(%2, %1) : f32[4]\n"
            "  %4 = Add(%3, %3) : f32[4]\n"
            "  return %4\n"
            "}\n");
}

TEST(CseTest, MergesEqualConstants) {
  auto out = RunPassOnText("cse", R"(
graph @g(%0 "x": f32[2]) -> (%5 "y") {
  %1 = const f32[2] dense<[1.0,2.0]>
  %2 = const f32[2] dense<[1.0,2.0]>
  %3 = Add(%0, %1) : f32[2]
  %4 = Add(%0, %2) : f32[2]
  %5 = Mul(%3, %4) : f32[2]
  return %5
}
)");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out,
            "graph @g(%0 \"x\": f32[2]) -> (%3 \"y\") {\n"
            "  %1 = const f32[2] dense<[1.0,2.0]>\n"
            "  %2 = Add(%0, %1) : f32[2]\n"
            "  %3 = Mul(%2, %2) : f32[2]\n"
            "  return %3\n"
            "}\n");
}

TEST(CseTest, KeepsNodesWithDifferentAttributesTypesOrGraphOutputs) {
  constexpr char kIr[] =
      "graph @g(%0 \"x\": f32[4]) -> (%3 \"a\", %4 \"b\", %5 \"c\") {\n"
      "  %1 = const f32[4] splat<1.0>\n"
      "  %2 = const i32[4] splat<1>\n"
      "  %3 = LeakyRelu(%0) {alpha=0.1} : f32[4]\n"
      "  %4 = LeakyRelu(%0) {alpha=0.2} : f32[4]\n"
      "  %5 = LeakyRelu(%0) {alpha=0.1} : f32[4]\n"
      "  %6 = Add(%1, %1) : f32[4]\n"
      "  %7 = Add(%2, %2) : i32[4]\n"
      "  return %3, %4, %5\n"
      "}\n";
  bool changed = true;
  auto out = RunPassOnText("cse", kIr, &changed);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(changed);
  EXPECT_EQ(*out, kIr);
}

}  // namespace
}  // namespace kiln::passes
