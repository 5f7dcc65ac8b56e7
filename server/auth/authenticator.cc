#include "server/auth/authenticator.h"

#include <openssl/rand.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "compiler_core/support/file_bytes.h"
#include "compiler_core/support/sha256.h"
#include "grpcpp/server_context.h"

namespace kiln::server::auth {
namespace {

absl::StatusOr<TokenTable> ReadTokenFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFileBytes(path);
  if (!text.ok()) return absl::NotFoundError(absl::StrCat("cannot read token file '", path, "'"));
  return ParseTokenFile(*text, path);
}

std::string Lookup(const grpc::AuthContext& context, const char* property) {
  std::vector<grpc::string_ref> values = context.FindPropertyValues(property);
  return values.empty() ? std::string() : std::string(values[0].data(), values[0].size());
}

}  // namespace

std::string RandomToken() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) std::abort();  // no entropy: nothing is safe
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char b : bytes) {
    token += kHex[b >> 4];
    token += kHex[b & 15];
  }
  return token;
}

absl::Status Authenticator::Load(const std::string& path) {
  absl::StatusOr<TokenTable> table = ReadTokenFile(path);
  if (!table.ok()) return table.status();
  absl::MutexLock lock(&mu_);
  path_ = path;
  file_tokens_ = *std::move(table);
  enabled_ = true;
  return absl::OkStatus();
}

absl::Status Authenticator::Reload() {
  std::string path;
  {
    absl::MutexLock lock(&mu_);
    path = path_;
  }
  if (path.empty()) return absl::FailedPreconditionError("kilnd runs without --token-file");
  absl::StatusOr<TokenTable> table = ReadTokenFile(path);
  if (!table.ok()) return table.status();
  absl::MutexLock lock(&mu_);
  file_tokens_ = *std::move(table);
  return absl::OkStatus();
}

void Authenticator::AddInternalToken(absl::string_view token, Principal principal) {
  absl::MutexLock lock(&mu_);
  internal_tokens_[Sha256Hex(std::string_view(token.data(), token.size()))] = std::move(principal);
  enabled_ = true;
}

bool Authenticator::enabled() const {
  absl::MutexLock lock(&mu_);
  return enabled_;
}

absl::StatusOr<Principal> Authenticator::Authenticate(absl::string_view header) const {
  if (header.empty()) {
    return absl::UnauthenticatedError("no bearer token: pass --token-file FILE or set KILN_TOKEN");
  }
  absl::string_view token = header;
  if (!absl::ConsumePrefix(&token, "Bearer ") && !absl::ConsumePrefix(&token, "bearer ")) {
    return absl::UnauthenticatedError("the authorization metadata is not `Bearer TOKEN`");
  }
  token = absl::StripAsciiWhitespace(token);
  std::string key = Sha256Hex(std::string_view(token.data(), token.size()));
  absl::MutexLock lock(&mu_);
  for (const TokenTable* table : {&file_tokens_, &internal_tokens_}) {
    auto it = table->find(key);
    if (it != table->end()) return it->second;
  }
  return absl::UnauthenticatedError(
      absl::StrCat("unknown bearer token (", TokenPrincipalId(token), ")"));
}

absl::StatusOr<Principal> Authenticator::Authorize(const grpc::ServerContextBase& context,
                                                   RoleSet any_of, absl::string_view method) const {
  if (!enabled()) return Principal{"", kAllRoles};
  Principal principal;
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  std::string id = auth ? Lookup(*auth, kPrincipalProperty) : "";
  uint32_t roles = 0;
  if (!id.empty() && absl::SimpleAtoi(Lookup(*auth, kRolesProperty), &roles)) {
    principal = Principal{id, roles};
  } else {
    std::string header;
    auto it = context.client_metadata().find(kAuthorizationKey);
    if (it != context.client_metadata().end()) header.assign(it->second.data(), it->second.size());
    absl::StatusOr<Principal> found = Authenticate(header);
    if (!found.ok()) {
      return absl::UnauthenticatedError(absl::StrCat(method, ": ", found.status().message()));
    }
    principal = *std::move(found);
  }
  if (!principal.Has(any_of)) {
    return absl::PermissionDeniedError(absl::StrCat(
        method, " needs role ", absl::StrReplaceAll(RoleNames(any_of), {{",", " or "}}), "; ",
        principal.id, " has ", RoleNames(principal.roles)));
  }
  return principal;
}

}  // namespace kiln::server::auth
