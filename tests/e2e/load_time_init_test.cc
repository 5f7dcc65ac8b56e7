// Kernels with load-time work through the whole pipeline: a conv compiled with a Winograd
// schedule (the tuning space's conv.winograd knob) gets its weight transform as an init
// entry point that the runtime runs once at load into the persistent buffer; the artifact runs
// to the default schedule's outputs, run after run, and its outputs follow its input.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "compiler_core/lowering/lowering_test_util.h"
#include "compiler_core/pipeline/compile.h"
#include "compiler_core/runtime/executable.h"
#include "compiler_core/schedule/winograd.h"
#include "compiler_core/tuning/space.h"

namespace kiln {
namespace {

using lowering::testing::F32;
using lowering::testing::Floats;
using lowering::testing::Random;

/// Winograd F(m×m, 3×3) (m = 0: the direct conv) for every kernel it applies to, the default
/// schedule elsewhere.
class WinogradSource final : public schedule::ScheduleSource {
 public:
  explicit WinogradSource(int64_t m) : m_(m) {}
  schedule::ScheduleChoice Choose(const loop::Func& lowered, const std::string& workload_key,
                                  const Target& target) const override {
    if (!schedule::CanApplyWinograd(lowered)) {
      return {schedule::DefaultSchedule(lowered, target), false, 0, ""};
    }
    tuning::ScheduleSpace space(lowered, target);
    return {space.Instantiate({{"conv.winograd", m_}}).schedule, true, 1.0, "winograd"};
  }

 private:
  int64_t m_;
};

/// Conv 3×3 (pad 1, 32 → 32 channels, 14×14) + Relu, with constant weights and bias.
std::unique_ptr<graph::Graph> ConvGraph() {
  auto g = std::make_unique<graph::Graph>();
  graph::Value* x = g->AddInput("x", F32({1, 32, 14, 14}));
  graph::Value* w = g->AddConstant("w", Random(F32({32, 32, 3, 3}), 1));
  graph::Value* b = g->AddConstant("b", Random(F32({32}), 2));
  graph::AttrMap a;
  a.Set("kernel_shape", std::vector<int64_t>{3, 3});
  a.Set("strides", std::vector<int64_t>{1, 1});
  a.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  a.Set("dilations", std::vector<int64_t>{1, 1});
  a.Set("group", int64_t{1});
  graph::Node* conv =
      g->AddNode(graph::OpKind::kConv, "conv", {x, w, b}, {F32({1, 32, 14, 14})}, a);
  graph::Node* relu =
      g->AddNode(graph::OpKind::kRelu, "relu", {conv->output(0)}, {F32({1, 32, 14, 14})});
  g->SetOutputs({relu->output(0)});
  return g;
}

absl::StatusOr<std::unique_ptr<runtime::Executable>> Compile(
    const schedule::ScheduleSource* schedules) {
  pipeline::CompileOptions options;
  options.schedules = schedules;
  absl::StatusOr<pipeline::CompileResult> r = pipeline::CompileGraph(ConvGraph(), options);
  if (!r.ok()) return r.status();
  return runtime::Executable::Load(std::move(r->artifact), 2);
}

std::vector<float> RunOnce(runtime::Executable& exe, const Tensor& input) {
  absl::StatusOr<std::vector<Tensor>> out = exe.Run({&input});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? Floats((*out)[0]) : std::vector<float>{};
}

TEST(LoadTimeInitTest, WinogradWeightTransformRunsOnceAtLoad) {
  // The direct conv (conv.winograd = 0) as the reference: the default schedule itself may be
  // Winograd on some targets (16 vector registers).
  WinogradSource direct(0);
  auto reference = Compile(&direct);
  ASSERT_TRUE(reference.ok()) << reference.status();
  EXPECT_EQ((*reference)->manifest().persistent_bytes(), 0);
  const std::shared_ptr<Tensor> x = Random(F32({1, 32, 14, 14}), 3);
  const std::shared_ptr<Tensor> x2 = Random(F32({1, 32, 14, 14}), 4);
  const std::vector<float> want = RunOnce(**reference, *x);
  const std::vector<float> want2 = RunOnce(**reference, *x2);
  ASSERT_NE(want, want2);  // the outputs follow the input

  for (int64_t m : {2, 4}) {
    SCOPED_TRACE(absl::StrCat("F(", m, "x", m, ", 3x3)"));
    WinogradSource source(m);
    auto exe = Compile(&source);
    ASSERT_TRUE(exe.ok()) << exe.status();
    const kiln::v1::Manifest& manifest = (*exe)->manifest();
    // One kernel has an init; its U (α² × the weights' 32·32 floats) is persistent.
    const int64_t alpha = m + 2;
    int inits = 0, persistent_args = 0;
    for (const kiln::v1::KernelCall& call : manifest.kernels()) {
      if (call.init_symbol().empty()) continue;
      ++inits;
      EXPECT_EQ(call.init_symbol(), call.symbol() + ".init");
      EXPECT_NE(call.schedule().find("winograd("), std::string::npos) << call.schedule();
      for (const kiln::v1::Binding& b : call.args()) {
        if (b.kind() != kiln::v1::Binding::PERSISTENT) continue;
        ++persistent_args;
        EXPECT_EQ(b.size_bytes(), alpha * alpha * 32 * 32 * 4);
      }
    }
    EXPECT_EQ(inits, 1);
    EXPECT_EQ(persistent_args, 1);
    EXPECT_EQ(manifest.persistent_bytes(), alpha * alpha * 32 * 32 * 4);

    // Same outputs as the direct conv within the measurer's tolerance, on every run (the
    // persistent buffer is not scratch: later runs see the same U).
    for (const auto& [input, expected] :
         std::vector<std::pair<const Tensor*, const std::vector<float>*>>{
             {x.get(), &want}, {x2.get(), &want2}, {x.get(), &want}}) {
      const std::vector<float> got = RunOnce(**exe, *input);
      ASSERT_EQ(got.size(), expected->size());
      double max_err = 0, scale = 1;
      for (float v : *expected) scale = std::max(scale, double(std::fabs(v)));
      for (size_t i = 0; i < got.size(); ++i) {
        max_err = std::max(max_err, std::fabs(double(got[i]) - (*expected)[i]));
      }
      EXPECT_LE(max_err, 1e-4 * scale);
      EXPECT_GT(max_err, 0);  // Winograd's rounding: its nests ran, not the direct conv
    }
  }
}

}  // namespace
}  // namespace kiln
