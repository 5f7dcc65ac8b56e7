// Chunked blob transfer with the digest verified on receipt: the sender splits a blob into
// messages of at most kMaxChunkBytes, the first carrying the blob's Digest; the receiver bounds
// the size by the digest, hashes as chunks arrive and checks the digest at the end.
#ifndef KILN_WIRE_CHUNKED_H_
#define KILN_WIRE_CHUNKED_H_

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler_core/support/sha256.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/sync_stream.h"
#include "kiln/v1/service.pb.h"

namespace kiln::wire {

/// Largest `data` chunk of one UploadModel/UploadArtifact/FetchModel/FetchArtifact message, in
/// bytes.
inline constexpr size_t kMaxChunkBytes = size_t{1} << 20;

/// Receives one blob announced by a Digest, chunk by chunk: refuses bytes past the digest's
/// size, hashes them as they come and checks size and SHA-256 at the end. Not thread-safe.
class VerifiedReceiver {
 public:
  /// `what` names the blob in messages ("FetchArtifact", "model <hash>"), `sender` the peer
  /// ("server", "kilnd").
  VerifiedReceiver(const v1::Digest& digest, std::string what, std::string sender);

  /// Appends one chunk. kDataLoss `<what>: <sender> sent more than <size_bytes> bytes` (and
  /// nothing appended, now and after) when the total would pass the digest's size;
  /// kFailedPrecondition after Finish.
  absl::Status Append(std::string_view chunk);

  /// Ends the transfer and hands over the bytes if their size and SHA-256 match the digest.
  /// Errors: kDataLoss `<what>: got <n> bytes hashing to <actual>, expected <size_bytes> bytes
  /// <expected>` on a mismatch; Append's error if it refused a chunk; kFailedPrecondition when
  /// called twice.
  absl::StatusOr<std::string> Finish();

 private:
  const v1::Digest digest_;
  const std::string what_;
  const std::string sender_;
  std::string bytes_;
  Sha256 hash_;
  absl::Status refused_;
  bool finished_ = false;
};

/// Reads a FetchModel/FetchArtifact stream to its end into a VerifiedReceiver for `digest`
/// (`what`, `sender` as there) and returns the verified bytes. Cancels the call once the
/// receiver refuses a chunk. Errors, first that applies: the receiver's kDataLoss for too many
/// bytes; the stream's status (ToAbslStatus with `rpc`, so `<rpc>: ` prefixes its message when
/// `rpc` is not empty); the receiver's Finish (kDataLoss on a digest mismatch).
absl::StatusOr<std::string> ReceiveVerified(
    grpc::ClientContext& context, grpc::ClientReaderInterface<v1::FetchArtifactResponse>& reader,
    const v1::Digest& digest, std::string what, std::string sender, absl::string_view rpc);

/// Writes `bytes` through `writer` (a client stream of UploadModelRequest or
/// UploadArtifactRequest) as messages of at most `chunk_bytes` of data, the first carrying
/// `digest`; an empty blob still sends one message. Stops at the first failed Write (the
/// receiver ended the call: its Finish says why), then calls WritesDone. Returns whether every
/// message was written.
template <typename Request, typename Writer>
bool WriteChunks(Writer& writer, const v1::Digest& digest, std::string_view bytes,
                 size_t chunk_bytes = kMaxChunkBytes) {
  size_t offset = 0;
  bool first = true;
  bool written = true;
  while (first || offset < bytes.size()) {
    Request request;
    if (first) *request.mutable_digest() = digest;
    const size_t n = std::min(chunk_bytes, bytes.size() - offset);
    request.set_data(bytes.data() + offset, n);
    offset += n;
    first = false;
    if (!writer.Write(request)) {
      written = false;
      break;
    }
  }
  writer.WritesDone();
  return written;
}

}  // namespace kiln::wire

#endif  // KILN_WIRE_CHUNKED_H_
