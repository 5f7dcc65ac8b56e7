// Hardware keys: canonical form, parsing, distance for record transfer, detection.
#include "compiler_core/tuning/hardware.h"

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gtest/gtest.h"

namespace kiln::tuning {
namespace {

HardwareInfo Epyc() {
  HardwareInfo h;
  h.target_key = "cpu:znver4:x86_64-pc-linux-gnu:v512:+avx512f";
  h.device = "AMD EPYC 9R14";
  h.compute_units = 2;
  h.cache_bytes = {32768, 1048576, 33554432};
  return h;
}

TEST(HardwareTest, KeyHasEveryField) {
  EXPECT_EQ(Epyc().Key(),
            "cpu:znver4:x86_64-pc-linux-gnu:v512:+avx512f|device=AMD EPYC 9R14|units=2|"
            "cache=32768,1048576,33554432");
}

TEST(HardwareTest, ParseInvertsKey) {
  absl::StatusOr<HardwareInfo> parsed = ParseHardwareKey(Epyc().Key());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->Key(), Epyc().Key());
  EXPECT_EQ(parsed->compute_units, 2);
  EXPECT_EQ(parsed->cache_bytes.size(), 3u);
}

TEST(HardwareTest, ParseRejectsMalformedKeys) {
  EXPECT_EQ(ParseHardwareKey("cpu:x|device=a|units=0|cache=1").status(),
            absl::InvalidArgumentError(
                "hardware key 'cpu:x|device=a|units=0|cache=1': units= must be a positive integer"));
  EXPECT_EQ(ParseHardwareKey("cpu:x|device=a").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseHardwareKey("cpu:x|device=a|units=2|cache=12K").status(),
            absl::InvalidArgumentError("hardware key 'cpu:x|device=a|units=2|cache=12K': cache "
                                       "size '12K' is not a byte count"));
}

TEST(HardwareTest, DistanceCountsDifferingFieldsWithinOneTarget) {
  HardwareInfo a = Epyc();
  HardwareInfo b = Epyc();
  EXPECT_EQ(HardwareDistance(a, b), 0);
  b.compute_units = 8;
  EXPECT_EQ(HardwareDistance(a, b), 2);
  b.cache_bytes[2] = 16777216;
  EXPECT_EQ(HardwareDistance(a, b), 3);
  b.target_key = "cpu:skylake-avx512:x86_64-pc-linux-gnu:v512:+avx512f";
  EXPECT_EQ(HardwareDistance(a, b), -1);
}

TEST(HardwareTest, DetectsThisCpu) {
  Target t;
  t.cpu = "x86-64";
  t.triple = "x86_64-pc-linux-gnu";
  HardwareInfo h = DetectCpuHardware(t, 1);
  EXPECT_EQ(h.target_key, t.Key());
  EXPECT_EQ(h.compute_units, 1);
  EXPECT_FALSE(h.device.empty());
  EXPECT_EQ(h.device.find('|'), std::string::npos);
  // Linux exposes at least L1d and L2 for every x86-64 CPU it runs on.
  ASSERT_GE(h.cache_bytes.size(), 2u);
  EXPECT_GE(h.cache_bytes[0], 8 * 1024);
  EXPECT_GT(h.cache_bytes[1], h.cache_bytes[0]);
  absl::StatusOr<HardwareInfo> parsed = ParseHardwareKey(h.Key());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->Key(), h.Key());
  EXPECT_GE(DetectCpuHardware(t, 0).compute_units, 1);
}

TEST(HardwareTest, PinsToTheFirstAllowedCores) {
  // In a child, so the test binary keeps its own affinity.
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    absl::StatusOr<std::vector<int>> ids = PinToCores(1);
    if (!ids.ok() || ids->size() != 1) _exit(1);
    cpu_set_t set;
    CPU_ZERO(&set);
    sched_getaffinity(0, sizeof set, &set);
    if (CPU_COUNT(&set) != 1 || !CPU_ISSET((*ids)[0], &set)) _exit(2);
    if (PinToCores(0).status().code() != absl::StatusCode::kInvalidArgument) _exit(3);
    if (PinToCores(100000).status().code() != absl::StatusCode::kInvalidArgument) _exit(4);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(HardwareTest, PinsFromAnOffset) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  const int available = CPU_COUNT(&allowed);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  }
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The last allowed CPU, by offset; an offset past the end is refused.
    if (PinToCores(1, available).status().code() != absl::StatusCode::kInvalidArgument) _exit(1);
    if (PinToCores(1, -1).status().code() != absl::StatusCode::kInvalidArgument) _exit(2);
    absl::StatusOr<std::vector<int>> ids = PinToCores(1, available - 1);
    if (!ids.ok() || ids->size() != 1 || (*ids)[0] != cpus.back()) _exit(3);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace kiln::tuning
