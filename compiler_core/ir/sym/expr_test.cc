#include "compiler_core/ir/sym/expr.h"

#include <map>
#include <random>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::sym {
namespace {

using ::testing::HasSubstr;

const Symbol kSeq{"seq", 1, 4096};
const Symbol kPast{"past", 0, 4096};
const Symbol kH{"H", 1, kUnbounded};
const Symbol kW{"W", 1, kUnbounded};
const Symbol kN{"N", 0, kUnbounded};

std::map<std::string, Symbol> Table() {
  return {{"seq", kSeq}, {"past", kPast}, {"H", kH}, {"W", kW}, {"N", kN}};
}

Expr P(const std::string& text) {
  absl::StatusOr<Expr> e = Parse(text, Table());
  EXPECT_TRUE(e.ok()) << text << ": " << e.status();
  return e.ok() ? *e : Expr::Invalid();
}

TEST(SymExprTest, CanonicalFormMakesEqualExpressionsEqual) {
  Expr seq = Expr::Sym(kSeq);
  Expr past = Expr::Sym(kPast);
  EXPECT_EQ((past + seq) - past, seq);
  EXPECT_EQ((seq + past).ToString(), "past + seq");
  EXPECT_EQ(seq + past, past + seq);
  EXPECT_EQ(Expr(2) * (seq + 1), seq * 2 + 2);
  EXPECT_EQ((Expr(2) * (seq + 1)).ToString(), "2*seq + 2");
  EXPECT_EQ(((seq + 1) * (seq - 1)).ToString(), "seq*seq - 1");
  EXPECT_EQ((seq - seq).ToString(), "0");
  EXPECT_EQ((-seq + 3).ToString(), "-seq + 3");
  EXPECT_EQ((Expr::Sym(kH) * Expr::Sym(kW) * 4 - Expr::Sym(kH)).ToString(), "4*H*W - H");
  EXPECT_TRUE((past + seq - seq - past).is_constant());
  EXPECT_EQ(*(seq * 0 + 7).AsConstant(), 7);
  EXPECT_EQ(seq.AsSymbol()->name, "seq");
  EXPECT_FALSE((seq + 1).AsSymbol().has_value());
  EXPECT_NE(seq, past);
}

TEST(SymExprTest, PrintedFormParsesBack) {
  for (const char* text :
       {"past + seq", "2*seq + 2", "-seq + 3", "4*H*W - H", "floordiv(H + 1, 2)",
        "mod(seq, 3)", "min(N, 4)", "max(H, W)", "floordiv(seq, past + 1)", "7", "-5",
        "H*H + 2*H + 1"}) {
    Expr e = P(text);
    EXPECT_EQ(e.ToString(), text);
    EXPECT_EQ(P(e.ToString()), e);
  }
  EXPECT_EQ(P("(H + 1) * (H + 1)").ToString(), "H*H + 2*H + 1");
  EXPECT_EQ(P("ceildiv(H, 2)").ToString(), "H - floordiv(H, 2)");  // ceil(H/2) = H - floor(H/2)
  EXPECT_EQ(P("- - H").ToString(), "H");
}

TEST(SymExprTest, ParseErrorsNameTheTextAndColumn) {
  absl::StatusOr<Expr> e = Parse("past+sq", Table());
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(e.status().message(), "unknown symbol 'sq' at column 6 of 'past+sq'");
  EXPECT_THAT(Parse("H +", Table()).status().message(),
              HasSubstr("expected a number, a symbol or '(' (end) at column 4"));
  EXPECT_THAT(Parse("mod(H)", Table()).status().message(), HasSubstr("mod takes two arguments"));
  EXPECT_THAT(Parse("H W", Table()).status().message(), HasSubstr("unexpected text 'W'"));
  EXPECT_THAT(Parse("99999999999999999999", Table()).status().message(),
              HasSubstr("integer out of int64 range"));
  EXPECT_THAT(Parse("(H", Table()).status().message(), HasSubstr("expected ')'"));
}

TEST(SymExprTest, FloorDivAndModByConstants) {
  Expr h = Expr::Sym(kH);
  // Conv output size: floor((H + 2*1 - 3) / 2) + 1.
  EXPECT_EQ(FloorDiv(h + 2 - 3, 2) + 1, P("floordiv(H - 1, 2) + 1"));
  EXPECT_EQ((FloorDiv(h - 1, 2) + 1).ToString(), "floordiv(H + 1, 2)");  // constants reduced mod 2
  EXPECT_EQ(FloorDiv(h * 4 + 6, 2), h * 2 + 3);  // every term divisible
  EXPECT_EQ(FloorDiv(h * 4 + 7, 2), h * 2 + 3);  // remainder 1 < 2 folds
  EXPECT_EQ(FloorDiv(h * 3 + 1, 2).ToString(), "H + floordiv(H + 1, 2)");
  EXPECT_EQ(FloorDiv(h * 2 + 2, 4).ToString(), "floordiv(H + 1, 2)");  // gcd 2
  EXPECT_EQ(FloorDiv(FloorDiv(h, 2), 3), FloorDiv(h, 6));
  EXPECT_EQ(FloorDiv(h, 1), h);
  EXPECT_EQ(FloorDiv(h, -2), FloorDiv(-h, 2));
  EXPECT_EQ(Mod(h * 4 + 6, 2), Expr(0));
  EXPECT_EQ(Mod(h * 4 + 7, 2), Expr(1));
  EXPECT_EQ(Mod(h * 2 + 2, 4).ToString(), "2*mod(H + 1, 2)");
  EXPECT_EQ(Mod(h, 1), Expr(0));
  // Constants follow floor semantics.
  EXPECT_EQ(FloorDiv(-7, 2), Expr(-4));
  EXPECT_EQ(Mod(-7, 2), Expr(1));
  EXPECT_EQ(Mod(7, -2), Expr(-1));
  EXPECT_EQ(FloorDiv(7, -2), Expr(-4));
  // A bounded remainder folds: 0 <= mod(seq, 4) < 4.
  Expr m = Mod(Expr::Sym(kSeq), 4);
  EXPECT_EQ(FloorDiv(m, 4), Expr(0));
  EXPECT_EQ(Mod(m, 4), m);
}

TEST(SymExprTest, SymbolicDivisors) {
  Expr h = Expr::Sym(kH);
  Expr w = Expr::Sym(kW);
  Expr seq = Expr::Sym(kSeq);
  Expr past = Expr::Sym(kPast);
  // Reshape's -1: the element count over the product of the other dims.
  EXPECT_EQ(FloorDiv(h * w * 4, h * w), Expr(4));
  EXPECT_EQ(FloorDiv(h * w + w * 2, w), h + 2);
  EXPECT_EQ(Mod(h * w * 4, h), Expr(0));
  EXPECT_EQ(FloorDiv(seq, seq), Expr(1));
  // N may be 0: N / N does not fold.
  Expr n = Expr::Sym(kN);
  EXPECT_EQ(FloorDiv(n, n).ToString(), "floordiv(N, N)");
  // 0 <= past < past + seq (seq >= 1).
  EXPECT_EQ(FloorDiv(past, past + seq), Expr(0));
  EXPECT_EQ(Mod(past, past + seq), past);
  EXPECT_TRUE(FloorDiv(h, 0).is_invalid());
  EXPECT_TRUE(Mod(h, 0).is_invalid());
}

TEST(SymExprTest, MinAndMax) {
  Expr seq = Expr::Sym(kSeq);
  Expr past = Expr::Sym(kPast);
  Expr n = Expr::Sym(kN);
  EXPECT_EQ(Min(seq, seq + 1), seq);
  EXPECT_EQ(Max(seq, seq + 1), seq + 1);
  EXPECT_EQ(Max(past + seq, 1), past + seq);  // past + seq >= 1
  EXPECT_EQ(Min(seq, 0), Expr(0));            // seq >= 1
  EXPECT_EQ(Min(n, 4).ToString(), "min(N, 4)");
  EXPECT_EQ(Min(4, n), Min(n, 4));
  EXPECT_EQ(Min(Min(n, 4), 2), Min(n, 2));  // flattened, 2 dominates 4
  EXPECT_EQ(Max(Max(n, past), n), Max(n, past));
  EXPECT_EQ(Min(3, 5), Expr(3));
  EXPECT_EQ(Max(3, 5), Expr(5));
}

TEST(SymExprTest, ProofsUseSymbolRanges) {
  Expr seq = Expr::Sym(kSeq);
  Expr past = Expr::Sym(kPast);
  EXPECT_TRUE(ProveGE(past + seq, 1));
  EXPECT_TRUE(ProveGT(past + seq, past));
  EXPECT_FALSE(ProveGT(past + seq, seq));  // past may be 0
  EXPECT_TRUE(ProveGE(past + seq, seq));
  EXPECT_TRUE(ProveLE(seq, 4096));
  EXPECT_FALSE(ProveLE(seq, 4095));
  EXPECT_TRUE(ProveLT(Mod(seq, 8), 8));
  EXPECT_TRUE(ProveNonNegative(FloorDiv(past, 2)));
  EXPECT_TRUE(ProveEqual((past + seq) - past, seq));
  EXPECT_FALSE(ProveEqual(past, seq));
  EXPECT_EQ(Bounds(past + seq), (Interval{1, 8192}));
  EXPECT_EQ(Bounds(seq * 2 - past), (Interval{2 - 4096, 8192}));
  EXPECT_EQ(Bounds(FloorDiv(seq - 1, 2) + 1), (Interval{1, 2048}));
  EXPECT_EQ(Bounds(Expr::Sym(kH)), (Interval{1, Interval::kPosInf}));
  EXPECT_EQ(Bounds(-Expr::Sym(kH)), (Interval{Interval::kNegInf, -1}));
  EXPECT_EQ(Bounds(Min(Expr::Sym(kN), 4)), (Interval{0, 4}));
  EXPECT_EQ(Bounds(Expr::Invalid()), Interval{});
}

TEST(SymExprTest, EvaluateChecksEveryStep) {
  Expr e = P("floordiv(past + seq - 1, 2) * H + mod(seq, 3) - min(N, 4)");
  std::map<std::string, int64_t> v = {{"past", 7}, {"seq", 5}, {"H", 3}, {"N", 9}};
  absl::StatusOr<int64_t> r = Evaluate(e, ValuesOf(v));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, (7 + 5 - 1) / 2 * 3 + 5 % 3 - 4);
  EXPECT_EQ(*Evaluate(FloorDiv(Expr::Sym(kPast) - 7, 2), ValuesOf(v)), 0);
  std::map<std::string, int64_t> neg = {{"past", 0}};
  EXPECT_EQ(*Evaluate(FloorDiv(Expr::Sym(kPast) - 7, 2), ValuesOf(neg)), -4);

