// Tests for the conv-u8s8 pass: the printed IR of a blocked quantized conv (Bitcast view, weight
// words, folded zero point), convs left alone, and bit-exact equality with the reference
// evaluator on a small int8 network (plain u8 stem, blocked u8 and int8 activations, zero
// points, padding, a conv whose weights do not fit int8) at block sizes 8 and 16.
#include "compiler_core/passes/graph/conv_u8s8.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/ir/graph/parser.h"
#include "compiler_core/ir/graph/printer.h"
#include "compiler_core/ir/graph/verifier.h"
#include "compiler_core/passes/graph/layout_nchwc.h"
#include "compiler_core/passes/graph/test_util.h"
#include "compiler_core/reference/evaluator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::passes {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::RandomIntConst;

/// Runs layout-nchwc at `lanes` then conv-u8s8 on `g`; returns whether conv-u8s8 changed it.
bool RunBoth(graph::Graph& g, int lanes, bool int8_dot4 = true) {
  LayoutNchwc layout(LayoutNchwcOptions{lanes});
  EXPECT_TRUE(layout.Run(g).ok());
  ConvU8S8 pass(ConvU8S8Options{int8_dot4});
  absl::StatusOr<bool> changed = pass.Run(g);
  EXPECT_TRUE(changed.ok()) << changed.status();
  absl::Status verified = graph::VerifyGraph(g);
  EXPECT_TRUE(verified.ok()) << verified << "\n" << graph::PrintGraph(g);
  return changed.ok() && *changed;
}

const char kConv3x3[] = "dilations=[1,1], group=1, kernel_shape=[3,3], pads=[1,1,1,1]";

TEST(ConvU8S8Test, PacksWordsAndFoldsTheZeroPoint) {
  std::mt19937 rng(1);
  std::string ir = "graph @g(%0 \"x\": u8[1,16,6,6]) -> (%6 \"y\") {\n";
  ir += RandomIntConst(1, {16, 16, 3, 3}, -128, 127, rng);
  ir += "  %2 = const i32[] dense<[3]>\n";
  ir += absl::StrCat("  %3 = Cast(%0) {to=6} : i32[1,16,6,6]\n",
                     "  %4 = Sub(%3, %2) : i32[1,16,6,6]\n", "  %5 = Conv(%4, %1) {", kConv3x3,
                     ", strides=[1,1]} : i32[1,16,6,6]\n",
                     "  %6 = Relu(%5) : i32[1,16,6,6]\n  return %6\n}\n");
  auto g = graph::ParseGraph(ir);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(RunBoth(**g, 16));
  const std::string out = graph::PrintGraph(**g);
  // The u8 input is blocked once and read as words through a Bitcast view.
  EXPECT_THAT(out, HasSubstr("LayoutTransform(%0) {dst_layout=\"NCHW16c\", src_layout=\"NCHW\"} "
                             ": u8[1,1,6,6,16]"));
  EXPECT_THAT(out, HasSubstr("{to=6} : i32[1,1,6,6,4]"));
  EXPECT_THAT(out, HasSubstr("const i32[1,1,3,3,4,16]"));  // the weight words
  EXPECT_THAT(out, HasSubstr("pad_value=50529027, pads=[1,1,1,1], quant=\"u8s8\""));  // 0x03030303
  EXPECT_THAT(out, Not(HasSubstr("Sub(")));  // the zero point is in the bias
  EXPECT_THAT(out, Not(HasSubstr("Cast(%0) {to=6}")));
}

TEST(ConvU8S8Test, LeavesConvsAloneWithoutADotProductOrOutsideInt8) {
  std::mt19937 rng(2);
  std::string ir = "graph @g(%0 \"x\": u8[1,16,4,4]) -> (%4 \"y\") {\n";
  ir += RandomIntConst(1, {16, 16, 3, 3}, -300, 300, rng);
  ir += absl::StrCat("  %3 = Cast(%0) {to=6} : i32[1,16,4,4]\n", "  %4 = Conv(%3, %1) {", kConv3x3,
                     ", strides=[1,1]} : i32[1,16,4,4]\n", "  return %4\n}\n");
  auto wide = graph::ParseGraph(ir);
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_FALSE(RunBoth(**wide, 16));  // weights outside [-128, 127]

  std::string fits = ir;
  fits.replace(fits.find("  %1 = "), fits.find("  %3 = ") - fits.find("  %1 = "),
               RandomIntConst(1, {16, 16, 3, 3}, -128, 127, rng));
  auto no_vnni = graph::ParseGraph(fits);
  ASSERT_TRUE(no_vnni.ok()) << no_vnni.status();
  EXPECT_FALSE(RunBoth(**no_vnni, 16, /*int8_dot4=*/false));
  auto with_vnni = graph::ParseGraph(fits);
  ASSERT_TRUE(with_vnni.ok());
  EXPECT_TRUE(RunBoth(**with_vnni, 16));
}

