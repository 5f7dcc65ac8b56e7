// Forwards kilnd's events to the Prometheus families.
#include "server/prometheus_hooks.h"

#include <string>

namespace kiln::server {

void PrometheusHooks::RpcFinished(std::string_view method, absl::StatusCode code, double seconds) {
  std::string m(method);
  m_->requests.Add({{"method", m}, {"code", absl::StatusCodeToString(code)}}).Increment();
  m_->request_seconds.Add({{"method", m}}).Observe(seconds);
}

void PrometheusHooks::CacheLookup(bool hit) {
  (hit ? m_->cache_hits : m_->cache_misses).Increment();
}

void PrometheusHooks::JobFinished(cache::JobKind kind, cache::JobState state, double work_seconds) {
  m_->jobs_finished.Add({{"state", std::string(cache::JobStateName(state))}}).Increment();
  if (kind == cache::JobKind::kCompile && state == cache::JobState::kSucceeded) {
    m_->compile_seconds.Observe(work_seconds);
  }
}

void PrometheusHooks::SchedulerState(int queued, int running, int workers) {
  m_->jobs_queued.Set(queued);
  m_->jobs_running.Set(running);
  m_->workers.Set(workers);
}

void PrometheusHooks::WorkerRestarted() { m_->worker_restarts.Increment(); }

void PrometheusHooks::BlobBytesReceived(cache::BlobKind kind, int64_t bytes) {
  m_->blob_bytes_received.Add({{"kind", std::string(cache::BlobKindName(kind))}})
      .Increment(static_cast<double>(bytes));
}

void PrometheusHooks::BlobCorrupted() { m_->blob_corruptions.Increment(); }

}  // namespace kiln::server
