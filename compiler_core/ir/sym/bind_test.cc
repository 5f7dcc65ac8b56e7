#include "compiler_core/ir/sym/bind.h"

#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace kiln::sym {
namespace {

const Symbol kSeq{"seq", 1, 4096};
const Symbol kPast{"past", 0, 4096};

// A decoder step's inputs: ids [1,seq], two layers' caches [1,2,past,32] and a mask
// [1,past + seq].
std::vector<DeclaredInput> Decoder() {
  Expr seq = Expr::Sym(kSeq);
  Expr past = Expr::Sym(kPast);
  return {{"ids", {1, seq}},
          {"past_key_0", {1, 2, past, 32}},
          {"past_key_1", {1, 2, past, 32}},
          {"mask", {1, past + seq}}};
}

TEST(BindSymbolsTest, BindsEverySymbolAndChecksTheRest) {
  absl::StatusOr<std::map<std::string, int64_t>> v =
      BindSymbols(Decoder(), {{1, 5}, {1, 2, 7, 32}, {1, 2, 7, 32}, {1, 12}});
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, (std::map<std::string, int64_t>{{"past", 7}, {"seq", 5}}));
  // An empty cache on the first step.
  v = BindSymbols(Decoder(), {{1, 8}, {1, 2, 0, 32}, {1, 2, 0, 32}, {1, 8}});
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->at("past"), 0);
}

TEST(BindSymbolsTest, ErrorsNameTheInputDimAndSymbol) {
  auto error = [](const std::vector<std::vector<int64_t>>& fed) {
    absl::StatusOr<std::map<std::string, int64_t>> v = BindSymbols(Decoder(), fed);
    EXPECT_FALSE(v.ok());
    EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(v.status().message());
  };
  EXPECT_EQ(error({{1, 5}, {1, 2, 7, 32}, {1, 2, 6, 32}, {1, 12}}),
            "input 2 ('past_key_1'): dim 2 is 6 but symbol 'past' is 7 (input 1 'past_key_0', "
            "dim 2)");
  EXPECT_EQ(error({{1, 5000}, {1, 2, 7, 32}, {1, 2, 7, 32}, {1, 5007}}),
            "input 0 ('ids'): dim 1 is 5000, outside the range [1, 4096] of symbol 'seq'");
  EXPECT_EQ(error({{1, 0}, {1, 2, 7, 32}, {1, 2, 7, 32}, {1, 7}}),
            "input 0 ('ids'): dim 1 is 0, outside the range [1, 4096] of symbol 'seq'");
  EXPECT_EQ(error({{1, 5}, {1, 2, 7, 32}, {1, 2, 7, 32}, {1, 13}}),
            "input 3 ('mask'): dim 1 is 13, expected 12 (past + seq)");
  EXPECT_EQ(error({{1, 5}, {1, 3, 7, 32}, {1, 2, 7, 32}, {1, 12}}),
            "input 1 ('past_key_0'): dim 1 is 3, expected 2");
  EXPECT_EQ(error({{5}, {1, 2, 7, 32}, {1, 2, 7, 32}, {1, 12}}),
            "input 0 ('ids') has rank 1, expected 2 ([1,seq])");
  EXPECT_EQ(error({{1, 5}}), "got 1 input shapes, expected 4");
  const Symbol n{"n", 0, kUnbounded};
  absl::StatusOr<std::map<std::string, int64_t>> v =
      BindSymbols({{"x", {Expr::Sym(n) * 2}}}, {{4}});
  EXPECT_EQ(v.status().message(),
            "input 0 ('x'): dim 0 is 2*n, whose symbol 'n' no input dim gives by itself");
}

}  // namespace
}  // namespace kiln::sym
