// Loopback integration test of the real kilnd binary: ephemeral port (read from
// DATA_DIR/kilnd.port), temp data dir, no local workers; the test itself plays a worker over
// WorkerHub. Covers request validation codes, compile miss → hit, FetchArtifact, corruption
// rebuild, SIGTERM + restart (the hit survives), and the data-dir lock.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "compiler_core/pipeline/compiler_version.h"
#include "compiler_core/runtime/artifact.h"
#include "compiler_core/support/sha256.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kiln/v1/service.grpc.pb.h"
#include "server/cache/test_util.h"

namespace kiln::server {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

std::string BinDir() {
  const char* env = std::getenv("KILN_BIN_DIR");
  return env ? env : "build/bin";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A kilnd child process.
class Kilnd {
 public:
  Kilnd(std::string data_dir, std::vector<std::string> extra = {})
      : data_dir_(std::move(data_dir)), extra_(std::move(extra)) {}
  ~Kilnd() { Kill(); }

  /// Starts kilnd and waits (bounded) for its port file. Returns false if it exited instead.
  bool Start() {
    std::string port_file = data_dir_ + "/kilnd.port";
    fs::remove(port_file);
    fs::create_directories(data_dir_);
    log_ = data_dir_ + "/../kilnd." + std::to_string(++starts_) + ".log";
    std::vector<std::string> args = {
        BinDir() + "/kilnd", "--listen", "127.0.0.1:0",      "--data-dir", data_dir_,
        "--workers",         "0",        "--shutdown-grace", "2s"};
    args.insert(args.end(), extra_.begin(), extra_.end());
    pid_ = Spawn(args, log_);
    for (int i = 0; i < 400; ++i) {  // ≤ 20 s
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        exit_status_ = status;
        pid_ = 0;
        return false;
      }
      std::string port = ReadFile(port_file);
      if (!port.empty() && port.back() == '\n') {
        address_ = absl::StrCat("127.0.0.1:", port.substr(0, port.size() - 1));
        return true;
      }
      ::usleep(50 * 1000);
    }
    return false;
  }

  /// SIGTERM and wait (bounded); returns the exit status.
  int Stop() {
    if (pid_ == 0) return exit_status_;
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 300; ++i) {  // ≤ 15 s
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = 0;
        return status;
      }
      ::usleep(50 * 1000);
    }
    Kill();
    return -1;
  }

  void Kill() {
    if (pid_ == 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = 0;
  }

  static pid_t Spawn(const std::vector<std::string>& args, const std::string& log) {
    pid_t pid = ::fork();
    if (pid == 0) {
      FILE* f = std::freopen(log.c_str(), "w", stderr);
      (void)f;
      std::vector<char*> argv;
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    return pid;
  }

  const std::string& address() const { return address_; }
  const std::string& log() const { return log_; }
  int exit_status() const { return exit_status_; }

 private:
  std::string data_dir_;
  std::vector<std::string> extra_;
  std::string log_;
  std::string address_;
  pid_t pid_ = 0;
  int exit_status_ = 0;
  int starts_ = 0;
};

class KilndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_dir_ = dir_.path() + "/data";
    kilnd_ = std::make_unique<Kilnd>(data_dir_,
                                     std::vector<std::string>{"--max-model-bytes", "1000000"});
    ASSERT_TRUE(kilnd_->Start()) << ReadFile(kilnd_->log());
    Connect();
    model_ = ReadFile("../shared/models/lenet/model.onnx");
    ASSERT_FALSE(model_.empty()) << "run from the repo root (../shared/models/lenet)";
  }

  void TearDown() override {
    if (HasFailure() || std::getenv("KILN_SHOW_LOG")) {
      std::cerr << "---- kilnd log ----\n" << ReadFile(kilnd_->log());
    }
  }

  void Connect() {
    channel_ = grpc::CreateChannel(kilnd_->address(), grpc::InsecureChannelCredentials());
    kiln_ = v1::KilnService::NewStub(channel_);
    hub_ = v1::WorkerHub::NewStub(channel_);
  }

  static void SetDeadline(grpc::ClientContext& ctx, int seconds = 60) {
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
  }

  grpc::Status Upload(const std::string& bytes, const std::string& claimed_digest,
                      v1::UploadModelResponse* response) {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    auto writer = kiln_->UploadModel(&ctx, response);
    size_t offset = 0;
    bool first = true;
    do {
      v1::UploadModelRequest req;
      if (first) {
        req.mutable_digest()->set_hash(claimed_digest);
        req.mutable_digest()->set_size_bytes(static_cast<int64_t>(bytes.size()));
      }
      size_t n = std::min<size_t>(bytes.size() - offset, 64 << 10);
      req.set_data(bytes.substr(offset, n));
      offset += n;
      first = false;
      if (!writer->Write(req)) break;  // the server ended the stream early
    } while (offset < bytes.size());
    writer->WritesDone();
    return writer->Finish();
  }

  grpc::Status Compile(const v1::CompileRequest& request, v1::CompileResponse* response) {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    return kiln_->Compile(&ctx, request, response);
  }

  v1::CompileRequest CompileOf(const std::string& digest, const std::string& target = "host") {
    v1::CompileRequest request;
    request.mutable_model_digest()->set_hash(digest);
    request.set_target(target);
    return request;
  }

  cache::testing::TempDir dir_;
  std::string data_dir_;
  std::unique_ptr<Kilnd> kilnd_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::KilnService::Stub> kiln_;
  std::unique_ptr<v1::WorkerHub::Stub> hub_;
  std::string model_;
};

