// The service tests' fixture: a kilnd process on loopback (an ephemeral port, a temp data dir)
// supervising kiln-worker processes, restartable, with a client; the kiln CLI run against it.
#ifndef KILN_TESTS_SERVICE_SERVICE_FIXTURE_H_
#define KILN_TESTS_SERVICE_SERVICE_FIXTURE_H_

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "client/remote.h"
#include "gtest/gtest.h"
#include "tests/service/process.h"

namespace kiln::testing {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr char kResnet[] = "../shared/models/resnet18";
constexpr char kSqueezenet[] = "../shared/models/squeezenet1_1";
constexpr char kLenet[] = "../shared/models/lenet";
constexpr char kMlp[] = "../shared/models/mlp";

inline std::string BinDir() {
  const char* dir = std::getenv("KILN_BIN_DIR");
  return dir != nullptr ? dir : "build/bin";
}

inline std::string Model(const std::string& dir) { return dir + "/model.onnx"; }

/// Polls `pred` every 50 ms until it holds or `timeout` passes.
template <typename Pred>
bool Eventually(Pred pred, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return pred();
}

/// A kilnd process on 127.0.0.1:0 with its data dir under `root`; restartable.
class Kilnd {
 public:
  /// `workers` compile workers and `measure_workers` measure workers (one core each).
  Kilnd(std::string root, std::vector<std::string> flags, int workers, int measure_workers = 0)
      : root_(std::move(root)),
        flags_(std::move(flags)),
        workers_(workers),
        measure_workers_(measure_workers) {}

  std::string data_dir() const { return root_ + "/data"; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string log() const { return ReadFile(root_ + "/kilnd.log"); }
  client::RemoteClient& client() { return *client_; }
  /// TLS and the token of the fixture's own client (an admin token where kilnd has tokens).
  void set_client_security(client::ChannelSecurity security) { security_ = std::move(security); }
  Process& process() { return process_; }

  /// Starts kilnd and waits until it answers GetStats with all local workers registered.
  ::testing::AssertionResult Start() {
    fs::create_directories(data_dir());
    fs::remove(data_dir() + "/kilnd.port");
    std::vector<std::string> argv = {BinDir() + "/kilnd",
                                     "--listen",
                                     "127.0.0.1:0",
                                     "--data-dir",
                                     data_dir(),
                                     "--workers",
                                     std::to_string(workers_),
                                     "--measure-workers",
                                     std::to_string(measure_workers_),
                                     "--metrics-listen",
                                     "127.0.0.1:0"};
    argv.insert(argv.end(), flags_.begin(), flags_.end());
    process_ = Process::Spawn(argv, root_ + "/kilnd.out", root_ + "/kilnd.log");
    if (!Eventually([&] { return fs::exists(data_dir() + "/kilnd.port") || !process_.running(); },
                    60s) ||
        !process_.running()) {
      return ::testing::AssertionFailure() << "kilnd did not start:\n" << log();
    }
    port_ = std::atoi(ReadFile(data_dir() + "/kilnd.port").c_str());
    client_ = std::make_unique<client::RemoteClient>(address(), 60'000, security_);
    bool ready = Eventually(
        [&] {
          auto stats = client_->GetStats();
          return stats.ok() && stats->workers() >= workers_ + measure_workers_;
        },
        120s);
    if (!ready) return ::testing::AssertionFailure() << "kilnd not ready:\n" << log();
    return ::testing::AssertionSuccess();
  }

  /// SIGTERM; returns true if kilnd exited 0 within the grace period.
  bool Stop() {
    int status = process_.Stop(90s);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }

  /// The /metrics port, from kilnd's `event=kilnd.metrics address=HOST:PORT` log line.
  int MetricsPort() const {
    std::string text = log();
    size_t at = text.rfind("event=kilnd.metrics");
    if (at == std::string::npos) return 0;
    size_t addr = text.find("address=", at);
    size_t colon = text.find(':', addr);
    return colon == std::string::npos ? 0 : std::atoi(text.c_str() + colon + 1);
  }

 private:
  std::string root_;
  std::vector<std::string> flags_;
  int workers_;
  int measure_workers_;
  int port_ = 0;
  client::ChannelSecurity security_;
  Process process_;
  std::unique_ptr<client::RemoteClient> client_;
};

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* bin : {"kilnd", "kiln-worker", "kiln"}) {
      if (!fs::exists(BinDir() + "/" + bin)) GTEST_SKIP() << BinDir() << "/" << bin << " not built";
    }
    root_ = MakeTempDir("kiln-service-test");
    ASSERT_FALSE(root_.empty());
  }
  void TearDown() override {
    if (HasFailure() && kilnd_) std::cerr << "---- kilnd log ----\n" << kilnd_->log();
    kilnd_.reset();
    if (!HasFailure() && !root_.empty()) fs::remove_all(root_);
  }

  Kilnd& StartKilnd(int workers, std::vector<std::string> flags = {}, int measure_workers = 0) {
    kilnd_ = std::make_unique<Kilnd>(root_, std::move(flags), workers, measure_workers);
    EXPECT_TRUE(kilnd_->Start());
    return *kilnd_;
  }

  /// Runs the kiln CLI against the server.
  RunResult Kiln(std::vector<std::string> args, std::chrono::milliseconds timeout = 900s) {
    args.insert(args.begin(), BinDir() + "/kiln");
    return RunCommand(args, root_, timeout);
  }
  RunResult CompileJson(const std::string& model, const std::string& out,
                        std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"compile", model, "--server", kilnd_->address(),
                                     "-o",      out,   "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return Kiln(args);
  }
  int JobCount() {
    auto jobs = kilnd_->client().ListJobs(kiln::v1::JOB_STATE_UNSPECIFIED, 1000);
    EXPECT_TRUE(jobs.ok()) << jobs.status();
    return jobs.ok() ? jobs->jobs_size() : -1;
  }

  std::string root_;
  std::unique_ptr<Kilnd> kilnd_;
};

/// The CLI's --json output `out` parsed into a Struct (protobuf's JSON parser): fails the test,
/// and returns an empty Struct, unless `out` is one JSON object (and a newline).
inline google::protobuf::Struct ParseJson(const std::string& out) {
  google::protobuf::Struct parsed;
  const auto status = google::protobuf::util::JsonStringToMessage(out, &parsed);
  EXPECT_TRUE(status.ok()) << status.message() << " in:\n" << out;
  EXPECT_TRUE(!out.empty() && out.back() == '\n' && out.find('\n') == out.size() - 1)
      << "not one line:\n"
      << out;
  return parsed;
}

/// Field `key` of `object` (a null Value when absent, which fails the test).
inline const google::protobuf::Value& Field(const google::protobuf::Struct& object,
                                            const std::string& key) {
  static const google::protobuf::Value* const kNull = new google::protobuf::Value();
  auto it = object.fields().find(key);
  EXPECT_NE(it, object.fields().end()) << "no field " << key;
  return it == object.fields().end() ? *kNull : it->second;
}

inline std::string Describe(const RunResult& r) {
  return "exit " + std::to_string(r.exit_code) + (r.timed_out ? " (timed out)" : "") +
         "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
}

}  // namespace kiln::testing

#endif  // KILN_TESTS_SERVICE_SERVICE_FIXTURE_H_
