#include "server/auth/roles.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace kiln::server::auth {
namespace {

constexpr std::pair<Role, const char*> kRoleNames[] = {
    {kCompile, "compile"}, {kTune, "tune"}, {kRead, "read"}, {kAdmin, "admin"}, {kWorker, "worker"},
};

}  // namespace

absl::StatusOr<RoleSet> ParseRoles(absl::string_view text) {
  RoleSet roles = 0;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    part = absl::StripAsciiWhitespace(part);
    bool found = false;
    for (const auto& [role, name] : kRoleNames) {
      if (part == name) {
        roles |= role;
        found = true;
      }
    }
    if (!found) {
      return absl::InvalidArgumentError(
          absl::StrCat(part.empty() ? "empty role" : absl::StrCat("unknown role '", part, "'"),
                       " (roles: compile, tune, read, admin, worker)"));
    }
  }
  return roles;
}

std::string RoleNames(RoleSet roles) {
  std::string out;
  for (const auto& [role, name] : kRoleNames) {
    if (roles & role) absl::StrAppend(&out, out.empty() ? "" : ",", name);
  }
  return out.empty() ? "none" : out;
}

}  // namespace kiln::server::auth
