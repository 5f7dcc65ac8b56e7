// End-to-end: compile each real model with Kiln's CPU backend, run it, and compare every output
// with the reference stored beside it (|got - expected| <= 1e-4 + 1e-3 |expected|).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"

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

// Every row of ../shared/models/MANIFEST.tsv whose status is `included` (static shapes) or
// `symbolic` (symbolic input dims: kiln check takes the shapes from each test data set), so a
// model added there is tested. Read at test discovery, from the repo root.
std::vector<std::string> ManifestModels() {
  std::ifstream in("../shared/models/MANIFEST.tsv");
  std::vector<std::string> names;
  std::string line;
  int status_column = -1;
  while (std::getline(in, line)) {
    std::vector<std::string> cells = absl::StrSplit(line, '\t');
    if (status_column < 0) {
      auto it = std::find(cells.begin(), cells.end(), "status");
      if (it == cells.end()) break;
      status_column = static_cast<int>(it - cells.begin());
      continue;
    }
    if (static_cast<int>(cells.size()) <= status_column) continue;
    const std::string& status = cells[status_column];
    if (status == "included" || status == "symbolic") names.push_back(cells[0]);
  }
  if (names.empty()) names.push_back("MANIFEST_tsv_missing");  // skips (or fails in CI) below
  return names;
}

class ManifestModelsTest : public ::testing::TestWithParam<std::string> {};
TEST_P(ManifestModelsTest, Passes) {
  KILN_REQUIRE_PATH_OR_SKIP("../shared/models/MANIFEST.tsv");
  ExpectModelPasses("../shared/models/" + GetParam());
}
INSTANTIATE_TEST_SUITE_P(Shared, ManifestModelsTest, ::testing::ValuesIn(ManifestModels()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

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
