// kilnd facing a network (issue #10, item 1): TLS on every listener, bearer tokens with roles
// checked per RPC, the worker hub on its own listener, worker client certificates, job
// ownership, token reload on SIGHUP, and the refusal to listen beyond loopback in plaintext.
// Certificates are made per test run with the openssl CLI (a CA, a server certificate for
// localhost/127.0.0.1, a worker client certificate).
#include <signal.h>

#include <cstring>
#include <fstream>
#include <future>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "client/channel.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/security/credentials.h"
#include "kiln/v1/service.grpc.pb.h"
#include "onnx/onnx_pb.h"
#include "server/limited_process.h"
#include "tests/service/service_fixture.h"

namespace kiln::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kAdmin[] = "admin-token-0123456789abcdef";
constexpr char kAlice[] = "alice-token-0123456789abcdef";  // compile, read
constexpr char kBob[] = "bob-token-0123456789abcdef";      // compile
constexpr char kReader[] = "reader-token-0123456789abcdef";
constexpr char kWorkerToken[] = "worker-token-0123456789abcdef";
constexpr char kLater[] = "later-token-0123456789abcdef";  // added by a reload

class SecurityTest : public ServiceTest {
 protected:
  void SetUp() override {
    ServiceTest::SetUp();
    if (IsSkipped()) return;
    if (RunCommand({"/usr/bin/openssl", "version"}, root_, 10s).exit_code != 0) {
      GTEST_SKIP() << "the openssl CLI is not installed (scripts/setup installs it)";
    }
    pki_ = root_ + "/pki";
    fs::create_directories(pki_);
    ASSERT_TRUE(MakeCertificates());
    tokens_ = root_ + "/tokens";
    WriteTokens(false);
  }

  bool OpenSsl(std::vector<std::string> args) {
    args.insert(args.begin(), "/usr/bin/openssl");
    RunResult r = RunCommand(args, root_, 60s);
    if (r.exit_code != 0) ADD_FAILURE() << Describe(r);
    return r.exit_code == 0;
  }

  bool MakeCertificates() {
    const std::string p = pki_ + "/";
    WriteFile(p + "server.ext", "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
    return OpenSsl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-keyout", p + "ca.key", "-out", p + "ca.pem", "-days", "2", "-subj",
                    "/CN=kiln test CA"}) &&
           OpenSsl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", p + "server.key", "-out", p + "server.csr", "-subj",
                    "/CN=localhost"}) &&
           OpenSsl({"x509", "-req", "-in", p + "server.csr", "-CA", p + "ca.pem", "-CAkey",
                    p + "ca.key", "-CAcreateserial", "-out", p + "server.pem", "-days", "2",
                    "-extfile", p + "server.ext"}) &&
           OpenSsl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", p + "worker.key", "-out", p + "worker.csr", "-subj",
                    "/CN=gpu-node-7"}) &&
           OpenSsl({"x509", "-req", "-in", p + "worker.csr", "-CA", p + "ca.pem", "-CAkey",
                    p + "ca.key", "-CAcreateserial", "-out", p + "worker.pem", "-days", "2"});
  }

  void WriteTokens(bool with_later) {
    std::string text =
        absl::StrCat("# kilnd tokens\n", kAdmin, " admin\n", kAlice, " compile,read\n", kBob,
                     " compile\n", kReader, " read\n", kWorkerToken, " worker\n");
    if (with_later) absl::StrAppend(&text, kLater, " read\n");
    ASSERT_TRUE(WriteFile(tokens_, text));
  }

  client::ChannelSecurity Tls(const std::string& token) {
    client::ChannelSecurity s;
    s.tls_ca_pem = ReadFile(pki_ + "/ca.pem");
    s.token = token;
    return s;
  }

  std::string TokenFile(const std::string& token) {
    std::string path = absl::StrCat(root_, "/", token.substr(0, token.find('-')), ".token");
    WriteFile(path, token + "\n");
    return path;
  }

  std::vector<std::string> SecureFlags() {
    return {"--tls-cert",      pki_ + "/server.pem", "--tls-key",    pki_ + "/server.key",
            "--tls-client-ca", pki_ + "/ca.pem",     "--token-file", tokens_,
            "--worker-listen", "127.0.0.1:0"};
  }

  Kilnd& StartSecureKilnd() {
    kilnd_ = std::make_unique<Kilnd>(root_, SecureFlags(), /*workers=*/1);
    kilnd_->set_client_security(Tls(kAdmin));
    EXPECT_TRUE(kilnd_->Start());
    return *kilnd_;
  }

  std::string WorkerAddress() {
    return "127.0.0.1:" +
           std::to_string(std::atoi(ReadFile(kilnd_->data_dir() + "/kilnd.worker_port").c_str()));
  }

  /// Connect + register on the worker hub at `address` as `security`; the stream's status.
  grpc::Status RegisterWorker(const std::string& address, const client::ChannelSecurity& security) {
    auto hub = v1::WorkerHub::NewStub(client::MakeChannel(address, security, {}));
    grpc::ClientContext context;
    client::AddCredentials(context, security);
    context.set_deadline(std::chrono::system_clock::now() + 20s);
    auto stream = hub->Connect(&context);
    v1::WorkerMessage hello;
    hello.mutable_register_()->set_id("intruder");
    stream->Write(hello);
    v1::HubMessage reply;
    bool registered = stream->Read(&reply) && reply.has_registered();
    stream->WritesDone();
    if (registered) context.TryCancel();
    grpc::Status status = stream->Finish();
    return registered ? grpc::Status::OK : status;
  }

  std::string pki_;
  std::string tokens_;
};

