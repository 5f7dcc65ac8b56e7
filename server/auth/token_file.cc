#include "server/auth/token_file.h"

#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "compiler_core/support/sha256.h"

namespace kiln::server::auth {

std::string TokenPrincipalId(absl::string_view token) {
  return absl::StrCat("token:",
                      Sha256Hex(std::string_view(token.data(), token.size())).substr(0, 12));
}

absl::StatusOr<TokenTable> ParseTokenFile(absl::string_view text, absl::string_view source) {
  TokenTable table;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    auto error = [&](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ":", line_number, ": ", why, " (expected `TOKEN ROLE[,ROLE...]`)"));
    };
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (fields.size() != 2) {
      return error(absl::StrCat(fields.size(), " fields"));
    }
    absl::string_view token = fields[0];
    if (token.size() < kMinTokenLength) {
      return error(absl::StrCat("token of ", token.size(), " characters; at least ",
                                kMinTokenLength, " are required"));
    }
    for (char c : token) {
      if (!absl::ascii_isgraph(static_cast<unsigned char>(c))) {
        return error("token has a non-printable character");
      }
    }
    absl::StatusOr<RoleSet> roles = ParseRoles(fields[1]);
    if (!roles.ok()) return error(roles.status().message());
    std::string key = Sha256Hex(std::string_view(token.data(), token.size()));
    if (table.count(key) != 0) return error("token given twice");
    table[key] = Principal{TokenPrincipalId(token), *roles};
  }
  return table;
}

}  // namespace kiln::server::auth
