// Tests for ResolveTarget (no LLVM linked): host and named CPUs, SIMD width, feature strings,
// bad specs, CUDA architectures. codegen/llvm/target_test.cc checks it agrees with LLVM.
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "compiler_core/support/target.h"
#include "compiler_core/support/x86_cpu.h"
#include "gtest/gtest.h"

namespace kiln {
namespace {

TEST(ResolveTargetTest, Host) {
  auto t = ResolveTarget("host");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->kind, "cpu");
  EXPECT_FALSE(t->cpu.empty());
  EXPECT_TRUE(absl::StartsWith(t->triple, "x86_64")) << t->triple;
  EXPECT_GE(t->num_cores, 1);
  EXPECT_TRUE(t->vector_bits == 128 || t->vector_bits == 256 || t->vector_bits == 512);
  bool avx512 = absl::StrContains(t->features, "+avx512f");
  bool avx = absl::StrContains(t->features, "+avx,") || absl::StrContains(t->features, "+avx2");
  EXPECT_EQ(t->vector_bits, avx512 ? 512 : avx ? 256 : 128);
}

TEST(ResolveTargetTest, SkylakeAvx512) {
  auto t = ResolveTarget("cpu:skylake-avx512");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->cpu, "skylake-avx512");
  EXPECT_EQ(t->vector_bits, 512);
  EXPECT_EQ(t->f32_lanes(), 16);
  EXPECT_EQ(t->num_cores, 1);
  EXPECT_TRUE(absl::StrContains(t->features, "+avx512f"));
  EXPECT_TRUE(absl::StrContains(t->features, "+fma"));
  EXPECT_EQ(t->Key().rfind("cpu:skylake-avx512:x86_64", 0), 0u) << t->Key();
}

TEST(ResolveTargetTest, Haswell) {
  auto t = ResolveTarget("cpu:haswell");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->vector_bits, 256);
  EXPECT_TRUE(absl::StrContains(t->features, "+avx2"));
  EXPECT_FALSE(absl::StrContains(t->features, "avx512"));
}

TEST(ResolveTargetTest, BaselineX86_64) {
  auto t = ResolveTarget("cpu:x86-64");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->vector_bits, 128);
  EXPECT_EQ(t->f32_lanes(), 4);
}

TEST(ResolveTargetTest, FeaturesAreSorted) {
  auto t = ResolveTarget("cpu:znver4");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->vector_bits, 512);
  std::vector<std::string> features = absl::StrSplit(t->features, ',');
  ASSERT_GT(features.size(), 10u);
  for (size_t i = 1; i < features.size(); ++i) {
    EXPECT_LT(features[i - 1].substr(1), features[i].substr(1));
  }
}

TEST(ResolveTargetTest, BadSpecs) {
  EXPECT_EQ(ResolveTarget("cpu:nonsense").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ResolveTarget("gpu").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ResolveTarget("cpu:").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ResolveTarget("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ResolveTarget("cpu:i386").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ResolveTargetTest, NativeIsTheHostAndItsSpecResolvesToTheSameKey) {
  auto host = ResolveTarget("host");
  auto native = ResolveTarget("native");
  ASSERT_TRUE(host.ok() && native.ok());
  EXPECT_EQ(native->Key(), host->Key());
  // What a client sends kilnd for --target native: the same CPU and features, the same key.
  const std::string spec = NativeTargetSpec();
  EXPECT_EQ(spec, "cpu:" + host->cpu + ":" + host->features);
  auto sent = ResolveTarget(spec);
  ASSERT_TRUE(sent.ok()) << sent.status();
  EXPECT_EQ(sent->Key(), host->Key());
  EXPECT_EQ(sent->vector_bits, host->vector_bits);
}

TEST(ResolveTargetTest, ExplicitFeatures) {
  auto t = ResolveTarget("cpu:haswell:+fma,+avx2,-avx512f");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->cpu, "haswell");
  EXPECT_EQ(t->features, "+avx2,-avx512f,+fma");
  EXPECT_EQ(t->vector_bits, 256);
  EXPECT_EQ(t->Key(), "cpu:haswell:x86_64-pc-linux-gnu:v256:+avx2,-avx512f,+fma");
  auto bad = ResolveTarget("cpu:haswell:+avx2,+nosuchfeature");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "target cpu:haswell:+avx2,+nosuchfeature: '+nosuchfeature' is not +FEATURE or "
            "-FEATURE with a feature LLVM knows for x86-64");
  EXPECT_EQ(ResolveTarget("cpu:haswell:avx2").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ResolveTargetTest, CpuTargetKeysParseBack) {
  auto t = ResolveTarget("cpu:haswell:+fma,+avx2");
  ASSERT_TRUE(t.ok());
  std::optional<CpuTargetKey> key = ParseCpuTargetKey(t->Key());
  ASSERT_TRUE(key.has_value());
  EXPECT_EQ(key->cpu, "haswell");
  EXPECT_EQ(key->triple, "x86_64-pc-linux-gnu");
  EXPECT_EQ(key->vector, "v256");
  EXPECT_EQ(key->features, "+avx2,+fma");
  EXPECT_FALSE(key->emulate_gpu);
  t->emulate_gpu = true;
  key = ParseCpuTargetKey(t->Key());
  ASSERT_TRUE(key.has_value());
  EXPECT_TRUE(key->emulate_gpu);
  EXPECT_EQ(key->features, "+avx2,+fma");
  EXPECT_FALSE(ParseCpuTargetKey("cuda:sm_80:ptx70:nvptx64-nvidia-cuda").has_value());
  EXPECT_FALSE(ParseCpuTargetKey("cpu:x:y").has_value());
  EXPECT_FALSE(ParseCpuTargetKey("cpu:a:b:v128:+sse2:other").has_value());
}

TEST(ResolveTargetTest, CudaArchitectures) {
  struct Case {
    const char* spec;
    const char* key;
    int sm;
    bool arch_specific;
  };
  for (const Case& c : {Case{"cuda:sm_80", "cuda:sm_80:ptx70:nvptx64-nvidia-cuda", 80, false},
                        Case{"cuda:sm_86", "cuda:sm_86:ptx71:nvptx64-nvidia-cuda", 86, false},
                        Case{"cuda:sm_89", "cuda:sm_89:ptx78:nvptx64-nvidia-cuda", 89, false},
                        Case{"cuda:sm_90", "cuda:sm_90:ptx78:nvptx64-nvidia-cuda", 90, false},
                        Case{"cuda:sm_90a", "cuda:sm_90a:ptx80:nvptx64-nvidia-cuda", 90, true}}) {
    auto t = ResolveTarget(c.spec);
    ASSERT_TRUE(t.ok()) << c.spec << ": " << t.status();
    EXPECT_TRUE(t->IsGpu());
    EXPECT_EQ(t->kind, "cuda");
    EXPECT_EQ(t->Key(), c.key);
    EXPECT_EQ(t->gpu.sm, c.sm);
    EXPECT_EQ(t->gpu.arch_specific, c.arch_specific);
    EXPECT_EQ(t->cpu, std::string(c.spec).substr(5));
    EXPECT_EQ(t->f32_lanes(), 1);
    // ParseCudaTarget is the same resolution without LLVM.
    EXPECT_EQ(ParseCudaTarget(c.spec)->Key(), c.key);
  }
  auto bad = ResolveTarget("cuda:sm_75");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "target 'cuda:sm_75': unknown CUDA architecture (expected "
            "cuda:sm_80|cuda:sm_86|cuda:sm_89|cuda:sm_90|cuda:sm_90a)");
  EXPECT_EQ(ResolveTarget("cuda:").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ResolveTarget("cuda").status().code(), absl::StatusCode::kInvalidArgument);
}