/// A u8 stem conv (3 → 16 channels, zero point 5, bias, stride 2) requantized to u8; a 3×3
/// conv (16 → 20, zero point 7) on that; a requantization to int8 and a 1×1 conv (20 → 16, zero
/// point -3) on it; a conv whose weights do not fit int8; and a depthwise conv (zero point 7;
/// weights beyond int8, as nothing is packed) on the u8 result. All conv results are outputs.
void ExpectSameOutputs(int lanes) {
  std::mt19937 rng(11);
  std::string ir =
      "graph @g(%0 \"x\": u8[1,3,9,9]) -> (%10 \"a\", %19 \"b\", %26 \"c\", %28 \"d\", "
      "%37 \"e\") {\n";
  ir += RandomIntConst(1, {16, 3, 3, 3}, -128, 127, rng) +
        RandomIntConst(2, {16}, -1000, 1000, rng) +
        RandomIntConst(3, {20, 16, 3, 3}, -128, 127, rng) +
        RandomIntConst(4, {16, 20, 1, 1}, -128, 127, rng) +
        RandomIntConst(5, {16, 16, 3, 3}, -129, 128, rng) +
        RandomIntConst(36, {16, 1, 3, 3}, -1000, 1000, rng);
  ir += absl::StrCat(
      "  %6 = const i32[] dense<[5]>\n  %7 = const i32[] dense<[7]>\n",
      "  %8 = Cast(%0) {to=6} : i32[1,3,9,9]\n", "  %9 = Sub(%8, %6) : i32[1,3,9,9]\n",
      "  %10 = Conv(%9, %1, %2) {", kConv3x3, ", strides=[2,2]} : i32[1,16,5,5]\n",
      "  %11 = Cast(%10) {to=1} : f32[1,16,5,5]\n",
      "  %12 = const f32[] dense<[0.01]>\n  %13 = const f32[] dense<[0.0]>\n",
      "  %14 = const f32[] dense<[255.0]>\n",
      "  %15 = Mul(%11, %12) : f32[1,16,5,5]\n  %16 = Round(%15) : f32[1,16,5,5]\n",
      "  %17 = Clip(%16, %13, %14) : f32[1,16,5,5]\n", "  %18 = Cast(%17) {to=2} : u8[1,16,5,5]\n",
      "  %29 = Cast(%18) {to=6} : i32[1,16,5,5]\n", "  %30 = Sub(%29, %7) : i32[1,16,5,5]\n",
      "  %19 = Conv(%30, %3) {", kConv3x3, ", strides=[1,1]} : i32[1,20,5,5]\n",
      "  %20 = Cast(%19) {to=1} : f32[1,20,5,5]\n",
      "  %21 = const f32[] dense<[0.002]>\n  %22 = const f32[] dense<[-128.0]>\n",
      "  %23 = const f32[] dense<[127.0]>\n", "  %24 = Mul(%20, %21) : f32[1,20,5,5]\n",
      "  %25 = Clip(%24, %22, %23) : f32[1,20,5,5]\n", "  %31 = Round(%25) : f32[1,20,5,5]\n",
      "  %32 = Cast(%31) {to=3} : i8[1,20,5,5]\n", "  %33 = Cast(%32) {to=6} : i32[1,20,5,5]\n",
      "  %34 = const i32[] dense<[-3]>\n", "  %35 = Sub(%33, %34) : i32[1,20,5,5]\n",
      "  %26 = Conv(%35, %4) {dilations=[1,1], group=1, kernel_shape=[1,1], pads=[0,0,0,0], "
      "strides=[1,1]} : i32[1,16,5,5]\n",
      "  %27 = Cast(%18) {to=6} : i32[1,16,5,5]\n", "  %28 = Conv(%27, %5) {", kConv3x3,
      ", strides=[1,1]} : i32[1,16,5,5]\n",
      "  %37 = Conv(%30, %36) {dilations=[1,1], group=16, kernel_shape=[3,3], pads=[1,1,1,1], "
      "strides=[1,1]} : i32[1,16,5,5]\n",
      "  return %10, %19, %26, %28, %37\n}\n");
  auto original = graph::ParseGraph(ir);
  ASSERT_TRUE(original.ok()) << original.status();
  auto converted = graph::ParseGraph(ir);
  ASSERT_TRUE(converted.ok());
  EXPECT_TRUE(RunBoth(**converted, lanes));
  int quant = 0, depthwise = 0, convs = 0;
  for (const graph::Node* n : (*converted)->nodes()) {
    convs += n->op() == graph::OpKind::kConv;
    quant += n->attrs().GetString("quant", "") == "u8s8";
    depthwise += n->attrs().GetString("quant", "") == "u8";
  }
  EXPECT_EQ(convs, 5);
  EXPECT_EQ(quant, 3) << graph::PrintGraph(**converted);
  EXPECT_EQ(depthwise, 1) << graph::PrintGraph(**converted);

  auto x = Tensor::Zeros(TensorType{DType::kUInt8, {1, 3, 9, 9}});
  std::uniform_int_distribution<int> byte(0, 255);
  for (int64_t i = 0; i < 3 * 81; ++i) x->mutable_data<uint8_t>()[i] = byte(rng);
  auto want = reference::EvaluateGraph(**original, {x});
  auto got = reference::EvaluateGraph(**converted, {x});
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(want->size(), 5u);
  ASSERT_EQ(got->size(), 5u);
  for (size_t o = 0; o < want->size(); ++o) {
    ASSERT_EQ((*want)[o]->type, (*got)[o]->type);
    EXPECT_EQ((*want)[o]->bytes, (*got)[o]->bytes) << "output " << o;
  }
}

TEST(ConvU8S8Test, MatchesReferenceBitForBitAtBlock8) { ExpectSameOutputs(8); }
TEST(ConvU8S8Test, MatchesReferenceBitForBitAtBlock16) { ExpectSameOutputs(16); }

}  // namespace
}  // namespace kiln::passes
