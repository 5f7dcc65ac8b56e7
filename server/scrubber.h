// The background scrubber (issue #10, item 5): cache hits trust the index and fetches verify
// while they stream, so blobs at rest are re-verified on a schedule instead. Each pass walks
// every blob in digest order, reading at a bounded rate, and evicts (with their artifact rows)
// the ones whose bytes no longer hash to their digest.
#ifndef KILN_SERVER_SCRUBBER_H_
#define KILN_SERVER_SCRUBBER_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "absl/time/time.h"
#include "server/cache/storage.h"
#include "server/metrics_hooks.h"

namespace kiln::server {

struct ScrubberOptions {
  cache::Storage* storage = nullptr;
  MetricsHooks* metrics = nullptr;  // may be null
  /// Time between the starts of two passes; the first starts one interval after Start.
  absl::Duration interval = absl::Hours(6);
  /// Read rate limit, in bytes per second (> 0).
  int64_t bytes_per_second = int64_t{64} << 20;
};

/// What one pass found.
struct ScrubCounts {
  int64_t verified = 0;   // blobs intact
  int64_t corrupted = 0;  // blobs evicted
  int64_t bytes = 0;      // bytes read
};

/// Runs passes on its own thread between Start and Stop (or destruction).
class Scrubber {
 public:
  explicit Scrubber(ScrubberOptions options) : options_(options) {}
  ~Scrubber() { Stop(); }

  void Start();
  void Stop();

  /// One pass now, on the calling thread (tests; the thread calls it on schedule). Stops early
  /// (returning what it did) once Stop was called.
  ScrubCounts RunPass();

 private:
  /// Sleeps up to `d`; false if Stop was called.
  bool Sleep(absl::Duration d);

  const ScrubberOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_SCRUBBER_H_
