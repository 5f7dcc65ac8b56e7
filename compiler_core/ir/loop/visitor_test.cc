// Loop IR visitor and mutator: visit order, and a mutator that shares every unchanged subtree.
#include "compiler_core/ir/loop/visitor.h"

#include <string>
#include <vector>

#include "compiler_core/ir/loop/parser.h"
#include "compiler_core/ir/loop/printer.h"
#include "gtest/gtest.h"

namespace kiln::loop {
namespace {

Func Parse(const std::string& text) {
  absl::StatusOr<Func> f = ParseFunc(text);
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? *f : Func{};
}

constexpr char kTwoNests[] =
    "func @k(%x: f32[4], %y: f32[4]) anchor=Relu {\n"
    "  for i in 0..4 {\n"
    "    if (i < 2) {\n"
    "      %y[i] = %x[i]\n"
    "    } else {\n"
    "      %y[i] = neg(%x[i])\n"
    "    }\n"
    "  }\n"
    "  for j in 0..4 {\n"
    "    %x[j] = 0.0\n"
    "  }\n"
    "}\n";

TEST(LoopVisitorTest, VisitsStatementsAndExpressionsInPreOrder) {
  Func f = Parse(kTwoNests);
  std::vector<StmtKind> kinds;
  VisitStmts(f.body, [&](const Stmt& s) { kinds.push_back(s->kind); });
  EXPECT_EQ(kinds, (std::vector<StmtKind>{StmtKind::kBlock, StmtKind::kFor, StmtKind::kIf,
                                          StmtKind::kStore, StmtKind::kStore, StmtKind::kFor,
                                          StmtKind::kStore}));
  std::vector<std::string> exprs;
  VisitExprs(f.body, [&](const Expr& e) { exprs.push_back(PrintExpr(e)); });
  EXPECT_EQ(exprs, (std::vector<std::string>{"(i < 2)", "i", "2", "i", "%x[i]", "i", "i",
                                             "neg(%x[i])", "%x[i]", "i", "j", "0.0"}));
  EXPECT_TRUE(AnyExpr(f.body->stmts[0]->body->cond,
                      [](const Expr& e) { return e->kind == ExprKind::kIntImm; }));
}

TEST(LoopVisitorTest, VisitorHooksSeeScopes) {
  // A Visitor that records the loop depth of every load.
  struct Depths final : Visitor {
    int depth = 0;
    std::vector<int> loads;
    void VisitStmt(const Stmt& s) override {
      depth += s->kind == StmtKind::kFor;
      Visitor::VisitStmt(s);
      depth -= s->kind == StmtKind::kFor;
    }
    void VisitExpr(const Expr& e) override {
      if (e->kind == ExprKind::kLoad) loads.push_back(depth);
      Visitor::VisitExpr(e);
    }
  } v;
  v.VisitStmt(Parse(kTwoNests).body);
  EXPECT_EQ(v.loads, (std::vector<int>{1, 1}));
}

TEST(LoopVisitorTest, MutatorRebuildsOnlyChangedNodes) {
  // Replaces 0.0 by 1.0: only the second nest changes; the first is shared, not copied.
  struct ZeroToOne final : StmtMutator {
    Expr MutateExpr(const Expr& e) override {
      if (e->kind == ExprKind::kFloatImm && e->float_value == 0) return FloatImm(1);
      return MutateChildren(e);
    }
  } m;
  Func f = Parse(kTwoNests);
  Stmt out = m.MutateStmt(f.body);
  ASSERT_NE(out, f.body);
  EXPECT_EQ(out->stmts[0], f.body->stmts[0]);
  EXPECT_NE(out->stmts[1], f.body->stmts[1]);
  EXPECT_EQ(out->stmts[1]->loop_var, f.body->stmts[1]->loop_var);
  EXPECT_EQ(PrintStmt(out->stmts[1]), "for j in 0..4 {\n  %x[j] = 1.0\n}\n");
  // Nothing to change: the very same tree comes back.
  EXPECT_EQ(m.MutateStmt(out), out);
}

}  // namespace
}  // namespace kiln::loop
