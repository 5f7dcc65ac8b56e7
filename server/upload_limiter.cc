#include "server/upload_limiter.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/log.h"

namespace kiln::server {

UploadLimiter::UploadLimiter(UploadLimits limits) : limits_(limits) {
  watchdog_ = std::thread([this] { Watch(); });
}

UploadLimiter::~UploadLimiter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  watchdog_.join();
}

absl::StatusOr<uint64_t> UploadLimiter::Admit(const std::string& principal,
                                              grpc::CallbackServerContext* context) {
  std::lock_guard<std::mutex> lock(mu_);
  if (limits_.max_streams > 0 && static_cast<int>(streams_.size()) >= limits_.max_streams) {
    return absl::ResourceExhaustedError(absl::StrCat("kilnd has ", streams_.size(),
                                                     " uploads in progress (--max-uploads ",
                                                     limits_.max_streams, "); retry later"));
  }
  if (!principal.empty() && limits_.max_streams_per_principal > 0 &&
      per_principal_[principal] >= limits_.max_streams_per_principal) {
    return absl::ResourceExhaustedError(absl::StrCat(
        principal, " has ", per_principal_[principal],
        " uploads in progress (--max-uploads-per-token ", limits_.max_streams_per_principal, ")"));
  }
  const uint64_t id = next_id_++;
  streams_[id] = Stream{principal, context, absl::Now()};
  if (!principal.empty()) ++per_principal_[principal];
  return id;
}

absl::Status UploadLimiter::Received(uint64_t id, int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = streams_.find(id);
  if (it == streams_.end()) return absl::OkStatus();
  const absl::Time now = absl::Now();
  it->second.last_activity = now;
  if (limits_.bytes_per_minute <= 0 || it->second.principal.empty()) return absl::OkStatus();
  Budget& budget = budgets_[it->second.principal];
  if (now - budget.window_start >= absl::Minutes(1)) budget = Budget{now, 0};
  budget.bytes += bytes;
  if (budget.bytes > limits_.bytes_per_minute) {
    return absl::ResourceExhaustedError(
        absl::StrCat(it->second.principal, " uploaded more than ", limits_.bytes_per_minute,
                     " bytes in a minute (--upload-bytes-per-minute); retry in a minute"));
  }
  return absl::OkStatus();
}

void UploadLimiter::Release(uint64_t id) {
  if (id == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  if (!it->second.principal.empty() && --per_principal_[it->second.principal] <= 0) {
    per_principal_.erase(it->second.principal);
  }
  streams_.erase(it);
}

void UploadLimiter::Watch() {
  std::unique_lock<std::mutex> lock(mu_);
  const auto tick = std::chrono::milliseconds(
      std::clamp<int64_t>(absl::ToInt64Milliseconds(limits_.idle_timeout) / 4, 10, 1000));
  while (!cv_.wait_for(lock, tick, [this] { return stopping_; })) {
    const absl::Time now = absl::Now();
    for (auto& [id, stream] : streams_) {
      if (stream.cancelled || now - stream.last_activity < limits_.idle_timeout) continue;
      stream.cancelled = true;  // the reactor releases it as it finishes
      LogWarning("upload.idle",
                 {{"principal", stream.principal},
                  {"idle_ms", absl::ToInt64Milliseconds(now - stream.last_activity)}});
      stream.context->TryCancel();
    }
  }
}

}  // namespace kiln::server
