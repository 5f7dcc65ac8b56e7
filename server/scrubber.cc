#include "server/scrubber.h"

#include <chrono>

#include "server/log.h"

namespace kiln::server {

void Scrubber::Start() {
  if (options_.interval <= absl::ZeroDuration()) return;
  thread_ = std::thread([this] {
    while (Sleep(options_.interval)) {
      absl::Time start = absl::Now();
      ScrubCounts counts = RunPass();
      LogInfo("scrub.pass", {{"verified", counts.verified},
                             {"corrupted", counts.corrupted},
                             {"bytes", counts.bytes},
                             {"ms", absl::ToInt64Milliseconds(absl::Now() - start)}});
    }
  });
}

void Scrubber::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool Scrubber::Sleep(absl::Duration d) {
  std::unique_lock<std::mutex> lock(mu_);
  return !cv_.wait_for(lock, absl::ToChronoNanoseconds(d), [this] { return stopping_; });
}

ScrubCounts Scrubber::RunPass() {
  ScrubCounts counts;
  absl::StatusOr<std::vector<std::string>> digests = options_.storage->ListBlobs();
  if (!digests.ok()) {
    LogError("scrub.failed", {{"status", digests.status()}});
    return counts;
  }
  for (const std::string& digest : *digests) {
    absl::StatusOr<int64_t> size = options_.storage->GetBlobSize(digest);
    if (!size.ok()) continue;  // evicted since the listing
    absl::Status verified = options_.storage->VerifyBlob(digest);
    counts.bytes += *size;
    if (verified.ok()) {
      ++counts.verified;
    } else if (absl::IsDataLoss(verified)) {
      ++counts.corrupted;
      if (options_.metrics) options_.metrics->BlobCorrupted();
      LogError("blob.corrupted", {{"digest", digest}, {"found_by", "scrubber"}});
    }
    // Rate limit: the time this blob's bytes are allowed at bytes_per_second.
    const double seconds = static_cast<double>(*size) /
                           static_cast<double>(std::max<int64_t>(1, options_.bytes_per_second));
    if (!Sleep(absl::Seconds(seconds))) break;
  }
  return counts;
}

}  // namespace kiln::server
