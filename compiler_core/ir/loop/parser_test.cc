// Loop IR parser: print → parse → print round trips over every node kind, op and immediate
// form, scoping of names, and errors with their line, column and what was expected.
#include "compiler_core/ir/loop/parser.h"

#include <cmath>

#include "compiler_core/ir/loop/printer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::loop {
namespace {

using ::testing::HasSubstr;

/// Parses `text`, checks that it prints back identically, and returns the func.
Func RoundTrip(const std::string& text) {
  absl::StatusOr<Func> func = ParseFunc(text);
  EXPECT_TRUE(func.ok()) << func.status() << "\n" << text;
  if (!func.ok()) return {};
  EXPECT_EQ(PrintFunc(*func), text);
  return *func;
}

std::string ParseError(const std::string& text) {
  absl::StatusOr<Func> func = ParseFunc(text);
  EXPECT_FALSE(func.ok()) << PrintFunc(*func);
  if (func.ok()) return "";
  EXPECT_EQ(func.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(func.status().message());
}

TEST(LoopParserTest, RoundTripsEveryStatementKind) {
  Func f = RoundTrip(
      "func @k0(%x: f32[4,16], %y: f32[4,16], %s: f32[]) workspace(%t: f32[64], %u: i64[2]) "
      "anchor=Conv {\n"
      "  parallel for i in 0..4 {\n"
      "    alloc %acc: f32[16] {\n"
      "      unrolled for j in 0..16 reduce {\n"
      "        %acc[j] = (%acc[j] + %x[i, j])\n"
      "      }\n"
      "      vectorized for j2 in 0..16 {\n"
      "        if (j2 < 8) {\n"
      "          %y[i, j2] = max(%acc[j2], 0.0)\n"
      "        } else {\n"
      "          %y[i, j2] = select((j2 == 9), %s[], -inf)\n"
      "        }\n"
      "      }\n"
      "    }\n"
      "    if ((i >= 1) && (i != 3)) {\n"
      "      %t[(i * 16)] = 1.5\n"
      "    }\n"
      "  }\n"
      "  %u[1] = -7\n"
      "}\n");
  ASSERT_EQ(f.params.size(), 3u);
  ASSERT_EQ(f.workspaces.size(), 2u);
  EXPECT_EQ(f.anchor, graph::OpKind::kConv);
  EXPECT_EQ(f.params[2]->shape.size(), 0u);
  EXPECT_EQ(f.body->kind, StmtKind::kBlock);
  const Stmt& outer = f.body->stmts[0];
  EXPECT_EQ(outer->for_kind, ForKind::kParallel);
  const Stmt& alloc = outer->body->stmts[0];
  ASSERT_EQ(alloc->kind, StmtKind::kAllocate);
  EXPECT_EQ(alloc->buffer->scope, Buffer::Scope::kLocal);
  EXPECT_TRUE(alloc->body->stmts[0]->is_reduction);
  EXPECT_EQ(f.params[0]->scope, Buffer::Scope::kGlobal);
}

TEST(LoopParserTest, RoundTripsEveryOpAndImmediate) {
  // Every unary and binary op, built in C++ so that a new enumerator is covered too.
  BufferRef fb = MakeBuffer("f", DType::kFloat32, {4});
  BufferRef ib = MakeBuffer("n", DType::kInt32, {4});
  BufferRef bb = MakeBuffer("b", DType::kBool, {4});
  Var i = MakeVar("i");
  Expr fx = Load(fb, {VarRef(i)}), ix = Load(ib, {VarRef(i)}), bx = Load(bb, {VarRef(i)});
  std::vector<Stmt> stores;
  for (int op = 0; op <= static_cast<int>(UnaryOp::kAtanh); ++op) {
    UnaryOp u = static_cast<UnaryOp>(op);
    if (u == UnaryOp::kNot) {
      stores.push_back(Store(bb, {VarRef(i)}, Unary(u, bx)));
    } else {
      stores.push_back(Store(fb, {VarRef(i)}, Unary(u, fx)));
    }
  }
  for (int op = 0; op <= static_cast<int>(BinaryOp::kDot4U8S8); ++op) {
    BinaryOp b = static_cast<BinaryOp>(op);
    Expr a = b == BinaryOp::kAnd || b == BinaryOp::kOr ? bx : ix;
    Expr e = Binary(b, a, a);
    stores.push_back(e->dtype == DType::kBool ? Store(bb, {VarRef(i)}, e)
                                              : Store(ib, {VarRef(i)}, e));
  }
  stores.push_back(Store(ib, {VarRef(i)}, Cast(DType::kInt32, fx)));
  stores.push_back(Store(ib, {IntImm(2)}, IntImm(-3, DType::kInt32)));
  stores.push_back(Store(bb, {IntImm(0)}, IntImm(1, DType::kBool)));
  stores.push_back(Store(fb, {IntImm(1)}, FloatImm(1e-5)));
  stores.push_back(Store(fb, {IntImm(1)}, FloatImm(0.1)));
  stores.push_back(Store(fb, {IntImm(1)}, FloatImm(std::nan(""))));
  stores.push_back(Store(fb, {IntImm(1)}, FloatImm(1e30)));
  stores.push_back(
      Store(fb, {IntImm(1)}, Cast(DType::kFloat32, FloatImm(-2.5e-300, DType::kFloat64))));
  stores.push_back(Store(fb, {IntImm(1)}, Cast(DType::kFloat32, FloatImm(0.25, DType::kFloat16))));
  stores.push_back(Store(fb, {IntImm(1)}, Cast(DType::kFloat32, IntImm(7, DType::kUInt8))));
  Func f;
  f.name = "ops";
  f.params = {fb, ib, bb};
  f.body = For(i, 4, Block(stores));
  f.anchor = graph::OpKind::kAdd;
  std::string text = PrintFunc(f);
  EXPECT_THAT(text, HasSubstr("9.999999747378752e-06"));  // f32 immediates print exactly
  EXPECT_THAT(text, HasSubstr("-2.5e-300:f64"));
  EXPECT_THAT(text, HasSubstr("1:bool"));
  EXPECT_THAT(text, HasSubstr("dot4_u8s8(%n[i], %n[i])"));
  Func parsed = RoundTrip(text);
  // Immediates keep their exact value and dtype.
  const Stmt& tiny = parsed.body->body->stmts[stores.size() - 7];
  EXPECT_EQ(tiny->value->float_value, static_cast<double>(static_cast<float>(1e-5)));
  EXPECT_EQ(tiny->value->dtype, DType::kFloat32);
}

TEST(LoopParserTest, ResolvesNamesByScope) {
  // Sibling loops may share a name (a split tail copies loops); each binds its own variable.
  Func f = RoundTrip(
      "func @k(%x: f32[8]) anchor=Relu {\n"
      "  for i in 0..4 {\n"
      "    %x[i] = 0.0\n"
      "  }\n"
      "  for i in 0..8 {\n"
      "    %x[i] = 1.0\n"
      "  }\n"
      "}\n");
  const Stmt& a = f.body->stmts[0];
  const Stmt& b = f.body->stmts[1];
  EXPECT_NE(a->loop_var, b->loop_var);
  EXPECT_EQ(a->body->indices[0]->var, a->loop_var);
  EXPECT_EQ(b->body->indices[0]->var, b->loop_var);
  // An empty body is an empty block; comments on their own lines are skipped.
  Func empty = RoundTrip("func @e() anchor=Identity {\n}\n");
  EXPECT_EQ(empty.body->kind, StmtKind::kBlock);
  EXPECT_TRUE(ParseFunc("// a comment\nfunc @e() anchor=Identity {\n  // inside\n}\n").ok());
}

TEST(LoopParserTest, ErrorsSayWhereAndWhatWasExpected) {
  EXPECT_EQ(ParseError("func @k(%x: f32[4]) anchor=Relu {\n  %y[0] = 0.0\n}\n"),
            "2:3: undefined buffer '%y'");
  EXPECT_EQ(ParseError("func @k(%x: f32[4]) anchor=Relu {\n  %x[j] = 0.0\n}\n"),
            "2:6: undefined loop variable 'j'");
  EXPECT_EQ(ParseError("func @k(%x: f32[4]) anchor=Relu {\n  %x[0, 1] = 0.0\n}\n"),
            "2:3: %x has rank 1, got 2 indices");
  EXPECT_EQ(ParseError("func @k(%x: f32[4]) anchor=Relu {\n  %x[0] = 1\n}\n"),
            "2:11: stored value has dtype i64, expected f32 of %x");
  EXPECT_EQ(ParseError("func @k(%x: f32[4]) anchor=Relu {\n  %x[0] = (1.0 + 2)\n}\n"),
            "2:16: operands of '+' have dtypes f32 and i64, expected the same");
  EXPECT_EQ(ParseError("func @k(%x: f32[4]) anchor=Relu {\n  %x[0] = frob(1.0)\n}\n"),
            "2:11: unknown function 'frob'");
  EXPECT_EQ(ParseError("func @k(%x: f33[4]) anchor=Relu {\n}\n"), "1:13: unknown dtype 'f33'");
  EXPECT_EQ(ParseError("func @k(%x: f32[4]) anchor=Frob {\n}\n"),
            "1:28: unknown anchor op 'Frob'");
  EXPECT_EQ(ParseError("func @k(%x: f32[4], %x: f32[4]) anchor=Relu {\n}\n"),
            "1:21: buffer '%x' is already defined");
  EXPECT_EQ(ParseError("func @k() anchor=Relu {\n  for i in 1..4 {\n  }\n}\n"),
            "2:12: expected '0', got '1'");
  EXPECT_EQ(ParseError("func @k() anchor=Relu {\n  sometimes for i in 0..4 {\n  }\n}\n"),
            "2:3: expected a statement (for, if, alloc or a store '%buf[...] = ...'), got "
            "'sometimes'");
  EXPECT_EQ(ParseError("func @k() anchor=Relu {\n  for i in 0..4 {\n"),
            "3:1: expected '}', got end of input");
  EXPECT_EQ(ParseError("func @k() anchor=Relu {\n}\nfunc"),
            "3:1: expected end of input after the func, got 'func'");
  EXPECT_EQ(ParseError("func @k(%x: i64[4]) anchor=Relu {\n  %x[0] = (1 ? 2)\n}\n"),
            "2:14: unexpected character '?'");
  EXPECT_EQ(ParseError("func @k(%x: f32[4]) anchor=Relu {\n  %x[0] = select(1, 1.0, 2.0)\n}\n"),
            "2:11: select condition has dtype i64, expected bool");
  // An alloc'd buffer is not visible after its alloc.
  EXPECT_EQ(ParseError("func @k() anchor=Relu {\n  alloc %a: f32[1] {\n  }\n  %a[0] = 0.0\n}\n"),
            "4:3: undefined buffer '%a'");
}

}  // namespace
}  // namespace kiln::loop