  absl::StatusOr<int64_t> missing = Evaluate(Expr::Sym(kSeq) + 1, ValuesOf({}));
  EXPECT_EQ(missing.status().message(), "evaluating seq + 1: symbol 'seq' has no value");
  std::map<std::string, int64_t> zero = {{"N", 0}};
  EXPECT_EQ(Evaluate(FloorDiv(7, Expr::Sym(kN)), ValuesOf(zero)).status().message(),
            "evaluating floordiv(7, N): division by zero");
  std::map<std::string, int64_t> big = {{"H", int64_t{1} << 40}};
  EXPECT_EQ(Evaluate(P("H*H"), ValuesOf(big)).status().message(),
            "evaluating H*H: int64 overflow");
}

TEST(SymExprTest, OverflowMakesTheExpressionInvalid) {
  Expr huge(int64_t{1} << 62);
  EXPECT_TRUE((huge * 4).is_invalid());
  EXPECT_TRUE((huge + huge).is_invalid());
  Expr bad = huge * 4 + Expr::Sym(kSeq);
  EXPECT_TRUE(bad.is_invalid());
  EXPECT_EQ(bad.ToString(), "<invalid>");
  EXPECT_TRUE(FloorDiv(bad, 2).is_invalid());
  EXPECT_TRUE(Min(bad, 2).is_invalid());
  EXPECT_FALSE(ProveGE(bad, 0));
  EXPECT_FALSE(ProveEqual(bad, bad));
  EXPECT_THAT(Evaluate(bad, ValuesOf({})).status().message(),
              HasSubstr("overflowed int64 or divided by zero"));
  EXPECT_TRUE((Expr(std::numeric_limits<int64_t>::min()) * -1).is_invalid());
}

