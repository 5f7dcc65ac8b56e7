// The worker against an in-process fake WorkerHub on loopback: registration and heartbeats, a
// real compile with fetch and upload, error codes in TaskResult, deadlines, reconnection after
// the hub restarts, and giving up when there is no hub.
#include "workers/worker.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "compiler_core/runtime/artifact.h"
#include "compiler_core/support/sha256.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "wire/chunked.h"
#include "wire/digest.h"
#include "wire/options.h"

namespace kiln::workers {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

/// A WorkerHub that hands out queued tasks and records what the worker sends.
class FakeHub final : public kiln::v1::WorkerHub::Service {
 public:
  void AddModel(const std::string& bytes) { models_[Sha256Hex(bytes)] = bytes; }
  void Push(const kiln::v1::WorkerTask& task) {
    std::lock_guard<std::mutex> lock(mu_);
    outbox_.push_back(task);
    cv_.notify_all();
  }
  /// Waits (up to `timeout`) until `pred()` holds under the hub's lock.
  template <typename Pred>
  bool WaitFor(Pred pred, std::chrono::milliseconds timeout = 60s) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, pred);
  }
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
    cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<kiln::v1::WorkerTask> outbox_;
  std::vector<kiln::v1::Worker> registrations_;
  std::map<std::string, kiln::v1::TaskResult> results_;
  std::map<std::string, std::string> artifacts_;
  int heartbeats_ = 0;
  bool closing_ = false;
  bool corrupt_fetch_ = false;
  bool hold_fetch_ = false;  // FetchModel waits (up to 30 s) while set
  int fetches_ = 0;

 private:
  grpc::Status Connect(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<kiln::v1::HubMessage, kiln::v1::WorkerMessage>* stream) override {
    kiln::v1::WorkerMessage hello;
    if (!stream->Read(&hello) || !hello.has_register_()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "expected register");
    }
    kiln::v1::HubMessage registered;
    registered.mutable_registered()->set_worker_id("fake-1");
    registered.mutable_registered()->set_heartbeat_interval_ms(50);
    stream->Write(registered);
    bool reader_done = false;
    std::thread reader([&] {
      kiln::v1::WorkerMessage m;
      while (stream->Read(&m)) {
        std::lock_guard<std::mutex> lock(mu_);
        if (m.has_heartbeat()) ++heartbeats_;
        if (m.has_result()) results_[m.result().task_id()] = m.result();
        cv_.notify_all();
      }
      std::lock_guard<std::mutex> lock(mu_);
      reader_done = true;
      cv_.notify_all();
    });
    {
      std::unique_lock<std::mutex> lock(mu_);
      registrations_.push_back(hello.register_());
      cv_.notify_all();
      for (int i = 0; i < 100000; ++i) {
        cv_.wait_for(lock, 100ms, [&] { return closing_ || reader_done || !outbox_.empty(); });
        if (closing_ || reader_done || context->IsCancelled()) break;
        while (!outbox_.empty()) {
          kiln::v1::HubMessage m;
          *m.mutable_task() = outbox_.front();
          outbox_.pop_front();
          stream->Write(m);
        }
      }
    }
    context->TryCancel();
    reader.join();
    return grpc::Status::OK;
  }

  grpc::Status FetchModel(grpc::ServerContext*, const kiln::v1::FetchModelRequest* request,
                          grpc::ServerWriter<kiln::v1::FetchArtifactResponse>* writer) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++fetches_;
      cv_.notify_all();
      cv_.wait_for(lock, 30s, [&] { return !hold_fetch_; });
    }
    auto it = models_.find(request->digest().hash());
    if (it == models_.end()) return grpc::Status(grpc::StatusCode::NOT_FOUND, "no such model");
    std::string bytes = it->second;
    if (corrupt_fetch_) bytes[bytes.size() / 2] ^= 1;
    for (size_t off = 0; off < bytes.size(); off += 256 << 10) {
      kiln::v1::FetchArtifactResponse chunk;
      chunk.set_data(bytes.substr(off, 256 << 10));
      writer->Write(chunk);
    }
    return grpc::Status::OK;
  }

  grpc::Status UploadArtifact(grpc::ServerContext*,
                              grpc::ServerReader<kiln::v1::UploadArtifactRequest>* reader,
                              kiln::v1::UploadArtifactResponse* response) override {
    kiln::v1::UploadArtifactRequest m;
    std::string bytes, hash;
    while (reader->Read(&m)) {
      if (m.has_digest()) hash = m.digest().hash();
      if (m.data().size() > wire::kMaxChunkBytes) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "chunk too big");
      }
      bytes += m.data();
    }
    if (Sha256Hex(bytes) != hash) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "digest");
    std::lock_guard<std::mutex> lock(mu_);
    artifacts_[hash] = bytes;
    *response->mutable_digest() = wire::DigestOf(bytes);
    return grpc::Status::OK;
  }

  std::map<std::string, std::string> models_;
};

