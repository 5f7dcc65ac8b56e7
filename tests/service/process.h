// Child processes for the service tests: spawn a binary with its output in files, wait with a
// time limit, signal it; a free loopback port; small file helpers. Every wait is bounded.
#ifndef KILN_TESTS_SERVICE_PROCESS_H_
#define KILN_TESTS_SERVICE_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace kiln::testing {

/// A spawned child. Not killed on destruction unless KillOnExit is used (see Process::~Process).
class Process {
 public:
  /// Starts `argv` (argv[0] is a path) with stdout/stderr appended to `out_path`/`err_path`.
  /// Returns a Process with pid() <= 0 if fork/exec failed.
  static Process Spawn(const std::vector<std::string>& argv, const std::string& out_path,
                       const std::string& err_path);
  Process() = default;
  Process(Process&& other) noexcept { *this = std::move(other); }
  Process& operator=(Process&& other) noexcept;
  /// SIGKILLs and reaps a child still running, so no test leaves processes behind.
  ~Process();

  pid_t pid() const { return pid_; }
  bool running();
  /// Waits up to `timeout` for exit; returns the wait status, or nullopt on timeout.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  void Signal(int sig);
  /// SIGTERM, then SIGKILL after `grace`; returns the wait status.
  int Stop(std::chrono::milliseconds grace);

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

/// The result of running a command to completion.
struct RunResult {
  int exit_code = -1;  // -1: killed by a signal or timed out
  bool timed_out = false;
  std::string out, err;
};

/// Runs `argv` with a time limit (SIGKILL past it); output captured via files in `scratch_dir`.
RunResult RunCommand(const std::vector<std::string>& argv, const std::string& scratch_dir,
              std::chrono::milliseconds timeout);

/// A bare HTTP/1.0 GET of 127.0.0.1:`port``path` with extra `headers` (each ending in "\r\n"):
/// the whole response (status line, headers, body); empty if nothing answered.
std::string HttpGet(int port, const std::string& path, const std::string& headers = "");

/// A loopback TCP port that was free a moment ago.
int FreeLoopbackPort();

std::string ReadFile(const std::string& path);
bool WriteFile(const std::string& path, const std::string& bytes);

/// The value of `key` in a flat JSON object: the string's contents, or the raw literal for
/// numbers and booleans; empty if absent. Enough for the CLI's --json output.
std::string JsonField(const std::string& json, const std::string& key);

/// A new empty directory under the test temp dir.
std::string MakeTempDir(const std::string& prefix);

}  // namespace kiln::testing

#endif  // KILN_TESTS_SERVICE_PROCESS_H_
