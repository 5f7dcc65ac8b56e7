// Runs the kiln CLI from end-to-end tests: `kiln ARGS 2>&1` from the build's bin dir.
#ifndef KILN_TESTS_E2E_KILN_CLI_H_
#define KILN_TESTS_E2E_KILN_CLI_H_

#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <utility>

#include "tests/e2e/shared_data.h"

namespace kiln::testing {

/// The exit status (-1 if it did not exit normally) and stdout+stderr of `kiln args`.
inline std::pair<int, std::string> Kiln(const std::string& args) {
  std::string cmd = BinDir() + "/kiln " + args + " 2>&1";
  std::string out;
  FILE* pipe = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace kiln::testing

#endif  // KILN_TESTS_E2E_KILN_CLI_H_
