// Upload and fetch reactors. Each stream has at most one operation in flight, and every step
// that touches storage is posted to the executor, so the steps of one stream run in order and
// Finish is reached exactly once.
#include "server/blob_streams.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "compiler_core/support/sha256.h"
#include "compiler_core/support/status_macros.h"
#include "server/log.h"
#include "server/rpc_call.h"
#include "server/upload_limiter.h"
#include "wire/digest.h"
#include "wire/status.h"

namespace kiln::server {
namespace {

void MarkPresent(v1::UploadModelResponse& r) { r.set_already_present(true); }
void MarkPresent(v1::UploadArtifactResponse&) {}

template <typename Request, typename Response>
class UploadReactor final : public grpc::ServerReadReactor<Request> {
 public:
  /// `limiter` (model uploads; may be null) admits the stream for `principal`.
  UploadReactor(ServiceContext* ctx, grpc::CallbackServerContext* context, Response* response,
                cache::BlobKind kind, int64_t max_bytes, std::string method,
                UploadLimiter* limiter = nullptr, const std::string& principal = "")
      : ctx_(ctx),
        context_(context),
        response_(response),
        kind_(kind),
        max_bytes_(max_bytes),
        method_(std::move(method)),
        peer_(context->peer()),
        limiter_(limiter) {
    if (ctx_->draining.load() && kind_ == cache::BlobKind::kModel) {
      Done(absl::UnavailableError("kilnd is shutting down"));
      return;
    }
    if (limiter_ != nullptr) {
      absl::StatusOr<uint64_t> admitted = limiter_->Admit(principal, context);
      if (!admitted.ok()) {
        Done(admitted.status());
        return;
      }
      stream_id_ = *admitted;
    }
    this->StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      if (context_->IsCancelled()) {
        ctx_->executor->Post([this] {
          Done(
              absl::CancelledError("the upload was cancelled: by the client, or by kilnd after "
                                   "--stream-idle-timeout without a message"));
        });
      } else {
        ctx_->executor->Post([this] { Commit(); });
      }
      return;
    }
    ctx_->executor->Post([this] { Consume(); });
  }

  void OnDone() override { delete this; }

 private:
  // First message: check the announced digest and size; a present blob ends the stream early.
  absl::Status Begin() {
    if (!request_.has_digest() || request_.digest().hash().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the first ", method_, " message must carry the blob's digest"));
    }
    digest_ = request_.digest();
    KILN_RETURN_IF_ERROR(wire::CheckDigest(digest_.hash()));
    if (digest_.size_bytes() < 0) {
      return absl::InvalidArgumentError("digest size_bytes is negative");
    }
    if (digest_.size_bytes() > max_bytes_) return TooBig(digest_.size_bytes());
    absl::StatusOr<bool> present = ctx_->storage->HasBlob(digest_.hash());
    if (!present.ok()) return present.status();
    if (*present) {
      already_present_ = true;
      return absl::OkStatus();
    }
    absl::StatusOr<std::unique_ptr<cache::BlobUpload>> upload =
        ctx_->storage->BeginBlobUpload(kind_);
    if (!upload.ok()) return upload.status();
    upload_ = std::move(*upload);
    return absl::OkStatus();
  }

  absl::Status TooBig(int64_t bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat(kind_ == cache::BlobKind::kModel ? "model" : "artifact", " of ", bytes,
                     "+ bytes exceeds the server's limit of ", max_bytes_, " bytes",
                     kind_ == cache::BlobKind::kModel ? " (--max-model-bytes)" : ""));
  }

  void Consume() {
    if (!started_) {
      started_ = true;
      absl::Status s = Begin();
      if (!s.ok()) return Done(s);
      if (already_present_) return Done(absl::OkStatus());
    } else if (request_.has_digest() && request_.digest().hash() != digest_.hash()) {
      return Done(absl::InvalidArgumentError("the digest changed in the middle of the upload"));
    }
    const std::string& data = request_.data();
    if (limiter_ != nullptr) {
      absl::Status within = limiter_->Received(stream_id_, static_cast<int64_t>(data.size()));
      if (!within.ok()) return Done(within);
    }
    if (upload_->size_bytes() + static_cast<int64_t>(data.size()) > max_bytes_) {
      upload_.reset();  // discard what was written
      return Done(TooBig(upload_size_ + static_cast<int64_t>(data.size())));
    }
    absl::Status s = upload_->Append(data);
    if (!s.ok()) return Done(s);
    upload_size_ = upload_->size_bytes();
    if (ctx_->metrics) ctx_->metrics->BlobBytesReceived(kind_, static_cast<int64_t>(data.size()));
    request_.Clear();
    this->StartRead(&request_);
  }

  void Commit() {
    if (!started_) {
      return Done(absl::InvalidArgumentError(absl::StrCat(method_, " stream carried no message")));
    }
    if (digest_.size_bytes() != 0 && digest_.size_bytes() != upload_->size_bytes()) {
      return Done(absl::InvalidArgumentError(
          absl::StrCat("size mismatch: the digest announced ", digest_.size_bytes(),
                       " bytes, the upload carried ", upload_->size_bytes())));
    }
    absl::StatusOr<std::string> stored = upload_->Commit(digest_.hash());
    upload_.reset();
    Done(stored.status());
  }

