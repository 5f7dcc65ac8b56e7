// Chunked blob transfer reactors shared by KilnService and WorkerHub: an upload (client stream,
// verified against the announced SHA-256, size-capped) and a fetch (server stream of a verified
// blob). Storage work runs on the executor; the reactors only start and finish operations.
#ifndef KILN_SERVER_BLOB_STREAMS_H_
#define KILN_SERVER_BLOB_STREAMS_H_

#include <cstdint>
#include <string>

#include "grpcpp/grpcpp.h"
#include "kiln/v1/service.pb.h"
#include "server/service_context.h"

namespace kiln::server {

/// UploadModel (kind kModel, capped at limits.max_model_bytes) of `principal`, admitted and
/// metered by ctx->uploads when set (kResourceExhausted past its limits).
grpc::ServerReadReactor<v1::UploadModelRequest>* StartModelUpload(
    ServiceContext* ctx, grpc::CallbackServerContext* context, v1::UploadModelResponse* response,
    const std::string& principal);

/// UploadArtifact from a worker (kind kArtifact, capped at limits.max_artifact_bytes).
grpc::ServerReadReactor<v1::UploadArtifactRequest>* StartArtifactUpload(
    ServiceContext* ctx, grpc::CallbackServerContext* context,
    v1::UploadArtifactResponse* response);

/// Streams the blob `digest` in chunks (FetchArtifact, FetchModel). Errors: kInvalidArgument for
/// a malformed digest, kNotFound, kDataLoss for a blob corrupted on disk (it is evicted).
grpc::ServerWriteReactor<v1::FetchArtifactResponse>* StartBlobFetch(
    ServiceContext* ctx, grpc::CallbackServerContext* context, const std::string& digest,
    const std::string& method);

}  // namespace kiln::server

#endif  // KILN_SERVER_BLOB_STREAMS_H_
