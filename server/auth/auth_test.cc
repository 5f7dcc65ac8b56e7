// Token files, roles, bearer authentication and the loopback rule (issue #10, item 1). The
// end-to-end checks over TLS are in server/kilnd_auth_test.cc.
#include <cstdio>
#include <fstream>

#include "gtest/gtest.h"
#include "server/auth/authenticator.h"
#include "server/auth/roles.h"
#include "server/auth/tls.h"
#include "server/auth/token_file.h"

namespace kiln::server::auth {
namespace {

constexpr char kAlice[] = "alice-0123456789abcdef";
constexpr char kWorkerToken[] = "worker-0123456789abcdef";

TEST(RolesTest, ParsesAndPrints) {
  absl::StatusOr<RoleSet> roles = ParseRoles("read,compile");
  ASSERT_TRUE(roles.ok()) << roles.status();
  EXPECT_EQ(*roles, kRead | kCompile);
  EXPECT_EQ(RoleNames(*roles), "compile,read");
  EXPECT_EQ(RoleNames(0), "none");
  EXPECT_EQ(ParseRoles("read,root").status().message(),
            "unknown role 'root' (roles: compile, tune, read, admin, worker)");
  EXPECT_EQ(ParseRoles("read,").status().message(),
            "empty role (roles: compile, tune, read, admin, worker)");
}

TEST(TokenFileTest, ParsesLinesCommentsAndBlanks) {
  absl::StatusOr<TokenTable> table = ParseTokenFile(
      absl::StrCat("# build farm\n\n", kAlice, " compile,read\n  ", kWorkerToken, "\tworker\n"),
      "tokens");
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(table->size(), 2u);
  bool saw_alice = false;
  for (const auto& [key, principal] : *table) {
    EXPECT_EQ(key.size(), 64u);  // the SHA-256, never the token
    if (principal.id == TokenPrincipalId(kAlice)) {
      saw_alice = true;
      EXPECT_EQ(principal.roles, kCompile | kRead);
    }
  }
  EXPECT_TRUE(saw_alice);
  EXPECT_EQ(TokenPrincipalId(kAlice).size(), 6u + 12u);
}

TEST(TokenFileTest, ErrorsNameTheLine) {
  EXPECT_EQ(ParseTokenFile("\nshort read\n", "t").status().message(),
            "t:2: token of 5 characters; at least 16 are required (expected `TOKEN "
            "ROLE[,ROLE...]`)");
  EXPECT_EQ(ParseTokenFile(absl::StrCat(kAlice, "\n"), "t").status().message(),
            "t:1: 1 fields (expected `TOKEN ROLE[,ROLE...]`)");
  EXPECT_EQ(
      ParseTokenFile(absl::StrCat(kAlice, " read\n", kAlice, " admin\n"), "t").status().message(),
      "t:2: token given twice (expected `TOKEN ROLE[,ROLE...]`)");
  EXPECT_EQ(ParseTokenFile(absl::StrCat(kAlice, " sudo"), "t").status().code(),
            absl::StatusCode::kInvalidArgument);
}

class AuthenticatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "/kiln_tokens_" + std::to_string(getpid());
    Write(absl::StrCat(kAlice, " compile,read\n"));
  }
  void TearDown() override { std::remove(path_.c_str()); }
  void Write(const std::string& text) { std::ofstream(path_, std::ios::trunc) << text; }

  std::string path_;
};

TEST_F(AuthenticatorTest, DisabledUntilLoaded) {
  Authenticator auth;
  EXPECT_FALSE(auth.enabled());
  ASSERT_TRUE(auth.Load(path_).ok());
  EXPECT_TRUE(auth.enabled());
}

