// Schedule spaces: the default is a point of the space, candidates replay, and every sampled,
// mutated or crossed candidate computes what the unscheduled kernel computes.
#include "compiler_core/tuning/space.h"

#include <cmath>

#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/lowering/lower.h"
#include "compiler_core/lowering/lowering_test_util.h"
#include "gtest/gtest.h"

namespace kiln::tuning {
namespace {

using graph::AttrMap;
using graph::OpKind;
using lowering::testing::F32;
using lowering::testing::Floats;
using lowering::testing::Random;
using lowering::testing::ValueMap;

Target Avx2() {
  Target t;
  t.vector_bits = 256;
  return t;
}

struct Kernel {
  graph::Graph graph;
  std::vector<const graph::Node*> nodes;
  ValueMap inputs;
  lowering::LoweredKernel lowered;
};

std::unique_ptr<Kernel> ConvRelu() {
  auto k = std::make_unique<Kernel>();
  graph::Value* x = k->graph.AddInput("x", F32({1, 3, 10, 10}));
  graph::Value* w = k->graph.AddConstant("w", Random(F32({8, 3, 3, 3}), 1));
  AttrMap a;
  a.Set("kernel_shape", std::vector<int64_t>{3, 3});
  a.Set("strides", std::vector<int64_t>{1, 1});
  a.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  a.Set("dilations", std::vector<int64_t>{1, 1});
  a.Set("group", int64_t{1});
  graph::Node* conv = k->graph.AddNode(OpKind::kConv, "conv", {x, w}, {F32({1, 8, 10, 10})}, a);
  graph::Node* relu =
      k->graph.AddNode(OpKind::kRelu, "relu", {conv->output(0)}, {F32({1, 8, 10, 10})});
  k->nodes = {conv, relu};
  k->inputs = {{x, Random(x->type(), 3)}};
  auto lowered = lowering::LowerGroup(k->nodes, "k");
  EXPECT_TRUE(lowered.ok()) << lowered.status();
  k->lowered = *lowered;
  return k;
}

std::unique_ptr<Kernel> MatMul() {
  auto k = std::make_unique<Kernel>();
  graph::Value* a = k->graph.AddInput("a", F32({13, 40}));
  graph::Value* b = k->graph.AddInput("b", F32({40, 37}));
  graph::Node* mm = k->graph.AddNode(OpKind::kMatMul, "mm", {a, b}, {F32({13, 37})});
  k->nodes = {mm};
  k->inputs = {{a, Random(a->type(), 4)}, {b, Random(b->type(), 5)}};
  auto lowered = lowering::LowerGroup(k->nodes, "k");
  EXPECT_TRUE(lowered.ok()) << lowered.status();
  k->lowered = *lowered;
  return k;
}

/// The candidate applies, and its interpreted output matches the unscheduled kernel's within
/// 1e-5 + 1e-5 * |expected| (reordered reductions round differently).
void ExpectComputesTheSame(const Kernel& k, const Candidate& c) {
  loop::Func scheduled = k.lowered.func;
  absl::Status st = schedule::ApplySchedule(c.schedule, scheduled);
  ASSERT_TRUE(st.ok()) << st << "\n" << c.ToString();
  auto want = lowering::testing::RunKernel(k.lowered, k.inputs);
  auto got = lowering::testing::RunFunc(k.lowered, scheduled, k.inputs);
  ASSERT_TRUE(want.ok() && got.ok());
  std::vector<float> w = Floats(**want), g = Floats(**got);
  ASSERT_EQ(w.size(), g.size());
  for (size_t i = 0; i < w.size(); ++i) {
    ASSERT_LE(std::fabs(w[i] - g[i]), 1e-5 + 1e-5 * std::fabs(w[i]))
        << "element " << i << "\n" << c.ToString();
  }
}

TEST(ScheduleSpaceTest, DefaultIsThePointWithEveryKnobAtItsDefault) {
  for (auto make : {ConvRelu, MatMul}) {
    std::unique_ptr<Kernel> k = make();
    ScheduleSpace space(k->lowered.func, Avx2());
    EXPECT_EQ(space.Default().Key(), schedule::DefaultSchedule(k->lowered.func, Avx2()).ToString());
    EXPECT_FALSE(space.knobs().empty());
    for (const schedule::Knob& knob : space.knobs()) {
      EXPECT_EQ(space.Default().config.at(knob.name), knob.default_value) << knob.name;
    }
    EXPECT_EQ(space.Instantiate(space.Default().config).Key(), space.Default().Key());
    EXPECT_EQ(space.Instantiate({}).Key(), space.Default().Key());
  }
}

TEST(ScheduleSpaceTest, MatMulKnobsArePrinted) {
  std::unique_ptr<Kernel> k = MatMul();
  ScheduleSpace space(k->lowered.func, Avx2());
  // 13 x 37 x 40 on 8 lanes: the update nest is nest 1 (after the init nest).
  const std::string text = space.ToString();
  EXPECT_NE(text.find("n1.mm.mr: {1, 2, 3, 4, 5, 6} default 5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("n1.mm.vecs: {1, 2, 3, 4} default 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("n1.mm.kc: {0} default 0\n"), std::string::npos) << text;
  EXPECT_GT(space.SizeBound(), 24);
}

TEST(ScheduleSpaceTest, EverySampledMutatedAndCrossedCandidateComputesTheSame) {
  for (auto make : {ConvRelu, MatMul}) {
    std::unique_ptr<Kernel> k = make();
    ScheduleSpace space(k->lowered.func, Avx2());
    std::mt19937_64 rng(7);
    std::set<std::string> distinct;
    Candidate prev = space.Default();
    for (int i = 0; i < 12; ++i) {
      Candidate s = space.Sample(rng);
      Candidate m = space.Mutate(s, rng);
      Candidate x = space.Crossover(prev, m, rng);
      for (const Candidate* c : {&s, &m, &x}) {
        ExpectComputesTheSame(*k, *c);
        distinct.insert(c->Key());
        // The trace alone replays the candidate.
        EXPECT_EQ(space.Instantiate(c->config).Key(), c->Key());
      }
      prev = x;
    }
    EXPECT_GE(distinct.size(), 6u);
  }
}

TEST(ScheduleSpaceTest, MutationChangesOneKnob) {
  std::unique_ptr<Kernel> k = MatMul();
  ScheduleSpace space(k->lowered.func, Avx2());
  std::mt19937_64 rng(11);
  for (int i = 0; i < 20; ++i) {
    const Candidate& parent = space.Default();
    Candidate child = space.Mutate(parent, rng);
    int changed = 0;
    for (const auto& [name, value] : parent.config) {
      auto it = child.config.find(name);
      if (it != child.config.end() && it->second != value) ++changed;
    }
    EXPECT_EQ(changed, 1) << schedule::KnobConfigToString(child.config);
  }
}

TEST(ScheduleSpaceTest, SamplingIsReproducibleFromASeed) {
  std::unique_ptr<Kernel> k = ConvRelu();
  ScheduleSpace space(k->lowered.func, Avx2());
  std::mt19937_64 a(3), b(3);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(space.Sample(a).Key(), space.Sample(b).Key());
}

TEST(KnobConfigTest, PrintsAndParses) {
  schedule::KnobConfig c = {{"n1.mm.mr", 4}, {"n0.vec.d1", 2}};
  EXPECT_EQ(schedule::KnobConfigToString(c), "n0.vec.d1=2,n1.mm.mr=4");
  auto parsed = schedule::ParseKnobConfig("n0.vec.d1=2,n1.mm.mr=4");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, c);
  EXPECT_EQ(schedule::ParseKnobConfig("a=1,b").status(),
            absl::InvalidArgumentError("knob config entry 'b': expected name=integer"));
  EXPECT_EQ(schedule::ParseKnobConfig("a=1,a=2").status(),
            absl::InvalidArgumentError("knob config: 'a' set twice"));
}

}  // namespace
}  // namespace kiln::tuning
