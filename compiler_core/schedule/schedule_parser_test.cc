// Schedule parser: text round trips, errors with line and column, and the default schedules of
// real lowered kernels replayed from text onto the kernel parsed from its printed loop IR.
#include "compiler_core/schedule/schedule_parser.h"

#include "compiler_core/ir/loop/parser.h"
#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/lowering/lower.h"
#include "compiler_core/lowering/lowering_test_util.h"
#include "gtest/gtest.h"

namespace kiln::schedule {
namespace {

using graph::AttrMap;
using graph::Graph;
using graph::Node;
using graph::OpKind;
using graph::Value;
using lowering::testing::F32;
using lowering::testing::Random;

std::string ParseError(const std::string& text) {
  absl::StatusOr<Schedule> s = ParseSchedule(text);
  EXPECT_FALSE(s.ok()) << s->ToString();
  if (s.ok()) return "";
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(s.status().message());
}

TEST(ScheduleParserTest, RoundTripsEveryPrimitive) {
  const std::string text =
      "split(ow, 16)\nreorder(n, oc, oh, ow.o, ic, ow.i)\nfuse(n, oc)\nvectorize(ow.i)\n"
      "unroll(oc.i)\nparallel(n.oc)";
  absl::StatusOr<Schedule> s = ParseSchedule(text);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->steps.size(), 6u);
  EXPECT_EQ(s->steps[0].kind, Primitive::Kind::kSplit);
  EXPECT_EQ(s->steps[0].factor, 16);
  EXPECT_EQ(s->steps[1].loops.size(), 6u);
  EXPECT_EQ(s->ToString(), text);
  // The empty schedule; ';' separators, blank lines and comment lines.
  EXPECT_EQ(ParseSchedule("")->steps.size(), 0u);
  absl::StatusOr<Schedule> inline_form =
      ParseSchedule("// tiles\n\nsplit(i, 4); vectorize(i.i)\n");
  ASSERT_TRUE(inline_form.ok()) << inline_form.status();
  EXPECT_EQ(inline_form->ToString(), "split(i, 4)\nvectorize(i.i)");
}

TEST(ScheduleParserTest, ErrorsSayWhereAndWhatWasExpected) {
  EXPECT_EQ(ParseError("split(i, 4)\ntile(i, 4)"),
            "2:1: expected a schedule primitive (split, reorder, fuse, vectorize, unroll, "
            "parallel, winograd, compute_at, bind, gpu_tile or gpu_tile_mma), got 'tile'");
  EXPECT_EQ(ParseError("split(i)"), "1:8: expected ',' and the split factor, got ')'");
  EXPECT_EQ(ParseError("split(i, 4, 5)"), "1:11: expected ')' after the split factor, got ','");
  EXPECT_EQ(ParseError("vectorize(4)"), "1:11: expected a loop name, got '4'");
  EXPECT_EQ(ParseError("fuse(a b)"), "1:8: expected ',' or ')', got 'b'");
  EXPECT_EQ(ParseError("parallel i"), "1:10: expected '(', got 'i'");
  EXPECT_EQ(ParseError("unroll(i) unroll(j)"),
            "1:11: expected the end of the line or ';' after a step, got 'unroll'");
  EXPECT_EQ(ParseError("split(i, 99999999999999999999)"),
            "1:10: expected an integer split factor, got '99999999999999999999'");
}

/// Lowers `nodes`, prints its default schedule and loop IR, parses both back, and checks that
/// the parsed schedule on the parsed kernel prints as the original schedule on the original.
void CheckReplayFromText(const std::vector<const Node*>& nodes) {
  Target target;
  target.vector_bits = 256;
  target.num_cores = 8;
  absl::StatusOr<lowering::LoweredKernel> kernel = lowering::LowerGroup(nodes, "k");
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  Schedule sched = DefaultSchedule(kernel->func, target);
  ASSERT_FALSE(sched.steps.empty());
  absl::StatusOr<Schedule> parsed_sched = ParseSchedule(sched.ToString());
  ASSERT_TRUE(parsed_sched.ok()) << parsed_sched.status();
  EXPECT_EQ(parsed_sched->ToString(), sched.ToString());

  absl::StatusOr<loop::Func> parsed_func = loop::ParseFunc(loop::PrintFunc(kernel->func));
  ASSERT_TRUE(parsed_func.ok()) << parsed_func.status();
  loop::Func want = kernel->func;
  ASSERT_TRUE(ApplySchedule(sched, want).ok());
  ASSERT_TRUE(ApplySchedule(*parsed_sched, *parsed_func).ok());
  EXPECT_EQ(loop::PrintFunc(*parsed_func), loop::PrintFunc(want)) << sched.ToString();
  // The default schedule does not depend on what printing loses (node sharing, blocks).
  EXPECT_EQ(DefaultSchedule(*loop::ParseFunc(loop::PrintFunc(kernel->func)), target).ToString(),
            sched.ToString());
}

TEST(ScheduleParserTest, DefaultSchedulesOfRealKernelsReplayFromText) {
  Graph g;
  Value* x = g.AddInput("x", F32({1, 3, 16, 19}));
  Value* w = g.AddConstant("w", Random(F32({8, 3, 3, 3}), 1));
  AttrMap conv;
  conv.Set("kernel_shape", std::vector<int64_t>{3, 3});
  conv.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  Node* c = g.AddNode(OpKind::kConv, "conv", {x, w}, {F32({1, 8, 16, 19})}, conv);
  Node* relu = g.AddNode(OpKind::kRelu, "relu", {c->output(0)}, {F32({1, 8, 16, 19})});
  CheckReplayFromText({c, relu});

  Value* a = g.AddInput("a", F32({8, 20}));
  Value* b = g.AddConstant("b", Random(F32({20, 24}), 2));
  CheckReplayFromText({g.AddNode(OpKind::kGemm, "gemm", {a, b}, {F32({8, 24})})});

  AttrMap pool;
  pool.Set("kernel_shape", std::vector<int64_t>{3, 3});
  pool.Set("strides", std::vector<int64_t>{2, 2});
  CheckReplayFromText({g.AddNode(OpKind::kMaxPool, "mp", {x}, {F32({1, 3, 7, 9})}, pool)});

  AttrMap axis;
  axis.Set("axis", int64_t{3});
  CheckReplayFromText({g.AddNode(OpKind::kSoftmax, "sm", {x}, {F32({1, 3, 16, 19})}, axis)});

  Value* y = g.AddInput("y", F32({3, 1, 19}));
  CheckReplayFromText({g.AddNode(OpKind::kAdd, "add", {x, y}, {F32({1, 3, 16, 19})})});
}

}  // namespace
}  // namespace kiln::schedule