/// The fake hub served on a loopback port (ephemeral unless given).
struct HubServer {
  explicit HubServer(FakeHub& hub, int want_port = 0) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:" + std::to_string(want_port),
                             grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&hub);
    server = builder.BuildAndStart();
  }
  ~HubServer() { Stop(); }
  void Stop() {
    if (server) server->Shutdown(std::chrono::system_clock::now() + 2s);
    server.reset();
  }
  int port = 0;
  std::unique_ptr<grpc::Server> server;
};

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

kiln::v1::WorkerTask Task(const std::string& id, const std::string& model) {
  kiln::v1::WorkerTask t;
  t.set_task_id(id);
  t.set_job_id("job-" + id);
  *t.mutable_compile()->mutable_model_digest() = wire::DigestOf(model);
  t.mutable_compile()->set_target("host");
  return t;
}

/// Runs a worker on its own thread for the test's duration.
struct RunningWorker {
  explicit RunningWorker(WorkerOptions options) : worker(std::move(options)) {
    thread = std::thread([this] { status = worker.Run(); });
  }
  ~RunningWorker() { Stop(); }
  void Stop() {
    worker.Shutdown();
    if (thread.joinable()) thread.join();
  }
  Worker worker;
  std::thread thread;
  absl::Status status;
};

WorkerOptions Options(int port) {
  WorkerOptions o;
  o.server = "127.0.0.1:" + std::to_string(port);
  o.id = "test-worker";
  o.slots = 2;
  o.max_backoff_ms = 200;
  o.give_up_after_ms = 30'000;
  return o;
}

constexpr char kMlp[] = "../shared/models/mlp/model.onnx";

TEST(WorkerTest, RegistersHeartbeatsCompilesAndUploads) {
  if (!std::filesystem::exists(kMlp)) GTEST_SKIP() << kMlp << " not found";
  FakeHub hub;
  std::string model = ReadFile(kMlp);
  hub.AddModel(model);
  HubServer server(hub);
  RunningWorker worker(Options(server.port));
  ASSERT_TRUE(hub.WaitFor([&] { return !hub.registrations_.empty(); }, 10s));
  {
    std::lock_guard<std::mutex> lock(hub.mu_);
    const kiln::v1::Worker& w = hub.registrations_[0];
    EXPECT_EQ(w.id(), "test-worker");
    ASSERT_EQ(w.capabilities().capabilities_size(), 1);
    ASSERT_TRUE(w.capabilities().capabilities(0).has_compile());
    const kiln::v1::CompileCapability& compile = w.capabilities().capabilities(0).compile();
    EXPECT_THAT(compile.target_kinds(), ::testing::ElementsAre("cpu", "cuda"));
    EXPECT_FALSE(compile.host_cpu().empty());
    EXPECT_EQ(w.slots(), 2);
    EXPECT_GT(w.pid(), 0);
  }
  hub.Push(Task("t1", model));
  ASSERT_TRUE(hub.WaitFor([&] { return hub.results_.count("t1") != 0; }));
  std::lock_guard<std::mutex> lock(hub.mu_);
  const kiln::v1::TaskResult& result = hub.results_["t1"];
  ASSERT_EQ(result.error_code(), 0) << result.error_message();
  ASSERT_TRUE(result.has_compile());
  const kiln::v1::CompileResult& r = result.compile();
  ASSERT_EQ(hub.artifacts_.count(r.artifact_digest().hash()), 1u);
  const std::string& bytes = hub.artifacts_[r.artifact_digest().hash()];
  EXPECT_EQ(r.artifact_digest().size_bytes(), static_cast<int64_t>(bytes.size()));
  auto artifact = runtime::ParseArtifact(bytes);
  ASSERT_TRUE(artifact.ok()) << artifact.status();
  EXPECT_EQ(r.key().graph_hash(), artifact->manifest.graph_hash());
  EXPECT_EQ(r.key().options_hash(), wire::OptionsHash({}));
  EXPECT_GT(r.compile_ms(), 0);
  EXPECT_GT(hub.heartbeats_, 0);
}