TEST(SymExprTest, SubstituteSimplifiesAgain) {
  Expr seq = Expr::Sym(kSeq);
  Expr past = Expr::Sym(kPast);
  EXPECT_EQ(Substitute(FloorDiv(seq + 1, 2), {{"seq", Expr(1)}}), Expr(1));
  EXPECT_EQ(Substitute(past + seq, {{"past", Expr(0)}}), seq);
  EXPECT_EQ(Substitute(Min(past, seq), {{"past", seq + 3}}), seq);
  EXPECT_EQ(Substitute(Mod(past, 4) * seq, {{"seq", Expr(2)}}).ToString(), "2*mod(past, 4)");
  std::vector<Symbol> symbols = (Min(past, 4) + FloorDiv(seq, Expr::Sym(kH))).Symbols();
  ASSERT_EQ(symbols.size(), 3u);
  EXPECT_EQ(symbols[0].name, "H");
  EXPECT_EQ(symbols[1].name, "past");
  EXPECT_EQ(symbols[2].name, "seq");
  EXPECT_EQ(symbols[2].max, 4096);
}

// Random expressions evaluated before and after canonicalization agree with a direct
// evaluation in 128-bit integers, and their bounds contain every value seen.
TEST(SymExprTest, RandomExpressionsAgreeWithDirectEvaluation) {
  const Symbol a{"a", -5, 9};
  const Symbol b{"b", 1, 6};
  const Symbol c{"c", 0, 3};
  std::mt19937 rng(7);
  struct Built {
    Expr e;
    std::function<__int128(int64_t, int64_t, int64_t)> f;
  };
  auto floordiv = [](__int128 x, __int128 y) {
    __int128 q = x / y;
    if ((x % y) != 0 && ((x < 0) != (y < 0))) --q;
    return q;
  };
  std::function<Built(int)> gen = [&](int depth) -> Built {
    int pick = depth == 0 ? static_cast<int>(rng() % 4) : static_cast<int>(rng() % 11);
    switch (pick) {
      case 0: return {Expr::Sym(a), [](int64_t x, int64_t, int64_t) { return __int128(x); }};
      case 1: return {Expr::Sym(b), [](int64_t, int64_t y, int64_t) { return __int128(y); }};
      case 2: return {Expr::Sym(c), [](int64_t, int64_t, int64_t z) { return __int128(z); }};
      case 3: {
        int64_t k = static_cast<int64_t>(rng() % 9) - 4;
        return {Expr(k), [k](int64_t, int64_t, int64_t) { return __int128(k); }};
      }
      default: break;
    }
    Built l = gen(depth - 1);
    Built r = gen(depth - 1);
    switch (pick) {
      case 4: return {l.e + r.e, [l, r](auto x, auto y, auto z) { return l.f(x, y, z) + r.f(x, y, z); }};
      case 5: return {l.e - r.e, [l, r](auto x, auto y, auto z) { return l.f(x, y, z) - r.f(x, y, z); }};
      case 6: return {l.e * r.e, [l, r](auto x, auto y, auto z) { return l.f(x, y, z) * r.f(x, y, z); }};
      case 7: {
        int64_t k = static_cast<int64_t>(rng() % 5) + 2;
        if (rng() % 2) k = -k;
        return {FloorDiv(l.e, k), [l, k, floordiv](auto x, auto y, auto z) {
                  return floordiv(l.f(x, y, z), k);
                }};
      }
      case 8: {
        int64_t k = static_cast<int64_t>(rng() % 5) + 2;
        return {Mod(l.e, k), [l, k, floordiv](auto x, auto y, auto z) {
                  __int128 v = l.f(x, y, z);
                  return v - floordiv(v, k) * k;
                }};
      }
      case 9: return {Min(l.e, r.e), [l, r](auto x, auto y, auto z) { return std::min(l.f(x, y, z), r.f(x, y, z)); }};
      default: {
        // Divide by b (never 0).
        return {FloorDiv(l.e, Expr::Sym(b) + r.e * 0), [l, floordiv](auto x, auto y, auto z) {
                  return floordiv(l.f(x, y, z), __int128(y));
                }};
      }
    }
  };
  for (int trial = 0; trial < 400; ++trial) {
    Built built = gen(3);
    ASSERT_FALSE(built.e.is_invalid());
    Interval bounds = Bounds(built.e);
    absl::StatusOr<Expr> reparsed =
        Parse(built.e.ToString(), {{"a", a}, {"b", b}, {"c", c}});
    ASSERT_TRUE(reparsed.ok()) << built.e.ToString() << ": " << reparsed.status();
    ASSERT_EQ(*reparsed, built.e) << built.e.ToString();
    for (int64_t x = a.min; x <= a.max; ++x) {
      for (int64_t y = b.min; y <= b.max; ++y) {
        for (int64_t z = c.min; z <= c.max; ++z) {
          std::map<std::string, int64_t> v = {{"a", x}, {"b", y}, {"c", z}};
          absl::StatusOr<int64_t> got = Evaluate(built.e, ValuesOf(v));
          ASSERT_TRUE(got.ok()) << built.e.ToString() << ": " << got.status();
          __int128 want = built.f(x, y, z);
          ASSERT_EQ(__int128(*got), want) << built.e.ToString() << " at a=" << x << " b=" << y
                                          << " c=" << z;
          ASSERT_GE(*got, bounds.lo) << built.e.ToString();
          ASSERT_LE(*got, bounds.hi) << built.e.ToString();
        }
      }
    }
  }
}

}  // namespace
}  // namespace kiln::sym
