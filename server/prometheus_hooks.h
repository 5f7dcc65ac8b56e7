// MetricsHooks over kilnd's Prometheus families (server/metrics/service_metrics.h), and the
// scrape-time readings of the store and the scheduler.
#ifndef KILN_SERVER_PROMETHEUS_HOOKS_H_
#define KILN_SERVER_PROMETHEUS_HOOKS_H_

#include "server/metrics/service_metrics.h"
#include "server/metrics_hooks.h"

namespace kiln::server {

class Scheduler;

class PrometheusHooks final : public MetricsHooks {
 public:
  /// `metrics` must outlive the hooks.
  explicit PrometheusHooks(metrics::ServiceMetrics* metrics) : m_(metrics) {}

  void RpcFinished(std::string_view method, absl::StatusCode code, double seconds) override;
  void CacheLookup(bool hit) override;
  void JobFinished(cache::JobKind kind, cache::JobState state, double work_seconds) override;
  void JobStarted(cache::JobKind kind, double queue_seconds) override;
  void WorkerRestarted() override;
  void BlobBytesReceived(cache::BlobKind kind, int64_t bytes) override;
  void BlobCorrupted() override;

 private:
  metrics::ServiceMetrics* m_;
};

/// Makes every scrape of `metrics` read the store's size, entries and evictions and the
/// scheduler's jobs and workers first. `storage` and `scheduler` must outlive the hook: clear it
/// (metrics->SetCollectHook(nullptr)) or stop the endpoint before they go. A failed Stats()
/// leaves the cache gauges at their last values.
void CollectServiceState(metrics::ServiceMetrics* metrics, cache::Storage* storage,
                         Scheduler* scheduler);

}  // namespace kiln::server

#endif  // KILN_SERVER_PROMETHEUS_HOOKS_H_