TEST_F(AuthenticatorTest, BearerTokens) {
  Authenticator auth;
  ASSERT_TRUE(auth.Load(path_).ok());
  absl::StatusOr<Principal> p = auth.Authenticate(absl::StrCat("Bearer ", kAlice));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->id, TokenPrincipalId(kAlice));
  EXPECT_TRUE(p->Has(kCompile));
  EXPECT_FALSE(p->Has(kAdmin | kWorker));
  EXPECT_EQ(auth.Authenticate("").status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(auth.Authenticate(kAlice).status().message(),
            "the authorization metadata is not `Bearer TOKEN`");
  absl::Status unknown = auth.Authenticate("Bearer not-a-known-token-at-all").status();
  EXPECT_EQ(unknown.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(unknown.message(), absl::StrCat("unknown bearer token (",
                                            TokenPrincipalId("not-a-known-token-at-all"), ")"));
}

TEST_F(AuthenticatorTest, ReloadReplacesFileTokensAndKeepsInternalOnes) {
  Authenticator auth;
  ASSERT_TRUE(auth.Load(path_).ok());
  auth.AddInternalToken(kWorkerToken, Principal{"local-worker", kWorker});
  Write(absl::StrCat("bob-0123456789abcdef admin\n"));
  ASSERT_TRUE(auth.Reload().ok());
  EXPECT_FALSE(auth.Authenticate(absl::StrCat("Bearer ", kAlice)).ok());
  EXPECT_TRUE(auth.Authenticate("Bearer bob-0123456789abcdef").ok());
  EXPECT_EQ(auth.Authenticate(absl::StrCat("Bearer ", kWorkerToken))->id, "local-worker");
  // A broken file keeps the old table in force.
  Write("bob-0123456789abcdef superuser\n");
  absl::Status bad = auth.Reload();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(auth.Authenticate("Bearer bob-0123456789abcdef").ok());
}

TEST_F(AuthenticatorTest, MissingFile) {
  Authenticator auth;
  absl::Status s = auth.Load(path_ + ".absent");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(auth.enabled());
}

TEST(ListenerSecurityTest, Loopback) {
  EXPECT_TRUE(IsLoopbackAddress("127.0.0.1:7878"));
  EXPECT_TRUE(IsLoopbackAddress("127.1.2.3:0"));
  EXPECT_TRUE(IsLoopbackAddress("localhost:7878"));
  EXPECT_TRUE(IsLoopbackAddress("[::1]:7878"));
  EXPECT_TRUE(IsLoopbackAddress("unix:/tmp/kilnd.sock"));
  EXPECT_FALSE(IsLoopbackAddress("0.0.0.0:7878"));
  EXPECT_FALSE(IsLoopbackAddress("[::]:7878"));
  EXPECT_FALSE(IsLoopbackAddress("10.0.0.5:7878"));
  EXPECT_FALSE(IsLoopbackAddress("kilnd.example.com:7878"));
}

TEST(ListenerSecurityTest, RefusesPlaintextBeyondLoopback) {
  EXPECT_TRUE(CheckListenerSecurity("--listen", "127.0.0.1:1", false, false, false).ok());
  EXPECT_TRUE(CheckListenerSecurity("--listen", "0.0.0.0:1", true, true, false).ok());
  EXPECT_TRUE(CheckListenerSecurity("--listen", "0.0.0.0:1", false, false, true).ok());
  absl::Status s = CheckListenerSecurity("--listen", "0.0.0.0:1", false, false, false);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "refusing to listen on 0.0.0.0:1 (--listen) beyond loopback without TLS and tokens "
            "(--tls-cert, --tls-key, --token-file); pass --insecure to allow it");
  EXPECT_EQ(CheckListenerSecurity("--worker-listen", "10.1.1.1:2", true, false, false).message(),
            "refusing to listen on 10.1.1.1:2 (--worker-listen) beyond loopback without tokens "
            "(--token-file); pass --insecure to allow it");
}

TEST(TlsCredentialsTest, ClearErrorsForBadFiles) {
  Authenticator auth;
  std::string dir = ::testing::TempDir();
  std::string junk = dir + "/kiln_not_pem_" + std::to_string(getpid());
  std::ofstream(junk) << "hello\n";
  TlsFiles files{junk, junk, ""};
  EXPECT_EQ(TlsServerCredentials(files, &auth).status().message(),
            absl::StrCat("--tls-cert: '", junk, "' holds no PEM certificate"));
  files.cert = dir + "/absent.pem";
  EXPECT_EQ(TlsServerCredentials(files, &auth).status().message(),
            absl::StrCat("--tls-cert: cannot read '", dir, "/absent.pem'"));
  EXPECT_EQ(TlsServerCredentials(TlsFiles{"", junk, ""}, &auth).status().message(),
            "TLS needs both --tls-cert and --tls-key");
  std::remove(junk.c_str());
}

}  // namespace
}  // namespace kiln::server::auth
