// Authorization of kilnd's RPCs (issue #10): which roles each method needs, the caller's
// principal, reactors that refuse a streaming call, and who may see a job.
#ifndef KILN_SERVER_RPC_AUTH_H_
#define KILN_SERVER_RPC_AUTH_H_

#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "server/auth/roles.h"
#include "server/cache/storage.h"
#include "server/rpc_call.h"
#include "server/service_context.h"
#include "wire/status.h"

namespace kiln::server {

/// The roles of each method (admin may call every client method; workers only the hub).
namespace method_roles {
inline constexpr auth::RoleSet kUpload = auth::kCompile | auth::kTune | auth::kAdmin;
inline constexpr auth::RoleSet kCompile = auth::kCompile | auth::kAdmin;
inline constexpr auth::RoleSet kTune = auth::kTune | auth::kAdmin;
inline constexpr auth::RoleSet kFetch = auth::kRead | auth::kCompile | auth::kAdmin;
inline constexpr auth::RoleSet kJobs = auth::kCompile | auth::kTune | auth::kRead | auth::kAdmin;
inline constexpr auth::RoleSet kStatus = kJobs;
inline constexpr auth::RoleSet kRecords = auth::kRead | auth::kTune | auth::kAdmin;
inline constexpr auth::RoleSet kWorker = auth::kWorker;
}  // namespace method_roles

/// The caller's principal, if it holds one of `any_of` (Authenticator::Authorize); with no
/// authenticator, anonymous with every role. Errors: kUnauthenticated, kPermissionDenied.
absl::StatusOr<auth::Principal> AuthorizeCall(const ServiceContext* ctx,
                                              const grpc::CallbackServerContext& context,
                                              auth::RoleSet any_of, const std::string& method);

/// Whether `principal` may watch, cancel or list `job`: its owner, an admin, or anyone for a
/// job submitted without authentication.
bool MayAccessJob(const auth::Principal& principal, const cache::JobRecord& job);

/// The error for a job the caller may not access.
absl::Status NotYourJob(const auth::Principal& principal, const std::string& job_id);

/// A streaming reactor (`Base` is grpc::ServerReadReactor<T>, ServerWriteReactor<T> or
/// ServerBidiReactor<In, Out>) that finishes at once with `status`, recorded like any RPC.
template <typename Base>
class RefusedStream final : public Base {
 public:
  RefusedStream(const ServiceContext* ctx, const grpc::CallbackServerContext& context,
                const absl::Status& status, const std::string& method) {
    RecordRpc(ctx->metrics, method, status, absl::Now(), context.peer());
    this->Finish(wire::ToGrpcStatus(status));
  }
  void OnDone() override { delete this; }
};

}  // namespace kiln::server

#endif  // KILN_SERVER_RPC_AUTH_H_
