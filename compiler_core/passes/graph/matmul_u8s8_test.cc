// Tests for the matmul-u8s8 pass: the printed IR of a packed u8s8 product with its zero-point
// correction, products left alone, and bit-exact equality with the reference evaluator on
// uint8 and int8 operands, packed and plain B, a batched A sharing B, and a zero point that
// arrives at run time (DynamicQuantizeLinear's).
#include "compiler_core/passes/graph/matmul_u8s8.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/ir/graph/parser.h"
#include "compiler_core/ir/graph/printer.h"
#include "compiler_core/ir/graph/verifier.h"
#include "compiler_core/passes/graph/test_util.h"
#include "compiler_core/reference/evaluator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::passes {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::RandomIntConst;

/// The product Sub(Cast(u), zp) × B with u `dtype`[a_shape], B i32[K, N] in [lo, hi]; `zp` is
/// a constant ("const"), a graph input ("input") or absent ("none").
std::string Product(const std::string& dtype, const std::vector<int64_t>& a_shape, int64_t n,
                    int lo, int hi, const std::string& zp, std::mt19937& rng) {
  const int64_t k = a_shape.back();
  std::vector<int64_t> out = a_shape;
  out.back() = n;
  const std::string as = absl::StrJoin(a_shape, ","), os = absl::StrJoin(out, ",");
  std::string ir = absl::StrCat("graph @g(%0 \"u\": ", dtype, "[", as, "]",
                                zp == "input" ? ", %1 \"zp\": i32[]" : "", ") -> (%5 \"y\") {\n");
  ir += RandomIntConst(2, {k, n}, lo, hi, rng);
  if (zp == "const") ir += "  %1 = const i32[] dense<[-5]>\n";
  ir += absl::StrCat("  %3 = Cast(%0) {to=6} : i32[", as, "]\n");
  if (zp == "none") {
    ir += absl::StrCat("  %5 = MatMul(%3, %2) : i32[", os, "]\n");
  } else {
    ir += absl::StrCat("  %4 = Sub(%3, %1) : i32[", as, "]\n", "  %5 = MatMul(%4, %2) : i32[", os,
                       "]\n");
  }
  return ir + "  return %5\n}\n";
}

/// Runs the pass (f32_lanes 16: panels of 32) and checks that it rewrote the product exactly.
void ExpectExact(const std::string& ir, bool rewrites, std::mt19937& rng,
                 std::string* printed = nullptr) {
  auto original = graph::ParseGraph(ir);
  ASSERT_TRUE(original.ok()) << original.status();
  auto converted = graph::ParseGraph(ir);
  ASSERT_TRUE(converted.ok());
  MatMulU8S8 pass(MatMulU8S8Options{16, true});
  absl::StatusOr<bool> changed = pass.Run(**converted);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_EQ(*changed, rewrites) << graph::PrintGraph(**converted);
  absl::Status verified = graph::VerifyGraph(**converted);
  ASSERT_TRUE(verified.ok()) << verified << "\n" << graph::PrintGraph(**converted);
  if (printed != nullptr) *printed = graph::PrintGraph(**converted);
  std::vector<reference::TensorPtr> inputs;
  for (const graph::Value* in : (*original)->inputs()) {
    auto t = Tensor::Zeros(in->type());
    if (in->type().dtype == DType::kInt32) {
      t->mutable_data<int32_t>()[0] = 131;  // a run-time zero point
    } else {
      for (uint8_t& b : t->bytes) b = static_cast<uint8_t>(rng());
    }
    inputs.push_back(t);
  }
  auto want = reference::EvaluateGraph(**original, inputs);
  auto got = reference::EvaluateGraph(**converted, inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ((*want)[0]->type, (*got)[0]->type);
  EXPECT_EQ((*want)[0]->bytes, (*got)[0]->bytes) << graph::PrintGraph(**converted);
}

TEST(MatMulU8S8Test, PacksPanelsOfWordsAndAddsTheZeroPointCorrection) {
  std::mt19937 rng(1);
  std::string out;
  ExpectExact(Product("u8", {8, 64}, 48, -128, 127, "const", rng), true, rng, &out);
  EXPECT_THAT(out, HasSubstr("Bitcast(%0) {to=6} : i32[8,16]"));
  EXPECT_THAT(out, HasSubstr("const i32[2,16,32]"));  // ceil(48 / 32) panels of 16 words
  EXPECT_THAT(out, HasSubstr("{b_cols=48, b_layout=\"packed32\", quant=\"u8s8\"} : i32[8,48]"));
  EXPECT_THAT(out, HasSubstr("= Add(%"));  // the zero-point correction
  EXPECT_THAT(out, Not(HasSubstr("Sub(")));
  EXPECT_THAT(out, Not(HasSubstr("Cast(")));
}

TEST(MatMulU8S8Test, MatchesReferenceBitForBit) {
  std::mt19937 rng(2);
  {
    SCOPED_TRACE("uint8, plain B (N < 32), no zero point");
    ExpectExact(Product("u8", {5, 12}, 8, -128, 127, "none", rng), true, rng);
  }
  {
    SCOPED_TRACE("int8 activations, packed B with a tail panel");
    ExpectExact(Product("i8", {3, 40}, 70, -128, 127, "const", rng), true, rng);
  }
  {
    SCOPED_TRACE("batched A sharing B");
    ExpectExact(Product("u8", {2, 3, 16}, 40, -128, 127, "const", rng), true, rng);
  }
  {
    SCOPED_TRACE("a zero point computed at run time");
    ExpectExact(Product("u8", {4, 32}, 33, -128, 127, "input", rng), true, rng);
  }
  {
    SCOPED_TRACE("int8 with a run-time zero point");
    ExpectExact(Product("i8", {4, 8}, 3, -128, 127, "input", rng), true, rng);
  }
}

TEST(MatMulU8S8Test, SharedInt8OperandIsMadeUnsignedOnce) {
  std::mt19937 rng(4);
  std::string ir = "graph @g(%0 \"u\": i8[4,8]) -> (%5 \"y\", %6 \"z\") {\n";
  ir += RandomIntConst(1, {8, 3}, -128, 127, rng) + RandomIntConst(2, {8, 5}, -128, 127, rng);
  ir +=
      "  %3 = Cast(%0) {to=6} : i32[4,8]\n"
      "  %5 = MatMul(%3, %1) : i32[4,3]\n"
      "  %6 = MatMul(%3, %2) : i32[4,5]\n"
      "  return %5, %6\n}\n";
  std::string out;
  ExpectExact(ir, true, rng, &out);
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t p = out.find(what); p != std::string::npos; p = out.find(what, p + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("{to=2}"), 1u) << out;  // one uint8(u + 128) for both products
  EXPECT_EQ(count("quant=\"u8s8\""), 2u) << out;
}

TEST(MatMulU8S8Test, LeavesProductsAlone) {
  std::mt19937 rng(3);
  {
    SCOPED_TRACE("K not a multiple of 4");
    ExpectExact(Product("u8", {4, 10}, 8, -128, 127, "const", rng), false, rng);
  }
  {
    SCOPED_TRACE("B outside int8");
    ExpectExact(Product("u8", {4, 8}, 8, -300, 300, "const", rng), false, rng);
  }
  auto g = graph::ParseGraph(Product("u8", {4, 8}, 8, -128, 127, "const", rng));
  ASSERT_TRUE(g.ok());
  MatMulU8S8 off(MatMulU8S8Options{16, /*int8_dot4=*/false});
  auto changed = off.Run(**g);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
}

}  // namespace
}  // namespace kiln::passes
