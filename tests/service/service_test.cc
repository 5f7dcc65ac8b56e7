// End-to-end tests of the compile service with the real binaries: kilnd (on loopback, an
// ephemeral port, a temp data dir) supervising kiln-worker processes, driven by the kiln CLI
// and, where the CLI cannot misbehave on purpose, by the remote client library.
#include <arpa/inet.h>
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "client/remote.h"
#include "compiler_core/pipeline/compiler_version.h"
#include "compiler_core/runtime/artifact.h"
#include "compiler_core/support/sha256.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/service/process.h"
#include "tests/service/service_fixture.h"

namespace kiln::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

/// Runs `argv` with its stderr on a new pseudo-terminal (stdout into `dir`/tty.out) for at most
/// `timeout`: what a user at a terminal sees. The terminal's "\r\n" read back as "\n". exit_code
/// -1 if no terminal could be made, the child did not exit or it timed out.
RunResult RunWithTerminalStderr(const std::vector<std::string>& argv, const std::string& dir,
                                std::chrono::milliseconds timeout) {
  RunResult r;
  const int master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0) return r;
  const char* name = grantpt(master) == 0 && unlockpt(master) == 0 ? ptsname(master) : nullptr;
  // The parent opens the terminal first, so a read never finds it closed before the child runs.
  const int terminal = name != nullptr ? open(name, O_RDWR | O_NOCTTY) : -1;
  if (terminal < 0) {
    close(master);
    return r;
  }
  const std::string out_path = dir + "/tty.out";
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int in = open("/dev/null", O_RDONLY);
    dup2(in, 0);
    dup2(out, 1);
    dup2(terminal, 2);
    close(master);
    execv(args[0], args.data());
    _exit(127);
  }
  close(terminal);
  std::string err;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{master, POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(master, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EIO: every copy of the terminal closed, the child is gone
    err.append(buf, static_cast<size_t>(n));
  }
  close(master);
  if (std::chrono::steady_clock::now() >= deadline) {
    kill(pid, SIGKILL);
    r.timed_out = true;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!r.timed_out && WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  for (char c : err) {
    if (c != '\r') r.err += c;
  }
  r.out = ReadFile(out_path);
  return r;
}

/// Where each of `lines` starts in `text`, in order; npos for one missing or out of order.
std::vector<size_t> Positions(const std::string& text, const std::vector<std::string>& lines) {
  std::vector<size_t> at;
  size_t from = 0;
  for (const std::string& line : lines) {
    const size_t found = text.find(line, from);
    at.push_back(found);
    if (found != std::string::npos) from = found + line.size();
  }
  return at;
}

// A remote compile of ResNet-18 passes check; the same compile again is a hit that starts no
// job; after a kilnd restart it is still a hit.
TEST_F(ServiceTest, ResnetCompilesRemotelyThenHitsTheCacheAcrossRestarts) {
  if (!fs::exists(Model(kResnet))) GTEST_SKIP() << kResnet << " not found";
  Kilnd& kilnd = StartKilnd(/*workers=*/1);
  RunResult check = Kiln({"check", kResnet, "--server", kilnd.address()});
  ASSERT_EQ(check.exit_code, 0) << Describe(check);
  EXPECT_THAT(check.out, HasSubstr("PASS ../shared/models/resnet18 (cache miss)"));
  EXPECT_EQ(JobCount(), 1);

  std::string first = root_ + "/first.kiln";
  RunResult hit = CompileJson(Model(kResnet), first);
  ASSERT_EQ(hit.exit_code, 0) << Describe(hit);
  EXPECT_EQ(JsonField(hit.out, "cache_hit"), "true") << hit.out;
  EXPECT_EQ(JsonField(hit.out, "uploaded"), "false") << hit.out;
  EXPECT_EQ(JsonField(hit.out, "job_id"), "") << hit.out;
  std::string digest = JsonField(hit.out, "artifact_digest");
  EXPECT_EQ(Sha256Hex(ReadFile(first)), digest);
  EXPECT_EQ(JsonField(hit.out, "artifact_bytes"), std::to_string(fs::file_size(first)));
  for (const char* key : {"graph_hash", "target_key", "compiler_version", "options_hash"}) {
    EXPECT_FALSE(JsonField(hit.out, key).empty()) << key << " in " << hit.out;
  }
  EXPECT_EQ(JobCount(), 1) << "a cache hit must start no job";

  ASSERT_TRUE(kilnd.Stop()) << "kilnd did not exit 0 on SIGTERM";
  ASSERT_TRUE(kilnd.Start());
  RunResult after = CompileJson(Model(kResnet), root_ + "/after.kiln");
  ASSERT_EQ(after.exit_code, 0) << Describe(after);
  EXPECT_EQ(JsonField(after.out, "cache_hit"), "true") << after.out;
  EXPECT_EQ(JsonField(after.out, "artifact_digest"), digest);
  EXPECT_EQ(JobCount(), 1);
  auto stats = kilnd.client().GetStats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_GE(stats->cache_hits(), 1);
}

// Eight identical compiles at once run one job and get one artifact.
TEST_F(ServiceTest, EightConcurrentIdenticalCompilesRunOneJob) {
  if (!fs::exists(Model(kSqueezenet))) GTEST_SKIP() << kSqueezenet << " not found";
  Kilnd& kilnd = StartKilnd(/*workers=*/2);
  std::vector<Process> clients;
  for (int i = 0; i < 8; ++i) {
    std::string base = root_ + "/c" + std::to_string(i);
    clients.push_back(Process::Spawn({BinDir() + "/kiln", "compile", Model(kSqueezenet), "--server",
                                      kilnd.address(), "-o", base + ".kiln", "--json"},
                                     base + ".out", base + ".err"));
  }
  std::string digest;
  for (int i = 0; i < 8; ++i) {
    std::string base = root_ + "/c" + std::to_string(i);
    std::optional<int> status = clients[i].Wait(900s);
    ASSERT_TRUE(status.has_value()) << "client " << i << " timed out";
    ASSERT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
        << "client " << i << ": " << ReadFile(base + ".err");
    std::string json = ReadFile(base + ".out");
    if (i == 0) digest = JsonField(json, "artifact_digest");
    EXPECT_EQ(JsonField(json, "artifact_digest"), digest) << json;
    EXPECT_EQ(Sha256Hex(ReadFile(base + ".kiln")), digest);
  }
  EXPECT_EQ(JobCount(), 1);
}

// kill -9 of the worker running a compile: kilnd retries the job (the supervisor restarts the
// worker) and the client still gets a correct artifact.
TEST_F(ServiceTest, KillingTheCompilingWorkerStillEndsWithACorrectArtifact) {
  if (!fs::exists(Model(kResnet))) GTEST_SKIP() << kResnet << " not found";
  Kilnd& kilnd = StartKilnd(/*workers=*/2);
  std::string base = root_ + "/victim";
  Process compile = Process::Spawn({BinDir() + "/kiln", "compile", Model(kResnet), "--server",
                                    kilnd.address(), "-o", base + ".kiln", "--json"},
                                   base + ".out", base + ".err");
  // Find the worker that runs the job, by the job's worker id and ListWorkers' pid.
  int victim = 0;
  ASSERT_TRUE(Eventually(
      [&] {
        auto jobs = kilnd.client().ListJobs(kiln::v1::RUNNING, 10);
        if (!jobs.ok() || jobs->jobs_size() == 0 || jobs->jobs(0).worker().empty()) return false;
        auto workers = kilnd.client().ListWorkers();
        if (!workers.ok()) return false;
        for (const auto& w : workers->workers()) {
          if (w.id() == jobs->jobs(0).worker() && w.pid() > 0) victim = w.pid();
        }
        return victim > 0;
      },
      300s))
      << "no running job seen; client: " << ReadFile(base + ".err");
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  std::optional<int> status = compile.Wait(900s);
  ASSERT_TRUE(status.has_value()) << "compile timed out";
  ASSERT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << ReadFile(base + ".err");
  std::string json = ReadFile(base + ".out");
  EXPECT_EQ(Sha256Hex(ReadFile(base + ".kiln")), JsonField(json, "artifact_digest"));
  auto jobs = kilnd.client().ListJobs(kiln::v1::JOB_STATE_UNSPECIFIED, 10);
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->jobs_size(), 1);
  EXPECT_EQ(jobs->jobs(0).state(), kiln::v1::SUCCEEDED);
  EXPECT_EQ(jobs->jobs(0).attempts(), 2);
  RunResult check = Kiln({"check", kResnet, "--server", kilnd.address()});
  ASSERT_EQ(check.exit_code, 0) << Describe(check);
  EXPECT_THAT(check.out, HasSubstr("(cache hit)"));
  EXPECT_TRUE(Eventually(
      [&] {
        auto workers = kilnd.client().ListWorkers();
        return workers.ok() && workers->workers_size() == 2;
      },
      60s))
      << "the supervisor did not restart the killed worker";
}

