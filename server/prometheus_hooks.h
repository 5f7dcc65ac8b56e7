// MetricsHooks over kilnd's Prometheus families (server/metrics/service_metrics.h).
#ifndef KILN_SERVER_PROMETHEUS_HOOKS_H_
#define KILN_SERVER_PROMETHEUS_HOOKS_H_

#include "server/metrics/service_metrics.h"
#include "server/metrics_hooks.h"

namespace kiln::server {

class PrometheusHooks final : public MetricsHooks {
 public:
  /// `metrics` must outlive the hooks.
  explicit PrometheusHooks(metrics::ServiceMetrics* metrics) : m_(metrics) {}

  void RpcFinished(std::string_view method, absl::StatusCode code, double seconds) override;
  void CacheLookup(bool hit) override;
  void JobFinished(cache::JobKind kind, cache::JobState state, double work_seconds) override;
  void SchedulerState(int queued, int running, int workers) override;
  void WorkerRestarted() override;
  void BlobBytesReceived(cache::BlobKind kind, int64_t bytes) override;
  void BlobCorrupted() override;

 private:
  metrics::ServiceMetrics* m_;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_PROMETHEUS_HOOKS_H_
