// Bearer-token authentication for kilnd: the token file's table (reloaded on SIGHUP), tokens
// kilnd makes for its own workers, and the principal of an RPC.
#ifndef KILN_SERVER_AUTH_AUTHENTICATOR_H_
#define KILN_SERVER_AUTH_AUTHENTICATOR_H_

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "server/auth/roles.h"
#include "server/auth/token_file.h"

namespace grpc {
class ServerContextBase;
}

namespace kiln::server::auth {

/// The metadata key of the bearer token ("authorization: Bearer TOKEN", RFC 6750 section 2.1).
inline constexpr char kAuthorizationKey[] = "authorization";
/// Auth-context properties the metadata processor sets on an authenticated call.
inline constexpr char kPrincipalProperty[] = "kiln.principal";
inline constexpr char kRolesProperty[] = "kiln.roles";

/// Thread-safe. Disabled (every call runs with every role) until a token file is loaded.
class Authenticator {
 public:
  /// Loads `path` (see ParseTokenFile) and enables authentication. Errors: kNotFound for an
  /// unreadable file, kInvalidArgument for a malformed one.
  absl::Status Load(const std::string& path);

  /// Reads the token file again (on SIGHUP); on error the old table stays in force.
  absl::Status Reload();

  /// Adds a token not in the file (kilnd's own workers), kept across reloads. Enables
  /// authentication.
  void AddInternalToken(absl::string_view token, Principal principal);

  bool enabled() const;

  /// The principal of the `authorization` metadata value `header` ("Bearer TOKEN").
  /// Errors: kUnauthenticated when it is missing, malformed or names no known token.
  absl::StatusOr<Principal> Authenticate(absl::string_view header) const;

  /// The principal of a server call: the one the TLS metadata processor found (token or client
  /// certificate), else the call's own `authorization` metadata (plaintext listeners), checked
  /// to hold one of `any_of`. With authentication off: an anonymous principal with every role.
  /// Errors: kUnauthenticated (no or unknown credential), kPermissionDenied naming the roles
  /// the method needs and the ones the caller has.
  absl::StatusOr<Principal> Authorize(const grpc::ServerContextBase& context, RoleSet any_of,
                                      absl::string_view method) const;

 private:
  mutable absl::Mutex mu_;
  std::string path_ ABSL_GUARDED_BY(mu_);
  TokenTable file_tokens_ ABSL_GUARDED_BY(mu_);
  TokenTable internal_tokens_ ABSL_GUARDED_BY(mu_);
  bool enabled_ ABSL_GUARDED_BY(mu_) = false;
};

/// A fresh random token (64 hex digits, from OpenSSL's CSPRNG).
std::string RandomToken();

}  // namespace kiln::server::auth

#endif  // KILN_SERVER_AUTH_AUTHENTICATOR_H_
