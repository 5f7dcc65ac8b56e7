// Printed loop IR of small lowered kernels (golden strings): the nest structure, loop names,
// reduction marks, padding workspace and parameter order that schedules and codegen rely on.
#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/lowering/lower.h"
#include "compiler_core/lowering/lowering_test_util.h"
#include "gtest/gtest.h"

namespace kiln::lowering {
namespace {

using graph::AttrMap;
using graph::OpKind;
using testing::F32;
using testing::Random;

TEST(LoweringGoldenTest, PaddedConvWithBias) {
  graph::Graph g;
  graph::Value* x = g.AddInput("x", F32({1, 1, 4, 4}));
  graph::Value* w = g.AddConstant("w", Random(F32({2, 1, 3, 3}), 1));
  graph::Value* b = g.AddConstant("b", Random(F32({2}), 2));
  AttrMap a;
  a.Set("kernel_shape", std::vector<int64_t>{3, 3});
  a.Set("strides", std::vector<int64_t>{2, 2});
  a.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  a.Set("dilations", std::vector<int64_t>{1, 1});
  a.Set("group", int64_t{1});
  graph::Node* conv = g.AddNode(OpKind::kConv, "conv", {x, w, b}, {F32({1, 2, 2, 2})}, a);
  auto k = LowerGroup({conv}, "conv_k");
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(loop::PrintFunc(k->func), R"(func @conv_k(%in0: f32[1,1,4,4], %in1: f32[2,1,3,3] const, %in2: f32[2] const, %out: f32[1,2,2,2]) workspace(%xpad: f32[1,1,6,6]) anchor=Conv {
  for pad.n in 0..1 {
    for pad.c in 0..1 {
      for pad.h in 0..6 {
        for pad.w in 0..6 {
          %xpad[pad.n, pad.c, pad.h, pad.w] = select((((((pad.h - 1) >= 0) && ((pad.h - 1) < 4)) && ((pad.w - 1) >= 0)) && ((pad.w - 1) < 4)), %in0[pad.n, pad.c, min(max((pad.h - 1), 0), 3), min(max((pad.w - 1), 0), 3)], 0.0)
        }
      }
    }
  }
  for init.n in 0..1 {
    for init.oc in 0..2 {
      for init.oh in 0..2 {
        for init.ow in 0..2 {
          %out[init.n, init.oc, init.oh, init.ow] = %in2[init.oc]
        }
      }
    }
  }
  for n in 0..1 {
    for oc in 0..2 {
      for oh in 0..2 {
        for ow in 0..2 {
          for ic in 0..1 reduce {
            for kh in 0..3 reduce {
              for kw in 0..3 reduce {
                %out[n, oc, oh, ow] = (%out[n, oc, oh, ow] + (%xpad[n, ic, ((oh * 2) + kh), ((ow * 2) + kw)] * %in1[oc, ic, kh, kw]))
              }
            }
          }
        }
      }
    }
  }
}
)");
}

TEST(LoweringGoldenTest, GemmTransB) {
  graph::Graph g;
  graph::Value* a = g.AddInput("a", F32({2, 3}));
  graph::Value* b = g.AddConstant("b", Random(F32({4, 3}), 3));
  graph::Value* c = g.AddConstant("c", Random(F32({1, 4}), 4));
  AttrMap attrs;
  attrs.Set("transA", int64_t{0});
  attrs.Set("transB", int64_t{1});
  attrs.Set("alpha", 1.0f);
  attrs.Set("beta", 0.5f);
  graph::Node* gemm = g.AddNode(OpKind::kGemm, "fc", {a, b, c}, {F32({2, 4})}, attrs);
  auto k = LowerGroup({gemm}, "fc_k");
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(loop::PrintFunc(k->func), R"(func @fc_k(%in0: f32[2,3], %in1: f32[4,3] const, %in2: f32[1,4] const, %out: f32[2,4]) anchor=Gemm {
  for init.i in 0..2 {
    for init.j in 0..4 {
      %out[init.i, init.j] = (0.5 * %in2[0, init.j])
    }
  }
  for i in 0..2 {
    for j in 0..4 {
      for k in 0..3 reduce {
        %out[i, j] = (%out[i, j] + (%in0[i, k] * %in1[j, k]))
      }
    }
  }
}
)");
}

}  // namespace
}  // namespace kiln::lowering
