// Registration of kilnd's metric families (prometheus-cpp).
#include "server/metrics/service_metrics.h"

#include <utility>

#include "prometheus/text_serializer.h"

namespace kiln::metrics {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

// A family named `name` with `help` in `registry`.
template <typename Builder>
auto& Register(Builder builder, const char* name, const char* help,
               prometheus::Registry& registry) {
  return builder.Name(name).Help(help).Register(registry);
}

}  // namespace

prometheus::Histogram::BucketBoundaries ExponentialBuckets(double start, double factor, int count) {
  prometheus::Histogram::BucketBoundaries bounds;
  double v = start;
  for (int i = 0; i < count; ++i, v *= factor) bounds.push_back(v);
  return bounds;
}

ServiceMetrics::ServiceMetrics(const BuildInfo& build)
    : registry_(std::make_shared<prometheus::Registry>()),
      build_info(Register(BuildGauge(), "kiln_build_info",
                          "kilnd's release and compiler version (the value is 1).", *registry_)),
      requests(Register(BuildCounter(), "kiln_requests_total",
                        "Finished RPCs by method and status code.", *registry_)),
      request_seconds(Register(BuildHistogram(), "kiln_request_duration_seconds",
                               "Time an RPC spent in kilnd, by method.", *registry_)),
      cache_hits(
          Register(BuildCounter(), "kiln_cache_hits_total", "Artifact cache hits.", *registry_)
              .Add({})),
      cache_misses(
          Register(BuildCounter(), "kiln_cache_misses_total", "Artifact cache misses.", *registry_)
              .Add({})),
      cache_bytes(Register(BuildGauge(), "kiln_cache_size_bytes",
                           "Bytes of all blobs (models and artifacts) in the store.", *registry_)
                      .Add({})),
      cache_entries(Register(BuildGauge(), "kiln_cache_entries", "Entries in the store, by kind.",
                             *registry_)),
      cache_evictions(Register(BuildCounter(), "kiln_cache_evictions_total",
                               "Blobs evicted by the LRU limit (--cache-max-bytes).", *registry_)
                          .Add({})),
      cache_evicted_bytes(Register(BuildCounter(), "kiln_cache_evicted_bytes_total",
                                   "Bytes of the blobs evicted by the LRU limit.", *registry_)
                              .Add({})),
      jobs_finished(Register(BuildCounter(), "kiln_jobs_finished_total",
                             "Jobs that reached a final state, by kind and state.", *registry_)),
      jobs_queued(Register(BuildGauge(), "kiln_jobs_queued", "Jobs waiting for a worker, by kind.",
                           *registry_)),
      jobs_running(
          Register(BuildGauge(), "kiln_jobs_running", "Jobs running, by kind.", *registry_)),
      queue_wait_seconds(Register(BuildHistogram(), "kiln_job_queue_wait_seconds",
                                  "Time a job waited in the queue before it was dispatched.",
                                  *registry_)),
      compile_seconds(Register(BuildHistogram(), "kiln_compile_duration_seconds",
                               "Worker compile time of successful compile jobs.", *registry_)
                          .Add({}, ExponentialBuckets(0.05, 2, 12))),
      workers(Register(BuildGauge(), "kiln_workers",
                       "Connected workers, by capability kind and device.", *registry_)),
      worker_restarts(Register(BuildCounter(), "kiln_worker_restarts_total",
                               "Local workers restarted after dying.", *registry_)
                          .Add({})),
      blob_bytes_received(Register(BuildCounter(), "kiln_blob_bytes_received_total",
                                   "Bytes of models and artifacts accepted by uploads.",
                                   *registry_)),
      blob_corruptions(Register(BuildCounter(), "kiln_blob_corruptions_total",
                                "Blobs that failed digest verification on read.", *registry_)
                           .Add({})) {
  build_info.Add({{"version", build.version}, {"compiler_version", build.compiler_version}}).Set(1);
}

void ServiceMetrics::SetCollectHook(std::function<void(ServiceMetrics&)> hook) {
  std::lock_guard<std::mutex> lock(hook_mu_);
  hook_ = std::move(hook);
}

std::vector<prometheus::MetricFamily> ServiceMetrics::Collect() const {
  {
    // One scrape at a time runs the hook; the families themselves are thread-safe.
    std::lock_guard<std::mutex> lock(hook_mu_);
    if (hook_) hook_(const_cast<ServiceMetrics&>(*this));
  }
  return registry_->Collect();
}

std::string ServiceMetrics::Serialize() const {
  return prometheus::TextSerializer().Serialize(Collect());
}

void ServiceMetrics::SetWorkerCounts(const std::map<prometheus::Labels, double>& counts) {
  std::lock_guard<std::mutex> lock(workers_mu_);
  for (auto it = worker_series_.begin(); it != worker_series_.end();) {
    if (counts.count(*it) == 0) {
      workers.Remove(&workers.Add(*it));
      it = worker_series_.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& [labels, value] : counts) {
    workers.Add(labels).Set(value);
    worker_series_.insert(labels);
  }
}

}  // namespace kiln::metrics
