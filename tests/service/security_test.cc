// kilnd facing a network (issue #10, item 1): TLS on every listener, bearer tokens with roles
// checked per RPC, the worker hub on its own listener, worker client certificates, job
// ownership, token reload on SIGHUP, and the refusal to listen beyond loopback in plaintext.
// Certificates are made per test run with the openssl CLI (a CA, a server certificate for
// localhost/127.0.0.1, a worker client certificate).
#include <signal.h>

#include <fstream>

#include "absl/strings/str_cat.h"
#include "client/channel.h"
#include "gmock/gmock.h"
#include "kiln/v1/service.grpc.pb.h"
#include "tests/service/service_fixture.h"

namespace kiln::testing {
namespace {

using ::testing::HasSubstr;

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

}  // namespace
}  // namespace kiln::testing
