// Tests of the schedule primitives on hand-built loop nests: printed IR after each primitive,
// illegal steps failing with kFailedPrecondition (leaving the func unchanged), trace replay,
// and numerics through the interpreter.
#include "compiler_core/schedule/schedule.h"

#include <vector>

#include "compiler_core/ir/loop/interpreter.h"
#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/ir/loop/verifier.h"
#include "compiler_core/schedule/schedule_parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::schedule {
namespace {

using loop::BufferRef;
using loop::Expr;
using loop::ForKind;
using loop::Func;
using loop::VarRef;
using Kind = Primitive::Kind;
using ::testing::HasSubstr;

/// out[i, j] += a[i, k] * b[k, j] over i < 4, j < 10, k < 3 (k a reduction).
Func MatMulFunc() {
  BufferRef a = loop::MakeBuffer("a", DType::kFloat32, {4, 3});
  BufferRef b = loop::MakeBuffer("b", DType::kFloat32, {3, 10});
  BufferRef out = loop::MakeBuffer("out", DType::kFloat32, {4, 10});
  loop::Var i = loop::MakeVar("i"), j = loop::MakeVar("j"), k = loop::MakeVar("k");
  std::vector<Expr> o = {VarRef(i), VarRef(j)};
  Func f;
  f.name = "mm";
  f.params = {a, b, out};
  f.anchor = graph::OpKind::kMatMul;
  f.body = loop::For(
      i, 4,
      loop::For(j, 10,
                loop::For(k, 3,
                          loop::Store(out, o,
                                      loop::Load(out, o) + loop::Load(a, {VarRef(i), VarRef(k)}) *
                                                               loop::Load(b, {VarRef(k), VarRef(j)})),
                          ForKind::kSerial, /*is_reduction=*/true)));
  return f;
}

Schedule Steps(std::vector<Primitive> steps) { return Schedule{std::move(steps)}; }

std::vector<float> Execute(const Func& f) {
  std::vector<float> a(12), b(30), out(40, 0);
  for (size_t n = 0; n < a.size(); ++n) a[n] = 0.5f * n - 2;
  for (size_t n = 0; n < b.size(); ++n) b[n] = 0.25f * n - 3;
  absl::Status s = loop::InterpretFunc(f, {a.data(), b.data(), out.data()});
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

TEST(ScheduleTest, ToString) {
  Schedule s = Steps({{Kind::kSplit, {"j"}, 4}, {Kind::kReorder, {"k", "j.i"}},
                      {Kind::kVectorize, {"j.i"}}, {Kind::kFuse, {"i", "j.o"}},
                      {Kind::kParallel, {"i.j.o"}}, {Kind::kUnroll, {"k"}}});
  EXPECT_EQ(s.ToString(),
            "split(j, 4)\nreorder(k, j.i)\nvectorize(j.i)\nfuse(i, j.o)\nparallel(i.j.o)\n"
            "unroll(k)");
}

TEST(ScheduleTest, SplitWithTail) {
  Func f = MatMulFunc();
  ASSERT_TRUE(ApplySchedule(Steps({{Kind::kSplit, {"j"}, 4}}), f).ok());
  EXPECT_EQ(PrintStmt(f.body),
            "for i in 0..4 {\n"
            "  for j.o in 0..2 {\n"
            "    for j.i in 0..4 {\n"
            "      for k in 0..3 reduce {\n"
            "        %out[i, ((j.o * 4) + j.i)] = (%out[i, ((j.o * 4) + j.i)] + (%a[i, k] * "
            "%b[k, ((j.o * 4) + j.i)]))\n"
            "      }\n"
            "    }\n"
            "  }\n"
            "  for j.t in 0..2 {\n"
            "    for k in 0..3 reduce {\n"
            "      %out[i, (8 + j.t)] = (%out[i, (8 + j.t)] + (%a[i, k] * %b[k, (8 + j.t)]))\n"
            "    }\n"
            "  }\n"
            "}\n");
  EXPECT_EQ(Execute(f), Execute(MatMulFunc()));
}

TEST(ScheduleTest, SplitReductionAndLargeFactor) {
  Func f = MatMulFunc();
  ASSERT_TRUE(ApplySchedule(Steps({{Kind::kSplit, {"k"}, 8}}), f).ok());
  EXPECT_THAT(PrintStmt(f.body), HasSubstr("for k.o in 0..1 reduce {\n"));
  EXPECT_THAT(PrintStmt(f.body), HasSubstr("for k.i in 0..3 reduce {\n"));
  EXPECT_EQ(Execute(f), Execute(MatMulFunc()));
}

TEST(ScheduleTest, ReorderVectorizeParallel) {
  Func f = MatMulFunc();
  Schedule s = Steps({{Kind::kSplit, {"j"}, 5}, {Kind::kReorder, {"j.o", "k", "j.i"}},
                      {Kind::kVectorize, {"j.i"}}, {Kind::kParallel, {"i"}},
                      {Kind::kUnroll, {"k"}}});
  ASSERT_TRUE(ApplySchedule(s, f).ok());
  EXPECT_EQ(PrintStmt(f.body),
            "parallel for i in 0..4 {\n"
            "  for j.o in 0..2 {\n"
            "    unrolled for k in 0..3 reduce {\n"
            "      vectorized for j.i in 0..5 {\n"
            "        %out[i, ((j.o * 5) + j.i)] = (%out[i, ((j.o * 5) + j.i)] + (%a[i, k] * "
            "%b[k, ((j.o * 5) + j.i)]))\n"
            "      }\n"
            "    }\n"
            "  }\n"
            "}\n");
  EXPECT_EQ(Execute(f), Execute(MatMulFunc()));
}

TEST(ScheduleTest, ReorderReachesSplitTails) {
  // The tail j.t holds copies of i and k but not j.o / j.i: each reorder permutes whichever of
  // its loops a chain holds, so the main part and the tail are reordered step by step.
  Func f = MatMulFunc();
  Schedule s = Steps({{Kind::kReorder, {"j", "i"}}, {Kind::kSplit, {"j"}, 4},
                      {Kind::kReorder, {"j.o", "i", "k", "j.i"}},
                      {Kind::kReorder, {"i", "k", "j.t"}}, {Kind::kVectorize, {"j.i"}},
                      {Kind::kVectorize, {"j.t"}}});
  ASSERT_TRUE(ApplySchedule(s, f).ok());
  EXPECT_EQ(PrintStmt(f.body),
            "for j.o in 0..2 {\n"
            "  for i in 0..4 {\n"
            "    for k in 0..3 reduce {\n"
            "      vectorized for j.i in 0..4 {\n"
            "        %out[i, ((j.o * 4) + j.i)] = (%out[i, ((j.o * 4) + j.i)] + (%a[i, k] * "
            "%b[k, ((j.o * 4) + j.i)]))\n"
            "      }\n"
            "    }\n"
            "  }\n"
            "}\n"
            "for i in 0..4 {\n"
            "  for k in 0..3 reduce {\n"
            "    vectorized for j.t in 0..2 {\n"
            "      %out[i, (8 + j.t)] = (%out[i, (8 + j.t)] + (%a[i, k] * %b[k, (8 + j.t)]))\n"
            "    }\n"
            "  }\n"
            "}\n");
  EXPECT_EQ(Execute(f), Execute(MatMulFunc()));
  Func replay = MatMulFunc();
  ASSERT_TRUE(ApplySchedule(s, replay).ok());
  EXPECT_EQ(PrintFunc(replay), PrintFunc(f));
}

TEST(ScheduleTest, Fuse) {
  Func f = MatMulFunc();
  ASSERT_TRUE(ApplySchedule(Steps({{Kind::kFuse, {"i", "j"}}}), f).ok());
  EXPECT_THAT(PrintStmt(f.body), HasSubstr("for i.j in 0..40 {\n"));
  EXPECT_THAT(PrintStmt(f.body), HasSubstr("%a[(i.j // 10), k]"));
  EXPECT_THAT(PrintStmt(f.body), HasSubstr("%b[k, (i.j % 10)]"));
  EXPECT_EQ(Execute(f), Execute(MatMulFunc()));
}

TEST(ScheduleTest, TraceReplaysToIdenticalIr) {
  Schedule s = Steps({{Kind::kReorder, {"k", "j"}}, {Kind::kSplit, {"j"}, 4},
                      {Kind::kVectorize, {"j.i"}}, {Kind::kVectorize, {"j.t"}},
                      {Kind::kParallel, {"i"}}});
  Func f1 = MatMulFunc(), f2 = MatMulFunc();
  ASSERT_TRUE(ApplySchedule(s, f1).ok());
  ASSERT_TRUE(ApplySchedule(s, f2).ok());
  EXPECT_EQ(PrintFunc(f1), PrintFunc(f2));
  EXPECT_THAT(PrintFunc(f1), HasSubstr("vectorized for j.t in 0..2 {"));
  EXPECT_EQ(Execute(f1), Execute(MatMulFunc()));
}

void ExpectIllegal(const Schedule& s, const std::string& why) {
  Func f = MatMulFunc();
  std::string before = PrintFunc(f);
  absl::Status status = ApplySchedule(s, f);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_THAT(std::string(status.message()), HasSubstr(why));
  EXPECT_EQ(PrintFunc(f), before) << "func changed by a failed schedule";
}

TEST(ScheduleTest, IllegalPrimitivesFail) {
  ExpectIllegal(Steps({{Kind::kSplit, {"nope"}, 4}}), "no loop named 'nope'");
  ExpectIllegal(Steps({{Kind::kSplit, {"j"}, 0}}), "factor 0 is not positive");
  ExpectIllegal(Steps({{Kind::kVectorize, {"k"}}}), "it is a reduction loop");
  ExpectIllegal(Steps({{Kind::kVectorize, {"j"}}}), "it is not innermost");
  ExpectIllegal(Steps({{Kind::kParallel, {"k"}}}), "it is a reduction loop");
  ExpectIllegal(Steps({{Kind::kParallel, {"i"}}, {Kind::kParallel, {"j"}}}),
                "it is inside parallel loop 'i'");
  ExpectIllegal(Steps({{Kind::kFuse, {"i", "k"}}}), "is not the only statement");
  // After a split with a tail, j.o and k are no longer one perfect nest with i.
  ExpectIllegal(Steps({{Kind::kSplit, {"j"}, 4}, {Kind::kReorder, {"k", "i"}}}),
                "not one perfect nest");
  // No chain holds both the main piece and the tail of a split.
  ExpectIllegal(Steps({{Kind::kReorder, {"j", "i"}}, {Kind::kSplit, {"j"}, 4},
                       {Kind::kReorder, {"j.t", "j.i"}}}),
                "not one perfect nest");
  ExpectIllegal(Steps({{Kind::kReorder, {"nope", "k"}}}), "not one perfect nest");
  ExpectIllegal(Steps({{Kind::kSplit, {"j"}, 4}, {Kind::kSplit, {"j"}, 2}}),
                "a loop named 'j.o' already exists");
  ExpectIllegal(Steps({{Kind::kReorder, {"k", "j"}}, {Kind::kSplit, {"j"}, 4},
                       {Kind::kVectorize, {"j.i"}},
                       {Kind::kParallel, {"j.i"}}}),
                "already vectorized");
}

// bind (issue 9): a GPU grid over the matmul's spatial loops, parsed from the schedule text,
// applied, verified and interpreted (a bound loop's iterations are independent, so the
// interpreter runs them in order and the result equals the unscheduled one); illegal bindings
// fail saying why.
TEST(ScheduleTest, BindToGpuIndices) {
  absl::StatusOr<Schedule> parsed = ParseSchedule(
      "split(j, 5)\nbind(i, blockIdx.x)\nbind(j.o, blockIdx.y)\nbind(j.i, threadIdx.x)");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->ToString(),
            "split(j, 5)\nbind(i, blockIdx.x)\nbind(j.o, blockIdx.y)\nbind(j.i, threadIdx.x)");
  Func f = MatMulFunc();
  absl::Status applied = ApplySchedule(*parsed, f);
  ASSERT_TRUE(applied.ok()) << applied;
  EXPECT_THAT(PrintStmt(f.body), HasSubstr("blockIdx.x for i in 0..4 {\n"
                                           "  blockIdx.y for j.o in 0..2 {\n"
                                           "    threadIdx.x for j.i in 0..5 {\n"));
  EXPECT_TRUE(loop::VerifyFunc(f).ok());
  EXPECT_EQ(Execute(f), Execute(MatMulFunc()));
  ExpectIllegal(Steps({{Kind::kBind, {"k", "threadIdx.x"}}}), "it is a reduction loop");
  ExpectIllegal(Steps({{Kind::kBind, {"i", "threadIdx.x"}}, {Kind::kBind, {"j", "blockIdx.x"}}}),
                "it is inside threadIdx.x loop 'i'");
  ExpectIllegal(Steps({{Kind::kBind, {"i", "blockIdx.x"}}, {Kind::kBind, {"j", "blockIdx.x"}}}),
                "it is inside blockIdx.x loop 'i'");
  ExpectIllegal(Steps({{Kind::kParallel, {"i"}}, {Kind::kBind, {"j", "threadIdx.y"}}}),
                "it is inside parallel loop 'i'");
  ExpectIllegal(Steps({{Kind::kBind, {"i", "warp.x"}}}),
                "'warp.x' is not a GPU index (blockIdx.x|y|z, threadIdx.x|y|z)");
}

TEST(ScheduleTest, ErrorNamesTheStep) {
  Func f = MatMulFunc();
  absl::Status s = ApplySchedule(Steps({{Kind::kSplit, {"j"}, 2}, {Kind::kVectorize, {"k"}}}), f);
  EXPECT_THAT(std::string(s.message()), HasSubstr("func 'mm' step 1 vectorize(k)"));
}

}  // namespace
}  // namespace kiln::schedule
