// The CUDA target on every model of ../shared/models/MANIFEST.tsv (included and symbolic rows):
// - Compiles: PTX for cuda:sm_90 and cuda:sm_80 on this CPU-only machine; every kernel call is
//   a PTX kernel whose launches name entries of the module, with CUDA-legal dimensions.
// - GpuSchedulesOnHost: the same plan (GPU pass list, GPU schedules, GPU math library) compiled
//   for this CPU with thread-bound loops run serially (CompileOptions::emulate_gpu_on_host)
//   matches the references (|got - expected| <= 1e-4 + 1e-3 |expected|).
// - OnDevice: kiln check --target cuda:sm_NN --device cuda:0 where a GPU and driver exist;
//   skipped, with the reason, elsewhere.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/check.h"
#include "compiler_core/runtime/cuda/cuda_driver.h"
#include "tests/e2e/shared_data.h"

namespace kiln {
namespace {

const std::string kModels = "../shared/models/";

// The shape profiles a check of `dir` compiles (one static compile for a static model).
std::vector<importer::ShapeProfiles> ProfilesOf(const std::string& dir) {
  auto compiles = client::PlanCheckCompiles(dir, {});
  EXPECT_TRUE(compiles.ok()) << compiles.status();
  std::vector<importer::ShapeProfiles> profiles;
  if (compiles.ok()) {
    for (const client::CheckCompile& c : *compiles) profiles.push_back(c.shape_profiles);
  }
  return profiles;
}

void ExpectPasses(const absl::StatusOr<client::CheckReport>& report, const std::string& what) {
  ASSERT_TRUE(report.ok()) << what << ": " << report.status();
  ASSERT_FALSE(report->outputs.empty());
  for (const client::OutputComparison& c : report->outputs) {
    EXPECT_TRUE(c.pass) << what << " " << c.data_set << "/" << c.name << ": " << c.error
                        << " max_abs_err=" << c.max_abs_error;
    std::cout << what << " " << c.data_set << "/" << c.name << ": max_abs_err=" << c.max_abs_error
              << " max_rel_err=" << c.max_rel_error << "\n";
  }
  EXPECT_TRUE(report->all_pass) << what;
}

class CudaModelsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaModelsTest, Compiles) {
  KILN_REQUIRE_PATH_OR_SKIP(kModels + "MANIFEST.tsv");
  const std::string dir = kModels + GetParam();
  for (const char* sm : {"sm_90", "sm_80"}) {
    for (const importer::ShapeProfiles& profiles : ProfilesOf(dir)) {
      pipeline::CompileOptions options;
      options.target = absl::StrCat("cuda:", sm);
      options.shape_profiles = profiles;
      auto compiled = pipeline::CompileModelFile(dir + "/model.onnx", options);
      ASSERT_TRUE(compiled.ok()) << dir << " " << sm << ": " << compiled.status();
      const runtime::Artifact& a = compiled->artifact;
      EXPECT_EQ(a.manifest.code_kind(), kiln::v1::PTX);
      EXPECT_EQ(a.manifest.target_key().rfind(absl::StrCat("cuda:", sm, ":ptx"), 0), 0u)
          << a.manifest.target_key();
      EXPECT_NE(a.code.find(absl::StrCat(".target ", sm, "\n")), std::string::npos);
      int launches = 0;
      std::vector<const kiln::v1::Manifest*> variants = {&a.manifest};
      for (const kiln::v1::Manifest& p : a.manifest.profiles()) variants.push_back(&p);
      for (const kiln::v1::Manifest* m : variants) {
        for (const kiln::v1::KernelCall& call : m->kernels()) {
          EXPECT_EQ(call.code_kind(), kiln::v1::PTX) << call.symbol();
          EXPECT_GT(call.launches_size(), 0) << call.symbol();
          for (const auto* list : {&call.launches(), &call.init_launches()}) {
            for (const kiln::v1::GpuLaunch& l : *list) {
              ++launches;
              EXPECT_NE(a.code.find(absl::StrCat(".entry ", l.entry(), "(")), std::string::npos)
                  << l.entry();
              ASSERT_EQ(l.block_size(), 3);
              EXPECT_LE(l.block(0) * l.block(1) * l.block(2), 1024) << l.entry();
            }
          }
        }
      }
      EXPECT_GT(launches, 0);
      std::cout << GetParam() << " " << sm << ": " << launches << " launches, " << a.code.size()
                << " bytes of PTX\n";
    }
  }
}

TEST_P(CudaModelsTest, GpuSchedulesOnHost) {
  KILN_REQUIRE_PATH_OR_SKIP(kModels + "MANIFEST.tsv");
  pipeline::CompileOptions options;
  options.target = "cuda:sm_90";
  options.emulate_gpu_on_host = true;
  auto report = client::CheckModelDir(kModels + GetParam(), options);
  ExpectPasses(report, GetParam() + " (GPU schedules on the host)");
  if (report.ok()) {
    EXPECT_TRUE(report->compile.target.emulate_gpu);
    EXPECT_FALSE(report->compile.target.IsGpu());
  }
}

// --precision tf32 and fp16: matmuls and convs on tensor cores (mma.sync in the PTX); the same
// plan on the host (each lane's MMA sums, fp16 inputs rounded) within the precision's
// tolerance (client::ToleranceFor).
TEST_P(CudaModelsTest, TensorCoresOnHost) {
  KILN_REQUIRE_PATH_OR_SKIP(kModels + "MANIFEST.tsv");
  const std::string dir = kModels + GetParam();
  for (const char* precision : {"tf32", "fp16"}) {
    pipeline::CompileOptions options;
    options.target = "cuda:sm_90";
    options.precision = precision;
    std::vector<importer::ShapeProfiles> profiles = ProfilesOf(dir);
    ASSERT_FALSE(profiles.empty());
    options.shape_profiles = profiles[0];
    auto compiled = pipeline::CompileModelFile(dir + "/model.onnx", options);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    EXPECT_EQ(compiled->artifact.manifest.target_key(),
              absl::StrCat("cuda:sm_90:ptx78:nvptx64-nvidia-cuda:", precision));
    const bool has_mma = compiled->artifact.code.find("mma.sync.aligned") != std::string::npos;
    std::cout << GetParam() << " " << precision << ": mma.sync " << (has_mma ? "yes" : "no")
              << "\n";
    options.shape_profiles.clear();
    options.emulate_gpu_on_host = true;
    auto report = client::CheckModelDir(dir, options, client::ToleranceFor(precision));
    ExpectPasses(report, absl::StrCat(GetParam(), " (", precision, " on the host)"));
  }
}

TEST_P(CudaModelsTest, OnDevice) {
  KILN_REQUIRE_PATH_OR_SKIP(kModels + "MANIFEST.tsv");
  auto device = runtime::cuda::QueryCudaDevice(0);
  if (!device.ok()) GTEST_SKIP() << "no GPU: " << device.status().message();
  pipeline::CompileOptions options;
  options.target = device->sm >= 90 ? "cuda:sm_90" : "cuda:sm_80";
  auto report = client::CheckModelDir(kModels + GetParam(), options, {}, "cuda:0");
  ExpectPasses(report, absl::StrCat(GetParam(), " on ", device->name));
}

INSTANTIATE_TEST_SUITE_P(Shared, CudaModelsTest, ::testing::ValuesIn(testing::ManifestModels()),
                         testing::ParamName);

}  // namespace
}  // namespace kiln