// A tune's steps over the stream: a compile worker lists a model's workloads and refuses
// measure tasks; a measure worker registers only its measure capability, refuses compile-side
// tasks and measures nothing built for another hardware key. (One fake hub per worker.)
TEST(WorkerTest, TuneStepsGoToTheRightKindOfWorker) {
  if (!std::filesystem::exists(kMlp)) GTEST_SKIP() << kMlp << " not found";
  const std::string model = ReadFile(kMlp);
  kiln::v1::WorkerTask list;
  list.set_task_id("list");
  *list.mutable_workloads()->mutable_model_digest() = wire::DigestOf(model);
  list.mutable_workloads()->set_target("host");
  kiln::v1::WorkerTask measure;
  measure.set_task_id("measure");
  measure.mutable_measure()->set_hardware_key("cpu:elsewhere|device=x|units=1|cache=1");

  FakeHub compile_hub;
  compile_hub.AddModel(model);
  HubServer compile_server(compile_hub);
  RunningWorker compiler(Options(compile_server.port));
  compile_hub.Push(list);
  compile_hub.Push(measure);
  ASSERT_TRUE(compile_hub.WaitFor([&] { return compile_hub.results_.size() == 2; }));
  {
    std::lock_guard<std::mutex> lock(compile_hub.mu_);
    const kiln::v1::TaskResult& listed = compile_hub.results_["list"];
    ASSERT_EQ(listed.error_code(), 0) << listed.error_message();
    ASSERT_TRUE(listed.has_workloads());
    EXPECT_EQ(listed.workloads().workloads_size(), 4);
    const kiln::v1::TaskResult& refused = compile_hub.results_["measure"];
    EXPECT_EQ(refused.error_code(), static_cast<int>(absl::StatusCode::kUnimplemented));
    EXPECT_THAT(refused.error_message(), HasSubstr("compile worker; it does not run measure"));
  }

  FakeHub measure_hub;
  measure_hub.AddModel(model);
  HubServer measure_server(measure_hub);
  WorkerOptions measure_options = Options(measure_server.port);
  measure_options.id = "test-measure-worker";
  measure_options.measure_hardware_key = "cpu:test|device=Test CPU|units=1|cache=1,2,3";
  measure_options.measure_device_name = "Test CPU";
  RunningWorker measurer(measure_options);
  measure_hub.Push(list);
  measure_hub.Push(measure);
  ASSERT_TRUE(measure_hub.WaitFor([&] { return measure_hub.results_.size() == 2; }));
  std::lock_guard<std::mutex> lock(measure_hub.mu_);
  ASSERT_EQ(measure_hub.registrations_.size(), 1u);
  const kiln::v1::Worker& w = measure_hub.registrations_[0];
  ASSERT_EQ(w.capabilities().capabilities_size(), 1);
  ASSERT_TRUE(w.capabilities().capabilities(0).has_measure());
  const kiln::v1::MeasureCapability& m = w.capabilities().capabilities(0).measure();
  EXPECT_EQ(m.device_kind(), "cpu");
  EXPECT_EQ(m.device_name(), "Test CPU");
  EXPECT_EQ(m.hardware_key(), measure_options.measure_hardware_key);
  EXPECT_EQ(m.cores(), 1);
  const kiln::v1::TaskResult& not_listed = measure_hub.results_["list"];
  EXPECT_EQ(not_listed.error_code(), static_cast<int>(absl::StatusCode::kUnimplemented));
  EXPECT_THAT(not_listed.error_message(), HasSubstr("measure worker; it does not run workloads"));
  const kiln::v1::TaskResult& other_key = measure_hub.results_["measure"];
  EXPECT_EQ(other_key.error_code(), static_cast<int>(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(other_key.error_message(), HasSubstr("cpu:elsewhere"));
}

TEST(WorkerTest, ErrorsAreReportedAsCodesAndTheWorkerCarriesOn) {
  FakeHub hub;
  std::string bad_model = "definitely not onnx";
  hub.AddModel(bad_model);
  HubServer server(hub);
  WorkerOptions options = Options(server.port);
  options.slots = 5;
  RunningWorker worker(options);
  hub.Push(Task("malformed", bad_model));
  hub.Push(Task("missing", "never uploaded"));
  kiln::v1::WorkerTask expired = Task("expired", bad_model);
  expired.set_deadline_unix_ms(1);
  hub.Push(expired);
  kiln::v1::WorkerTask bad_target = Task("bad-target", bad_model);
  bad_target.mutable_compile()->set_target("cpu:no-such-cpu");
  hub.Push(bad_target);
  kiln::v1::WorkerTask no_kind = Task("no-kind", bad_model);
  no_kind.clear_compile();
  hub.Push(no_kind);
  ASSERT_TRUE(hub.WaitFor([&] { return hub.results_.size() == 5; }));
  std::lock_guard<std::mutex> lock(hub.mu_);
  EXPECT_EQ(hub.results_["malformed"].error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << hub.results_["malformed"].error_message();
  EXPECT_EQ(hub.results_["missing"].error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(hub.results_["expired"].error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(hub.results_["bad-target"].error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(hub.results_["no-kind"].error_code(), grpc::StatusCode::UNIMPLEMENTED);
  for (const auto& [id, result] : hub.results_) EXPECT_FALSE(result.has_compile()) << id;
  EXPECT_TRUE(hub.artifacts_.empty());
}

TEST(WorkerTest, TasksBeyondTheSlotsAreRefused) {
  FakeHub hub;
  hub.hold_fetch_ = true;  // task "a" occupies the only slot until released
  HubServer server(hub);
  WorkerOptions options = Options(server.port);
  options.slots = 1;
  RunningWorker worker(options);
  hub.Push(Task("a", "x"));
  ASSERT_TRUE(hub.WaitFor([&] { return hub.fetches_ == 1; }));
  hub.Push(Task("b", "x"));
  ASSERT_TRUE(hub.WaitFor([&] { return hub.results_.count("b") != 0; }));
  {
    std::lock_guard<std::mutex> lock(hub.mu_);
    EXPECT_EQ(hub.results_["b"].error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_EQ(hub.results_.count("a"), 0u);
    hub.hold_fetch_ = false;
    hub.cv_.notify_all();
  }
  ASSERT_TRUE(hub.WaitFor([&] { return hub.results_.count("a") != 0; }));
  std::lock_guard<std::mutex> lock(hub.mu_);
  EXPECT_EQ(hub.results_["a"].error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST(WorkerTest, CorruptFetchIsDataLoss) {
  FakeHub hub;
  std::string model = "some model bytes that will be corrupted in flight";
  hub.AddModel(model);
  hub.corrupt_fetch_ = true;
  HubServer server(hub);
  RunningWorker worker(Options(server.port));
  hub.Push(Task("t", model));
  ASSERT_TRUE(hub.WaitFor([&] { return hub.results_.count("t") != 0; }));
  std::lock_guard<std::mutex> lock(hub.mu_);
  EXPECT_EQ(hub.results_["t"].error_code(), grpc::StatusCode::DATA_LOSS);
}

TEST(WorkerTest, ReconnectsWhenTheHubComesBack) {
  FakeHub hub;
  auto server = std::make_unique<HubServer>(hub);
  int port = server->port;
  RunningWorker worker(Options(port));
  ASSERT_TRUE(hub.WaitFor([&] { return hub.registrations_.size() == 1; }, 10s));
  hub.Close();
  server->Stop();
  {
    std::lock_guard<std::mutex> lock(hub.mu_);
    hub.closing_ = false;
  }
  std::this_thread::sleep_for(300ms);
  server = std::make_unique<HubServer>(hub, port);
  ASSERT_EQ(server->port, port);
  EXPECT_TRUE(hub.WaitFor([&] { return hub.registrations_.size() >= 2; }, 20s));
  worker.Stop();
  EXPECT_TRUE(worker.status.ok()) << worker.status;
}

TEST(WorkerTest, GivesUpWithoutAHub) {
  FakeHub hub;
  int port = 0;
  {
    HubServer probe(hub);  // find a free port, then leave it unbound
    port = probe.port;
  }
  WorkerOptions options = Options(port);
  options.give_up_after_ms = 500;
  auto start = std::chrono::steady_clock::now();
  Worker worker(options);
  absl::Status status = worker.Run();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

}  // namespace
}  // namespace kiln::workers
