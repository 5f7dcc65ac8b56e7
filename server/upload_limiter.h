// Limits on model uploads (issue #10, item 4): streams at once (all, and one principal's),
// bytes one principal uploads per minute, and a watchdog that cancels a stream that has sent
// nothing for the idle timeout. Past a limit: RESOURCE_EXHAUSTED naming the flag.
#ifndef KILN_SERVER_UPLOAD_LIMITER_H_
#define KILN_SERVER_UPLOAD_LIMITER_H_

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"

namespace kiln::server {

struct UploadLimits {
  int max_streams = 64;               // 0: no limit
  int max_streams_per_principal = 8;  // 0: no limit; never for the anonymous principal ""
  int64_t bytes_per_minute = 0;       // per principal; 0: no limit
  absl::Duration idle_timeout = absl::Seconds(60);
};

/// Thread-safe. Owns the watchdog thread.
class UploadLimiter {
 public:
  explicit UploadLimiter(UploadLimits limits);
  ~UploadLimiter();

  /// Admits a new upload stream of `principal` on `context` (valid until Release). Returns the
  /// stream's id. Errors: kResourceExhausted naming --max-uploads or --max-uploads-per-token.
  absl::StatusOr<uint64_t> Admit(const std::string& principal,
                                 grpc::CallbackServerContext* context);
  /// Records a message of `bytes` on stream `id` (which resets its idle time). Errors:
  /// kResourceExhausted when the principal passed --upload-bytes-per-minute in this minute.
  absl::Status Received(uint64_t id, int64_t bytes);
  /// Ends stream `id` (before the reactor finishes); 0 is ignored.
  void Release(uint64_t id);

 private:
  struct Stream {
    std::string principal;
    grpc::CallbackServerContext* context;
    absl::Time last_activity;
    bool cancelled = false;
  };
  struct Budget {
    absl::Time window_start;
    int64_t bytes = 0;
  };
  void Watch();

  const UploadLimits limits_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  uint64_t next_id_ = 1;
  std::map<uint64_t, Stream> streams_;
  std::map<std::string, int> per_principal_;
  std::map<std::string, Budget> budgets_;
  std::thread watchdog_;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_UPLOAD_LIMITER_H_
