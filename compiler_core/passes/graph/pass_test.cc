// Tests for the pass registry and the pipeline: names, verification between passes, printing
// after passes, pass-order errors, and the default pipeline end to end on printed IR.
#include "compiler_core/passes/graph/pass.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "compiler_core/ir/graph/parser.h"
#include "compiler_core/ir/graph/printer.h"

namespace kiln::passes {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::unique_ptr<graph::Graph> Parse(std::string_view ir) {
  auto graph = graph::ParseGraph(ir);
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? std::move(*graph) : std::make_unique<graph::Graph>();
}

TEST(PassRegistryTest, CreatesEveryRegisteredPassByName) {
  EXPECT_THAT(
      RegisteredPassNames(),
      ElementsAre("constant-folding", "simplify", "fold-batchnorm", "matmul-layout", "matmul-pack",
                  "cse", "dce", "layout-nchwc", "conv-u8s8", "matmul-u8s8", "fusion"));
  EXPECT_EQ(DefaultPassPipeline(), RegisteredPassNames());
  for (const std::string& name : RegisteredPassNames()) {
    std::unique_ptr<GraphPass> pass = CreatePass(name);
    ASSERT_NE(pass, nullptr) << name;
    EXPECT_EQ(pass->name(), name);
  }
  EXPECT_EQ(CreatePass("no-such-pass"), nullptr);
}

TEST(RunPassesTest, UnknownPassFailsBeforeRunningAnything) {
  auto graph = Parse("graph @g(%0 \"x\": f32[2]) -> (%1 \"y\") {\n"
                     "  %1 = Relu(%0) : f32[2]\n  return %1\n}\n");
  absl::Status status = RunPasses(*graph, {"fusion", "dcee"});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "unknown pass 'dcee' (registered: constant-folding, simplify, fold-batchnorm, "
            "matmul-layout, matmul-pack, cse, dce, layout-nchwc, conv-u8s8, matmul-u8s8, "
            "fusion)");
  EXPECT_EQ(graph->nodes()[0]->fusion_group(), -1);
}

TEST(RunPassesTest, VerifierFailureAfterPassIsInternalAndNamesThePass) {
  // Relu's declared type contradicts its input, so the verifier rejects the graph.
  auto graph = Parse("graph @g(%0 \"x\": f32[2]) -> (%1 \"y\") {\n"
                     "  %1 = Relu(%0) : f32[3]\n  return %1\n}\n");
  absl::Status status = RunPasses(*graph, {"fusion"});
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(status.message(), HasSubstr("verifier failed after pass 'fusion': "));
  PipelineOptions no_verify;
  no_verify.verify = false;
  EXPECT_TRUE(RunPasses(*graph, {"fusion"}, no_verify).ok());
}

TEST(RunPassesTest, WrongPassOrderIsFailedPrecondition) {
  auto graph = Parse("graph @g(%0 \"x\": f32[2]) -> (%1 \"y\") {\n"
                     "  %1 = Relu(%0) : f32[2]\n  return %1\n}\n");
  absl::Status status = RunPasses(*graph, {"fusion", "dce"});
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "pass 'dce': pass 'dce' must run before 'fusion': node '%1' (Relu) already has "
            "fusion group 0");
}

TEST(RunPassesTest, PrintsAfterSelectedPasses) {
  auto graph = Parse(R"(
graph @g(%0 "x": f32[2]) -> (%3 "y") {
  %1 = Relu(%0) : f32[2]
  %2 = Exp(%0) : f32[2]
  %3 = Neg(%1) : f32[2]
  return %3
}
)");
  std::vector<std::string> printed;
  PipelineOptions options;
  options.print_after = {"dce"};
  options.printer = [&](std::string_view pass, const std::string& ir) {
    printed.push_back(std::string(pass) + "\n" + ir);
  };
  ASSERT_TRUE(RunPasses(*graph, {"cse", "dce", "fusion"}, options).ok());
  EXPECT_THAT(printed, ElementsAre("dce\n"
                                   "graph @g(%0 \"x\": f32[2]) -> (%2 \"y\") {\n"
                                   "  %1 = Relu(%0) : f32[2]\n"
                                   "  %2 = Neg(%1) : f32[2]\n"
                                   "  return %2\n"
                                   "}\n"));
  options.print_after = {"all"};
  printed.clear();
  ASSERT_TRUE(RunPasses(*graph, {"fusion", "fusion"}, options).ok());
  EXPECT_EQ(printed.size(), 2u);
}

TEST(RunPassesTest, DefaultPipelineOnConvBatchNormRelu) {
  auto graph = Parse(R"(
graph @g(%0 "x": f32[1,2,3,3]) -> (%11 "y") {
  %1 = const f32[2,2,1,1] dense<[1.0,2.0,3.0,4.0]>
  %2 = const f32[2] dense<[1.0,3.0]>
  %3 = const f32[2] dense<[0.5,-1.0]>
  %4 = const f32[2] dense<[1.0,2.0]>
  %5 = const f32[2] dense<[16.0,0.0625]>
  %6 = const f32[2] dense<[0.0,0.0]>
  %7 = Sqrt(%5) : f32[2]
  %8 = Add(%7, %6) : f32[2]
  %9 = Conv(%0, %1) {dilations=[1,1], group=1, kernel_shape=[1,1], pads=[0,0,0,0], strides=[1,1]} : f32[1,2,3,3]
  %10 = BatchNormalization(%9, %2, %3, %4, %8) {epsilon=0.0} : f32[1,2,3,3]
  %11 = Relu(%10) : f32[1,2,3,3]
  %12 = Relu(%10) : f32[1,2,3,3]
  return %11
}
)");
  // Folding turns var into [4, 0.25]; BN folds into the Conv (s = [0.5, 6]); cse merges the
  // Relus, dce drops the rest, and fusion puts Conv and Relu in group 0.
  ASSERT_TRUE(RunPasses(*graph, DefaultPassPipeline()).ok());
  EXPECT_EQ(graph::PrintGraph(*graph),
            "graph @g(%0 \"x\": f32[1,2,3,3]) -> (%4 \"y\") {\n"
            "  %1 = const f32[2,2,1,1] dense<[0.5,1.0,18.0,24.0]>\n"
            "  %2 = const f32[2] dense<[0.0,-13.0]>\n"
            "  %3 = Conv(%0, %1, %2) {dilations=[1,1], group=1, kernel_shape=[1,1], "
            "pads=[0,0,0,0], strides=[1,1]} : f32[1,2,3,3] group=0\n"
            "  %4 = Relu(%3) : f32[1,2,3,3] group=0\n"
            "  return %4\n"
            "}\n");
}

}  // namespace
}  // namespace kiln::passes
