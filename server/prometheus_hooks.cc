// Forwards kilnd's events to the Prometheus families, and reads state owned elsewhere at scrape
// time.
#include "server/prometheus_hooks.h"

#include <string>

#include "server/scheduler.h"

namespace kiln::server {

void PrometheusHooks::RpcFinished(std::string_view method, absl::StatusCode code, double seconds) {
  std::string m(method);
  m_->requests.Add({{"method", m}, {"code", absl::StatusCodeToString(code)}}).Increment();
  m_->request_seconds.Add({{"method", m}}, m_->request_buckets).Observe(seconds);
}

void PrometheusHooks::CacheLookup(bool hit) {
  (hit ? m_->cache_hits : m_->cache_misses).Increment();
}

void PrometheusHooks::JobFinished(cache::JobKind kind, cache::JobState state, double work_seconds) {
  m_->jobs_finished
      .Add({{"kind", std::string(cache::JobKindName(kind))},
            {"state", std::string(cache::JobStateName(state))}})
      .Increment();
  if (kind == cache::JobKind::kCompile && state == cache::JobState::kSucceeded) {
    m_->compile_seconds.Observe(work_seconds);
  }
}

void PrometheusHooks::JobStarted(cache::JobKind kind, double queue_seconds) {
  m_->queue_wait_seconds
      .Add({{"kind", std::string(cache::JobKindName(kind))}}, m_->queue_wait_buckets)
      .Observe(queue_seconds);
}

void PrometheusHooks::WorkerRestarted() { m_->worker_restarts.Increment(); }

void PrometheusHooks::BlobBytesReceived(cache::BlobKind kind, int64_t bytes) {
  m_->blob_bytes_received.Add({{"kind", std::string(cache::BlobKindName(kind))}})
      .Increment(static_cast<double>(bytes));
}

void PrometheusHooks::BlobCorrupted() { m_->blob_corruptions.Increment(); }

void CollectServiceState(metrics::ServiceMetrics* metrics, cache::Storage* storage,
                         Scheduler* scheduler) {
  metrics->SetCollectHook([storage, scheduler](metrics::ServiceMetrics& m) {
    if (absl::StatusOr<cache::StorageStats> stats = storage->Stats(); stats.ok()) {
      m.cache_bytes.Set(static_cast<double>(stats->blob_bytes));
      m.cache_entries.Add({{"kind", "blob"}}).Set(static_cast<double>(stats->blob_count));
      m.cache_entries.Add({{"kind", "model"}}).Set(static_cast<double>(stats->model_count));
      m.cache_entries.Add({{"kind", "artifact"}}).Set(static_cast<double>(stats->artifact_count));
      m.cache_entries.Add({{"kind", "tuning_record"}})
          .Set(static_cast<double>(stats->tuning_record_count));
      // Counters only go up: add what was evicted since the last scrape (Stats counts since
      // the store was opened, as this process did).
      m.cache_evictions.Increment(
          std::max(0.0, static_cast<double>(stats->evicted_blobs) - m.cache_evictions.Value()));
      m.cache_evicted_bytes.Increment(
          std::max(0.0, static_cast<double>(stats->evicted_bytes) - m.cache_evicted_bytes.Value()));
    }
    Scheduler::Counts counts = scheduler->GetCounts();
    for (const auto& [kind, n] : counts.queued_by_kind) {
      m.jobs_queued.Add({{"kind", std::string(cache::JobKindName(kind))}}).Set(n);
    }
    for (const auto& [kind, n] : counts.running_by_kind) {
      m.jobs_running.Add({{"kind", std::string(cache::JobKindName(kind))}}).Set(n);
    }
    std::map<prometheus::Labels, double> workers;
    for (const auto& [kind_device, n] : counts.workers_by_kind_device) {
      workers[{{"kind", kind_device.first}, {"device", kind_device.second}}] = n;
    }
    m.SetWorkerCounts(workers);
  });
}

}  // namespace kiln::server
