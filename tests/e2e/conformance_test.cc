// Runs the ONNX backend conformance cases (../shared/conformance/node) through the whole
// compiler and runtime, one forked process per case (a crash costs one case, not the run),
// prints the pass count per operator, and fails on any failure that
// tests/conformance/expected_failures.txt does not list with its reason, or on a listed case
// that now passes (so the list stays exact).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "client/check.h"
#include "onnx/onnx_pb.h"
#include "tests/e2e/shared_data.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

constexpr char kNodeDir[] = "../shared/conformance/node";
constexpr char kExpectedFailures[] = "tests/conformance/expected_failures.txt";
constexpr int kCaseTimeoutSeconds = 120;

// The operators in scope: every op that the reference models mlp, lenet, squeezenet1_1 and
// resnet18 use. A case is in scope when every op of its graph is in this set.
const std::set<std::string>& ScopeOps() {
  static const std::set<std::string> ops = {
      "Add",      "AveragePool", "Concat", "Constant",          "Conv",     "Flatten", "Gemm",
      "Identity", "MaxPool",     "Pad",    "GlobalAveragePool", "Relu",     "Softmax"};
  return ops;
}

std::set<std::string> OpTypes(const fs::path& model) {
  std::ifstream in(model, std::ios::binary);
  onnx::ModelProto proto;
  std::set<std::string> ops;
  if (!proto.ParseFromIstream(&in)) return ops;
  for (const auto& node : proto.graph().node()) ops.insert(node.op_type());
  return ops;
}

std::map<std::string, std::string> ReadExpectedFailures() {
  std::map<std::string, std::string> expected;
  std::ifstream in(kExpectedFailures);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name, reason;
    fields >> name;
    std::getline(fields, reason);
    reason.erase(0, reason.find_first_not_of(" \t"));
    expected[name] = reason;
  }
  return expected;
}

struct CaseResult {
  bool pass = false;
  std::string detail;
};

// Compiles and checks one case in a child process; the verdict comes back through a pipe.
CaseResult RunCase(const fs::path& dir) {
  int fds[2];
  if (pipe(fds) != 0) return {false, "pipe failed"};
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    alarm(kCaseTimeoutSeconds);
    pipeline::CompileOptions options;
    auto report = client::CheckModelDir(dir.string(), options);
    std::string verdict;
    if (!report.ok()) {
      verdict = "FAIL " + std::string(report.status().message());
    } else if (report->all_pass) {
      verdict = "PASS";
    } else {
      verdict = "FAIL";
      for (const auto& c : report->outputs) {
        if (!c.pass) verdict += " output '" + c.name + "': " + c.error + ";";
      }
    }
    ssize_t ignored = write(fds[1], verdict.data(), verdict.size());
    (void)ignored;
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string verdict;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) verdict.append(buf, n);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return {false, sig == SIGALRM ? "timed out" : "crashed with signal " + std::to_string(sig)};
  }
  if (verdict == "PASS") return {true, ""};
  return {false, verdict.size() > 5 ? verdict.substr(5) : verdict};
}

TEST(ConformanceTest, NodeCasesInScope) {
  KILN_REQUIRE_PATH_OR_SKIP(kNodeDir);
  std::map<std::string, std::string> expected = ReadExpectedFailures();
  std::vector<fs::path> cases;
  for (const auto& entry : fs::directory_iterator(kNodeDir)) {
    if (entry.is_directory()) cases.push_back(entry.path());
  }
  std::sort(cases.begin(), cases.end());

  std::map<std::string, std::pair<int, int>> per_op;  // op → (passed, total)
  int passed = 0, total = 0;
  std::set<std::string> seen;
  for (const fs::path& dir : cases) {
    std::set<std::string> ops = OpTypes(dir / "model.onnx");
    if (ops.empty() || !std::includes(ScopeOps().begin(), ScopeOps().end(), ops.begin(),
                                      ops.end())) {
      continue;
    }
    std::string name = dir.filename().string();
    seen.insert(name);
    CaseResult r = RunCase(dir);
    ++total;
    passed += r.pass;
    for (const std::string& op : ops) {
      per_op[op].second++;
      per_op[op].first += r.pass;
    }
    auto it = expected.find(name);
    if (r.pass && it != expected.end()) {
      ADD_FAILURE() << name << " passes but is listed in " << kExpectedFailures
                    << ": remove it from the list";
    } else if (!r.pass && it == expected.end()) {
      ADD_FAILURE() << name << " failed: " << r.detail;
    }
    std::cout << (r.pass ? "PASS " : (it != expected.end() ? "XFAIL " : "FAIL ")) << name
              << (r.pass ? "" : "  (" + r.detail + ")") << "\n";
  }
  for (const auto& [name, reason] : expected) {
    if (!seen.count(name)) {
      ADD_FAILURE() << name << " is listed in " << kExpectedFailures
                    << " but is not an in-scope case: remove it";
    }
  }
  std::cout << "\nper-operator pass count (cases whose ops are all in scope):\n";
  for (const auto& [op, counts] : per_op) {
    std::cout << "  " << op << ": " << counts.first << "/" << counts.second << "\n";
  }
  std::cout << "total: " << passed << "/" << total << " passed\n";
  EXPECT_GT(total, 0);
}

}  // namespace
}  // namespace kiln