// The host's feature string lists every feature LLVM's host detection reports (the generated
// universe), + or -; its CPU is named from its CPUID signature as LLVM names it, falling back to
// the newest x86-64 level its features allow (codegen/llvm/target_test.cc compares with LLVM).
TEST(ResolveTargetTest, HostFeaturesAndCpuName) {
  auto t = ResolveTarget("host");
  ASSERT_TRUE(t.ok()) << t.status();
  const std::map<std::string, bool> host = x86::HostFeatures();
  EXPECT_GT(host.size(), 80u);
  EXPECT_TRUE(host.at("sse2"));
  EXPECT_TRUE(host.at("64bit"));
  EXPECT_EQ(std::vector<std::string>(absl::StrSplit(t->features, ',')).size(), host.size());
  EXPECT_NE(x86::FindCpu(t->cpu), nullptr) << t->cpu;
  EXPECT_EQ(std::string(x86::NameCpu(x86::HostSignature(), host).name), t->cpu);

  std::map<std::string, bool> skx;
  for (const std::string& f : x86::FeaturesOf(*x86::FindCpu("skylake-avx512"))) skx[f] = true;
  EXPECT_STREQ(x86::NameCpu({"intel", 6, 0x55}, skx).name, "skylake-avx512");
  skx["avx512vnni"] = true;
  EXPECT_STREQ(x86::NameCpu({"intel", 6, 0x55}, skx).name, "cascadelake");
  EXPECT_STREQ(x86::NameCpu({"intel", 6, 0xa7}, skx).name, "rocketlake");
  EXPECT_STREQ(x86::NameCpu({"amd", 0x19, 0x61}, skx).name, "znver4");
  EXPECT_STREQ(x86::NameCpu({"amd", 0x17, 0x31}, skx).name, "znver2");
  // Unknown models: the newest level the features allow.
  EXPECT_STREQ(x86::NameCpu({"intel", 6, 0xfe}, skx).name, "x86-64-v4");
  std::map<std::string, bool> hsw;
  for (const std::string& f : x86::FeaturesOf(*x86::FindCpu("haswell"))) hsw[f] = true;
  EXPECT_STREQ(x86::NameCpu({"", 0, 0}, hsw).name, "x86-64-v3");
  EXPECT_STREQ(x86::NameCpu({"", 0, 0}, {{"sse", true}, {"sse2", false}}).name, "x86-64");
}

TEST(ResolveTargetTest, UnknownCpuSaysWhich) {
  EXPECT_EQ(ResolveTarget("cpu:pentium9").status().message(),
            "target cpu:pentium9: LLVM knows no x86-64 CPU named pentium9");
  EXPECT_GT(x86::KnownCpus().size(), 50u);
}

}  // namespace
}  // namespace kiln
