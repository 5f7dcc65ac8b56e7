// What the gRPC services share: storage, scheduler, request preparation, the executor for
// blocking work, metrics, limits, and the daemon-wide state (draining, counters).
#ifndef KILN_SERVER_SERVICE_CONTEXT_H_
#define KILN_SERVER_SERVICE_CONTEXT_H_

#include <atomic>
#include <cstdint>
#include <functional>

#include "absl/time/time.h"
#include "server/auth/authenticator.h"
#include "server/cache/storage.h"
#include "server/compile_prep.h"
#include "server/executor.h"
#include "server/metrics_hooks.h"
#include "server/scheduler.h"
#include "server/upload_limiter.h"

namespace kiln::server {

struct ServiceLimits {
  /// UploadModel refuses a model over this size with RESOURCE_EXHAUSTED (--max-model-bytes).
  int64_t max_model_bytes = int64_t{1} << 30;
  /// UploadArtifact (from workers) refuses an artifact over this size.
  int64_t max_artifact_bytes = int64_t{8} << 30;
  /// Chunk size of FetchArtifact / FetchModel streams.
  int64_t chunk_bytes = int64_t{1} << 20;
  /// Verify the artifact blob's digest before answering a Compile cache hit (reads the whole
  /// artifact: 47 ms for ResNet-18's). Off by default: a hit trusts the index, FetchArtifact
  /// verifies while it streams, and the scrubber re-verifies blobs at rest.
  bool verify_cache_hits = false;
  /// Heartbeat interval asked of workers.
  absl::Duration heartbeat_interval = absl::Seconds(3);
};

struct ServiceContext {
  cache::Storage* storage = nullptr;
  Scheduler* scheduler = nullptr;
  CompilePreparer* preparer = nullptr;
  Executor* executor = nullptr;
  /// Preparing Compile and SubmitJob requests (reading a model, its graph hash from the import
  /// child): apart from `executor`, so that slow imports never hold up heartbeats, task
  /// results and the control-plane RPCs.
  Executor* prepare_executor = nullptr;
  MetricsHooks* metrics = nullptr;  // never null once the daemon is wired (may be a no-op)
  /// Limits on model uploads; null: none.
  UploadLimiter* uploads = nullptr;
  /// Bearer tokens and roles; null (or disabled): every call may do everything.
  const auth::Authenticator* auth = nullptr;
  ServiceLimits limits;
  /// True once SIGTERM arrived: client RPCs that would start work get UNAVAILABLE.
  std::atomic<bool> draining{false};
  std::atomic<int64_t> cache_hits{0};
  std::atomic<int64_t> cache_misses{0};
  absl::Time started = absl::Now();
  /// Whether `pid` is a worker this kilnd started (the supervisor knows); may be null.
  std::function<bool(int pid)> is_local_worker;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_SERVICE_CONTEXT_H_
