// Runs a helper program in a child process with resource limits (issue #10, item 2): address
// space and CPU time (setrlimit), a wall-clock timeout (SIGKILL), stdin fed from memory and
// stdout/stderr captured. A crash, hang or runaway allocation in the child ends only the child.
#ifndef KILN_SERVER_LIMITED_PROCESS_H_
#define KILN_SERVER_LIMITED_PROCESS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "compiler_core/support/sanitizer.h"

namespace kiln::server {

/// False in AddressSanitizer builds (KILN_SANITIZE, KILN_FUZZ): ASan reserves terabytes of
/// shadow address space when a process starts, which RLIMIT_AS forbids (ASan's documentation:
/// no address-space limits), so there children run without it.
inline constexpr bool kAddressSpaceLimitApplies = !kAddressSanitizerBuild;

struct ProcessLimits {
  /// RLIMIT_AS of the child, in bytes (0: none). An allocation past it fails in the child.
  /// Not applied where kAddressSpaceLimitApplies is false.
  int64_t max_memory_bytes = int64_t{8} << 30;
  /// RLIMIT_CPU of the child, in seconds (0: none): SIGXCPU, then SIGKILL.
  int64_t max_cpu_seconds = 300;
  /// Wall-clock time after which the child is killed.
  absl::Duration timeout = absl::Minutes(10);
  /// Most bytes of stdout kept (more is an error); stderr keeps its last 4 KiB.
  int64_t max_output_bytes = int64_t{64} << 20;
};

/// How the child ended.
struct ProcessOutcome {
  /// Exit status if it exited, else -1.
  int exit_code = -1;
  /// The signal that killed it, else 0 (SIGKILL after `timed_out` too).
  int signal = 0;
  bool timed_out = false;
  std::string out;
  std::string err_tail;

  bool ok() const { return exit_code == 0 && !timed_out; }
  /// Whether the child ran into a limit: the timeout, or the CPU limit (SIGXCPU, SIGKILL).
  bool HitLimit() const;
  /// "exited with status 3", "was killed by signal 11 (Segmentation fault)", "ran past its
  /// time limit and was killed", for messages.
  std::string Describe() const;
  /// "WHAT was killed by signal 6 (Aborted)", then the limits when one was hit (" (limits:
  /// 8192 MiB, 300 s of CPU, 10m)") and the child's stderr tail ("; it said: ...").
  std::string Failure(const std::string& what, const ProcessLimits& limits) const;
};

/// Runs `argv` (argv[0] a path) with `input` on its stdin under `limits`. Errors: kInternal if
/// the child cannot be started (fork, pipes, exec: the exec failure comes back as exit 127);
/// every way the child itself ends is an outcome, not an error.
absl::StatusOr<ProcessOutcome> RunLimitedProcess(const std::vector<std::string>& argv,
                                                 const std::string& input,
                                                 const ProcessLimits& limits);

}  // namespace kiln::server

#endif  // KILN_SERVER_LIMITED_PROCESS_H_
