// kilnd's metrics, kept in a prometheus-cpp registry and registered in one place so that names,
// help texts, labels and buckets are fixed together (and the promtool test covers them all).
#ifndef KILN_SERVER_METRICS_SERVICE_METRICS_H_
#define KILN_SERVER_METRICS_SERVICE_METRICS_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "prometheus/collectable.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace kiln::metrics {

/// What kiln_build_info reports (its value is always 1).
struct BuildInfo {
  std::string version;           // the release, e.g. "0.1.0"
  std::string compiler_version;  // pipeline::kCompilerVersion, part of every artifact key
};

/// Bucket upper bounds `start`, `start*factor`, ... (`count` of them), for histograms.
prometheus::Histogram::BucketBoundaries ExponentialBuckets(double start, double factor, int count);

/// kilnd's metric families in their own registry. A prometheus::Collectable: serve it with
/// StartMetricsEndpoint (endpoint.h); every scrape first runs the collect hook, which sets the
/// gauges that mirror state owned elsewhere (cache size, queue depth, workers). Thread-safe.
class ServiceMetrics final : public prometheus::Collectable {
 public:
  explicit ServiceMetrics(const BuildInfo& build);

  /// Runs at the start of every Collect (scrape), before the families are read. Replaces the
  /// previous hook; an empty function removes it. The hook must not call Collect.
  void SetCollectHook(std::function<void(ServiceMetrics&)> hook);

  /// The text exposition format 0.0.4 of every family (what /metrics serves), hook run first.
  std::string Serialize() const;

  std::vector<prometheus::MetricFamily> Collect() const override;

  /// Sets kiln_workers to exactly `counts` (labels {kind, device} → workers): series absent from
  /// `counts` are removed, so a device that went away disappears rather than keep its last value.
  void SetWorkerCounts(const std::map<prometheus::Labels, double>& counts);

 private:
  // Declared first: the families below live in it.
  std::shared_ptr<prometheus::Registry> registry_;
  mutable std::mutex hook_mu_;
  std::function<void(ServiceMetrics&)> hook_;
  std::mutex workers_mu_;
  std::set<prometheus::Labels> worker_series_;  // kiln_workers series present now

 public:
  /// kiln_build_info{version,compiler_version} 1.
  prometheus::Family<prometheus::Gauge>& build_info;
  /// kiln_requests_total{method="Compile",code="OK"}: finished RPCs by method and status code.
  prometheus::Family<prometheus::Counter>& requests;
  /// kiln_request_duration_seconds{method}: time an RPC spent in kilnd.
  prometheus::Family<prometheus::Histogram>& request_seconds;
  const prometheus::Histogram::BucketBoundaries request_buckets = ExponentialBuckets(0.0005, 4, 10);
  /// kiln_cache_hits_total / kiln_cache_misses_total: artifact lookups of Compile/SubmitJob.
  prometheus::Counter& cache_hits;
  prometheus::Counter& cache_misses;
  /// kiln_cache_size_bytes: bytes of all blobs (models and artifacts) in the store.
  prometheus::Gauge& cache_bytes;
  /// kiln_cache_entries{kind="blob|model|artifact|tuning_record"}: rows in the store.
  prometheus::Family<prometheus::Gauge>& cache_entries;
  /// kiln_cache_evictions_total / kiln_cache_evicted_bytes_total: LRU evictions (--cache-max-
  /// bytes) since kilnd started.
  prometheus::Counter& cache_evictions;
  prometheus::Counter& cache_evicted_bytes;
  /// kiln_jobs_finished_total{kind,state}: jobs that reached a final state.
  prometheus::Family<prometheus::Counter>& jobs_finished;
  /// kiln_jobs_queued{kind} / kiln_jobs_running{kind}: the scheduler's live jobs.
  prometheus::Family<prometheus::Gauge>& jobs_queued;
  prometheus::Family<prometheus::Gauge>& jobs_running;
  /// kiln_job_queue_wait_seconds{kind}: time from queued (or requeued) to dispatched.
  prometheus::Family<prometheus::Histogram>& queue_wait_seconds;
  const prometheus::Histogram::BucketBoundaries queue_wait_buckets =
      ExponentialBuckets(0.001, 4, 10);
  /// kiln_compile_duration_seconds: worker compile time of each successful compile job.
  prometheus::Histogram& compile_seconds;
  /// kiln_workers{kind="compile|measure",device}: connected workers by capability; a compile
  /// worker's device is the target kinds it compiles for ("cpu,cuda"), a measure worker's the
  /// device it measures on ("cpu", "cuda:0").
  prometheus::Family<prometheus::Gauge>& workers;
  /// kiln_worker_restarts_total: local workers restarted by the supervisor.
  prometheus::Counter& worker_restarts;
  /// kiln_blob_bytes_received_total{kind="model|artifact"}: bytes accepted by uploads.
  prometheus::Family<prometheus::Counter>& blob_bytes_received;
  /// kiln_blob_corruptions_total: blobs whose digest did not match on read (evicted).
  prometheus::Counter& blob_corruptions;
};

}  // namespace kiln::metrics

#endif  // KILN_SERVER_METRICS_SERVICE_METRICS_H_
