// Chunked, digest-verified blob streams to and from the WorkerHub.
#include "workers/hub_blobs.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "compiler_core/support/sha256.h"
#include "workers/protocol.h"

namespace kiln::workers {
namespace {

absl::Status FromGrpc(const grpc::Status& s) {
  return StatusFromCode(static_cast<int>(s.error_code()), s.error_message());
}

}  // namespace

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
  std::string bytes;
  bytes.reserve(static_cast<size_t>(std::max<int64_t>(digest.size_bytes(), 0)));
  kiln::v1::FetchArtifactResponse chunk;
  bool too_big = false;
  // Bounded by the stream's deadline and by the digest's size (we cancel once past it).
  while (reader->Read(&chunk)) {
    if (static_cast<int64_t>(bytes.size() + chunk.data().size()) > digest.size_bytes()) {
      too_big = true;
      context.TryCancel();
      break;
    }
    bytes += chunk.data();
  }
  grpc::Status status = reader->Finish();
  if (too_big) {
    return absl::DataLossError(absl::StrCat("model ", digest.hash(), ": kilnd sent more than ",
                                            digest.size_bytes(), " bytes"));
  }
  if (!status.ok()) return FromGrpc(status);
  if (static_cast<int64_t>(bytes.size()) != digest.size_bytes()) {
    return absl::DataLossError(absl::StrCat("model ", digest.hash(), ": got ", bytes.size(),
                                            " bytes, expected ", digest.size_bytes()));
  }
  std::string got = Sha256Hex(bytes);
  if (got != digest.hash()) {
    return absl::DataLossError(
        absl::StrCat("model ", digest.hash(), ": fetched bytes hash to ", got));
  }
  return bytes;
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
  kiln::v1::Digest digest = DigestOf(bytes);
  size_t offset = 0;
  bool first = true;
  // One message per chunk; an empty artifact still sends the digest once.
  while (first || offset < bytes.size()) {
    kiln::v1::UploadArtifactRequest request;
    if (first) *request.mutable_digest() = digest;
    size_t n = std::min(kMaxChunkBytes, bytes.size() - offset);
    request.set_data(bytes.substr(offset, n));
    offset += n;
    first = false;
    if (!writer->Write(request)) break;  // the server ended the call; Finish says why
  }
  writer->WritesDone();
  grpc::Status status = writer->Finish();
  if (!status.ok()) return FromGrpc(status);
  return digest;
}

}  // namespace kiln::workers
