// The hook through which kilnd reports what it does to a metrics backend. Every method has a
// no-op default, so tests pass a bare MetricsHooks and the daemon passes the Prometheus adapter
// (prometheus_hooks.h). Implementations must be thread-safe and must not block.
#ifndef KILN_SERVER_METRICS_HOOKS_H_
#define KILN_SERVER_METRICS_HOOKS_H_

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "server/cache/storage.h"

namespace kiln::server {

class MetricsHooks {
 public:
  virtual ~MetricsHooks() = default;
  /// An RPC of KilnService or WorkerHub finished with `code` after `seconds` in kilnd.
  virtual void RpcFinished(std::string_view method, absl::StatusCode code, double seconds) {}
  /// An artifact cache lookup of Compile / SubmitJob.
  virtual void CacheLookup(bool hit) {}
  /// A job of `kind` reached a terminal state; `work_seconds` is the time its worker spent on it
  /// (a compile's compile time), 0 unless it succeeded.
  virtual void JobFinished(cache::JobKind kind, cache::JobState state, double work_seconds) {}
  /// A job of `kind` was dispatched after `queue_seconds` in the queue (since it was queued,
  /// or requeued after a refused or lost task).
  virtual void JobStarted(cache::JobKind kind, double queue_seconds) {}
  /// The supervisor restarted a local worker that died.
  virtual void WorkerRestarted() {}
  /// An upload accepted `bytes` more bytes of a blob.
  virtual void BlobBytesReceived(cache::BlobKind kind, int64_t bytes) {}
  /// A blob failed its digest check on read (storage evicted it).
  virtual void BlobCorrupted() {}
};

}  // namespace kiln::server

#endif  // KILN_SERVER_METRICS_HOOKS_H_
