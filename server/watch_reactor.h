// WatchJob's server stream: job events from the scheduler, written one at a time in order; the
// stream ends after the last event (a terminal state) or when the client leaves.
#ifndef KILN_SERVER_WATCH_REACTOR_H_
#define KILN_SERVER_WATCH_REACTOR_H_

#include <string>

#include "grpcpp/grpcpp.h"
#include "kiln/v1/service.pb.h"
#include "server/auth/roles.h"
#include "server/service_context.h"

namespace kiln::server {

/// Streams `job_id`'s events to `principal`, who must own the job or be an admin
/// (kPermissionDenied otherwise).
grpc::ServerWriteReactor<v1::JobEvent>* StartWatch(ServiceContext* ctx,
                                                   grpc::CallbackServerContext* context,
                                                   const std::string& job_id,
                                                   auth::Principal principal);

}  // namespace kiln::server

#endif  // KILN_SERVER_WATCH_REACTOR_H_
