#include "compiler_core/runtime/host_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kiln::runtime {
namespace {

using ::testing::HasSubstr;

const std::map<std::string, bool> kHost = {{"avx2", true},      {"fma", true},  {"avx512f", false},
                                           {"amx-tile", false}, {"sgx", false}, {"xop", false}};

TEST(HostCheckTest, FeaturesTheHostHasPass) {
  EXPECT_TRUE(
      CheckTargetRunsOnHost("cpu:haswell:x86_64-pc-linux-gnu:v256:+avx2,+fma,+popcnt", kHost).ok());
}

TEST(HostCheckTest, DisabledAndUndetectedFeaturesAreNotChecked) {
  // "-avx512f": the target does not use it; "cx8" and "64bit": host detection does not report
  // them (every x86-64 CPU has them).
  EXPECT_TRUE(
      CheckTargetRunsOnHost("cpu:x:x86_64-pc-linux-gnu:v256:+64bit,+avx2,+cx8,-avx512f", kHost)
          .ok());
}

TEST(HostCheckTest, EveryMissingCodegenFeatureIsNamed) {
  absl::Status s = CheckTargetRunsOnHost(
      "cpu:sapphirerapids:x86_64-pc-linux-gnu:v512:+amx-tile,+avx2,+avx512f,+sgx", kHost);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "the artifact was compiled for cpu:sapphirerapids, whose features amx-tile, avx512f "
            "this CPU lacks; compile it for this CPU (--target host) or run it on a machine that "
            "has them");
}

TEST(HostCheckTest, SystemFeaturesAreNotRequired) {
  // sgx is in the CPU's table but only intrinsics reach it.
  EXPECT_TRUE(CheckTargetRunsOnHost("cpu:x:x86_64-pc-linux-gnu:v256:+avx2,+sgx", kHost).ok());
}

TEST(HostCheckTest, OneMissingFeatureReadsSingular) {
  absl::Status s = CheckTargetRunsOnHost("cpu:bdver4:x86_64-pc-linux-gnu:v256:+avx2,+xop", kHost);
  EXPECT_THAT(s.message(), HasSubstr("whose feature xop this CPU lacks"));
  EXPECT_THAT(s.message(), HasSubstr("has it"));
}

TEST(HostCheckTest, OtherTriplesAndKeysAreRefused) {
  EXPECT_EQ(CheckTargetRunsOnHost("cpu:x:aarch64-linux-gnu:v128:+neon", kHost).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(CheckTargetRunsOnHost("cuda:sm_80:ptx70:nvptx64-nvidia-cuda", kHost).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(HostCheckTest, TheEmulateGpuSuffixIsAllowed) {
  // The emulate-gpu suffix follows the features.
  EXPECT_TRUE(
      CheckTargetRunsOnHost("cpu:x:x86_64-pc-linux-gnu:v256:+avx2:emulate-gpu", kHost).ok());
}

}  // namespace
}  // namespace kiln::runtime