/// Reads a whole FetchArtifact stream without verifying it (the CLI would).
absl::StatusOr<std::string> RawFetch(const std::string& address, const std::string& hash) {
  auto stub = kiln::v1::KilnService::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 60s);
  kiln::v1::FetchArtifactRequest request;
  request.mutable_digest()->set_hash(hash);
  auto reader = stub->FetchArtifact(&context, request);
  std::string bytes;
  kiln::v1::FetchArtifactResponse chunk;
  while (reader->Read(&chunk)) bytes += chunk.data();
  grpc::Status s = reader->Finish();
  if (!s.ok())
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
  return bytes;
}

void FlipByte(const std::string& path) {
  std::string bytes = ReadFile(path);
  ASSERT_FALSE(bytes.empty()) << path;
  bytes[bytes.size() / 2] ^= 0x5a;
  fs::permissions(path, fs::perms::owner_write, fs::perm_options::add);
  ASSERT_TRUE(WriteFile(path, bytes));
}

// A blob corrupted on disk is detected and rebuilt, never served.
TEST_F(ServiceTest, CorruptedArtifactBlobIsRebuiltNeverServed) {
  if (!fs::exists(Model(kLenet))) GTEST_SKIP() << kLenet << " not found";
  Kilnd& kilnd = StartKilnd(/*workers=*/1);
  RunResult first = CompileJson(Model(kLenet), root_ + "/a.kiln");
  ASSERT_EQ(first.exit_code, 0) << Describe(first);
  std::string digest = JsonField(first.out, "artifact_digest");
  std::string blob = kilnd.data_dir() + "/blobs/" + digest.substr(0, 2) + "/" + digest;
  ASSERT_TRUE(fs::exists(blob)) << blob;
  std::string good = ReadFile(blob);

  // Corrupted, then compiled again: the hit trusts the index, the fetch verifies while it
  // streams and evicts the blob, the client compiles once more and the blob is rebuilt.
  FlipByte(blob);
  RunResult again = CompileJson(Model(kLenet), root_ + "/b.kiln");
  ASSERT_EQ(again.exit_code, 0) << Describe(again);
  EXPECT_EQ(JsonField(again.out, "cache_hit"), "false") << again.out;
  EXPECT_EQ(Sha256Hex(ReadFile(root_ + "/b.kiln")), JsonField(again.out, "artifact_digest"));
  RunResult check = Kiln({"check", kLenet, "--server", kilnd.address()});
  EXPECT_EQ(check.exit_code, 0) << Describe(check);
  RunResult nokey = CompileJson(Model(kLenet), root_ + "/nokey.kiln", {"--hardware-key", "nope"});
  EXPECT_EQ(nokey.exit_code, 1) << Describe(nokey);
  EXPECT_THAT(nokey.err, HasSubstr("no tuning record for hardware key 'nope'")) << Describe(nokey);

  // Corrupted, then fetched directly: an error, never the corrupted bytes.
  std::string rebuilt_digest = JsonField(again.out, "artifact_digest");
  std::string rebuilt =
      kilnd.data_dir() + "/blobs/" + rebuilt_digest.substr(0, 2) + "/" + rebuilt_digest;
  ASSERT_TRUE(fs::exists(rebuilt));
  FlipByte(rebuilt);
  std::string corrupted = ReadFile(rebuilt);
  auto fetched = RawFetch(kilnd.address(), rebuilt_digest);
  if (fetched.ok()) {
    EXPECT_NE(*fetched, corrupted) << "kilnd served a corrupted blob";
    EXPECT_EQ(Sha256Hex(*fetched), rebuilt_digest);
  } else {
    EXPECT_THAT(fetched.status().code(),
                ::testing::AnyOf(absl::StatusCode::kDataLoss, absl::StatusCode::kNotFound))
        << fetched.status();
  }
  RunResult third = CompileJson(Model(kLenet), root_ + "/c.kiln");
  ASSERT_EQ(third.exit_code, 0) << Describe(third);
  EXPECT_EQ(Sha256Hex(ReadFile(root_ + "/c.kiln")), JsonField(third.out, "artifact_digest"));
  EXPECT_TRUE(kilnd.process().running());
}

