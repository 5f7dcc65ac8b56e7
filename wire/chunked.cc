// Verified chunked receive.
#include "wire/chunked.h"

#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "wire/status.h"

namespace kiln::wire {

VerifiedReceiver::VerifiedReceiver(const v1::Digest& digest, std::string what, std::string sender)
    : digest_(digest), what_(std::move(what)), sender_(std::move(sender)) {
  bytes_.reserve(static_cast<size_t>(std::max<int64_t>(digest_.size_bytes(), 0)));
}

absl::Status VerifiedReceiver::Append(std::string_view chunk) {
  if (finished_) {
    return absl::FailedPreconditionError(
        absl::StrCat(what_, ": a chunk arrived after the transfer ended"));
  }
  if (!refused_.ok()) return refused_;
  if (static_cast<int64_t>(bytes_.size() + chunk.size()) > digest_.size_bytes()) {
    refused_ = absl::DataLossError(
        absl::StrCat(what_, ": ", sender_, " sent more than ", digest_.size_bytes(), " bytes"));
    return refused_;
  }
  hash_.Update(chunk);
  bytes_.append(chunk);
  return absl::OkStatus();
}

absl::StatusOr<std::string> VerifiedReceiver::Finish() {
  if (finished_) {
    return absl::FailedPreconditionError(absl::StrCat(what_, ": the transfer already ended"));
  }
  finished_ = true;
  if (!refused_.ok()) return refused_;
  const std::string got = hash_.HexDigest();
  if (static_cast<int64_t>(bytes_.size()) != digest_.size_bytes() || got != digest_.hash()) {
    return absl::DataLossError(absl::StrCat(what_, ": got ", bytes_.size(), " bytes hashing to ",
                                            got, ", expected ", digest_.size_bytes(), " bytes ",
                                            digest_.hash()));
  }
  return std::move(bytes_);
}

absl::StatusOr<std::string> ReceiveVerified(
    grpc::ClientContext& context, grpc::ClientReaderInterface<v1::FetchArtifactResponse>& reader,
    const v1::Digest& digest, std::string what, std::string sender, absl::string_view rpc) {
  VerifiedReceiver receiver(digest, std::move(what), std::move(sender));
  v1::FetchArtifactResponse chunk;
  absl::Status received;
  // Bounded by the call's deadline and by the digest's size (cancelled once past it).
  while (reader.Read(&chunk)) {
    received = receiver.Append(chunk.data());
    if (!received.ok()) {
      context.TryCancel();
      break;
    }
  }
  grpc::Status status = reader.Finish();
  if (!received.ok()) return received;
  if (!status.ok()) return ToAbslStatus(status, rpc);
  return receiver.Finish();
}

}  // namespace kiln::wire