TEST_F(SecurityTest, TokensAndRolesPerRpc) {
  Kilnd& kilnd = StartSecureKilnd();
  // No token, an unknown token: UNAUTHENTICATED.
  client::RemoteClient anonymous(kilnd.address(), 30'000, Tls(""));
  absl::Status no_token = anonymous.GetStats().status();
  EXPECT_EQ(no_token.code(), absl::StatusCode::kUnauthenticated) << no_token;
  EXPECT_THAT(no_token.message(), HasSubstr("no bearer token"));
  client::RemoteClient stranger(kilnd.address(), 30'000, Tls("not-a-token-0123456789abcdef"));
  EXPECT_EQ(stranger.GetStats().status().code(), absl::StatusCode::kUnauthenticated);
  // The wrong role: PERMISSION_DENIED, naming what the method needs.
  client::RemoteClient reader(kilnd.address(), 30'000, Tls(kReader));
  EXPECT_TRUE(reader.GetStats().ok());
  std::string model = ReadFile(Model(kLenet));
  ASSERT_FALSE(model.empty());
  absl::Status denied = reader.CompileModel(model, client::RemoteCompileOptions{}).status();
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied) << denied;
  EXPECT_THAT(denied.message(), HasSubstr("needs role compile or tune or admin"));
  client::RemoteClient worker_as_client(kilnd.address(), 30'000, Tls(kWorkerToken));
  EXPECT_EQ(worker_as_client.GetStats().status().code(), absl::StatusCode::kPermissionDenied);
  // Plaintext to a TLS listener does not get through at all.
  client::RemoteClient plaintext(kilnd.address(), 10'000,
                                 client::ChannelSecurity{"", "", "", "", kAdmin});
  EXPECT_EQ(plaintext.GetStats().status().code(), absl::StatusCode::kUnavailable);

  // The CLI over TLS with a compile token: the local worker (internal token) compiles.
  RunResult r =
      Kiln({"compile", Model(kLenet), "--server", kilnd.address(), "--tls-ca", pki_ + "/ca.pem",
            "--token-file", TokenFile(kAlice), "-o", root_ + "/lenet.kiln", "--json"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(JsonField(r.out, "cache_hit"), "false");
  // KILN_TOKEN works too; a read token is refused by the CLI with the server's code.
  ::setenv("KILN_TOKEN", kReader, 1);
  RunResult denied_cli = Kiln({"compile", Model(kLenet), "--server", kilnd.address(), "--tls-ca",
                               pki_ + "/ca.pem", "-o", root_ + "/x.kiln"});
  ::unsetenv("KILN_TOKEN");
  EXPECT_NE(denied_cli.exit_code, 0);
  EXPECT_THAT(denied_cli.err, HasSubstr("PERMISSION_DENIED"));
}

TEST_F(SecurityTest, WorkerHubOnlyForWorkers) {
  Kilnd& kilnd = StartSecureKilnd();
  const std::string hub = WorkerAddress();
  // The client listener has no worker hub at all.
  EXPECT_EQ(RegisterWorker(kilnd.address(), Tls(kWorkerToken)).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  // On the worker listener: no credential, a client token, a worker token, a certificate.
  EXPECT_EQ(RegisterWorker(hub, Tls("")).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  grpc::Status as_client = RegisterWorker(hub, Tls(kAlice));
  EXPECT_EQ(as_client.error_code(), grpc::StatusCode::PERMISSION_DENIED)
      << as_client.error_message();
  EXPECT_TRUE(RegisterWorker(hub, Tls(kWorkerToken)).ok());
  client::ChannelSecurity cert = Tls("");
  cert.tls_cert_pem = ReadFile(pki_ + "/worker.pem");
  cert.tls_key_pem = ReadFile(pki_ + "/worker.key");
  EXPECT_TRUE(RegisterWorker(hub, cert).ok());
  // A real kiln-worker with a client certificate joins and is listed.
  Process worker = Process::Spawn(
      {BinDir() + "/kiln-worker", "--connect", hub, "--tls-ca", pki_ + "/ca.pem", "--tls-cert",
       pki_ + "/worker.pem", "--tls-key", pki_ + "/worker.key", "--id", "gpu-node-7"},
      root_ + "/worker.out", root_ + "/worker.err");
  EXPECT_TRUE(Eventually(
      [&] {
        auto workers = kilnd.client().ListWorkers();
        return workers.ok() && workers->workers_size() == 2;
      },
      60s))
      << ReadFile(root_ + "/worker.err");
}

TEST_F(SecurityTest, AnotherTokensJobNeedsAdmin) {
  Kilnd& kilnd = StartSecureKilnd();
  client::RemoteClient alice(kilnd.address(), 60'000, Tls(kAlice));
  client::RemoteClient bob(kilnd.address(), 60'000, Tls(kBob));
  std::string model = ReadFile(Model(kLenet));
  ASSERT_TRUE(alice.EnsureModel(model, client::DigestOf(model)).ok());
  v1::SubmitJobRequest submit;
  *submit.mutable_compile()->mutable_model_digest() = client::DigestOf(model);
  submit.mutable_compile()->set_target("host");
  absl::StatusOr<v1::SubmitJobResponse> job = alice.SubmitJob(submit);
  ASSERT_TRUE(job.ok()) << job.status();
  absl::Status cancel = bob.CancelJob(job->job_id()).status();
  EXPECT_EQ(cancel.code(), absl::StatusCode::kPermissionDenied) << cancel;
  EXPECT_THAT(cancel.message(), HasSubstr("belongs to another token"));
  absl::Status watch =
      bob.WatchJob(job->job_id(), [](const v1::JobEvent&) { return true; }).status();
  EXPECT_EQ(watch.code(), absl::StatusCode::kPermissionDenied) << watch;
  auto bobs = bob.ListJobs(v1::JOB_STATE_UNSPECIFIED, 100);
  ASSERT_TRUE(bobs.ok());
  EXPECT_EQ(bobs->jobs_size(), 0);
  auto alices = alice.ListJobs(v1::JOB_STATE_UNSPECIFIED, 100);
  ASSERT_TRUE(alices.ok());
  EXPECT_EQ(alices->jobs_size(), 1);
  absl::StatusOr<v1::JobEvent> last =
      alice.WatchJob(job->job_id(), [](const v1::JobEvent&) { return true; });
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(last->state(), v1::SUCCEEDED);
  // The admin sees every job.
  auto all = kilnd.client().ListJobs(v1::JOB_STATE_UNSPECIFIED, 100);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->jobs_size(), 1);
}

TEST_F(SecurityTest, SighupReloadsTokens) {
  Kilnd& kilnd = StartSecureKilnd();
  client::RemoteClient later(kilnd.address(), 30'000, Tls(kLater));
  EXPECT_EQ(later.GetStats().status().code(), absl::StatusCode::kUnauthenticated);
  WriteTokens(true);
  kilnd.process().Signal(SIGHUP);
  EXPECT_TRUE(Eventually([&] { return later.GetStats().ok(); }, 20s));
  EXPECT_THAT(kilnd.log(), HasSubstr("event=kilnd.tokens_reloaded"));
  // A broken file keeps the tokens in force and says why.
  ASSERT_TRUE(WriteFile(tokens_, "short admin\n"));
  kilnd.process().Signal(SIGHUP);
  EXPECT_TRUE(Eventually(
      [&] { return kilnd.log().find("event=kilnd.tokens_reload_failed") != std::string::npos; },
      20s));
  EXPECT_TRUE(later.GetStats().ok());
}

// A kiln-worker over TLS finds kilnd when kilnd starts after it and again after kilnd was
// killed and restarted (it used to stay disconnected: a 100 ms minimum connect timeout cut every
// TLS handshake after the first refused connection).
TEST_F(SecurityTest, WorkerReconnectsOverTlsWhenKilndComesBack) {
  const std::string hub = "127.0.0.1:" + std::to_string(FreeLoopbackPort());
  std::vector<std::string> flags = SecureFlags();
  flags.back() = hub;  // --worker-listen on a fixed port, the same after the restart
  Process worker =
      Process::Spawn({BinDir() + "/kiln-worker", "--connect", hub, "--tls-ca", pki_ + "/ca.pem",
                      "--token-file", TokenFile(kWorkerToken), "--give-up-after-s", "120"},
                     root_ + "/worker.out", root_ + "/worker.err");
  std::this_thread::sleep_for(2s);  // refused connections meanwhile
  kilnd_ = std::make_unique<Kilnd>(root_, flags, /*workers=*/0);
  kilnd_->set_client_security(Tls(kAdmin));
  ASSERT_TRUE(kilnd_->Start());
  auto one_worker = [&] {
    auto workers = kilnd_->client().ListWorkers();
    return workers.ok() && workers->workers_size() == 1;
  };
  EXPECT_TRUE(Eventually(one_worker, 15s)) << ReadFile(root_ + "/worker.err");
  kilnd_->process().Signal(SIGKILL);
  ASSERT_TRUE(kilnd_->process().Wait(10s).has_value());
  std::this_thread::sleep_for(2s);
  ASSERT_TRUE(kilnd_->Start());
  EXPECT_TRUE(Eventually(one_worker, 15s)) << ReadFile(root_ + "/worker.err");
  EXPECT_TRUE(worker.running());
}

// grpc.health.v1.Health/Check of the whole server ("") over plaintext: the response's bytes
// (HealthCheckResponse: "\x08\x01" is SERVING), or the call's error.
absl::StatusOr<std::string> PlaintextHealthCheck(const std::string& address) {
  grpc::GenericStub stub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 10s);
  grpc::Slice no_bytes("");  // an empty HealthCheckRequest: service ""
  grpc::ByteBuffer request(&no_bytes, 1), response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                 [&done](grpc::Status status) { done.set_value(status); });
  grpc::Status status = done.get_future().get();
  if (!status.ok()) return absl::UnavailableError(status.error_message());
  std::vector<grpc::Slice> slices;
  response.Dump(&slices);
  std::string bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return bytes;
}

// --health-listen: plaintext grpc.health.v1 alone, beside TLS listeners (the kubelet's grpc probe
// speaks no TLS), answering SERVING; the TLS port itself refuses plaintext.
TEST_F(SecurityTest, PlaintextHealthListenerBesideTls) {
  std::vector<std::string> flags = SecureFlags();
  flags.push_back("--health-listen");
  flags.push_back("127.0.0.1:0");
  kilnd_ = std::make_unique<Kilnd>(root_, flags, /*workers=*/0);
  kilnd_->set_client_security(Tls(kAdmin));
  ASSERT_TRUE(kilnd_->Start());
  std::string log = kilnd_->log();
  size_t at = log.find("health_port=");
  ASSERT_NE(at, std::string::npos) << log;
  const int health_port = std::atoi(log.c_str() + at + strlen("health_port="));
  ASSERT_GT(health_port, 0) << log;
  absl::StatusOr<std::string> serving =
      PlaintextHealthCheck("127.0.0.1:" + std::to_string(health_port));
  ASSERT_TRUE(serving.ok()) << serving.status();
  EXPECT_EQ(*serving, std::string("\x08\x01"));
  EXPECT_FALSE(PlaintextHealthCheck(kilnd_->address()).ok());
}

// /metrics behind --metrics-require-token: HTTP Basic whose password is a token with the read or
// admin role (what Prometheus' basic_auth sends); without --token-file kilnd refuses to start.
TEST_F(SecurityTest, MetricsCanRequireAToken) {
  Process refused = Process::Spawn(
      {BinDir() + "/kilnd", "--listen", "127.0.0.1:0", "--data-dir", root_ + "/refused",
       "--workers", "0", "--metrics-listen", "127.0.0.1:0", "--metrics-require-token"},
      root_ + "/refused.out", root_ + "/refused.err");
  std::optional<int> status = refused.Wait(30s);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 1);
  EXPECT_THAT(ReadFile(root_ + "/refused.err"),
              HasSubstr("--metrics-require-token needs --token-file"));

  std::vector<std::string> flags = SecureFlags();
  for (const char* flag : {"--metrics-listen", "127.0.0.1:0", "--metrics-require-token"}) {
    flags.push_back(flag);
  }
  kilnd_ = std::make_unique<Kilnd>(root_, flags, /*workers=*/1);
  kilnd_->set_client_security(Tls(kAdmin));
  ASSERT_TRUE(kilnd_->Start());
  const int port = kilnd_->MetricsPort();
  ASSERT_GT(port, 0) << kilnd_->log();
  auto basic = [](const std::string& password) {
    return "Authorization: Basic " + absl::Base64Escape("prometheus:" + password) + "\r\n";
  };
  EXPECT_THAT(HttpGet(port, "/metrics"), StartsWith("HTTP/1.1 401 "));
  EXPECT_THAT(HttpGet(port, "/metrics", basic("not-a-token-0123456789")),
              StartsWith("HTTP/1.1 401 "));
  EXPECT_THAT(HttpGet(port, "/metrics", basic(kBob)), StartsWith("HTTP/1.1 401 "))
      << "compile alone may not read metrics";
  EXPECT_THAT(HttpGet(port, "/metrics", basic(kWorkerToken)), StartsWith("HTTP/1.1 401 "));
  for (const char* token : {kReader, kAdmin}) {
    std::string ok = HttpGet(port, "/metrics", basic(token));
    EXPECT_THAT(ok, StartsWith("HTTP/1.1 200 OK")) << token;
    EXPECT_THAT(ok, HasSubstr("kiln_workers{device=\"cpu,cuda\",kind=\"compile\"} 1\n"));
  }
}

TEST_F(SecurityTest, PlaintextBeyondLoopbackNeedsInsecure) {
  Process refused = Process::Spawn({BinDir() + "/kilnd", "--listen", "0.0.0.0:0", "--data-dir",
                                    root_ + "/refused", "--workers", "0"},
                                   root_ + "/refused.out", root_ + "/refused.err");
  std::optional<int> status = refused.Wait(30s);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 1);
  EXPECT_THAT(ReadFile(root_ + "/refused.err"),
              HasSubstr("refusing to listen on 0.0.0.0:0 (--listen) beyond loopback without TLS "
                        "and tokens (--tls-cert, --tls-key, --token-file); pass --insecure"));
  Kilnd& kilnd = StartKilnd(0, {"--listen", "0.0.0.0:0", "--insecure"});
  EXPECT_TRUE(kilnd.client().GetStats().ok());
}

/// `model` with graph input `from` and output `to_out`'s names replaced everywhere.
std::string Renamed(const std::string& model, const std::string& new_input,
                    const std::string& new_output) {
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(model));
  onnx::GraphProto& g = *m.mutable_graph();
  const std::string in = g.input(0).name(), out = g.output(0).name();
  g.mutable_input(0)->set_name(new_input);
  g.mutable_output(0)->set_name(new_output);
  for (onnx::NodeProto& node : *g.mutable_node()) {
    for (std::string& name : *node.mutable_input()) {
      if (name == in) name = new_input;
    }
    for (std::string& name : *node.mutable_output()) {
      if (name == out) name = new_output;
    }
  }
  return m.SerializeAsString();
}

// The artifact embeds the graph's input and output names: two models that differ only there
// get their own artifacts (the artifact key covers the names), each naming its own.
TEST_F(SecurityTest, ModelsDifferingOnlyInIoNamesGetTheirOwnArtifacts) {
  Kilnd& kilnd = StartKilnd(1);
  std::string model = ReadFile(Model(kLenet));
  std::string renamed = Renamed(model, "renamed_image", "renamed_logits");
  auto first = kilnd.client().CompileModel(model, client::RemoteCompileOptions{});
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = kilnd.client().CompileModel(renamed, client::RemoteCompileOptions{});
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_FALSE(second->response.cache_hit());
  EXPECT_NE(first->response.key().graph_hash(), second->response.key().graph_hash());
  EXPECT_NE(first->response.artifact_digest().hash(), second->response.artifact_digest().hash());
  EXPECT_EQ(first->artifact.find("renamed_image"), std::string::npos);
  EXPECT_NE(second->artifact.find("renamed_image"), std::string::npos);
  EXPECT_NE(second->artifact.find("renamed_logits"), std::string::npos);
}

// External data in an uploaded model is refused (kilnd never reads files a model names); the
// CLI inlines a model file's external data, relative to its directory, before uploading.
TEST_F(SecurityTest, ExternalDataIsRefusedInUploadsAndInlinedByTheCli) {
  Kilnd& kilnd = StartKilnd(1);
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto& g = *m.mutable_graph();
  g.set_name("ext");
  auto tensor_type = [](onnx::ValueInfoProto* v, const std::string& name) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_value(4);
  };
  tensor_type(g.add_input(), "x");
  tensor_type(g.add_output(), "y");
  onnx::TensorProto& w = *g.add_initializer();
  w.set_name("w");
  w.set_data_type(onnx::TensorProto::FLOAT);
  w.add_dims(4);
  w.set_data_location(onnx::TensorProto::EXTERNAL);
  auto* location = w.add_external_data();
  location->set_key("location");
  location->set_value("kilnd.log");  // a file in kilnd's working directory would have leaked
  onnx::NodeProto& add = *g.add_node();
  add.set_op_type("Add");
  add.add_input("x");
  add.add_input("w");
  add.add_output("y");
  absl::Status refused =
      kilnd.client().CompileModel(m.SerializeAsString(), client::RemoteCompileOptions{}).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument) << refused;
  EXPECT_THAT(refused.message(), HasSubstr("external data ('kilnd.log') is refused"));
  EXPECT_TRUE(kilnd.client().GetStats().ok());
  // The CLI reads weights.bin beside the model file and uploads the model with it inlined.
  const std::string dir = root_ + "/ext_model";
  fs::create_directories(dir);
  const float weights[4] = {1, 2, 3, 4};
  ASSERT_TRUE(WriteFile(dir + "/weights.bin",
                        std::string(reinterpret_cast<const char*>(weights), sizeof(weights))));
  location->set_value("weights.bin");
  ASSERT_TRUE(WriteFile(dir + "/model.onnx", m.SerializeAsString()));
  RunResult r = Kiln({"compile", dir + "/model.onnx", "--server", kilnd.address(), "-o",
                      root_ + "/ext.kiln", "--json"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
}

// kilnd never parses a model itself: kiln-graph-hash does, in a child with memory and CPU
// limits. The model that crashed ONNX 1.12's shape inference (a rank-0 Conv weight) is refused
// before it gets there; a model whose import outgrows the memory limit kills only the child
// (std::bad_alloc, abort) and fails with a clear error; kilnd serves on.
TEST_F(SecurityTest, ModelsThatCrashOrExhaustTheImporterLeaveKilndServing) {
  Kilnd& kilnd = StartKilnd(0, {"--import-memory-bytes", std::to_string(int64_t{200} << 20)});
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto& g = *m.mutable_graph();
  g.set_name("crash");
  auto typed = [](onnx::ValueInfoProto* v, const std::string& name, std::vector<int64_t> dims) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  };
  typed(g.add_input(), "x", {1, 1, 4, 4});
  typed(g.add_output(), "y", {1, 1, 4, 4});
  onnx::TensorProto& w = *g.add_initializer();
  w.set_name("w");
  w.set_data_type(onnx::TensorProto::FLOAT);
  w.add_float_data(1.0f);  // rank 0
  onnx::NodeProto& conv = *g.add_node();
  conv.set_op_type("Conv");
  conv.add_input("x");
  conv.add_input("w");
  conv.add_output("y");
  absl::Status crashed =
      kilnd.client().CompileModel(m.SerializeAsString(), client::RemoteCompileOptions{}).status();
  EXPECT_EQ(crashed.code(), absl::StatusCode::kInvalidArgument) << crashed;
  EXPECT_THAT(crashed.message(), HasSubstr("(Conv): input 1 has rank 0, expected 4"));
  EXPECT_TRUE(kilnd.process().running());
  EXPECT_TRUE(kilnd.client().GetStats().ok());
  if (!server::kAddressSpaceLimitApplies) {
    GTEST_SKIP() << "AddressSanitizer build: the import child has no RLIMIT_AS to run out of";
  }
  // ResNet-18's import needs more than 200 MiB: the child runs out, kilnd does not.
  std::string resnet = ReadFile(Model(kResnet));
  ASSERT_FALSE(resnet.empty());
  absl::Status exhausted =
      kilnd.client().CompileModel(resnet, client::RemoteCompileOptions{}).status();
  EXPECT_FALSE(exhausted.ok());
  EXPECT_EQ(exhausted.code(), absl::StatusCode::kInvalidArgument) << exhausted;
  EXPECT_THAT(exhausted.message(),
              HasSubstr("cannot be imported: the importer was killed by signal 6 (Aborted)"));
  EXPECT_THAT(exhausted.message(), HasSubstr("std::bad_alloc"));
  EXPECT_TRUE(kilnd.process().running());
  EXPECT_TRUE(kilnd.client().GetStats().ok());
  EXPECT_THAT(kilnd.log(), HasSubstr("event=model.import_crashed"));
}

// A model with a tensor past --max-tensor-bytes is refused at import, before any compile.
TEST_F(SecurityTest, TensorsPastMaxTensorBytesAreInvalidArgument) {
  Kilnd& kilnd = StartKilnd(0, {"--max-tensor-bytes", "1000000"});
  auto submit = [&](const std::string& model) {
    EXPECT_TRUE(kilnd.client().EnsureModel(model, client::DigestOf(model)).ok());
    v1::SubmitJobRequest r;
    *r.mutable_compile()->mutable_model_digest() = client::DigestOf(model);
    r.mutable_compile()->set_target("host");
    return kilnd.client().SubmitJob(r).status();
  };
  absl::Status refused = submit(ReadFile(Model(kResnet)));  // 9437184-byte weights
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument) << refused;
  EXPECT_THAT(refused.message(), HasSubstr("more than the limit of 1000000"));
  // lenet's tensors fit: its import passes and the job is queued (no worker runs it here).
  absl::Status queued = submit(ReadFile(Model(kLenet)));
  EXPECT_TRUE(queued.ok()) << queued;
}

// Every limit answers RESOURCE_EXHAUSTED naming its flag: uploads at once per token, upload
// bytes per minute, live jobs per token, queued jobs; and an idle upload stream is cancelled.
TEST_F(SecurityTest, LimitsAnswerResourceExhausted) {
  auto plain = [](const std::string& token) {
    client::ChannelSecurity s;
    s.token = token;
    return s;
  };
  const client::ChannelSecurity admin = plain(kAdmin);
  kilnd_ = std::make_unique<Kilnd>(
      root_,
      std::vector<std::string>{"--token-file", tokens_, "--max-uploads-per-token", "1",
                               "--max-jobs-per-token", "1", "--max-queued-jobs", "2",
                               "--stream-idle-timeout", "2s", "--upload-bytes-per-minute",
                               "3000000"},
      /*workers=*/0);
  kilnd_->set_client_security(admin);
  ASSERT_TRUE(kilnd_->Start());
  Kilnd& kilnd = *kilnd_;
  client::RemoteClient alice(kilnd.address(), 30'000, plain(kAlice));
  client::RemoteClient bob(kilnd.address(), 30'000, plain(kBob));
  auto stub = v1::KilnService::NewStub(client::MakeChannel(kilnd.address(), plain(kAlice), {}));
  // A stalled upload holds alice's one upload slot...
  grpc::ClientContext stalled_context;
  client::AddCredentials(stalled_context, plain(kAlice));
  v1::UploadModelResponse stalled_response;
  auto stalled = stub->UploadModel(&stalled_context, &stalled_response);
  v1::UploadModelRequest first;
  *first.mutable_digest() = client::DigestOf("a model that never comes");
  ASSERT_TRUE(stalled->Write(first));
  std::string lenet = ReadFile(Model(kLenet));
  std::string mlp = ReadFile(Model(kMlp));
  ASSERT_TRUE(Eventually(
      [&] {
        absl::Status s = alice.UploadModel(lenet, client::DigestOf(lenet)).status();
        return absl::IsResourceExhausted(s) &&
               s.message().find("(--max-uploads-per-token 1)") != absl::string_view::npos;
      },
      10s));
  // ... until the idle timeout cancels it.
  grpc::Status idle = stalled->Finish();
  EXPECT_EQ(idle.error_code(), grpc::StatusCode::CANCELLED) << idle.error_message();
  EXPECT_TRUE(
      Eventually([&] { return alice.UploadModel(lenet, client::DigestOf(lenet)).ok(); }, 10s));
  ASSERT_TRUE(alice.UploadModel(mlp, client::DigestOf(mlp)).ok());
  // Upload bytes per minute: lenet and mlp (2.4 MB together) fit, ResNet-18 (47 MB) does not.
  std::string resnet = ReadFile(Model(kResnet));
  absl::Status too_much = bob.UploadModel(resnet, client::DigestOf(resnet)).status();
  EXPECT_EQ(too_much.code(), absl::StatusCode::kResourceExhausted) << too_much;
  EXPECT_THAT(too_much.message(), HasSubstr("bytes in a minute (--upload-bytes-per-minute)"));
  // Live jobs per token (no workers: jobs stay queued).
  auto submit = [&](client::RemoteClient& c, const std::string& model) {
    v1::SubmitJobRequest r;
    *r.mutable_compile()->mutable_model_digest() = client::DigestOf(model);
    r.mutable_compile()->set_target("host");
    return c.SubmitJob(r);
  };
  ASSERT_TRUE(submit(alice, lenet).ok());
  absl::Status second = submit(alice, mlp).status();
  EXPECT_EQ(second.code(), absl::StatusCode::kResourceExhausted) << second;
  EXPECT_THAT(second.message(), HasSubstr("has 1 jobs queued or running (--max-jobs-per-token 1)"));
  // Queued jobs overall: bob's is the second, the admin's the third.
  ASSERT_TRUE(submit(bob, mlp).ok());
  client::RemoteClient admin_client(kilnd.address(), 30'000, admin);
  absl::Status full = submit(admin_client, mlp).status();
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_THAT(full.message(), HasSubstr("the job queue is full: 2 jobs queued (--max-queued-jobs"));
  EXPECT_TRUE(kilnd.client().GetStats().ok());
}

}  // namespace
}  // namespace kiln::testing