// Bad input gets the right code and a clear message, and kilnd stays up.
TEST_F(ServiceTest, BadInputGetsTheRightCodeAndKilndStaysUp) {
  if (!fs::exists(Model(kLenet)) || !fs::exists(Model(kMlp))) GTEST_SKIP() << "models not found";
  Kilnd& kilnd = StartKilnd(/*workers=*/1, {"--max-model-bytes", "1000000"});
  client::RemoteClient& client = kilnd.client();

  std::string garbage = root_ + "/garbage.onnx";
  ASSERT_TRUE(WriteFile(garbage, "this is not an ONNX model"));
  RunResult malformed = CompileJson(garbage, root_ + "/x.kiln");
  EXPECT_EQ(malformed.exit_code, 1) << Describe(malformed);
  EXPECT_THAT(malformed.err, HasSubstr("INVALID_ARGUMENT"));

  RunResult target = CompileJson(Model(kLenet), root_ + "/x.kiln", {"--target", "cpu:no-such-cpu"});
  EXPECT_EQ(target.exit_code, 1) << Describe(target);
  EXPECT_THAT(target.err, HasSubstr("INVALID_ARGUMENT"));
  EXPECT_THAT(target.err, HasSubstr("no-such-cpu"));

  auto lie = client.UploadModel("the bytes actually sent", client::DigestOf("other bytes"));
  EXPECT_EQ(lie.status().code(), absl::StatusCode::kInvalidArgument) << lie.status();

  RunResult too_big = CompileJson(Model(kMlp), root_ + "/x.kiln");
  EXPECT_EQ(too_big.exit_code, 1) << Describe(too_big);
  EXPECT_THAT(too_big.err, HasSubstr("RESOURCE_EXHAUSTED"));
  EXPECT_THAT(too_big.err, HasSubstr("--max-model-bytes"));

  kiln::v1::CompileRequest never;
  *never.mutable_model_digest() = client::DigestOf("a model nobody uploaded");
  auto missing = client.Compile(never);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound) << missing.status();
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("never uploaded"));

  EXPECT_FALSE(fs::exists(root_ + "/x.kiln")) << "a failed compile must not write its output";
  ASSERT_TRUE(kilnd.process().running());
  EXPECT_TRUE(client.GetStats().ok());
  RunResult fine = CompileJson(Model(kLenet), root_ + "/ok.kiln");
  EXPECT_EQ(fine.exit_code, 0) << Describe(fine);
}

