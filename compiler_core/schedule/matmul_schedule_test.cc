// Tests of the matmul micro-kernel schedule: tile choice, the printed loop nest of a Gemm with
// row, column and k tails, trace replay, and bit-identical interpreter results against the
// unscheduled kernel (the k order of every output element is unchanged).
#include "compiler_core/schedule/matmul_schedule.h"

#include "compiler_core/ir/graph/matmul_packing.h"
#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/lowering/lower.h"
#include "compiler_core/lowering/lowering_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::schedule {
namespace {

using graph::Graph;
using graph::Node;
using graph::OpKind;
using graph::Value;
using lowering::testing::F32;
using lowering::testing::Floats;
using lowering::testing::Random;
using ::testing::HasSubstr;

Target WithBits(int bits) {
  Target t;
  t.vector_bits = bits;
  return t;
}

TEST(MatMulScheduleTest, TileChoice) {
  const Target avx512 = WithBits(512), avx2 = WithBits(256);
  MatMulTile t = ChooseMatMulTile(1024, 1024, 1024, avx512);
  EXPECT_EQ(t.mr, 8);  // 1024 % 6 != 0, 8 rows divide it
  EXPECT_EQ(t.nr, 32);
  EXPECT_EQ(t.kc, 256);
  EXPECT_EQ(ChooseMatMulTile(49, 512, 4608, avx512).mr, 7);
  EXPECT_EQ(ChooseMatMulTile(1, 1000, 512, avx512).nr, 64);  // GEMV: more columns
  EXPECT_EQ(ChooseMatMulTile(1, 1000, 512, avx512).kc, 0);
  t = ChooseMatMulTile(100, 64, 576, avx2);
  EXPECT_EQ(t.nr, 16);
  EXPECT_EQ(t.mr, 5);
  EXPECT_EQ(t.kc, 0);  // 576 is within 1.5 blocks of 512: not blocked
  EXPECT_EQ(ChooseMatMulTile(100, 64, 1001, avx2).kc, 504);  // two near-equal blocks
}

/// Lowers `node`, applies the default schedule and checks replay and exact numerics.
std::string CheckScheduled(const Node* node, Value* x, const Target& target,
                           std::string* sched_text) {
  auto kernel = lowering::LowerGroup({node}, "k");
  EXPECT_TRUE(kernel.ok()) << kernel.status();
  if (!kernel.ok()) return "";
  Schedule s = DefaultSchedule(kernel->func, target);
  *sched_text = s.ToString();
  loop::Func scheduled = kernel->func, replay = kernel->func;
  absl::Status st = ApplySchedule(s, scheduled);
  EXPECT_TRUE(st.ok()) << st << "\n" << s.ToString();
  EXPECT_TRUE(ApplySchedule(s, replay).ok());
  EXPECT_EQ(loop::PrintFunc(replay), loop::PrintFunc(scheduled));
  lowering::testing::ValueMap in = {{x, Random(x->type(), 3)}};
  auto want = lowering::testing::RunKernel(*kernel, in);
  auto got = lowering::testing::RunFunc(*kernel, scheduled, in);
  EXPECT_TRUE(want.ok() && got.ok());
  if (want.ok() && got.ok()) EXPECT_EQ(Floats(**got), Floats(**want)) << s.ToString();
  return loop::PrintStmt(scheduled.body);
}

TEST(MatMulScheduleTest, GemmWithAllTails) {
  // On AVX2: M = 13 (two 5-row tiles and a 3-row tail), N = 37 (two 16-column blocks and a
  // 5-column tail), K = 1001 (a k block of 504 and a k tail of 497).
  Graph g;
  Value* a = g.AddInput("a", F32({13, 1001}));
  Value* b = g.AddConstant("b", Random(F32({1001, 37}), 1));
  Value* c = g.AddConstant("c", Random(F32({37}), 2));
  Node* gemm = g.AddNode(OpKind::kGemm, "gemm", {a, b, c}, {F32({13, 37})});
  std::string sched;
  std::string ir = CheckScheduled(gemm, a, WithBits(256), &sched);
  EXPECT_THAT(sched, HasSubstr(
            "reorder(j, k, i)\nsplit(j, 16)\nreorder(j.o, k, i, j.i)\nreorder(k, i, j.t)\n"
            "split(k, 504)\nreorder(k.o, i, k.i)\nreorder(i, k.t)\nsplit(i, 5)\n"
            "reorder(k.i, i.i)\nreorder(k.t, i.i)\nreorder(k.i, i.t)\nreorder(k.t, i.t)\nunroll(i.i)\nunroll(i.t)\n"
            "vectorize(j.i)\nvectorize(j.t)\nparallel(j.o)"));
  // The main micro-kernel: 5 unrolled rows × 16 vector columns inside the k block.
  EXPECT_THAT(ir, HasSubstr("parallel for j.o in 0..2 {\n"
                            "  for k.o in 0..1 reduce {\n"
                            "    for i.o in 0..2 {\n"
                            "      for k.i in 0..504 reduce {\n"
                            "        unrolled for i.i in 0..5 {\n"
                            "          vectorized for j.i in 0..16 {\n"));
  // Row tail below the k block, and the column tail with the same structure.
  EXPECT_THAT(ir, HasSubstr("    for k.i in 0..504 reduce {\n"
                            "      unrolled for i.t in 0..3 {\n"
                            "        vectorized for j.i in 0..16 {\n"));
  EXPECT_THAT(ir, HasSubstr("for k.t in 0..497 reduce {\n"
                            "  unrolled for i.t in 0..3 {\n"
                            "    vectorized for j.t in 0..5 {\n"));
}

TEST(MatMulScheduleTest, PackedGemmPanelsAndTail) {
  // The same product with B packed in panels of 16 (AVX2's nr): the panel nest [i, jb, jj, k]
  // needs no j split, and the 5-column tail nest [i_1, jt, k_1] gets the same micro-kernel.
  Graph g;
  Value* a = g.AddInput("a", F32({13, 1001}));
  graph::AttrMap attrs;
  attrs.Set("b_layout", graph::PackedBLayout(16));
  attrs.Set("b_cols", int64_t{37});
  Value* b = g.AddConstant("b", graph::PackMatMulB(*Random(F32({1001, 37}), 1), 16));
  Node* gemm = g.AddNode(OpKind::kGemm, "gemm", {a, b}, {F32({13, 37})}, attrs);
  std::string sched;
  std::string ir = CheckScheduled(gemm, a, WithBits(256), &sched);
  EXPECT_THAT(sched, HasSubstr("reorder(jb, k, i, jj)\nsplit(k, 504)\n"));
  EXPECT_THAT(sched, HasSubstr("vectorize(jj)\nparallel(jb)"));
  EXPECT_THAT(sched, HasSubstr("vectorize(jt)"));
  EXPECT_THAT(ir, HasSubstr("parallel for jb in 0..2 {\n"
                            "  for k.o in 0..1 reduce {\n"
                            "    for i.o in 0..2 {\n"
                            "      for k.i in 0..504 reduce {\n"
                            "        unrolled for i.i in 0..5 {\n"
                            "          vectorized for jj in 0..16 {\n"));
  EXPECT_THAT(ir, HasSubstr("for k_1 in 0..1001 reduce {\n"
                            "    unrolled for i_1.i in 0..8 {\n"
                            "      vectorized for jt in 0..5 {\n"));
}

TEST(MatMulScheduleTest, BatchedMatMulParallelOverBatch) {
  Graph g;
  Value* a = g.AddInput("a", F32({3, 20, 128}));
  Value* b = g.AddConstant("b", Random(F32({3, 128, 50}), 4));
  Node* mm = g.AddNode(OpKind::kMatMul, "mm", {a, b}, {F32({3, 20, 50})});
  std::string sched;
  std::string ir = CheckScheduled(mm, a, WithBits(512), &sched);
  EXPECT_THAT(sched, HasSubstr("parallel(b0)"));
  EXPECT_THAT(ir, HasSubstr("unrolled for i.i in 0..5 {\n"));
}

TEST(MatMulScheduleTest, NotAMatMulNest) {
  // A matrix-vector product has no j loop: the planner leaves it to the generic schedule.
  Graph g;
  Value* a = g.AddInput("a", F32({8, 16}));
  Value* v = g.AddConstant("v", Random(F32({16}), 5));
  Node* mv = g.AddNode(OpKind::kMatMul, "mv", {a, v}, {F32({8})});
  auto kernel = lowering::LowerGroup({mv}, "k");
  ASSERT_TRUE(kernel.ok());
  const loop::Stmt body = kernel->func.body;
  ASSERT_EQ(body->kind, loop::StmtKind::kBlock);
  for (const loop::Stmt& nest : body->stmts) {
    EXPECT_TRUE(MatMulUpdateSchedule(nest, OpKind::kMatMul, WithBits(512)).empty());
  }
}

}  // namespace
}  // namespace kiln::schedule
