// End-to-end: compile each real model with Kiln's CPU backend, run it, and compare every output
// with the PyTorch reference stored beside it (|got - expected| <= 1e-4 + 1e-3 |expected|).
#include <gtest/gtest.h>

#include "client/check.h"
#include "tests/e2e/shared_data.h"

namespace kiln {
namespace {

void ExpectModelPasses(const std::string& dir) {
  KILN_REQUIRE_PATH_OR_SKIP(dir);
  pipeline::CompileOptions options;  // host target
  auto report = client::CheckModelDir(dir, options);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_FALSE(report->outputs.empty());
  for (const client::OutputComparison& c : report->outputs) {
    EXPECT_TRUE(c.pass) << dir << " " << c.data_set << "/" << c.name << ": " << c.error;
    std::cout << dir << " " << c.name << ": max_abs_err=" << c.max_abs_error
              << " max_rel_err=" << c.max_rel_error << " compile_ms="
              << report->compile.timings.total_ms << "\n";
  }
  EXPECT_TRUE(report->all_pass);
}

TEST(ModelsTest, ExampleSqueezenetInRepo) { ExpectModelPasses("examples/squeezenet1_1"); }
TEST(ModelsTest, Mlp) { ExpectModelPasses("../shared/models/mlp"); }
TEST(ModelsTest, Lenet) { ExpectModelPasses("../shared/models/lenet"); }
TEST(ModelsTest, Squeezenet) { ExpectModelPasses("../shared/models/squeezenet1_1"); }
TEST(ModelsTest, Resnet18) { ExpectModelPasses("../shared/models/resnet18"); }
TEST(ModelsTest, MobilenetV2) { ExpectModelPasses("../shared/models/mobilenet_v2"); }
TEST(ModelsTest, TransformerEncoder) { ExpectModelPasses("../shared/models/transformer_encoder"); }

// The full-size classic CNNs of the ONNX "light" suite (weights made by ConstantOfShape).
class LightModelsTest : public ::testing::TestWithParam<std::string> {};
TEST_P(LightModelsTest, Passes) {
  ExpectModelPasses("../shared/conformance/light/light_" + GetParam());
}
INSTANTIATE_TEST_SUITE_P(Light, LightModelsTest,
                         ::testing::Values("bvlc_alexnet", "densenet121", "inception_v1",
                                           "inception_v2", "resnet50", "shufflenet", "squeezenet",
                                           "vgg19", "zfnet512"));

}  // namespace
}  // namespace kiln
