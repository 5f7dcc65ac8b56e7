// The limited child: stdin in, stdout out, and every way a child can go wrong (crash, hang,
// CPU burn, runaway allocation, too much output) ends only the child, described exactly.
#include "server/limited_process.h"

#include <signal.h>

#include "gtest/gtest.h"

namespace kiln::server {
namespace {

class LimitedProcessTest : public ::testing::Test {
 protected:
  void SetUp() override { ::signal(SIGPIPE, SIG_IGN); }
};

TEST_F(LimitedProcessTest, FeedsStdinAndCapturesStdout) {
  std::string big(3 << 20, 'k');  // more than a pipe holds: written while read
  absl::StatusOr<ProcessOutcome> r = RunLimitedProcess({"/bin/cat"}, big, ProcessLimits{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->ok());
  EXPECT_EQ(r->out, big);
}

TEST_F(LimitedProcessTest, CrashIsAnOutcome) {
  absl::StatusOr<ProcessOutcome> r =
      RunLimitedProcess({"/bin/sh", "-c", "echo dying >&2; kill -SEGV $$"}, "", ProcessLimits{});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->ok());
  EXPECT_EQ(r->signal, SIGSEGV);
  EXPECT_EQ(r->err_tail, "dying\n");
  EXPECT_EQ(r->Describe(), "was killed by signal 11 (Segmentation fault)");
}

TEST_F(LimitedProcessTest, HangIsKilledAtTheTimeout) {
  ProcessLimits limits;
  limits.timeout = absl::Milliseconds(300);
  absl::Time start = absl::Now();
  absl::StatusOr<ProcessOutcome> r =
      RunLimitedProcess({"/bin/sh", "-c", "exec >&- 2>&-; sleep 30"}, "", limits);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->timed_out);
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_EQ(r->Describe(), "ran past its time limit and was killed");
}

TEST_F(LimitedProcessTest, CpuLimit) {
  ProcessLimits limits;
  limits.max_cpu_seconds = 1;
  absl::StatusOr<ProcessOutcome> r =
      RunLimitedProcess({"/bin/sh", "-c", "while :; do :; done"}, "", limits);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->signal, SIGXCPU);
}

TEST_F(LimitedProcessTest, MemoryLimit) {
  if (!kAddressSpaceLimitApplies) GTEST_SKIP() << "AddressSanitizer build: no RLIMIT_AS";
  ProcessLimits limits;
  limits.max_memory_bytes = int64_t{256} << 20;
  // Python cannot allocate 1 GiB under a 256 MiB address-space limit: MemoryError, exit 1.
  absl::StatusOr<ProcessOutcome> r =
      RunLimitedProcess({"/usr/bin/python3", "-c", "x = bytearray(1 << 30)"}, "", limits);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 1);
  EXPECT_NE(r->err_tail.find("MemoryError"), std::string::npos) << r->err_tail;
}

TEST_F(LimitedProcessTest, OutputIsBounded) {
  ProcessLimits limits;
  limits.max_output_bytes = 1000;
  absl::StatusOr<ProcessOutcome> r = RunLimitedProcess({"/usr/bin/yes"}, "", limits);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->ok());
  EXPECT_EQ(r->err_tail, "more than 1000 bytes of output");
}

TEST_F(LimitedProcessTest, MissingBinaryExits127) {
  absl::StatusOr<ProcessOutcome> r =
      RunLimitedProcess({"/nonexistent/kiln-graph-hash"}, "x", ProcessLimits{});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 127);
}

}  // namespace
}  // namespace kiln::server
