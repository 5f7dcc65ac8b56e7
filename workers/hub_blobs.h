// Moving blobs between a worker and kilnd's WorkerHub: the model in (FetchModel, verified
// against its digest) and the artifact out (UploadArtifact, digest first, chunks ≤ 1 MiB).
#ifndef KILN_WORKERS_HUB_BLOBS_H_
#define KILN_WORKERS_HUB_BLOBS_H_

#include <chrono>
#include <string>

#include "absl/status/statusor.h"
#include "client/channel.h"
#include "kiln/v1/service.grpc.pb.h"

namespace kiln::workers {

/// Fetches the model `digest` before `deadline`. Errors: the RPC's status (e.g. kNotFound,
/// kDeadlineExceeded, kUnavailable); kDataLoss if the bytes exceed or miss the digest's size
/// or do not hash to it.
absl::StatusOr<std::string> FetchModel(kiln::v1::WorkerHub::StubInterface& hub,
                                       const client::ChannelSecurity& security,
                                       const kiln::v1::Digest& digest,
                                       std::chrono::system_clock::time_point deadline);

/// Uploads `bytes` as an artifact (first message: the digest, which is returned) before
/// `deadline`. Errors: the RPC's status.
absl::StatusOr<kiln::v1::Digest> UploadArtifact(kiln::v1::WorkerHub::StubInterface& hub,
                                                const client::ChannelSecurity& security,
                                                const std::string& bytes,
                                                std::chrono::system_clock::time_point deadline);

}  // namespace kiln::workers

#endif  // KILN_WORKERS_HUB_BLOBS_H_
