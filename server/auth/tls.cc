#include "server/auth/tls.h"

#include <openssl/pem.h>
#include <openssl/x509.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "compiler_core/support/file_bytes.h"
#include "grpcpp/security/auth_metadata_processor.h"
#include "grpcpp/security/server_credentials.h"

namespace kiln::server::auth {
namespace {

absl::StatusOr<std::string> ReadPem(absl::string_view flag, const std::string& path) {
  absl::StatusOr<std::string> pem = ReadFileBytes(path);
  if (!pem.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", pem.status().message()));
  }
  return pem;
}

struct BioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Deleter {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyDeleter {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};

std::unique_ptr<BIO, BioDeleter> BioOf(const std::string& pem) {
  return std::unique_ptr<BIO, BioDeleter>(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

/// Checks the PEM texts up front: gRPC only says that the server failed to start.
absl::Status CheckPem(const TlsFiles& files, const std::string& cert, const std::string& key,
                      const std::string& client_ca) {
  std::unique_ptr<X509, X509Deleter> x509(
      PEM_read_bio_X509(BioOf(cert).get(), nullptr, nullptr, nullptr));
  if (!x509) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-cert: '", files.cert, "' holds no PEM certificate"));
  }
  std::unique_ptr<EVP_PKEY, KeyDeleter> pkey(
      PEM_read_bio_PrivateKey(BioOf(key).get(), nullptr, nullptr, nullptr));
  if (!pkey) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-key: '", files.key, "' holds no PEM private key (or it is encrypted)"));
  }
  if (X509_check_private_key(x509.get(), pkey.get()) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls-key: '", files.key, "' does not match the certificate in '", files.cert, "'"));
  }
  if (!files.client_ca.empty()) {
    std::unique_ptr<X509, X509Deleter> ca(
        PEM_read_bio_X509(BioOf(client_ca).get(), nullptr, nullptr, nullptr));
    if (!ca) {
      return absl::InvalidArgumentError(
          absl::StrCat("--tls-client-ca: '", files.client_ca, "' holds no PEM certificate"));
    }
  }
  return absl::OkStatus();
}

/// Authenticates each call on a TLS listener before its handler runs: a bad bearer token is
/// refused here with UNAUTHENTICATED; a good one (or a verified client certificate) becomes
/// the call's kiln.principal / kiln.roles properties, which Authenticator::Authorize reads.
/// A call with neither passes through (health checks need none; handlers refuse the rest).
class TokenProcessor final : public grpc::AuthMetadataProcessor {
 public:
  explicit TokenProcessor(const Authenticator* authenticator) : authenticator_(authenticator) {}

  bool IsBlocking() const override { return false; }  // a map lookup under a mutex

  grpc::Status Process(const InputMetadata& auth_metadata, grpc::AuthContext* context,
                       OutputMetadata* consumed_auth_metadata,
                       OutputMetadata* response_metadata) override {
    auto it = auth_metadata.find(kAuthorizationKey);
    if (it != auth_metadata.end()) {
      absl::StatusOr<Principal> principal =
          authenticator_->Authenticate(absl::string_view(it->second.data(), it->second.size()));
      if (!principal.ok()) {
        if (!authenticator_->enabled()) return grpc::Status::OK;
        return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                            std::string(principal.status().message()));
      }
      consumed_auth_metadata->insert(
          {std::string(kAuthorizationKey), std::string(it->second.data(), it->second.size())});
      return SetPrincipal(context, *principal);
    }
    if (context->IsPeerAuthenticated()) {
      std::vector<grpc::string_ref> cn = context->FindPropertyValues("x509_common_name");
      std::string name = cn.empty() ? "unnamed" : std::string(cn[0].data(), cn[0].size());
      return SetPrincipal(context, Principal{absl::StrCat("cert:", name), kWorker});
    }
    return grpc::Status::OK;
  }

 private:
  static grpc::Status SetPrincipal(grpc::AuthContext* context, const Principal& principal) {
    context->AddProperty(kPrincipalProperty, principal.id);
    context->AddProperty(kRolesProperty, absl::StrCat(principal.roles));
    return grpc::Status::OK;
  }

  const Authenticator* authenticator_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> TlsServerCredentials(
    const TlsFiles& files, const Authenticator* authenticator) {
  if (files.cert.empty() || files.key.empty()) {
    return absl::InvalidArgumentError("TLS needs both --tls-cert and --tls-key");
  }
  absl::StatusOr<std::string> cert = ReadPem("--tls-cert", files.cert);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPem("--tls-key", files.key);
  if (!key.ok()) return key.status();
  std::string client_ca;
  if (!files.client_ca.empty()) {
    absl::StatusOr<std::string> ca = ReadPem("--tls-client-ca", files.client_ca);
    if (!ca.ok()) return ca.status();
    client_ca = *std::move(ca);
  }
  if (absl::Status s = CheckPem(files, *cert, *key, client_ca); !s.ok()) return s;
  grpc::SslServerCredentialsOptions options(client_ca.empty()
                                                ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                                : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = client_ca;
  options.pem_key_cert_pairs.push_back({*key, *cert});
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::SslServerCredentials(options);
  credentials->SetAuthMetadataProcessor(std::make_shared<TokenProcessor>(authenticator));
  return credentials;
}

bool IsLoopbackAddress(absl::string_view address) {
  if (absl::StartsWith(address, "unix:") || absl::StartsWith(address, "unix-abstract:")) {
    return true;
  }
  absl::string_view host = address;
  if (size_t colon = host.rfind(':'); colon != absl::string_view::npos) {
    host = host.substr(0, colon);
  }
  if (absl::StartsWith(host, "[") && absl::EndsWith(host, "]")) {
    host = host.substr(1, host.size() - 2);
  }
  std::string lower = absl::AsciiStrToLower(host);
  return lower == "localhost" || lower == "::1" || absl::StartsWith(lower, "127.");
}

absl::Status CheckListenerSecurity(absl::string_view flag, absl::string_view address, bool tls,
                                   bool tokens, bool insecure) {
  if (insecure || IsLoopbackAddress(address) || (tls && tokens)) return absl::OkStatus();
  std::string missing = !tls && !tokens ? "TLS and tokens (--tls-cert, --tls-key, --token-file)"
                        : !tls          ? "TLS (--tls-cert, --tls-key)"
                                        : "tokens (--token-file)";
  return absl::FailedPreconditionError(absl::StrCat("refusing to listen on ", address, " (", flag,
                                                    ") beyond loopback without ", missing,
                                                    "; pass --insecure to allow it"));
}

}  // namespace kiln::server::auth
