// Runs every ONNX backend conformance case (../shared/conformance/node) through the whole
// compiler and runtime, one forked process per case (a crash costs one case, not the run),
// prints the pass count per operator and in total, and fails on any failure that
// tests/conformance/expected_failures.txt does not list with its reason, or on a listed case
// that now passes (so the list stays exact). KILN_CONFORMANCE_WRITE_FAILURES=FILE writes the
// failures of this run in the list's format (scripts/update-conformance-failures uses it).
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
#include <thread>

#include "client/check.h"
#include "onnx/onnx_pb.h"
#include "tests/e2e/shared_data.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

constexpr char kNodeDir[] = "../shared/conformance/node";
constexpr char kExpectedFailures[] = "tests/conformance/expected_failures.txt";
constexpr int kCaseTimeoutSeconds = 120;

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

// A case being compiled and checked in a child process; the verdict comes back through a pipe.
struct RunningCase {
  pid_t pid = -1;
  int fd = -1;
  size_t index = 0;
};

RunningCase StartCase(const fs::path& dir, size_t index) {
  int fds[2];
  if (pipe(fds) != 0) return {};
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
  return {pid, fds[0], index};
}

CaseResult FinishCase(const RunningCase& running) {
  std::string verdict;
  char buf[4096];
  ssize_t n;
  while ((n = read(running.fd, buf, sizeof(buf))) > 0) verdict.append(buf, n);
  close(running.fd);
  int status = 0;
  waitpid(running.pid, &status, 0);
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return {false, sig == SIGALRM ? "timed out" : "crashed with signal " + std::to_string(sig)};
  }
  if (verdict == "PASS") return {true, ""};
  std::string detail = verdict.size() > 5 ? verdict.substr(5) : verdict;
  std::replace(detail.begin(), detail.end(), '\n', ' ');
  std::replace(detail.begin(), detail.end(), '\t', ' ');
  return {false, detail};
}

// Runs every case, at most `jobs` at a time.
std::vector<CaseResult> RunCases(const std::vector<fs::path>& cases, int jobs) {
  std::vector<CaseResult> results(cases.size());
  std::vector<RunningCase> running;
  size_t next = 0;
  while (next < cases.size() || !running.empty()) {
    while (next < cases.size() && static_cast<int>(running.size()) < jobs) {
      running.push_back(StartCase(cases[next], next));
      ++next;
    }
    // Children finish in any order; reading the oldest first is enough, since each pipe's
    // writer exits right after writing.
    RunningCase oldest = running.front();
    running.erase(running.begin());
    results[oldest.index] = FinishCase(oldest);
  }
  return results;
}

TEST(ConformanceTest, NodeCases) {
  KILN_REQUIRE_PATH_OR_SKIP(kNodeDir);
  std::map<std::string, std::string> expected = ReadExpectedFailures();
  std::vector<fs::path> cases;
  for (const auto& entry : fs::directory_iterator(kNodeDir)) {
    if (entry.is_directory()) cases.push_back(entry.path());
  }
  std::sort(cases.begin(), cases.end());
  int jobs = std::max(1u, std::thread::hardware_concurrency());
  std::vector<CaseResult> results = RunCases(cases, jobs);

  // Per-operator counts: a case counts for every op in its graph.
  std::map<std::string, std::pair<int, int>> per_op;  // op → (passed, total)
  int passed = 0;
  std::ofstream actual_failures;
  if (const char* path = std::getenv("KILN_CONFORMANCE_WRITE_FAILURES")) actual_failures.open(path);
  for (size_t i = 0; i < cases.size(); ++i) {
    std::string name = cases[i].filename().string();
    const CaseResult& r = results[i];
    passed += r.pass;
    for (const std::string& op : OpTypes(cases[i] / "model.onnx")) {
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
    if (!r.pass && actual_failures.is_open()) {
      actual_failures << name << "\t" << (it != expected.end() ? it->second : r.detail) << "\n";
    }
    std::cout << (r.pass ? "PASS " : (it != expected.end() ? "XFAIL " : "FAIL ")) << name
              << (r.pass ? "" : "  (" + r.detail + ")") << "\n";
    expected.erase(name);
  }
  for (const auto& [name, reason] : expected) {
    ADD_FAILURE() << name << " is listed in " << kExpectedFailures
                  << " but there is no such case: remove it";
  }
  std::cout << "\nper-operator pass count (a case counts for each op in its graph):\n";
  for (const auto& [op, counts] : per_op) {
    std::cout << "  " << op << ": " << counts.first << "/" << counts.second << "\n";
  }
  std::cout << "total: " << passed << "/" << cases.size() << " node cases passed ("
            << (cases.empty() ? 0 : 100.0 * passed / cases.size()) << "%)\n";
  EXPECT_FALSE(cases.empty());
}

}  // namespace
}  // namespace kiln
