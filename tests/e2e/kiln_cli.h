// Runs the kiln CLI from end-to-end tests: `kiln ARGS 2>&1` from the build's bin dir, or any
// shell command line.
#ifndef KILN_TESTS_E2E_KILN_CLI_H_
#define KILN_TESTS_E2E_KILN_CLI_H_

#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <utility>

#include "tests/e2e/shared_data.h"

namespace kiln::testing {

/// The exit status (-1 if it did not exit normally) and stdout of the shell command line `cmd`
/// (which may redirect stderr, e.g. with 2>&1).
inline std::pair<int, std::string> RunShell(const std::string& cmd) {
  std::string out;
  FILE* pipe = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

/// The exit status (-1 if it did not exit normally) and stdout+stderr of `kiln args`.
inline std::pair<int, std::string> Kiln(const std::string& args) {
  return RunShell(BinDir() + "/kiln " + args + " 2>&1");
}

}  // namespace kiln::testing

#endif  // KILN_TESTS_E2E_KILN_CLI_H_
