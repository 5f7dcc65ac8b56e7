// Listener security for kilnd: gRPC SSL server credentials from PEM files, with an auth metadata
// processor that authenticates every call's bearer token (or worker client certificate), and
// the rule that a listener beyond loopback needs TLS and tokens.
#ifndef KILN_SERVER_AUTH_TLS_H_
#define KILN_SERVER_AUTH_TLS_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/security/server_credentials.h"
#include "server/auth/authenticator.h"

namespace kiln::server::auth {

/// PEM files of `kilnd --tls-cert FILE --tls-key FILE [--tls-client-ca FILE]`.
struct TlsFiles {
  std::string cert;       // server certificate chain
  std::string key;        // its private key
  std::string client_ca;  // optional: CA of worker client certificates (role `worker`)

  bool enabled() const { return !cert.empty() || !key.empty(); }
};

/// SSL server credentials for `files`, whose metadata processor authenticates calls with
/// `authenticator` (which must outlive the server). With a client CA, clients may present a
/// certificate (it must then verify); a verified one makes the call's principal
/// "cert:<common name>" with role `worker` unless a bearer token names another principal.
/// Errors: kInvalidArgument naming the flag whose file is missing, unreadable or not PEM of
/// the right kind (certificate, private key), or a key that does not match the certificate.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> TlsServerCredentials(
    const TlsFiles& files, const Authenticator* authenticator);

/// Whether HOST:PORT (or a unix: address) is reachable from this host only: 127.0.0.0/8,
/// ::1, localhost and unix sockets are; wildcard and other addresses are not.
bool IsLoopbackAddress(absl::string_view address);

/// The startup rule: a listener beyond loopback needs TLS and a token file, unless `insecure`.
/// Errors: kFailedPrecondition naming the address, what is missing and `--insecure`.
absl::Status CheckListenerSecurity(absl::string_view flag, absl::string_view address, bool tls,
                                   bool tokens, bool insecure);

}  // namespace kiln::server::auth

#endif  // KILN_SERVER_AUTH_TLS_H_
