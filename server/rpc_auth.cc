#include "server/rpc_auth.h"

#include "absl/strings/str_cat.h"
#include "server/auth/authenticator.h"

namespace kiln::server {

absl::StatusOr<auth::Principal> AuthorizeCall(const ServiceContext* ctx,
                                              const grpc::CallbackServerContext& context,
                                              auth::RoleSet any_of, const std::string& method) {
  if (ctx->auth == nullptr) return auth::Principal{"", auth::kAllRoles};
  return ctx->auth->Authorize(context, any_of, method);
}

bool MayAccessJob(const auth::Principal& principal, const cache::JobRecord& job) {
  return job.owner.empty() || job.owner == principal.id || principal.Has(auth::kAdmin);
}

absl::Status NotYourJob(const auth::Principal& principal, const std::string& job_id) {
  return absl::PermissionDeniedError(absl::StrCat("job '", job_id, "' belongs to another token; ",
                                                  principal.id, " needs role admin for it"));
}

}  // namespace kiln::server