/// The test's stand-in for kiln-worker: registers, takes one task at a time, fetches the
/// model, uploads `artifact` and reports success.
class FakeWorker {
 public:
  explicit FakeWorker(v1::WorkerHub::Stub* hub) : hub_(hub) {
    ctx_.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    stream_ = hub_->Connect(&ctx_);
    v1::WorkerMessage reg;
    reg.mutable_register_()
        ->mutable_capabilities()
        ->add_capabilities()
        ->mutable_compile()
        ->add_target_kinds("cpu");
    reg.mutable_register_()->set_slots(1);
    reg.mutable_register_()->set_pid(static_cast<int>(::getpid()));
    EXPECT_TRUE(stream_->Write(reg));
    v1::HubMessage m;
    EXPECT_TRUE(stream_->Read(&m));
    EXPECT_TRUE(m.has_registered());
    id_ = m.registered().worker_id();
  }
  ~FakeWorker() {
    ctx_.TryCancel();
    stream_->Finish();
  }

  /// Serves one task; returns it.
  /// Serves one task with an artifact of code `code` whose manifest names the task's key
  /// (another graph hash with `lie_about_key`); the artifact goes to `artifact_out`.
  v1::WorkerTask ServeOne(const std::string& expected_model, const std::string& code,
                          std::string* artifact_out = nullptr, bool lie_about_key = false) {
    v1::HubMessage m;
    EXPECT_TRUE(stream_->Read(&m));
    EXPECT_TRUE(m.has_task()) << m.DebugString();
    v1::WorkerTask task = m.task();
    EXPECT_TRUE(task.has_compile()) << task.DebugString();
    // FetchModel.
    {
      grpc::ClientContext ctx;
      v1::FetchModelRequest req;
      *req.mutable_digest() = task.compile().model_digest();
      auto reader = hub_->FetchModel(&ctx, req);
      std::string bytes;
      v1::FetchArtifactResponse chunk;
      while (reader->Read(&chunk)) bytes += chunk.data();
      EXPECT_TRUE(reader->Finish().ok());
      EXPECT_EQ(bytes, expected_model);
    }
    runtime::Artifact made;
    made.code = code;
    const v1::ArtifactKey& key = task.compile().key();
    made.manifest.set_graph_hash(lie_about_key ? std::string(64, '0') : key.graph_hash());
    made.manifest.set_target_key(key.target_key());
    made.manifest.set_compiler_version(key.compiler_version());
    made.manifest.set_options_hash(key.options_hash());
    const std::string artifact = runtime::SerializeArtifact(made);
    if (artifact_out != nullptr) *artifact_out = artifact;
    // UploadArtifact.
    std::string digest = Sha256Hex(artifact);
    {
      grpc::ClientContext ctx;
      v1::UploadArtifactResponse resp;
      auto writer = hub_->UploadArtifact(&ctx, &resp);
      v1::UploadArtifactRequest req;
      req.mutable_digest()->set_hash(digest);
      req.mutable_digest()->set_size_bytes(static_cast<int64_t>(artifact.size()));
      req.set_data(artifact);
      EXPECT_TRUE(writer->Write(req));
      writer->WritesDone();
      grpc::Status s = writer->Finish();
      EXPECT_TRUE(s.ok()) << s.error_message();
    }
    v1::WorkerMessage result;
    result.mutable_result()->set_task_id(task.task_id());
    v1::CompileResult& compiled = *result.mutable_result()->mutable_compile();
    compiled.mutable_artifact_digest()->set_hash(digest);
    compiled.mutable_artifact_digest()->set_size_bytes(static_cast<int64_t>(artifact.size()));
    *compiled.mutable_key() = task.compile().key();
    compiled.set_compile_ms(42);
    EXPECT_TRUE(stream_->Write(result));
    return task;
  }

