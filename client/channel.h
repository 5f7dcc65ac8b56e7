// How kiln and kiln-worker reach kilnd: a plaintext or TLS channel, and the bearer token each
// call carries (`--tls-ca FILE`, `--token-file FILE` holding the token alone, or KILN_TOKEN).
#ifndef KILN_CLIENT_CHANNEL_H_
#define KILN_CLIENT_CHANNEL_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/channel_arguments.h"

namespace kiln::client {

/// The security of a channel to kilnd. Empty fields: plaintext, no token.
struct ChannelSecurity {
  /// PEM root certificates that verify kilnd's certificate; non-empty turns TLS on.
  std::string tls_ca_pem;
  /// Overrides the name checked against kilnd's certificate (e.g. when dialing an IP).
  std::string tls_server_name;
  /// PEM client certificate chain and key (a worker's certificate); optional.
  std::string tls_cert_pem;
  std::string tls_key_pem;
  /// Sent as `authorization: Bearer TOKEN` on every call; empty: none.
  std::string token;
};

/// Reads the files of --tls-ca, --tls-cert, --tls-key and --token-file (any may be empty); the
/// token falls back to the KILN_TOKEN environment variable. Errors: kNotFound naming the flag
/// and the unreadable file, kInvalidArgument for an empty token file or half a client key pair.
absl::StatusOr<ChannelSecurity> LoadChannelSecurity(const std::string& tls_ca_file,
                                                    const std::string& token_file,
                                                    const std::string& tls_server_name = "",
                                                    const std::string& tls_cert_file = "",
                                                    const std::string& tls_key_file = "");

/// A channel to `server` (HOST:PORT) with `args`, over TLS when security.tls_ca_pem is set.
std::shared_ptr<grpc::Channel> MakeChannel(const std::string& server,
                                           const ChannelSecurity& security,
                                           grpc::ChannelArguments args);

/// Adds the bearer token (if any) to a call's metadata.
void AddCredentials(grpc::ClientContext& context, const ChannelSecurity& security);

}  // namespace kiln::client

#endif  // KILN_CLIENT_CHANNEL_H_
