// Registration of kilnd's metric families.
#include "server/metrics/service_metrics.h"

namespace kiln::metrics {

ServiceMetrics::ServiceMetrics(Registry& r)
    : requests(r.AddCounter("kiln_requests_total", "Finished RPCs by method and status code.")),
      cache_hits(r.AddCounter("kiln_cache_hits_total", "Artifact cache hits.").Add()),
      cache_misses(r.AddCounter("kiln_cache_misses_total", "Artifact cache misses.").Add()),
      jobs_finished(r.AddCounter("kiln_jobs_finished_total", "Jobs that reached a final state.")),
      jobs_queued(r.AddGauge("kiln_jobs_queued", "Jobs waiting for a worker.").Add()),
      jobs_running(r.AddGauge("kiln_jobs_running", "Jobs running on a worker.").Add()),
      workers(r.AddGauge("kiln_workers", "Connected workers.").Add()),
      worker_restarts(
          r.AddCounter("kiln_worker_restarts_total", "Local workers restarted after dying.").Add()),
      blob_bytes_received(r.AddCounter("kiln_blob_bytes_received_total",
                                       "Bytes of models and artifacts accepted by uploads.")),
      blob_corruptions(r.AddCounter("kiln_blob_corruptions_total",
                                    "Blobs that failed digest verification on read.")
                           .Add()),
      compile_seconds(r.AddHistogram("kiln_compile_duration_seconds",
                                     "Worker compile time of successful compile jobs.",
                                     ExponentialBuckets(0.05, 2, 12))
                          .Add()),
      request_seconds(r.AddHistogram("kiln_request_duration_seconds",
                                     "Time an RPC spent in kilnd, by method.",
                                     ExponentialBuckets(0.0005, 4, 10))) {}

}  // namespace kiln::metrics
