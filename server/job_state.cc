// Job state conversions between the wire and storage enums.
#include "server/job_state.h"

namespace kiln::server {

v1::JobState ToProtoState(cache::JobState state) {
  switch (state) {
    case cache::JobState::kQueued:
      return v1::QUEUED;
    case cache::JobState::kRunning:
      return v1::RUNNING;
    case cache::JobState::kSucceeded:
      return v1::SUCCEEDED;
    case cache::JobState::kFailed:
      return v1::FAILED;
    case cache::JobState::kCancelled:
      return v1::CANCELLED;
  }
  return v1::JOB_STATE_UNSPECIFIED;
}

std::optional<cache::JobState> FromProtoState(v1::JobState state) {
  switch (state) {
    case v1::QUEUED:
      return cache::JobState::kQueued;
    case v1::RUNNING:
      return cache::JobState::kRunning;
    case v1::SUCCEEDED:
      return cache::JobState::kSucceeded;
    case v1::FAILED:
      return cache::JobState::kFailed;
    case v1::CANCELLED:
      return cache::JobState::kCancelled;
    default:
      return std::nullopt;
  }
}

}  // namespace kiln::server
