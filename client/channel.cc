#include "client/channel.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "compiler_core/support/file_bytes.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

namespace kiln::client {
namespace {

/// The file of `flag`; errors name the flag: "--tls-ca: cannot read 'PATH'" (kNotFound).
absl::StatusOr<std::string> ReadFile(const std::string& flag, const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadFileBytes(path);
  if (!bytes.ok()) return absl::NotFoundError(absl::StrCat(flag, ": ", bytes.status().message()));
  return bytes;
}

}  // namespace

absl::StatusOr<ChannelSecurity> LoadChannelSecurity(const std::string& tls_ca_file,
                                                    const std::string& token_file,
                                                    const std::string& tls_server_name,
                                                    const std::string& tls_cert_file,
                                                    const std::string& tls_key_file) {
  ChannelSecurity security;
  security.tls_server_name = tls_server_name;
  if (!tls_ca_file.empty()) {
    absl::StatusOr<std::string> pem = ReadFile("--tls-ca", tls_ca_file);
    if (!pem.ok()) return pem.status();
    security.tls_ca_pem = *std::move(pem);
  }
  if (tls_cert_file.empty() != tls_key_file.empty()) {
    return absl::InvalidArgumentError("a client certificate needs both --tls-cert and --tls-key");
  }
  if (!tls_cert_file.empty()) {
    if (tls_ca_file.empty()) {
      return absl::InvalidArgumentError("--tls-cert needs --tls-ca (a client certificate is TLS)");
    }
    absl::StatusOr<std::string> cert = ReadFile("--tls-cert", tls_cert_file);
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadFile("--tls-key", tls_key_file);
    if (!key.ok()) return key.status();
    security.tls_cert_pem = *std::move(cert);
    security.tls_key_pem = *std::move(key);
  }
  if (!token_file.empty()) {
    absl::StatusOr<std::string> text = ReadFile("--token-file", token_file);
    if (!text.ok()) return text.status();
    security.token = std::string(absl::StripAsciiWhitespace(*text));
    if (security.token.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--token-file: '", token_file, "' is empty (it holds the token alone)"));
    }
  } else if (const char* env = std::getenv("KILN_TOKEN"); env != nullptr) {
    security.token = std::string(absl::StripAsciiWhitespace(env));
  }
  return security;
}

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& server,
                                           const ChannelSecurity& security,
                                           grpc::ChannelArguments args) {
  if (security.tls_ca_pem.empty()) {
    return grpc::CreateCustomChannel(server, grpc::InsecureChannelCredentials(), args);
  }
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = security.tls_ca_pem;
  ssl.pem_cert_chain = security.tls_cert_pem;
  ssl.pem_private_key = security.tls_key_pem;
  if (!security.tls_server_name.empty()) {
    args.SetSslTargetNameOverride(security.tls_server_name);
  }
  return grpc::CreateCustomChannel(server, grpc::SslCredentials(ssl), args);
}

void AddCredentials(grpc::ClientContext& context, const ChannelSecurity& security) {
  if (!security.token.empty()) {
    context.AddMetadata("authorization", absl::StrCat("Bearer ", security.token));
  }
}

}  // namespace kiln::client
