// Chunked, digest-verified blob streams to and from the WorkerHub (wire/chunked.h).
#include "workers/hub_blobs.h"

#include "absl/strings/str_cat.h"
#include "wire/chunked.h"
#include "wire/digest.h"
#include "wire/status.h"

namespace kiln::workers {

absl::StatusOr<std::string> FetchModel(kiln::v1::WorkerHub::StubInterface& hub,
                                       const client::ChannelSecurity& security,
                                       const kiln::v1::Digest& digest,
                                       std::chrono::system_clock::time_point deadline) {
  grpc::ClientContext context;
  context.set_deadline(deadline);
  client::AddCredentials(context, security);
  kiln::v1::FetchModelRequest request;
  *request.mutable_digest() = digest;
  auto reader = hub.FetchModel(&context, request);
  return wire::ReceiveVerified(context, *reader, digest, absl::StrCat("model ", digest.hash()),
                               "kilnd", /*rpc=*/"");
}

absl::StatusOr<kiln::v1::Digest> UploadArtifact(kiln::v1::WorkerHub::StubInterface& hub,
                                                const client::ChannelSecurity& security,
                                                const std::string& bytes,
                                                std::chrono::system_clock::time_point deadline) {
  grpc::ClientContext context;
  context.set_deadline(deadline);
  client::AddCredentials(context, security);
  kiln::v1::UploadArtifactResponse response;
  auto writer = hub.UploadArtifact(&context, &response);
  kiln::v1::Digest digest = wire::DigestOf(bytes);
  // A failed Write means the server ended the call; Finish says why.
  wire::WriteChunks<kiln::v1::UploadArtifactRequest>(*writer, digest, bytes);
  grpc::Status status = writer->Finish();
  if (!status.ok()) return wire::ToAbslStatus(status);
  return digest;
}

}  // namespace kiln::workers
