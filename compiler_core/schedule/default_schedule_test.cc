// Default schedules on lowered kernels: the schedule text for a conv, every loop kind it
// produces being legal, and bit-identical interpreter results against the unscheduled kernel.
#include "compiler_core/schedule/schedule.h"

#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/lowering/lower.h"
#include "compiler_core/lowering/lowering_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::schedule {
namespace {

using graph::AttrMap;
using graph::Graph;
using graph::Node;
using graph::OpKind;
using graph::Value;
using lowering::testing::F32;
using lowering::testing::Floats;
using lowering::testing::Random;
using lowering::testing::ValueMap;
using ::testing::HasSubstr;

Target Avx2() {
  Target t;
  t.vector_bits = 256;
  t.num_cores = 8;
  return t;
}

/// Lowers `nodes`, applies the default schedule, checks that the trace replays and that the
/// scheduled kernel computes exactly what the unscheduled one does. Returns the schedule.
Schedule CheckDefault(const std::vector<const Node*>& nodes, const ValueMap& inputs) {
  auto kernel = lowering::LowerGroup(nodes, "k");
  EXPECT_TRUE(kernel.ok()) << kernel.status();
  if (!kernel.ok()) return {};
  Schedule s = DefaultSchedule(kernel->func, Avx2());
  loop::Func scheduled = kernel->func;
  absl::Status st = ApplySchedule(s, scheduled);
  EXPECT_TRUE(st.ok()) << st << "\n" << s.ToString();
  loop::Func replay = kernel->func;
  EXPECT_TRUE(ApplySchedule(s, replay).ok());
  EXPECT_EQ(loop::PrintFunc(replay), loop::PrintFunc(scheduled));
  auto want = lowering::testing::RunKernel(*kernel, inputs);
  auto got = lowering::testing::RunFunc(*kernel, scheduled, inputs);
  EXPECT_TRUE(want.ok()) << want.status();
  EXPECT_TRUE(got.ok()) << got.status() << "\n" << loop::PrintFunc(scheduled);
  if (want.ok() && got.ok()) {
    EXPECT_EQ(Floats(**got), Floats(**want)) << s.ToString() << "\n" << loop::PrintFunc(scheduled);
  }
  return s;
}

AttrMap ConvAttrs(int64_t stride, int64_t pad, int64_t group) {
  AttrMap a;
  a.Set("kernel_shape", std::vector<int64_t>{3, 3});
  a.Set("strides", std::vector<int64_t>{stride, stride});
  a.Set("pads", std::vector<int64_t>{pad, pad, pad, pad});
  a.Set("dilations", std::vector<int64_t>{1, 1});
  a.Set("group", group);
  return a;
}

TEST(DefaultScheduleTest, ConvWithFusedReluExactWidth) {
  Graph g;
  Value* x = g.AddInput("x", F32({1, 3, 16, 16}));
  Value* w = g.AddConstant("w", Random(F32({8, 3, 3, 3}), 1));
  Value* b = g.AddConstant("b", Random(F32({8}), 2));
  Node* conv = g.AddNode(OpKind::kConv, "conv", {x, w, b}, {F32({1, 8, 16, 16})},
                         ConvAttrs(1, 1, 1));
  Node* relu = g.AddNode(OpKind::kRelu, "relu", {conv->output(0)}, {F32({1, 8, 16, 16})});
  Schedule s = CheckDefault({conv, relu}, {{x, Random(x->type(), 3)}});
  // Update nest: oc blocked by 4 (unrolled), ow split by 8 lanes below the reductions.
  EXPECT_THAT(s.ToString(), HasSubstr("split(oc, 4)\nsplit(ow, 8)\n"
                                      "reorder(n, oc.o, oh, ow.o, ic, kh, kw, oc.i, ow.i)\n"
                                      "vectorize(ow.i)\nunroll(oc.i)\nfuse(n, oc.o)\n"
                                      "parallel(n.oc.o)"));
}

TEST(DefaultScheduleTest, StridedConvWithTail) {
  Graph g;
  Value* x = g.AddInput("x", F32({2, 4, 23, 23}));
  Value* w = g.AddConstant("w", Random(F32({6, 2, 3, 3}), 4));
  Node* conv = g.AddNode(OpKind::kConv, "conv", {x, w}, {F32({2, 6, 11, 11})},
                         ConvAttrs(2, 0, 2));
  Schedule s = CheckDefault({conv}, {{x, Random(x->type(), 5)}});
  EXPECT_THAT(s.ToString(), HasSubstr("reorder(n, oc, oh, ic, kh, kw, ow)\nsplit(ow, 8)\n"
                                      "vectorize(ow.i)\nvectorize(ow.t)"));
}

// NCHW8c convs with 16 vector registers (AVX2): a register block of one output-channel vector
// over a row of 7 to 14 columns (the whole 13-wide row; 9 of 27), 4 columns for longer rows that
// 4 divides. Stride 2, so that the direct conv is the default.
TEST(DefaultScheduleTest, BlockedConvRegisterBlockWithSixteenRegisters) {
  {
    lowering::testing::BlockedConvGraph conv(1, 25, 1, 2);  // 13 x 13 out
    Schedule s = CheckDefault(conv.nodes, {{conv.x, Random(conv.x->type(), 3)}});
    EXPECT_THAT(s.ToString(), HasSubstr("reorder(n, ocb, oh, icb, kh, kw, ic, ow, oc)\n"
                                        "unroll(ow)\nvectorize(oc)\n"));
  }
  {
    lowering::testing::BlockedConvGraph conv(1, 53, 1, 2);  // 27 x 27 out
    Schedule s = CheckDefault(conv.nodes, {{conv.x, Random(conv.x->type(), 4)}});
    EXPECT_THAT(s.ToString(), HasSubstr("split(ow, 9)\n"
                                        "reorder(n, ocb, oh, ow.o, icb, kh, kw, ic, ow.i, oc)\n"
                                        "unroll(ow.i)\nvectorize(oc)\n"));
  }
  {
    lowering::testing::BlockedConvGraph conv(1, 55, 1, 2);  // 28 x 28 out
    Schedule s = CheckDefault(conv.nodes, {{conv.x, Random(conv.x->type(), 5)}});
    EXPECT_THAT(s.ToString(), HasSubstr("split(ow, 4)\n"
                                        "reorder(n, ocb, oh, ow.o, icb, kh, kw, ic, ow.i, oc)\n"));
  }
}

// With 16 vector registers a 3x3 stride-1 NCHW8c conv defaults to Winograd by output width:
// F(4x4) from 24 columns, F(2x2) from 12, the direct conv below; with 32 (AVX-512), direct.
TEST(DefaultScheduleTest, WinogradDefaultByOutputWidth) {
  for (const auto& [hw, want] :
       std::vector<std::pair<int64_t, std::string>>{{7, ""}, {13, "winograd(2)\n"},
                                                    {27, "winograd(4)\n"}}) {
    SCOPED_TRACE(hw);
    lowering::testing::BlockedConvGraph conv(1, hw, 1, 1);
    auto kernel = lowering::LowerGroup(conv.nodes, "k");
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    const std::string avx2 = DefaultSchedule(kernel->func, Avx2()).ToString();
    EXPECT_EQ(avx2.substr(0, want.size()), want) << avx2;
    if (want.empty()) EXPECT_EQ(avx2.find("winograd"), std::string::npos) << avx2;
    Target avx512 = Avx2();
    avx512.vector_bits = 512;
    EXPECT_EQ(DefaultSchedule(kernel->func, avx512).ToString().find("winograd"),
              std::string::npos);
  }
}

TEST(DefaultScheduleTest, Gemm) {
  Graph g;
  Value* a = g.AddInput("a", F32({8, 20}));
  Value* bm = g.AddConstant("b", Random(F32({20, 24}), 6));
  Value* c = g.AddConstant("c", Random(F32({24}), 7));
  Node* gemm = g.AddNode(OpKind::kGemm, "gemm", {a, bm, c}, {F32({8, 24})});
  Schedule s = CheckDefault({gemm}, {{a, Random(a->type(), 8)}});
  // The bias init runs in the micro-kernel's block, before its reduction.
  EXPECT_THAT(s.ToString(), HasSubstr("compute_at(init."));
}

// A blocked depthwise conv (NCHW8c, 3x3, pad 1) with a fused ReLU: its bias init and ReLU run
// in the register block (compute_at at kh), its padded input per band of output rows into a
// local buffer (compute_at at the row loop), and the result equals the unscheduled kernel's
// bit for bit, for stride 1 and 2.
TEST(DefaultScheduleTest, DepthwiseConvComputesInitEpilogueAndPadAtItsBlocks) {
  for (int64_t stride : {1, 2}) {
    SCOPED_TRACE(stride);
    const int64_t o = (28 + 2 - 3) / stride + 1;
    Graph g;
    Value* x = g.AddInput("x", F32({1, 4, 28, 28, 8}));
    Value* w = g.AddConstant("w", Random(F32({4, 1, 3, 3, 1, 8}), 1));
    Value* b = g.AddConstant("b", Random(F32({32}), 2));
    AttrMap attrs = ConvAttrs(stride, 1, 32);
    attrs.Set("layout", std::string("NCHW8c"));
    Node* conv = g.AddNode(OpKind::kConv, "conv", {x, w, b}, {F32({1, 4, o, o, 8})}, attrs);
    Node* relu = g.AddNode(OpKind::kRelu, "relu", {conv->output(0)}, {F32({1, 4, o, o, 8})});
    Schedule s = CheckDefault({conv, relu}, {{x, Random(x->type(), 3)}});
    const std::string text = s.ToString();
    EXPECT_THAT(text, HasSubstr("compute_at(init.n, kh)\ncompute_at(epi.d0, kh)\n"));
    EXPECT_THAT(text, HasSubstr("split(oh, 7)\n"));  // 28 and 14 rows: bands of 7
    EXPECT_THAT(text, ::testing::ContainsRegex(
                          "compute_at\\(pad\\.n, n\\.ocb(\\.o)?\\.oh\\.o\\)\nvectorize\\(pad\\.cv\\)"));
    auto kernel = lowering::LowerGroup({conv, relu}, "k");
    ASSERT_TRUE(kernel.ok());
    loop::Func scheduled = kernel->func;
    ASSERT_TRUE(ApplySchedule(s, scheduled).ok());
    EXPECT_TRUE(scheduled.workspaces.empty()) << loop::PrintFunc(scheduled);
  }
}

TEST(DefaultScheduleTest, ElementwiseLargeAndSmall) {
  Graph g;
  // The outer extent (2) is below the fixed minimum chunk count, so it is fused with the next.
  Value* a = g.AddInput("a", F32({2, 128, 67}));
  Value* b = g.AddInput("b", F32({128, 1}));
  Node* add = g.AddNode(OpKind::kAdd, "add", {a, b}, {F32({2, 128, 67})});
  Schedule s = CheckDefault({add}, {{a, Random(a->type(), 9)}, {b, Random(b->type(), 10)}});
  EXPECT_EQ(s.ToString(),
            "split(d2, 8)\nvectorize(d2.i)\nvectorize(d2.t)\nfuse(d0, d1)\nparallel(d0.d1)");
  Value* small = g.AddInput("s", F32({3, 5}));
  Node* relu = g.AddNode(OpKind::kRelu, "relu", {small}, {F32({3, 5})});
  EXPECT_EQ(CheckDefault({relu}, {{small, Random(small->type(), 11)}}).ToString(),
            "vectorize(d1)");
}

TEST(DefaultScheduleTest, PoolsSoftmaxAndPad) {
  Graph g;
  Value* x = g.AddInput("x", F32({1, 4, 9, 9}));
  ValueMap in = {{x, Random(x->type(), 12)}};
  AttrMap p;
  p.Set("kernel_shape", std::vector<int64_t>{3, 3});
  p.Set("strides", std::vector<int64_t>{2, 2});
  p.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  p.Set("ceil_mode", int64_t{1});
  p.Set("count_include_pad", int64_t{0});
  CheckDefault({g.AddNode(OpKind::kAveragePool, "ap", {x}, {F32({1, 4, 5, 5})}, p)}, in);
  CheckDefault({g.AddNode(OpKind::kMaxPool, "mp", {x}, {F32({1, 4, 5, 5})}, p)}, in);
  CheckDefault({g.AddNode(OpKind::kGlobalAveragePool, "gap", {x}, {F32({1, 4, 1, 1})})}, in);
  AttrMap axis;
  axis.Set("axis", int64_t{3});
  Schedule s = CheckDefault({g.AddNode(OpKind::kSoftmax, "sm", {x}, {F32({1, 4, 9, 9})}, axis)},
                            in);
  EXPECT_THAT(s.ToString(), HasSubstr("vectorize(exp.a.i)"));
}

}  // namespace
}  // namespace kiln::schedule