// A model with symbolic input dims through kilnd: with no shape it compiles once with
// symbolic dims (kilnd hashes the symbolic graph as the worker's pipeline does: the local
// compile's hash), and `kiln check --server` runs every data set through that one cache entry;
// --input-shape travels in CompileOptions, so two shapes are two artifacts (different graph
// and options hashes), and one input given two shapes is one artifact with two shape profiles.
TEST_F(ServiceTest, SymbolicInputShapesThroughKilnd) {
  const std::string dyn = "../shared/models/transformer_encoder_dyn";
  if (!fs::exists(Model(dyn))) GTEST_SKIP() << dyn << " not found";
  Kilnd& kilnd = StartKilnd(/*workers=*/1);
  RunResult none = CompileJson(Model(dyn), root_ + "/none.kiln");
  ASSERT_EQ(none.exit_code, 0) << Describe(none);
  RunResult none_local = Kiln({"compile", Model(dyn), "-o", root_ + "/none_local.kiln"});
  ASSERT_EQ(none_local.exit_code, 0) << Describe(none_local);
  EXPECT_THAT(none_local.out, HasSubstr("graph " + JsonField(none.out, "graph_hash").substr(0, 16)));
  RunResult symbolic_check = Kiln({"check", dyn, "--server", kilnd.address()});
  ASSERT_EQ(symbolic_check.exit_code, 0) << Describe(symbolic_check);
  for (const char* line : {"symbolic dims: one artifact for all 3 data sets",
                           "PASS test_data_set_0/output", "PASS test_data_set_1/output",
                           "PASS test_data_set_2/output", "(cache hit)"}) {
    EXPECT_THAT(symbolic_check.out, HasSubstr(line));
  }
  RunResult a = CompileJson(Model(dyn), root_ + "/a.kiln", {"--input-shape", "input=2,16,256"});
  ASSERT_EQ(a.exit_code, 0) << Describe(a);
  RunResult b = CompileJson(Model(dyn), root_ + "/b.kiln", {"--input-shape", "input=1,16,256"});
  ASSERT_EQ(b.exit_code, 0) << Describe(b);
  EXPECT_NE(JsonField(a.out, "graph_hash"), JsonField(b.out, "graph_hash"));
  EXPECT_NE(JsonField(a.out, "options_hash"), JsonField(b.out, "options_hash"));
  RunResult again = CompileJson(Model(dyn), root_ + "/a2.kiln", {"--input-shape", "input=2,16,256"});
  ASSERT_EQ(again.exit_code, 0) << Describe(again);
  EXPECT_EQ(JsonField(again.out, "cache_hit"), "true") << again.out;
  EXPECT_EQ(JsonField(again.out, "artifact_digest"), JsonField(a.out, "artifact_digest"));
  RunResult fixed = CompileJson(Model(dyn), root_ + "/f.kiln", {"--input-shape", "input=2,16,8"});
  EXPECT_EQ(fixed.exit_code, 1) << Describe(fixed);
  EXPECT_THAT(fixed.err, HasSubstr("dim 2 of graph input 'input' [batch,seq,256] is fixed at 256"));

  // Two shapes for the input: one artifact with two shape profiles, whose graph hash is the
  // local compile's (kilnd hashes each profile's import as the worker's pipeline does).
  RunResult profiles = CompileJson(Model(dyn), root_ + "/p.kiln",
                                   {"--input-shape", "input=1,64,256", "--input-shape",
                                    "input=2,16,256"});
  ASSERT_EQ(profiles.exit_code, 0) << Describe(profiles);
  RunResult local = Kiln({"compile", Model(dyn), "-o", root_ + "/p_local.kiln", "--input-shape",
                          "input=1,64,256", "--input-shape", "input=2,16,256"});
  ASSERT_EQ(local.exit_code, 0) << Describe(local);
  EXPECT_THAT(local.out, HasSubstr("(2 shape profiles, 72 kernels, graph " +
                                   JsonField(profiles.out, "graph_hash").substr(0, 16)));
  RunResult checked = Kiln({"check", dyn, "--server", kilnd.address(), "--input-shape",
                            "input=1,64,256", "--input-shape", "input=2,16,256",
                            "--input-shape", "input=3,40,256"});
  ASSERT_EQ(checked.exit_code, 0) << Describe(checked);
  for (const char* line : {"input shapes: input=1,64,256 | input=2,16,256 | input=3,40,256",
                           "PASS test_data_set_0/output", "PASS test_data_set_2/output"}) {
    EXPECT_THAT(checked.out, HasSubstr(line));
  }

  // Bounded dims travel as InputShape.min_dims: kilnd hashes the bounded graph as the local
  // pipeline does (probe import, BoundDims), two ranges are two artifacts, and check runs every
  // data set through the one artifact.
  RunResult bounded =
      CompileJson(Model(dyn), root_ + "/bounded.kiln", {"--input-shape", "input=1..4,1..64,256"});
  ASSERT_EQ(bounded.exit_code, 0) << Describe(bounded);
  RunResult bounded_local = Kiln({"compile", Model(dyn), "-o", root_ + "/bounded_local.kiln",
                                  "--input-shape", "input=1..4,1..64,256"});
  ASSERT_EQ(bounded_local.exit_code, 0) << Describe(bounded_local);
  EXPECT_THAT(bounded_local.out,
              HasSubstr("graph " + JsonField(bounded.out, "graph_hash").substr(0, 16)));
  RunResult narrower =
      CompileJson(Model(dyn), root_ + "/narrower.kiln", {"--input-shape", "input=2..4,1..64,256"});
  ASSERT_EQ(narrower.exit_code, 0) << Describe(narrower);
  EXPECT_NE(JsonField(narrower.out, "graph_hash"), JsonField(bounded.out, "graph_hash"));
  RunResult bounded_check =
      Kiln({"check", dyn, "--server", kilnd.address(), "--input-shape", "input=1..4,1..64,256"});
  ASSERT_EQ(bounded_check.exit_code, 0) << Describe(bounded_check);
  for (const char* line : {"input shapes: input=1..4,1..64,256", "PASS test_data_set_0/output",
                           "PASS test_data_set_1/output", "PASS test_data_set_2/output"}) {
    EXPECT_THAT(bounded_check.out, HasSubstr(line));
  }

  // --constant-input travels too: kilnd hashes the model with the constants, the worker
  // compiles with them, and check feeds the remaining input by name.
  const std::string loop = "../shared/conformance/node/test_loop11";
  if (fs::exists(loop)) {
    RunResult unrolled = Kiln({"check", loop, "--server", kilnd.address(), "--constant-input",
                               "trip_count=" + loop + "/test_data_set_0/input_0.pb",
                               "--constant-input", "cond=" + loop + "/test_data_set_0/input_1.pb"});
    ASSERT_EQ(unrolled.exit_code, 0) << Describe(unrolled);
    EXPECT_THAT(unrolled.out, HasSubstr("PASS test_data_set_0/res_scan"));
  }

  // A request the CLI cannot send: inputs given different numbers of shapes.
  client::RemoteClient& client = kilnd.client();
  auto uploaded = client.UploadModel(ReadFile(Model(dyn)), client::DigestOf(ReadFile(Model(dyn))));
  ASSERT_TRUE(uploaded.ok()) << uploaded.status();
  kiln::v1::CompileRequest uneven;
  *uneven.mutable_model_digest() = client::DigestOf(ReadFile(Model(dyn)));
  for (const char* name : {"input", "input", "other", "other", "other"}) {
    kiln::v1::InputShape* shape = uneven.mutable_options()->add_input_shapes();
    shape->set_name(name);
    for (int64_t d : {int64_t{1}, int64_t{16}, int64_t{256}}) shape->add_dims(d);
  }
  auto refused = client.Compile(uneven);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("input 'input' is given 2 shapes and 'other' 3"));

  // After all those compiles, the symbolic check is still one cache entry: a hit.
  RunResult check = Kiln({"check", dyn, "--server", kilnd.address()});
  ASSERT_EQ(check.exit_code, 0) << Describe(check);
  for (const char* line : {"symbolic dims: one artifact for all 3 data sets",
                           "PASS test_data_set_2/output", "(cache hit)"}) {
    EXPECT_THAT(check.out, HasSubstr(line));
  }
  EXPECT_THAT(check.out, ::testing::Not(HasSubstr("input shapes: ")));
  ASSERT_TRUE(kilnd.process().running());
}

