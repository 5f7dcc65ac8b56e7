// The roles a bearer token grants (issue #10) and the principal an authenticated call runs as.
#ifndef KILN_SERVER_AUTH_ROLES_H_
#define KILN_SERVER_AUTH_ROLES_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kiln::server::auth {

/// One role; a RoleSet is a bitwise OR of these. Names as in a token file.
enum Role : uint32_t {
  kCompile = 1u << 0,  // Compile, SubmitJob (compile), UploadModel, FindMissingBlobs
  kTune = 1u << 1,     // SubmitJob (tune), ImportTuningRecords, UploadModel
  kRead = 1u << 2,     // FetchArtifact, ListJobs, ListWorkers, GetStats, ListTuningRecords
  kAdmin = 1u << 3,    // every client RPC, and other tokens' jobs (watch, cancel, list)
  kWorker = 1u << 4,   // the WorkerHub: Connect, FetchModel, UploadArtifact
};
using RoleSet = uint32_t;

/// Every role: what a call has when authentication is off.
inline constexpr RoleSet kAllRoles = kCompile | kTune | kRead | kAdmin | kWorker;

/// Parses "compile,tune" (names: compile, tune, read, admin, worker). Errors: kInvalidArgument
/// naming an unknown or empty role.
absl::StatusOr<RoleSet> ParseRoles(absl::string_view text);

/// "compile,read" in the order of the enum; "none" for the empty set.
std::string RoleNames(RoleSet roles);

/// Who a call runs as: `id` names a token without revealing it ("token:" and the first 12 hex
/// digits of its SHA-256), a client certificate ("cert:" and its common name), or is empty when
/// authentication is off. Jobs record it as their owner.
struct Principal {
  std::string id;
  RoleSet roles = 0;

  bool Has(RoleSet any_of) const { return (roles & any_of) != 0; }
};

}  // namespace kiln::server::auth

#endif  // KILN_SERVER_AUTH_ROLES_H_
