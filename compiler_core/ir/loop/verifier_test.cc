// Loop IR verifier: a valid func passes, and each invariant's violation is reported with the
// offending statement and the reason.
#include "compiler_core/ir/loop/verifier.h"

#include <memory>

#include "compiler_core/ir/loop/parser.h"
#include "compiler_core/ir/loop/printer.h"
#include "gtest/gtest.h"

namespace kiln::loop {
namespace {

/// The verifier's message for the func in `text` ("" if it verifies).
std::string VerifyText(const std::string& text) {
  absl::StatusOr<Func> func = ParseFunc(text);
  EXPECT_TRUE(func.ok()) << func.status();
  if (!func.ok()) return "parse error";
  absl::Status st = VerifyFunc(*func);
  if (!st.ok()) EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  return std::string(st.message());
}

std::string VerifyBody(const Func& base, Stmt body) {
  Func f = base;
  f.body = std::move(body);
  return std::string(VerifyFunc(f).message());
}

TEST(LoopVerifierTest, AcceptsAValidScheduledFunc) {
  EXPECT_EQ(VerifyText("func @k(%x: f32[4,16], %y: f32[4,16]) workspace(%t: f32[4]) anchor=Relu {\n"
                       "  parallel for i in 0..4 {\n"
                       "    alloc %a: f32[16] {\n"
                       "      for j in 0..16 reduce {\n"
                       "        %t[i] = (%t[i] + %x[i, j])\n"
                       "      }\n"
                       "      vectorized for j in 0..16 {\n"
                       "        %a[j] = %x[i, j]\n"
                       "      }\n"
                       "    }\n"
                       "  }\n"
                       "}\n"),
            "");
}

TEST(LoopVerifierTest, RejectsIllegalLoopKinds) {
  EXPECT_EQ(VerifyText("func @k(%x: f32[4]) anchor=Relu {\n"
                       "  vectorized for i in 0..4 reduce {\n"
                       "    %x[0] = %x[i]\n  }\n}\n"),
            "func 'k': in 'vectorized for i in 0..4 reduce': a vectorized loop must not be a "
            "reduction");
  EXPECT_EQ(VerifyText("func @k(%x: f32[4,4]) anchor=Relu {\n"
                       "  vectorized for i in 0..4 {\n    for j in 0..4 {\n"
                       "      %x[i, j] = 0.0\n    }\n  }\n}\n"),
            "func 'k': in 'vectorized for i in 0..4': a vectorized loop must be innermost");
  EXPECT_EQ(VerifyText("func @k(%x: f32[4,4]) anchor=Relu {\n"
                       "  parallel for i in 0..4 {\n    parallel for j in 0..4 {\n"
                       "      %x[i, j] = 0.0\n    }\n  }\n}\n"),
            "func 'k': in 'parallel for j in 0..4': a parallel loop is nested in a parallel loop");
  EXPECT_EQ(VerifyText("func @k(%x: f32[4]) anchor=Relu {\n"
                       "  parallel for i in 0..4 reduce {\n    %x[0] = %x[i]\n  }\n}\n"),
            "func 'k': in 'parallel for i in 0..4 reduce': a parallel loop must not be a "
            "reduction");
  EXPECT_EQ(VerifyText("func @k(%x: f32[4]) anchor=Relu {\n"
                       "  for i in 0..-1 {\n    %x[i] = 0.0\n  }\n}\n"),
            "func 'k': in 'for i in 0..-1': extent -1 is negative");
  // An empty loop (an empty tensor's) is legal.
  EXPECT_EQ(VerifyText("func @k(%x: f32[0]) anchor=Relu {\n"
                       "  for i in 0..0 {\n    %x[i] = 0.0\n  }\n}\n"),
            "");
}

// GPU thread binding (issue 9): a grid of blocks and threads verifies, round-trips through the
// printer and parser, and each binding rule's violation is reported.
TEST(LoopVerifierTest, ThreadBoundLoops) {
  const std::string grid =
      "func @k(%x: f32[8,4,32], %y: f32[8,4,32]) anchor=Relu {\n"
      "  blockIdx.x for b in 0..8 {\n"
      "    blockIdx.y for c in 0..4 {\n"
      "      threadIdx.x for t in 0..32 {\n"
      "        %y[b, c, t] = max(%x[b, c, t], 0.0)\n"
      "      }\n"
      "    }\n"
      "  }\n"
      "}\n";
  EXPECT_EQ(VerifyText(grid), "");
  absl::StatusOr<Func> parsed = ParseFunc(grid);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(PrintFunc(*parsed), grid);
  EXPECT_EQ(VerifyText("func @k(%x: f32[4,4]) anchor=Relu {\n"
                       "  threadIdx.x for i in 0..4 {\n    blockIdx.x for j in 0..4 {\n"
                       "      %x[i, j] = 0.0\n    }\n  }\n}\n"),
            "func 'k': in 'blockIdx.x for j in 0..4': a loop bound to blockIdx.x is inside a loop "
            "bound to threadIdx.x (block loops enclose thread loops)");
  EXPECT_EQ(VerifyText("func @k(%x: f32[4,4]) anchor=Relu {\n"
                       "  threadIdx.x for i in 0..4 {\n    threadIdx.x for j in 0..4 {\n"
                       "      %x[i, j] = 0.0\n    }\n  }\n}\n"),
            "func 'k': in 'threadIdx.x for j in 0..4': a loop bound to threadIdx.x is inside "
            "another loop bound to the same index");
  EXPECT_EQ(VerifyText("func @k(%x: f32[4]) anchor=Relu {\n"
                       "  threadIdx.y for i in 0..4 reduce {\n    %x[0] = %x[i]\n  }\n}\n"),
            "func 'k': in 'threadIdx.y for i in 0..4 reduce': a loop bound to threadIdx.y must "
            "not be a reduction");
  EXPECT_EQ(VerifyText("func @k(%x: f32[4,4]) anchor=Relu {\n"
                       "  parallel for i in 0..4 {\n    blockIdx.z for j in 0..4 {\n"
                       "      %x[i, j] = 0.0\n    }\n  }\n}\n"),
            "func 'k': in 'blockIdx.z for j in 0..4': a loop bound to blockIdx.z is inside a "
            "parallel loop");
}

TEST(LoopVerifierTest, RejectsBadNamesAndScopes) {
  EXPECT_EQ(VerifyText("func @k(%x: f32[4,4]) anchor=Relu {\n"
                       "  for i in 0..4 {\n    for i in 0..4 {\n"
                       "      %x[i, i] = 0.0\n    }\n  }\n}\n"),
            "func 'k': in 'for i in 0..4': loop name 'i' is already bound by an enclosing loop");
  EXPECT_EQ(VerifyText("func @k(%x: f32[4]) anchor=Relu {\n"
                       "  %x[cast<i32>(0)] = 0.0\n}\n"),
            "func 'k': in '%x[cast<i32>(0)] = 0.0': index cast<i32>(0) of %x has dtype i32, "
            "expected i64");

  BufferRef x = MakeBuffer("x", DType::kFloat32, {4});
  Func base;
  base.name = "k";
  base.params = {x};
  Var i = MakeVar("i");
  // A variable used outside its loop.
  EXPECT_EQ(VerifyBody(base, Store(x, {VarRef(i)}, FloatImm(0))),
            "func 'k': in '%x[i] = 0.0': variable 'i' is not bound by an enclosing loop: i");
  // One variable bound by two loops.
  Stmt loop = For(i, 4, Store(x, {VarRef(i)}, FloatImm(0)));
  EXPECT_EQ(VerifyBody(base, Block({loop, loop})),
            "func 'k': in 'for i in 0..4': variable 'i' is bound by another loop too");
  // A buffer that is neither a param nor allocated around its use (same name, other object).
  BufferRef stranger = MakeBuffer("x", DType::kFloat32, {4});
  EXPECT_EQ(VerifyBody(base, Store(stranger, {IntImm(0)}, FloatImm(0))),
            "func 'k': in '%x[0] = 0.0': buffer %x is not a param, a workspace or allocated by "
            "an enclosing alloc");
  BufferRef global = MakeBuffer("g", DType::kFloat32, {4});
  EXPECT_EQ(VerifyBody(base, Allocate(global, Store(global, {IntImm(0)}, FloatImm(0)))),
            "func 'k': in 'alloc %g: f32[4]': an alloc'd buffer must have local or shared scope");
  Func twice = base;
  twice.workspaces = {MakeBuffer("x", DType::kFloat32, {2})};
  EXPECT_EQ(VerifyFunc(twice).message(), "func 'k': buffer %x is declared twice");
}

TEST(LoopVerifierTest, RejectsIllTypedExpressions) {
  BufferRef x = MakeBuffer("x", DType::kFloat32, {4});
  Func base;
  base.name = "k";
  base.params = {x};
  // Nodes built directly, as a buggy pass could, bypassing the constructors' asserts.
  auto bad_add = std::make_shared<ExprNode>();
  bad_add->kind = ExprKind::kBinary;
  bad_add->dtype = DType::kFloat32;
  bad_add->binary_op = BinaryOp::kAdd;
  bad_add->operands = {FloatImm(1), IntImm(2)};
  EXPECT_EQ(VerifyBody(base, Store(x, {IntImm(0)}, bad_add)),
            "func 'k': in '%x[0] = (1.0 + 2)': operands of '+' have dtypes f32 and i64: "
            "(1.0 + 2)");
  auto bad_load = std::make_shared<ExprNode>();
  bad_load->kind = ExprKind::kLoad;
  bad_load->dtype = DType::kFloat32;
  bad_load->buffer = x;
  bad_load->operands = {IntImm(0), IntImm(1)};
  EXPECT_EQ(VerifyBody(base, Store(x, {IntImm(0)}, bad_load)),
            "func 'k': in '%x[0] = %x[0, 1]': %x has rank 1 but is accessed with 2 indices");
  auto bad_store = std::make_shared<StmtNode>(*Store(x, {IntImm(0)}, FloatImm(0)));
  bad_store->value = IntImm(3);
  EXPECT_EQ(VerifyBody(base, bad_store),
            "func 'k': in '%x[0] = 3': stored value has dtype i64, expected f32");
  EXPECT_EQ(VerifyBody(base, IfThenElse(IntImm(1), Store(x, {IntImm(0)}, FloatImm(0)))),
            "func 'k': in 'if 1': the condition is not bool");
}

}  // namespace
}  // namespace kiln::loop