  void Done(const absl::Status& status) {
    upload_.reset();
    if (limiter_ != nullptr) limiter_->Release(stream_id_);
    if (status.ok()) {
      *response_->mutable_digest() = digest_;
      if (already_present_) MarkPresent(*response_);
      LogInfo("blob.stored", {{"kind", cache::BlobKindName(kind_)},
                              {"digest", digest_.hash().substr(0, 12)},
                              {"bytes", digest_.size_bytes()},
                              {"already_present", already_present_}});
    }
    RecordRpc(ctx_->metrics, method_, status, start_, peer_);
    this->Finish(wire::ToGrpcStatus(status));
  }

  ServiceContext* ctx_;
  grpc::CallbackServerContext* context_;
  Response* response_;
  const cache::BlobKind kind_;
  const int64_t max_bytes_;
  const std::string method_;
  const std::string peer_;
  const absl::Time start_ = absl::Now();
  Request request_;
  v1::Digest digest_;
  bool started_ = false;
  bool already_present_ = false;
  int64_t upload_size_ = 0;
  std::unique_ptr<cache::BlobUpload> upload_;
  UploadLimiter* const limiter_;
  uint64_t stream_id_ = 0;
};

class FetchReactor final : public grpc::ServerWriteReactor<v1::FetchArtifactResponse> {
 public:
  FetchReactor(ServiceContext* ctx, grpc::CallbackServerContext* context, std::string digest,
               std::string method)
      : ctx_(ctx), digest_(std::move(digest)), method_(std::move(method)), peer_(context->peer()) {
    ctx_->executor->Post([this] { Load(); });
  }

  void OnWriteDone(bool ok) override {
    if (!ok) return Done(absl::CancelledError("the client went away during the transfer"));
    WriteNext();
  }

  void OnDone() override { delete this; }

 private:
  void Load() {
    if (absl::Status valid = wire::CheckDigest(digest_); !valid.ok()) return Done(valid);
    // Trust the index and verify while streaming: the digest is computed chunk by chunk as
    // the blob goes out, and checked before the last chunk leaves, so a corrupted blob is
    // never served whole (and the client checks the digest too).
    absl::StatusOr<std::string> blob = ctx_->storage->ReadBlobUnverified(digest_);
    if (!blob.ok()) {
      absl::Status s = blob.status();
      if (absl::IsNotFound(s)) {
        s = absl::NotFoundError(absl::StrCat("no blob ", digest_, " on this server"));
      } else if (absl::IsDataLoss(s)) {
        s = Corrupted(s);
      }
      return Done(s);
    }
    data_ = std::move(*blob);
    WriteNext();
  }

  absl::Status Corrupted(const absl::Status& why) {
    if (ctx_->metrics) ctx_->metrics->BlobCorrupted();
    LogError("blob.corrupted", {{"digest", digest_}, {"status", why}});
    return absl::DataLossError(
        absl::StrCat("blob ", digest_,
                     " was corrupted on disk and has been evicted; compile again to "
                     "rebuild the artifact (or upload the model again)"));
  }

  void WriteNext() {
    const size_t n =
        std::min(data_.size() - offset_, static_cast<size_t>(ctx_->limits.chunk_bytes));
    if (!checked_) {
      hash_.Update(std::string_view(data_).substr(offset_, n));
      if (offset_ + n >= data_.size()) {
        // The last chunk (or none, for an empty blob): the digest is checked before it goes out.
        checked_ = true;
        if (hash_.HexDigest() != digest_) {
          data_.clear();
          // Off the reactor: VerifyBlob re-reads the file and evicts it (with its artifact rows).
          ctx_->executor->Post([this] {
            absl::Status at_rest = ctx_->storage->VerifyBlob(digest_);
            Done(Corrupted(at_rest.ok() ? absl::DataLossError("digest mismatch while streaming")
                                        : at_rest));
          });
          return;
        }
      }
    }
    if (offset_ >= data_.size()) return Done(absl::OkStatus());
    chunk_.set_data(data_.substr(offset_, n));
    offset_ += n;
    StartWrite(&chunk_);
  }

  void Done(const absl::Status& status) {
    RecordRpc(ctx_->metrics, method_, status, start_, peer_);
    Finish(wire::ToGrpcStatus(status));
  }

  ServiceContext* ctx_;
  const std::string digest_;
  const std::string method_;
  const std::string peer_;
  const absl::Time start_ = absl::Now();
  std::string data_;
  size_t offset_ = 0;
  Sha256 hash_;  // of data_[0, offset_) and, once checked_, of all of it
  bool checked_ = false;
  v1::FetchArtifactResponse chunk_;
};

}  // namespace

grpc::ServerReadReactor<v1::UploadModelRequest>* StartModelUpload(
    ServiceContext* ctx, grpc::CallbackServerContext* context, v1::UploadModelResponse* response,
    const std::string& principal) {
  return new UploadReactor<v1::UploadModelRequest, v1::UploadModelResponse>(
      ctx, context, response, cache::BlobKind::kModel, ctx->limits.max_model_bytes, "UploadModel",
      ctx->uploads, principal);
}

grpc::ServerReadReactor<v1::UploadArtifactRequest>* StartArtifactUpload(
    ServiceContext* ctx, grpc::CallbackServerContext* context,
    v1::UploadArtifactResponse* response) {
  return new UploadReactor<v1::UploadArtifactRequest, v1::UploadArtifactResponse>(
      ctx, context, response, cache::BlobKind::kArtifact, ctx->limits.max_artifact_bytes,
      "UploadArtifact");
}

grpc::ServerWriteReactor<v1::FetchArtifactResponse>* StartBlobFetch(
    ServiceContext* ctx, grpc::CallbackServerContext* context, const std::string& digest,
    const std::string& method) {
  return new FetchReactor(ctx, context, digest, method);
}

}  // namespace kiln::server
