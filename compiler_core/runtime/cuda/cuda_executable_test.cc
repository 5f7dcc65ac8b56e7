// Tests of the CUDA runtime that need no GPU: target keys and SM compatibility, device specs,
// refusing host-code artifacts, and the driver loader's error where no libcuda.so.1 exists.
// Runs with a GPU run in tests/e2e (CudaModelsTest) and tests/device/run.sh.
#include "compiler_core/runtime/cuda/cuda_executable.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::runtime::cuda {
namespace {

using ::testing::HasSubstr;

TEST(CudaRuntimeTest, TargetSmFromTheTargetKey) {
  auto sm90 = TargetSm("cuda:sm_90:ptx78:nvptx64-nvidia-cuda");
  ASSERT_TRUE(sm90.ok()) << sm90.status();
  EXPECT_EQ(sm90->first, 90);
  EXPECT_FALSE(sm90->second);
  auto sm90a = TargetSm("cuda:sm_90a:ptx80:nvptx64-nvidia-cuda");
  ASSERT_TRUE(sm90a.ok()) << sm90a.status();
  EXPECT_EQ(sm90a->first, 90);
  EXPECT_TRUE(sm90a->second);
  EXPECT_EQ(TargetSm("cpu:znver4:x86_64-pc-linux-gnu:v256:+avx2").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TargetSm("cuda:sm_:ptx78").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CudaRuntimeTest, PtxRunsOnItsSmAndLaterOnes) {
  EXPECT_TRUE(CheckSmCompatible(80, false, 90, "NVIDIA H200").ok());
  EXPECT_TRUE(CheckSmCompatible(90, false, 90, "NVIDIA H200").ok());
  EXPECT_TRUE(CheckSmCompatible(90, true, 90, "NVIDIA H200").ok());
  absl::Status newer = CheckSmCompatible(90, false, 80, "NVIDIA A100");
  EXPECT_EQ(newer.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(newer.message(),
            "the artifact was compiled for sm_90 but this device is NVIDIA A100 (sm_80): compile "
            "for cuda:sm_80 or lower");
  absl::Status arch = CheckSmCompatible(90, true, 100, "NVIDIA B200");
  EXPECT_EQ(arch.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(arch.message(), HasSubstr("sm_90a, which runs only on sm_90 GPUs"));
}

TEST(CudaRuntimeTest, DeviceSpecs) {
  EXPECT_EQ(*ParseCudaDevice("cuda:0"), 0);
  EXPECT_EQ(*ParseCudaDevice("cuda:3"), 3);
  EXPECT_EQ(*ParseCudaDevice("cuda"), 0);
  for (const char* bad : {"cuda:", "cuda:-1", "gpu:0", "cuda:x", ""}) {
    EXPECT_EQ(ParseCudaDevice(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(CudaRuntimeTest, RefusesHostCode) {
  Artifact artifact;
  artifact.manifest.set_target_key("cpu:znver4:x86_64-pc-linux-gnu:v256:+avx2");
  auto exe = CudaExecutable::Load(artifact, 0);
  EXPECT_EQ(exe.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(exe.status().message(), HasSubstr("not PTX: compile it with --target cuda:sm_NN"));
}

TEST(CudaRuntimeTest, DriverOrClearReason) {
  absl::StatusOr<const CudaDriver*> driver = CudaDriver::Get();
  if (!driver.ok()) {
    // No NVIDIA driver on this machine: the reason names the library, and loading an artifact
    // reports it rather than crashing.
    EXPECT_EQ(driver.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_THAT(driver.status().message(), HasSubstr("libcuda.so.1"));
    Artifact artifact;
    artifact.manifest.set_code_kind(kiln::v1::PTX);
    artifact.manifest.set_abi_version(1);
    artifact.manifest.set_target_key("cuda:sm_80:ptx70:nvptx64-nvidia-cuda");
    auto exe = CudaExecutable::Load(artifact, 0);
    EXPECT_EQ(exe.status().code(), absl::StatusCode::kUnavailable) << exe.status();
    GTEST_SKIP() << "no GPU here: " << driver.status().message();
  }
  auto info = QueryCudaDevice(0);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_GE(info->sm, 50);
  EXPECT_GT(info->memory_bytes, 0);
  EXPECT_EQ(QueryCudaDevice(1000).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace kiln::runtime::cuda
