// Conversions between the wire's kiln.v1.JobState and the storage layer's cache::JobState.
#ifndef KILN_SERVER_JOB_STATE_H_
#define KILN_SERVER_JOB_STATE_H_

#include <optional>

#include "kiln/v1/service.pb.h"
#include "server/cache/storage.h"

namespace kiln::server {

/// The wire form of a stored job state.
v1::JobState ToProtoState(cache::JobState state);
/// The stored form of a wire job state; nullopt for JOB_STATE_UNSPECIFIED (or an unknown value).
std::optional<cache::JobState> FromProtoState(v1::JobState state);

}  // namespace kiln::server

#endif  // KILN_SERVER_JOB_STATE_H_