  const std::string& id() const { return id_; }

 private:
  v1::WorkerHub::Stub* hub_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::WorkerMessage, v1::HubMessage>> stream_;
  std::string id_;
};

TEST_F(KilndTest, BadRequestsGetExactCodesAndKilndStaysUp) {
  v1::UploadModelResponse up;
  v1::CompileResponse resp;

  // A compile for a model never uploaded.
  grpc::Status s = Compile(CompileOf(Sha256Hex("never uploaded")), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("never uploaded"));

  // A malformed digest.
  s = Compile(CompileOf("not-a-digest"), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  // A digest that does not match the uploaded bytes.
  s = Upload(model_, Sha256Hex("something else"), &up);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("digest mismatch"));

  // An upload over --max-model-bytes (1000000): refused, whether announced or streamed.
  std::string big(1500000, 'x');
  s = Upload(big, Sha256Hex(big), &up);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("max-model-bytes"));

  // A malformed model: uploads fine (bytes are bytes), refuses to compile.
  std::string garbage = "this is not an onnx model";
  s = Upload(garbage, Sha256Hex(garbage), &up);
  ASSERT_TRUE(s.ok()) << s.error_message();
  s = Compile(CompileOf(Sha256Hex(garbage)), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();

  // The same inline.
  v1::CompileRequest inline_req;
  inline_req.set_inline_model(garbage);
  s = Compile(inline_req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();

  // An unknown target.
  s = Upload(model_, Sha256Hex(model_), &up);
  ASSERT_TRUE(s.ok()) << s.error_message();
  s = Compile(CompileOf(Sha256Hex(model_), "cpu:no-such-cpu"), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  s = Compile(CompileOf(Sha256Hex(model_), "tpu:v5"), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();

  // No model at all.
  s = Compile(v1::CompileRequest(), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  // Fetching what is not there.
  {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    v1::FetchArtifactRequest req;
    req.mutable_digest()->set_hash(Sha256Hex("nothing"));
    auto reader = kiln_->FetchArtifact(&ctx, req);
    v1::FetchArtifactResponse chunk;
    EXPECT_FALSE(reader->Read(&chunk));
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::NOT_FOUND);
  }
  {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    v1::WatchJobRequest req;
    req.set_job_id("nope");
    auto reader = kiln_->WatchJob(&ctx, req);
    v1::JobEvent e;
    EXPECT_FALSE(reader->Read(&e));
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::NOT_FOUND);
  }

  // Still up.
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  v1::GetStatsResponse stats;
  s = kiln_->GetStats(&ctx, v1::GetStatsRequest(), &stats);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(stats.compiler_version(), pipeline::kCompilerVersion);
  EXPECT_EQ(kilnd_->Stop(), 0);
}

TEST_F(KilndTest, CompileMissThenHitSurvivesRestartAndCorruption) {
  std::string digest = Sha256Hex(model_);
  // FindMissingBlobs → upload → present.
  {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    v1::FindMissingBlobsRequest req;
    req.add_digests()->set_hash(digest);
    v1::FindMissingBlobsResponse resp;
    ASSERT_TRUE(kiln_->FindMissingBlobs(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.missing_size(), 1);
  }
  v1::UploadModelResponse up;
  ASSERT_TRUE(Upload(model_, digest, &up).ok());
  EXPECT_FALSE(up.already_present());
  ASSERT_TRUE(Upload(model_, digest, &up).ok());
  EXPECT_TRUE(up.already_present());

  const std::string code = "fake code for lenet";
  std::string artifact;
  FakeWorker worker(hub_.get());
  auto first = std::async(std::launch::async, [&] {
    v1::CompileResponse resp;
    grpc::Status s = Compile(CompileOf(digest), &resp);
    return std::make_pair(s, resp);
  });
  v1::WorkerTask task = worker.ServeOne(model_, code, &artifact);
  auto [status, miss] = first.get();
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_FALSE(miss.cache_hit());
  EXPECT_EQ(miss.job_id(), task.job_id());
  EXPECT_EQ(miss.worker(), worker.id());
  EXPECT_EQ(miss.artifact_digest().hash(), Sha256Hex(artifact));
  EXPECT_EQ(miss.key().graph_hash().size(), 64u);
  EXPECT_THAT(miss.key().target_key(), HasSubstr("cpu:"));
  EXPECT_EQ(miss.key().compiler_version(), pipeline::kCompilerVersion);
  EXPECT_EQ(miss.key().options_hash().size(), 64u);
  EXPECT_EQ(task.compile().key().graph_hash(), miss.key().graph_hash());

  // Again: a hit, no job; the inline form of the same model hits too.
  v1::CompileResponse hit;
  ASSERT_TRUE(Compile(CompileOf(digest), &hit).ok());
  EXPECT_TRUE(hit.cache_hit());
  EXPECT_TRUE(hit.job_id().empty());
  EXPECT_EQ(hit.artifact_digest().hash(), miss.artifact_digest().hash());
  EXPECT_EQ(hit.compile_ms(), 42);
  v1::CompileRequest inline_req;
  inline_req.set_inline_model(model_);
  ASSERT_TRUE(Compile(inline_req, &hit).ok());
  EXPECT_TRUE(hit.cache_hit());

  // FetchArtifact streams the bytes.
  auto fetch = [&](grpc::Status* s) {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    v1::FetchArtifactRequest req;
    *req.mutable_digest() = miss.artifact_digest();
    auto reader = kiln_->FetchArtifact(&ctx, req);
    std::string bytes;
    v1::FetchArtifactResponse chunk;
    while (reader->Read(&chunk)) bytes += chunk.data();
    *s = reader->Finish();
    return bytes;
  };
  grpc::Status s;
  EXPECT_EQ(fetch(&s), artifact);
  EXPECT_TRUE(s.ok()) << s.error_message();

  // SubmitJob of a cached compile is SUCCEEDED at once; WatchJob says so.
  {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    v1::SubmitJobRequest req;
    *req.mutable_compile() = CompileOf(digest);
    v1::SubmitJobResponse resp;
    ASSERT_TRUE(kiln_->SubmitJob(&ctx, req, &resp).ok());
    EXPECT_TRUE(resp.cache_hit());
    grpc::ClientContext wctx;
    SetDeadline(wctx);
    v1::WatchJobRequest wreq;
    wreq.set_job_id(resp.job_id());
    auto reader = kiln_->WatchJob(&wctx, wreq);
    v1::JobEvent e;
    ASSERT_TRUE(reader->Read(&e));
    EXPECT_EQ(e.state(), v1::SUCCEEDED);
    EXPECT_FALSE(reader->Read(&e));
    EXPECT_TRUE(reader->Finish().ok());
  }

  // Restart: still a hit.
  ASSERT_EQ(kilnd_->Stop(), 0) << ReadFile(kilnd_->log());
  ASSERT_TRUE(kilnd_->Start()) << ReadFile(kilnd_->log());
  Connect();
  ASSERT_TRUE(Compile(CompileOf(digest), &hit).ok());
  EXPECT_TRUE(hit.cache_hit());

  // A second kilnd on the same data dir refuses to start.
  {
    Kilnd second(data_dir_);
    EXPECT_FALSE(second.Start());
    EXPECT_THAT(ReadFile(second.log()), HasSubstr("in use"));
    EXPECT_NE(second.exit_status(), 0);
  }

  // Corrupt the artifact blob on disk: never served, rebuilt by the next compile.
  int corrupted = 0;
  for (const auto& e : fs::recursive_directory_iterator(data_dir_)) {
    if (e.is_regular_file() && ReadFile(e.path().string()) == artifact) {
      fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
      std::ofstream(e.path(), std::ios::trunc) << "garbage";
      ++corrupted;
    }
  }
  ASSERT_EQ(corrupted, 1);
  // The hit trusts the index; the fetch verifies while streaming, never sends the garbage
  // whole, and evicts the blob, so the next compile rebuilds it.
  v1::CompileResponse trusted;
  ASSERT_TRUE(Compile(CompileOf(digest), &trusted).ok());
  EXPECT_TRUE(trusted.cache_hit());
  std::string served = fetch(&s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DATA_LOSS) << s.error_message();
  EXPECT_NE(served, "garbage");
  FakeWorker worker2(hub_.get());
  auto rebuilt = std::async(std::launch::async, [&] {
    v1::CompileResponse resp;
    grpc::Status st = Compile(CompileOf(digest), &resp);
    return std::make_pair(st, resp);
  });
  worker2.ServeOne(model_, code);
  auto [st2, again] = rebuilt.get();
  ASSERT_TRUE(st2.ok()) << st2.error_message();
  EXPECT_FALSE(again.cache_hit());
  EXPECT_EQ(fetch(&s), artifact);
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(kilnd_->Stop(), 0);
}

// A worker whose artifact's manifest names another key than the task's: kilnd refuses to file
// it, the compile fails with a clear error, nothing is cached, and kilnd keeps serving.
TEST_F(KilndTest, ArtifactWhoseManifestDoesNotMatchItsKeyIsRefused) {
  const std::string digest = Sha256Hex(model_);
  v1::UploadModelResponse up;
  ASSERT_TRUE(Upload(model_, digest, &up).ok());
  FakeWorker liar(hub_.get());
  auto compile = std::async(std::launch::async, [&] {
    v1::CompileResponse resp;
    grpc::Status s = Compile(CompileOf(digest), &resp);
    return std::make_pair(s, resp);
  });
  liar.ServeOne(model_, "code for another model", nullptr, /*lie_about_key=*/true);
  auto [status, response] = compile.get();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_THAT(status.error_message(),
              HasSubstr("does not match its key: the artifact's manifest has graph_hash '0000"));
  v1::GetStatsResponse stats;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(kiln_->GetStats(&ctx, v1::GetStatsRequest(), &stats).ok());
  }
  EXPECT_EQ(stats.artifact_count(), 0);
}

// With a real kiln-worker started by kilnd's supervisor: a real artifact, and 8 concurrent
// identical compiles run one job.
TEST_F(KilndTest, RealLocalWorkerCompilesLenetOnceForEightClients) {
  if (!fs::exists(BinDir() + "/kiln-worker")) GTEST_SKIP() << "kiln-worker not built";
  ASSERT_EQ(kilnd_->Stop(), 0);
  kilnd_ = std::make_unique<Kilnd>(data_dir_, std::vector<std::string>{"--workers", "1"});
  ASSERT_TRUE(kilnd_->Start()) << ReadFile(kilnd_->log());
  Connect();
  // Wait (bounded) for the worker to register.
  int workers = 0;
  for (int i = 0; i < 300 && workers == 0; ++i) {
    grpc::ClientContext ctx;
    SetDeadline(ctx, 5);
    v1::ListWorkersResponse resp;
    if (kiln_->ListWorkers(&ctx, v1::ListWorkersRequest(), &resp).ok()) {
      workers = resp.workers_size();
      if (workers > 0) EXPECT_TRUE(resp.workers(0).local());
    }
    if (workers == 0) ::usleep(100 * 1000);
  }
  ASSERT_EQ(workers, 1) << ReadFile(kilnd_->log());

  std::string digest = Sha256Hex(model_);
  v1::UploadModelResponse up;
  ASSERT_TRUE(Upload(model_, digest, &up).ok());
  std::vector<std::future<std::pair<grpc::Status, v1::CompileResponse>>> calls;
  for (int i = 0; i < 8; ++i) {
    calls.push_back(std::async(std::launch::async, [&] {
      v1::CompileResponse resp;
      grpc::ClientContext ctx;
      SetDeadline(ctx, 240);
      grpc::Status s = kiln_->Compile(&ctx, CompileOf(digest), &resp);
      return std::make_pair(s, resp);
    }));
  }
  std::set<std::string> jobs, artifacts;
  for (auto& call : calls) {
    auto [s, resp] = call.get();
    ASSERT_TRUE(s.ok()) << s.error_message() << ReadFile(kilnd_->log());
    EXPECT_FALSE(resp.cache_hit());
    jobs.insert(resp.job_id());
    artifacts.insert(resp.artifact_digest().hash());
  }
  EXPECT_EQ(jobs.size(), 1u);
  EXPECT_EQ(artifacts.size(), 1u);

  // The artifact is real and names the same key.
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  v1::FetchArtifactRequest req;
  req.mutable_digest()->set_hash(*artifacts.begin());
  auto reader = kiln_->FetchArtifact(&ctx, req);
  std::string bytes;
  v1::FetchArtifactResponse chunk;
  while (reader->Read(&chunk)) bytes += chunk.data();
  ASSERT_TRUE(reader->Finish().ok());
  auto artifact = runtime::ParseArtifact(bytes);
  ASSERT_TRUE(artifact.ok()) << artifact.status();
  v1::CompileResponse hit;
  ASSERT_TRUE(Compile(CompileOf(digest), &hit).ok());
  EXPECT_TRUE(hit.cache_hit());
  EXPECT_EQ(artifact->manifest.graph_hash(), hit.key().graph_hash());
  EXPECT_EQ(artifact->manifest.target_key(), hit.key().target_key());
  EXPECT_EQ(kilnd_->Stop(), 0);
}

// kill -9 of the worker running a job: the supervisor restarts it, the job is retried and
// still ends with a correct artifact. WatchJob reports the progress.
TEST_F(KilndTest, KilledWorkerIsRestartedAndTheJobRetried) {
  if (!fs::exists(BinDir() + "/kiln-worker")) GTEST_SKIP() << "kiln-worker not built";
  std::string model = ReadFile("../shared/models/resnet18/model.onnx");
  ASSERT_FALSE(model.empty());
  ASSERT_EQ(kilnd_->Stop(), 0);
  kilnd_ = std::make_unique<Kilnd>(data_dir_, std::vector<std::string>{"--workers", "1"});
  ASSERT_TRUE(kilnd_->Start()) << ReadFile(kilnd_->log());
  Connect();
  std::string digest = Sha256Hex(model);
  v1::UploadModelResponse up;
  ASSERT_TRUE(Upload(model, digest, &up).ok());

  grpc::ClientContext sctx;
  SetDeadline(sctx);
  v1::SubmitJobRequest submit;
  *submit.mutable_compile() = CompileOf(digest);
  v1::SubmitJobResponse job;
  grpc::Status s = kiln_->SubmitJob(&sctx, submit, &job);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_FALSE(job.cache_hit());

  grpc::ClientContext wctx;
  SetDeadline(wctx, 400);
  v1::WatchJobRequest watch;
  watch.set_job_id(job.job_id());
  auto reader = kiln_->WatchJob(&wctx, watch);
  v1::JobEvent e;
  int running = 0;
  bool killed = false;
  v1::JobEvent last;
  while (reader->Read(&e)) {
    last = e;
    if (e.state() != v1::RUNNING) continue;
    ++running;
    if (killed) continue;
    grpc::ClientContext lctx;
    SetDeadline(lctx, 5);
    v1::ListWorkersResponse workers;
    ASSERT_TRUE(kiln_->ListWorkers(&lctx, v1::ListWorkersRequest(), &workers).ok());
    ASSERT_EQ(workers.workers_size(), 1);
    ASSERT_GT(workers.workers(0).pid(), 0);
    ::kill(workers.workers(0).pid(), SIGKILL);
    killed = true;
  }
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_TRUE(killed);
  EXPECT_EQ(running, 2);  // the first attempt and the retry
  ASSERT_EQ(last.state(), v1::SUCCEEDED) << last.DebugString() << ReadFile(kilnd_->log());
  EXPECT_EQ(last.result().job_id(), job.job_id());

  v1::CompileResponse hit;
  ASSERT_TRUE(Compile(CompileOf(digest), &hit).ok());
  EXPECT_TRUE(hit.cache_hit());
  EXPECT_EQ(hit.artifact_digest().hash(), last.result().artifact_digest().hash());
  EXPECT_EQ(kilnd_->Stop(), 0);
}

}  // namespace
}  // namespace kiln::server