// /metrics after some traffic passes `promtool check metrics`.
// A build farm's request: a CUDA target and a tensor-core precision sent through kilnd. The
// precision is part of the target key (so fp32 and tf32 artifacts never collide), the worker
// compiles PTX with it, and a precision a CPU target cannot take is refused with the reason.
TEST_F(ServiceTest, CudaTargetAndPrecisionThroughKilnd) {
  const std::string model = "../shared/models/transformer_encoder";
  if (!fs::exists(Model(model))) GTEST_SKIP() << model << " not found";
  StartKilnd(/*workers=*/1);
  RunResult fp32 = CompileJson(Model(model), root_ + "/fp32.kiln", {"--target", "cuda:sm_80"});
  ASSERT_EQ(fp32.exit_code, 0) << Describe(fp32);
  EXPECT_EQ(JsonField(fp32.out, "target_key"), "cuda:sm_80:ptx70:nvptx64-nvidia-cuda");
  RunResult tf32 = CompileJson(Model(model), root_ + "/tf32.kiln",
                               {"--target", "cuda:sm_80", "--precision", "tf32"});
  ASSERT_EQ(tf32.exit_code, 0) << Describe(tf32);
  EXPECT_EQ(JsonField(tf32.out, "target_key"), "cuda:sm_80:ptx70:nvptx64-nvidia-cuda:tf32");
  EXPECT_EQ(JsonField(tf32.out, "cache_hit"), "false");
  EXPECT_NE(JsonField(tf32.out, "artifact_digest"), JsonField(fp32.out, "artifact_digest"));
  // The artifact is the local compile's: same target, same precision, the same code and
  // weights byte for byte; only the server's manifest names its options hash (its cache key).
  RunResult local = Kiln({"compile", Model(model), "-o", root_ + "/tf32_local.kiln", "--target",
                          "cuda:sm_80", "--precision", "tf32"});
  ASSERT_EQ(local.exit_code, 0) << Describe(local);
  absl::StatusOr<runtime::Artifact> remote_tf32 =
      runtime::ParseArtifact(ReadFile(root_ + "/tf32.kiln"));
  absl::StatusOr<runtime::Artifact> local_tf32 =
      runtime::ParseArtifact(ReadFile(root_ + "/tf32_local.kiln"));
  ASSERT_TRUE(remote_tf32.ok() && local_tf32.ok());
  EXPECT_EQ(remote_tf32->manifest.options_hash(), JsonField(tf32.out, "options_hash"));
  EXPECT_EQ(local_tf32->manifest.options_hash(), "");
  remote_tf32->manifest.clear_options_hash();
  EXPECT_EQ(remote_tf32->manifest.SerializeAsString(), local_tf32->manifest.SerializeAsString());
  EXPECT_EQ(remote_tf32->code, local_tf32->code);
  EXPECT_EQ(remote_tf32->weights, local_tf32->weights);
  EXPECT_THAT(ReadFile(root_ + "/tf32.kiln"), HasSubstr("mma.sync.aligned.m16n8k8"));
  EXPECT_THAT(ReadFile(root_ + "/fp32.kiln"), Not(HasSubstr("mma.sync")));
  RunResult cpu = CompileJson(Model(model), root_ + "/cpu.kiln", {"--precision", "fp16"});
  EXPECT_EQ(cpu.exit_code, 1) << Describe(cpu);
  EXPECT_THAT(cpu.err, HasSubstr("--precision fp16 applies to cuda targets (tensor cores)"));
  RunResult bad = CompileJson(Model(model), root_ + "/bad.kiln",
                              {"--target", "cuda:sm_80", "--precision", "fp8"});
  EXPECT_EQ(bad.exit_code, 1) << Describe(bad);
  EXPECT_THAT(bad.err, HasSubstr("--precision fp8: expected fp32, tf32, fp16 or bf16"));
}

// KILN_SERVER is the default --server of every command (compile goes remote with it, unless
// --local) and KILN_TARGET the default --target; a flag on the command line beats either.
TEST_F(ServiceTest, EnvironmentNamesTheServerAndTarget) {
  if (!fs::exists(Model(kLenet))) GTEST_SKIP() << kLenet << " not found";
  Kilnd& kilnd = StartKilnd(/*workers=*/1);
  auto kiln_with = [&](const std::string& server, std::vector<std::string> args) {
    args.insert(args.begin(), {"/usr/bin/env", "KILN_SERVER=" + server, "KILN_TARGET=cpu:x86-64-v2",
                               BinDir() + "/kiln"});
    return RunCommand(args, root_, 900s);
  };
  RunResult status = kiln_with(kilnd.address(), {"status"});
  ASSERT_EQ(status.exit_code, 0) << Describe(status);
  EXPECT_THAT(status.out,
              HasSubstr(std::string("compiler version: ") + pipeline::kCompilerVersion + "\n"));
  EXPECT_THAT(status.out, HasSubstr("workers:          1\n"));
  // --server beats KILN_SERVER (nobody answers at port 1).
  RunResult flag = kiln_with("127.0.0.1:1", {"workers", "--server", kilnd.address()});
  ASSERT_EQ(flag.exit_code, 0) << Describe(flag);
  EXPECT_THAT(flag.out, HasSubstr(" compile(targets="));
  // compile goes to kilnd, for KILN_TARGET.
  const std::string out = root_ + "/env.kiln";
  RunResult compile = kiln_with(kilnd.address(), {"compile", Model(kLenet), "-o", out, "--json"});
  ASSERT_EQ(compile.exit_code, 0) << Describe(compile);
  EXPECT_THAT(JsonField(compile.out, "target_key"), ::testing::StartsWith("cpu:x86-64-v2:"));
  EXPECT_EQ(JsonField(compile.out, "cache_hit"), "false") << compile.out;
  absl::StatusOr<runtime::Artifact> artifact = runtime::ReadArtifactFile(out);
  ASSERT_TRUE(artifact.ok()) << artifact.status();
  EXPECT_THAT(artifact->manifest.target_key(), ::testing::StartsWith("cpu:x86-64-v2:"));
  RunResult jobs = kiln_with(kilnd.address(), {"jobs"});
  ASSERT_EQ(jobs.exit_code, 0) << Describe(jobs);
  EXPECT_THAT(jobs.out, HasSubstr("SUCCEEDED"));
  // --local compiles here though KILN_SERVER names kilnd: kilnd sees no second job.
  RunResult local = kiln_with(kilnd.address(), {"compile", Model(kLenet), "-o", out, "--local"});
  ASSERT_EQ(local.exit_code, 0) << Describe(local);
  EXPECT_THAT(local.out, HasSubstr("target x86-64-v2)"));
  EXPECT_EQ(JobCount(), 1);
}

