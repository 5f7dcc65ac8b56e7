#include "compiler_core/ir/sym/compiled.h"

#include <limits>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::sym {
namespace {

using ::testing::HasSubstr;

const std::vector<Symbol> kSlots = {{"past", 0, 4096}, {"seq", 1, 4096}, {"H", -8, kUnbounded}};

Expr P(const std::string& text) {
  std::map<std::string, Symbol> table;
  for (const Symbol& s : kSlots) table[s.name] = s;
  absl::StatusOr<Expr> e = Parse(text, table);
  EXPECT_TRUE(e.ok()) << text << ": " << e.status();
  return e.ok() ? *e : Expr::Invalid();
}

// Every expression's compiled value equals sym::Evaluate's, over a grid of values that covers
// negative operands of floordiv and mod.
TEST(SymCompiledTest, RunMatchesEvaluate) {
  const std::vector<std::string> texts = {
      "7",          "past + seq",          "2*past*seq - 3*H + 11",
      "floordiv(H - 1, 2) + 1", "mod(H, 3) + mod(past, 4)", "min(past, seq, 9) + max(H, 2*seq)",
      "ceildiv(past + seq, 8)*8 - past", "floordiv(seq*seq + H, 5)"};
  for (const std::string& text : texts) {
    const Expr e = P(text);
    absl::StatusOr<CompiledExpr> c = CompiledExpr::Compile(e, kSlots);
    ASSERT_TRUE(c.ok()) << text << ": " << c.status();
    for (int64_t past : {0, 1, 7, 63}) {
      for (int64_t seq : {1, 2, 16}) {
        for (int64_t h : {-8, -3, 0, 5, 224}) {
          const int64_t values[] = {past, seq, h};
          const std::map<std::string, int64_t> named = {{"past", past}, {"seq", seq}, {"H", h}};
          absl::StatusOr<int64_t> want = Evaluate(e, ValuesOf(named));
          ASSERT_TRUE(want.ok()) << text;
          std::optional<int64_t> got = c->Run(values);
          ASSERT_TRUE(got.has_value()) << text;
          EXPECT_EQ(*got, *want) << text << " at past=" << past << " seq=" << seq << " H=" << h;
        }
      }
    }
  }
}

TEST(SymCompiledTest, OverflowAndDivisionByZeroGiveNothing) {
  absl::StatusOr<CompiledExpr> mul = CompiledExpr::Compile(P("past*seq*H"), kSlots);
  ASSERT_TRUE(mul.ok());
  const int64_t big = int64_t{1} << 40;
  const int64_t values[] = {big, big, 1};
  EXPECT_FALSE(mul->Run(values).has_value());
  absl::StatusOr<CompiledExpr> div = CompiledExpr::Compile(P("floordiv(seq, H)"), kSlots);
  ASSERT_TRUE(div.ok());
  const int64_t zero[] = {0, 5, 0};
  EXPECT_FALSE(div->Run(zero).has_value());
}

TEST(SymCompiledTest, RefusesAnUnboundSymbolAndAnInvalidExpression) {
  const Symbol w{"W", 1, kUnbounded};
  absl::StatusOr<CompiledExpr> c = CompiledExpr::Compile(Expr::Sym(w) + 1, kSlots);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("reads symbol 'W', not bound"));
  EXPECT_EQ(CompiledExpr::Compile(Expr::Invalid(), kSlots).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kiln::sym
