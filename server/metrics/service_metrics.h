// The metrics kilnd exports, registered in one place so that names, help texts, labels and
// buckets are fixed together (and the promtool test covers them all).
#ifndef KILN_SERVER_METRICS_SERVICE_METRICS_H_
#define KILN_SERVER_METRICS_SERVICE_METRICS_H_

#include "server/metrics/metrics.h"

namespace kiln::metrics {

/// kilnd's metric families; construct once per Registry.
struct ServiceMetrics {
  explicit ServiceMetrics(Registry& registry);

  /// kiln_requests_total{method="Compile",code="OK"}: finished RPCs by method and status code.
  Family<Counter>& requests;
  /// kiln_cache_hits_total / kiln_cache_misses_total: artifact cache lookups of Compile/SubmitJob.
  Counter& cache_hits;
  Counter& cache_misses;
  /// kiln_jobs_finished_total{state="succeeded|failed|cancelled"}.
  Family<Counter>& jobs_finished;
  /// kiln_jobs_queued / kiln_jobs_running: current scheduler state.
  Gauge& jobs_queued;
  Gauge& jobs_running;
  /// kiln_workers: connected workers.
  Gauge& workers;
  /// kiln_worker_restarts_total: local workers restarted by the supervisor.
  Counter& worker_restarts;
  /// kiln_blob_bytes_received_total{kind="model|artifact"}: bytes accepted by uploads.
  Family<Counter>& blob_bytes_received;
  /// kiln_blob_corruptions_total: blobs whose digest did not match on read (evicted).
  Counter& blob_corruptions;
  /// kiln_compile_duration_seconds: worker compile time of each successful compile job.
  Histogram& compile_seconds;
  /// kiln_request_duration_seconds{method}: time an RPC spent in kilnd.
  Family<Histogram>& request_seconds;
};

}  // namespace kiln::metrics

#endif  // KILN_SERVER_METRICS_SERVICE_METRICS_H_
