// The token file of `kilnd --token-file`: one bearer token per line as `TOKEN ROLE[,ROLE...]`.
#ifndef KILN_SERVER_AUTH_TOKEN_FILE_H_
#define KILN_SERVER_AUTH_TOKEN_FILE_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/auth/roles.h"

namespace kiln::server::auth {

/// Tokens shorter than this are refused: a bearer token is a secret, not a name.
inline constexpr size_t kMinTokenLength = 16;

/// The tokens of a token file, keyed by the SHA-256 (hex) of the token, so the table never
/// compares secrets byte by byte.
using TokenTable = std::map<std::string, Principal>;

/// Parses a token file's text. Each non-blank line that does not start with `#` is
/// `TOKEN ROLE[,ROLE...]` (whitespace between; tokens are at least kMinTokenLength printable
/// characters). `source` names the file in errors. Errors: kInvalidArgument with the line
/// number for a malformed line, an unknown role, a short token or a token given twice.
absl::StatusOr<TokenTable> ParseTokenFile(absl::string_view text, absl::string_view source);

/// The principal id of a token: "token:" and the first 12 hex digits of its SHA-256.
std::string TokenPrincipalId(absl::string_view token);

}  // namespace kiln::server::auth

#endif  // KILN_SERVER_AUTH_TOKEN_FILE_H_