TEST_F(ServiceTest, MetricsEndpointPassesPromtool) {
  if (!fs::exists(Model(kLenet))) GTEST_SKIP() << kLenet << " not found";
  Kilnd& kilnd = StartKilnd(/*workers=*/1);
  RunResult compile = CompileJson(Model(kLenet), root_ + "/m.kiln");
  ASSERT_EQ(compile.exit_code, 0) << Describe(compile);
  RunResult hit = CompileJson(Model(kLenet), root_ + "/m.kiln");
  ASSERT_EQ(hit.exit_code, 0) << Describe(hit);
  int port = kilnd.MetricsPort();
  ASSERT_GT(port, 0) << "no event=kilnd.metrics line in the log";
  std::string response = HttpGet(port, "/metrics");
  size_t body_at = response.find("\r\n\r\n");
  ASSERT_NE(body_at, std::string::npos) << response;
  EXPECT_THAT(response.substr(0, body_at), HasSubstr(" 200 "));
  std::string body = response.substr(body_at + 4);
  EXPECT_THAT(body, HasSubstr("kiln_cache_hits_total 1\n"));
  EXPECT_THAT(body, HasSubstr("kiln_cache_misses_total 1\n"));
  EXPECT_THAT(body, HasSubstr("kiln_workers{device=\"cpu,cuda\",kind=\"compile\"} 1\n"));
  EXPECT_THAT(body, HasSubstr("kiln_compile_duration_seconds_count 1\n"));
  absl::StatusOr<v1::GetStatsResponse> stats = kilnd.client().GetStats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_THAT(body, HasSubstr("kiln_build_info{compiler_version=\"" + stats->compiler_version() +
                              "\",version=\""));
  EXPECT_THAT(body,
              HasSubstr("kiln_jobs_finished_total{kind=\"compile\",state=\"succeeded\"} 1\n"));
  EXPECT_THAT(body, HasSubstr("kiln_job_queue_wait_seconds_count{kind=\"compile\"} 1\n"));
  EXPECT_THAT(body, HasSubstr("kiln_jobs_queued{kind=\"compile\"} 0\n"));
  EXPECT_THAT(body, HasSubstr("kiln_cache_entries{kind=\"artifact\"} 1\n"));
  EXPECT_THAT(body, HasSubstr("kiln_cache_entries{kind=\"model\"} 1\n"));
  // The store holds the model and the artifact: their bytes, as uploads received them.
  EXPECT_THAT(body, HasSubstr("kiln_cache_size_bytes " +
                              std::to_string(fs::file_size(Model(kLenet)) +
                                             fs::file_size(root_ + "/m.kiln")) +
                              "\n"));
  if (std::system("command -v promtool > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "promtool not installed (scripts/setup installs prometheus)";
  }
  std::string path = root_ + "/metrics.txt";
  ASSERT_TRUE(WriteFile(path, body));
  RunResult promtool = RunCommand({"/bin/sh", "-c", "promtool check metrics < " + path}, root_, 60s);
  EXPECT_EQ(promtool.exit_code, 0) << Describe(promtool) << "\n" << body;
}


// Tuning records through kilnd: records measured by `kiln tune --local` are imported, the next
// compile applies them (another options hash, tuned kernels, still passes check); exported and
// imported into a fresh kilnd they give the identical artifact without measuring; a malformed
// import line is refused with its number and imports nothing.
TEST_F(ServiceTest, ImportedRecordsAreAppliedAndMoveBetweenDaemons) {
  if (!fs::exists(Model(kLenet))) GTEST_SKIP() << kLenet << " not found";
  const std::string measured = root_ + "/measured.jsonl";
  RunResult tune = Kiln({"tune", Model(kLenet), "--local", "--trials", "16", "--seed", "2",
                         "--records-out", measured, "--json"});
  ASSERT_EQ(tune.exit_code, 0) << Describe(tune);
  // --json: the summary as one object, the records written to the file.
  google::protobuf::Struct summary = ParseJson(tune.out);
  EXPECT_EQ(Field(summary, "records_file").string_value(), measured);
  EXPECT_EQ(Field(summary, "trials").number_value(), 16);
  EXPECT_GT(Field(summary, "records").number_value(), 0);
  EXPECT_THAT(Field(summary, "hardware_key").string_value(), HasSubstr("|device="));
  const google::protobuf::ListValue& workloads = Field(summary, "workloads").list_value();
  ASSERT_GT(workloads.values_size(), 0) << tune.out;
  int measured_workloads = 0;
  for (const google::protobuf::Value& v : workloads.values()) {
    const google::protobuf::Struct& w = v.struct_value();
    EXPECT_FALSE(Field(w, "workload_key").string_value().empty());
    if (Field(w, "default_ms").number_value() <= 0) continue;
    ++measured_workloads;
    EXPECT_LE(Field(w, "tuned_ms").number_value(), Field(w, "default_ms").number_value());
    EXPECT_GT(Field(w, "curve").list_value().values_size(), 0) << "the best-so-far curve";
  }
  EXPECT_GT(measured_workloads, 0) << tune.out;

  Kilnd& kilnd = StartKilnd(/*workers=*/1);
  RunResult plain = CompileJson(Model(kLenet), root_ + "/plain.kiln");
  ASSERT_EQ(plain.exit_code, 0) << Describe(plain);

  // A bad line: nothing imported.
  std::string lines = ReadFile(measured);
  ASSERT_TRUE(WriteFile(root_ + "/bad.jsonl",
                        lines.substr(0, lines.find('\n') + 1) + "{\"median_ms\": \"x\"}\n"));
  RunResult bad = Kiln({"records", "import", root_ + "/bad.jsonl", "--server", kilnd.address()});
  EXPECT_EQ(bad.exit_code, 1) << Describe(bad);
  EXPECT_THAT(bad.err, HasSubstr("bad.jsonl: line 2: ")) << Describe(bad);
  ASSERT_TRUE(kilnd.client().ListTuningRecords("").ok());
  EXPECT_EQ(kilnd.client().ListTuningRecords("")->size(), 0u);

  RunResult imported = Kiln({"records", "import", measured, "--server", kilnd.address(), "--json"});
  ASSERT_EQ(imported.exit_code, 0) << Describe(imported);
  const int count = static_cast<int>(Field(ParseJson(imported.out), "imported").number_value());
  EXPECT_GT(count, 0) << imported.out;
  RunResult list = Kiln({"records", "list", "--server", kilnd.address()});
  ASSERT_EQ(list.exit_code, 0) << Describe(list);
  EXPECT_THAT(list.out, HasSubstr("IMPORTED"));
  RunResult list_json = Kiln({"records", "list", "--server", kilnd.address(), "--json"});
  ASSERT_EQ(list_json.exit_code, 0) << Describe(list_json);
  const google::protobuf::Struct listed_json = ParseJson(list_json.out);
  const google::protobuf::ListValue& listed = Field(listed_json, "records").list_value();
  EXPECT_EQ(listed.values_size(), kilnd.client().ListTuningRecords("")->size());
  for (const google::protobuf::Value& r : listed.values()) {
    EXPECT_EQ(Field(r.struct_value(), "provenance").string_value(), "IMPORTED");
    EXPECT_EQ(Field(r.struct_value(), "hardware_key").string_value(),
              Field(summary, "hardware_key").string_value());
  }

  const std::string tuned_path = root_ + "/tuned.kiln";
  RunResult tuned = CompileJson(Model(kLenet), tuned_path);
  ASSERT_EQ(tuned.exit_code, 0) << Describe(tuned);
  EXPECT_EQ(JsonField(tuned.out, "cache_hit"), "false") << tuned.out;
  EXPECT_NE(JsonField(tuned.out, "options_hash"), JsonField(plain.out, "options_hash"));
  EXPECT_NE(JsonField(tuned.out, "artifact_digest"), JsonField(plain.out, "artifact_digest"));
  RunResult inspect = Kiln({"inspect", "--kernels", tuned_path});
  EXPECT_THAT(inspect.out, HasSubstr(" (record ")) << inspect.out;
  EXPECT_THAT(inspect.out, HasSubstr("tuning:           records ")) << inspect.out;
  RunResult untuned = CompileJson(Model(kLenet), root_ + "/untuned.kiln", {"--untuned"});
  ASSERT_EQ(untuned.exit_code, 0) << Describe(untuned);
  EXPECT_EQ(JsonField(untuned.out, "cache_hit"), "true") << "untuned is the plain artifact";
  EXPECT_EQ(JsonField(untuned.out, "artifact_digest"), JsonField(plain.out, "artifact_digest"));
  RunResult check = Kiln({"check", kLenet, "--server", kilnd.address()});
  EXPECT_EQ(check.exit_code, 0) << Describe(check);
  RunResult nokey = CompileJson(Model(kLenet), root_ + "/nokey.kiln", {"--hardware-key", "nope"});
  EXPECT_EQ(nokey.exit_code, 1) << Describe(nokey);
  EXPECT_THAT(nokey.err, HasSubstr("no tuning record for hardware key 'nope'")) << Describe(nokey);

  RunResult exported = Kiln({"records", "export", "--server", kilnd.address()});
  ASSERT_EQ(exported.exit_code, 0) << Describe(exported);
  ASSERT_TRUE(WriteFile(root_ + "/exported.jsonl", exported.out));
  ASSERT_TRUE(kilnd.Stop());

  // A fresh daemon: import, compile, the identical artifact.
  Kilnd fresh(root_ + "/fresh", {}, 1);
  ASSERT_TRUE(fresh.Start());
  RunResult again_import =
      Kiln({"records", "import", root_ + "/exported.jsonl", "--server", fresh.address()});
  ASSERT_EQ(again_import.exit_code, 0) << Describe(again_import);
  RunResult again = Kiln({"compile", Model(kLenet), "--server", fresh.address(), "-o",
                          root_ + "/again.kiln", "--json"});
  ASSERT_EQ(again.exit_code, 0) << Describe(again);
  EXPECT_EQ(JsonField(again.out, "artifact_digest"), JsonField(tuned.out, "artifact_digest"));
  EXPECT_EQ(JsonField(again.out, "options_hash"), JsonField(tuned.out, "options_hash"));
  EXPECT_TRUE(fresh.Stop());
}

// --json of every command that prints a result (status, jobs, workers, records, check here and
// through kilnd, compile) is one JSON object with real values, and a remote compile's progress
// goes to stderr: with --progress or on a terminal (queued, running on the worker, done, in
// order, on a miss; a hit only "done"), never with --json or --quiet.
TEST_F(ServiceTest, JsonOutputsAndRemoteCompileProgress) {
  if (!fs::exists(Model(kLenet))) GTEST_SKIP() << kLenet << " not found";
  Kilnd& kilnd = StartKilnd(/*workers=*/1);
  const std::string server = kilnd.address();

  // A miss with --progress: the upload, the job, its worker, the end, in order on stderr; stdout
  // as without.
  RunResult miss = Kiln({"check", kLenet, "--server", server, "--progress"});
  ASSERT_EQ(miss.exit_code, 0) << Describe(miss);
  EXPECT_THAT(miss.out, HasSubstr("PASS ../shared/models/lenet (cache miss)"));
  EXPECT_THAT(miss.out, Not(HasSubstr("queued"))) << "progress goes to stderr";
  std::vector<size_t> at =
      Positions(miss.err, {"uploading model ", " ... done (", "queued (job ", "running on worker ",
                           "done: cache miss, compiled in ", " fetched and verified"});
  for (size_t i = 0; i < at.size(); ++i) {
    EXPECT_NE(at[i], std::string::npos) << "progress line " << i << " in:\n" << miss.err;
  }
  const size_t job_at = miss.err.find("queued (job ");
  ASSERT_NE(job_at, std::string::npos) << miss.err;
  const std::string job_id = miss.err.substr(job_at + 12, miss.err.find(')', job_at) - job_at - 12);
  const size_t worker_at = miss.err.find("running on worker ");
  ASSERT_NE(worker_at, std::string::npos) << miss.err;
  const std::string worker =
      miss.err.substr(worker_at + 18, miss.err.find('\n', worker_at) - worker_at - 18);

  // A hit on a terminal: progress by default, but no job.
  RunResult hit = RunWithTerminalStderr(
      {BinDir() + "/kiln", "compile", Model(kLenet), "--server", server, "-o", root_ + "/hit.kiln"},
      root_, 300s);
  ASSERT_EQ(hit.exit_code, 0) << Describe(hit);
  EXPECT_THAT(hit.err, HasSubstr("done: cache hit; artifact ")) << hit.err;
  EXPECT_THAT(hit.err, Not(HasSubstr("queued"))) << hit.err;
  EXPECT_THAT(hit.err, Not(HasSubstr("uploading"))) << "kilnd has the model";
  EXPECT_THAT(hit.out, HasSubstr("cache hit: graph "));
  // --json and --quiet: nothing on the terminal, and stdout is the JSON alone.
  RunResult quiet = RunWithTerminalStderr(
      {BinDir() + "/kiln", "check", kLenet, "--server", server, "--quiet"}, root_, 300s);
  ASSERT_EQ(quiet.exit_code, 0) << Describe(quiet);
  EXPECT_EQ(quiet.err, "");
  RunResult compile =
      RunWithTerminalStderr({BinDir() + "/kiln", "compile", Model(kLenet), "--server", server, "-o",
                             root_ + "/json.kiln", "--json"},
                            root_, 300s);
  ASSERT_EQ(compile.exit_code, 0) << Describe(compile);
  EXPECT_EQ(compile.err, "");
  google::protobuf::Struct c = ParseJson(compile.out);
  EXPECT_TRUE(Field(c, "cache_hit").bool_value()) << compile.out;
  EXPECT_FALSE(Field(c, "uploaded").bool_value());
  EXPECT_EQ(Field(c, "artifact_bytes").number_value(), fs::file_size(root_ + "/json.kiln"));
  EXPECT_EQ(Field(c, "artifact_digest").string_value(), Sha256Hex(ReadFile(root_ + "/json.kiln")));
  EXPECT_EQ(Field(c, "compiler_version").string_value(), pipeline::kCompilerVersion);
  EXPECT_EQ(Field(c, "job_id").string_value(), "") << "a hit runs no job";
  for (const char* key : {"graph_hash", "target_key", "options_hash", "compile_ms", "server_ms",
                          "total_ms", "worker"}) {
    EXPECT_TRUE(c.fields().contains(key)) << key << " in " << compile.out;
  }

  RunResult status = Kiln({"status", "--server", server, "--json"});
  ASSERT_EQ(status.exit_code, 0) << Describe(status);
  google::protobuf::Struct st = ParseJson(status.out);
  EXPECT_EQ(Field(st, "compiler_version").string_value(), pipeline::kCompilerVersion);
  EXPECT_EQ(Field(st, "workers").number_value(), 1);
  EXPECT_EQ(Field(st, "cache_misses").string_value(), "1") << "int64 fields are strings";
  EXPECT_EQ(Field(st, "cache_hits").string_value(), "3");
  EXPECT_EQ(Field(st, "jobs_succeeded").string_value(), "1");

  RunResult jobs = Kiln({"jobs", "--server", server, "--json"});
  ASSERT_EQ(jobs.exit_code, 0) << Describe(jobs);
  google::protobuf::Struct j = ParseJson(jobs.out);
  ASSERT_EQ(Field(j, "jobs").list_value().values_size(), 1) << jobs.out;
  const google::protobuf::Struct& job = j.fields().at("jobs").list_value().values(0).struct_value();
  EXPECT_EQ(Field(job, "id").string_value(), job_id);
  EXPECT_EQ(Field(job, "state").string_value(), "SUCCEEDED");
  EXPECT_EQ(Field(job, "kind").string_value(), "compile");
  EXPECT_EQ(Field(job, "worker").string_value(), worker);
  EXPECT_EQ(Field(job, "model_digest").string_value(), Sha256Hex(ReadFile(Model(kLenet))));

  RunResult workers = Kiln({"workers", "--server", server, "--json"});
  ASSERT_EQ(workers.exit_code, 0) << Describe(workers);
  google::protobuf::Struct w = ParseJson(workers.out);
  ASSERT_EQ(Field(w, "workers").list_value().values_size(), 1) << workers.out;
  const google::protobuf::Struct& w0 =
      w.fields().at("workers").list_value().values(0).struct_value();
  EXPECT_EQ(Field(w0, "id").string_value(), worker);
  EXPECT_TRUE(Field(w0, "local").bool_value());
  EXPECT_GT(Field(w0, "pid").number_value(), 0);

  RunResult records = Kiln({"records", "list", "--server", server, "--json"});
  ASSERT_EQ(records.exit_code, 0) << Describe(records);
  EXPECT_EQ(Field(ParseJson(records.out), "records").list_value().values_size(), 0);

  // check --json, through kilnd and here: outputs compared, the verdict, the compile.
  RunResult remote = Kiln({"check", kLenet, "--server", server, "--json"});
  ASSERT_EQ(remote.exit_code, 0) << Describe(remote);
  google::protobuf::Struct rc = ParseJson(remote.out);
  EXPECT_TRUE(Field(rc, "pass").bool_value());
  EXPECT_EQ(Field(rc, "model_dir").string_value(), kLenet);
  ASSERT_EQ(Field(rc, "compiles").list_value().values_size(), 1) << remote.out;
  EXPECT_TRUE(rc.fields()
                  .at("compiles")
                  .list_value()
                  .values(0)
                  .struct_value()
                  .fields()
                  .at("cache_hit")
                  .bool_value());
  RunResult local = Kiln({"check", kLenet, "--local", "--json"});
  ASSERT_EQ(local.exit_code, 0) << Describe(local);
  google::protobuf::Struct lc = ParseJson(local.out);
  EXPECT_TRUE(Field(lc, "pass").bool_value());
  EXPECT_EQ(Field(Field(lc, "compile").struct_value(), "compiler_version").string_value(),
            pipeline::kCompilerVersion);
  for (const google::protobuf::Struct* report : {&rc, &lc}) {
    const google::protobuf::ListValue& outputs = Field(*report, "outputs").list_value();
    ASSERT_GE(outputs.values_size(), 1);
    const google::protobuf::Struct& o = outputs.values(0).struct_value();
    EXPECT_EQ(Field(o, "data_set").string_value(), "test_data_set_0");
    EXPECT_FALSE(Field(o, "name").string_value().empty());
    EXPECT_TRUE(Field(o, "pass").bool_value());
    EXPECT_LT(Field(o, "max_abs_error").number_value(), 1e-3);
    EXPECT_TRUE(o.fields().contains("max_rel_error"));
  }
}

}  // namespace
}  // namespace kiln::testing
