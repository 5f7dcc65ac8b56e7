// kilnd: the Kiln compile service daemon. Flags map onto DaemonOptions; see daemon.h.
#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "server/daemon.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:7878",
          "HOST:PORT to serve on; port 0 picks one (written to DATA_DIR/kilnd.port)");
ABSL_FLAG(std::string, worker_listen, "",
          "HOST:PORT of the worker hub, open only to the worker role or a worker client "
          "certificate (empty: the hub shares --listen)");
ABSL_FLAG(std::string, tls_cert, "", "PEM server certificate chain: TLS on every listener");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls-cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA of worker client certificates (a verified one grants the worker role)");
ABSL_FLAG(std::string, token_file, "",
          "bearer tokens, one per line as `TOKEN ROLE[,ROLE...]` (roles: compile, tune, read, "
          "admin, worker); reloaded on SIGHUP");
ABSL_FLAG(bool, insecure, false, "allow listening beyond loopback without TLS and tokens");
ABSL_FLAG(std::string, data_dir, "./kiln-data", "directory of the cache database and blobs");
ABSL_FLAG(int, workers, -1, "local kiln-worker processes to start (-1: one per core, 0: none)");
ABSL_FLAG(int, measure_workers, 0,
          "local measure workers to start (kiln-worker --measure cpu), for tune jobs");
ABSL_FLAG(int, measure_cores, 1,
          "cores each local measure worker owns (pinned; worker i takes the i-th group)");
ABSL_FLAG(absl::Duration, tune_measure_worker_wait, absl::Seconds(30),
          "how long a tune job waits for a measure worker of its target before it fails");
ABSL_FLAG(std::string, worker_binary, "", "kiln-worker to start (default: next to kilnd)");
ABSL_FLAG(std::string, graph_hash_binary, "",
          "kiln-graph-hash, which imports models for kilnd in a limited child (default: next to "
          "kilnd)");
ABSL_FLAG(int64_t, import_memory_bytes, int64_t{8} << 30,
          "address-space limit of the model import child, in bytes");
ABSL_FLAG(int64_t, import_cpu_seconds, 300, "CPU-time limit of the model import child");
ABSL_FLAG(absl::Duration, import_timeout, absl::Minutes(10),
          "wall-time limit of the model import child");
ABSL_FLAG(int64_t, max_queued_jobs, 10000, "queued compile and tune jobs at most");
ABSL_FLAG(int64_t, max_jobs_per_token, 256, "queued or running jobs of one token at most");
ABSL_FLAG(int, max_uploads, 64, "model uploads in progress at most");
ABSL_FLAG(int, max_uploads_per_token, 8, "model uploads of one token in progress at most");
ABSL_FLAG(int64_t, upload_bytes_per_minute, 0,
          "model bytes one token may upload per minute (0: no limit)");
ABSL_FLAG(absl::Duration, stream_idle_timeout, absl::Seconds(60),
          "an upload stream that sends nothing this long is cancelled");
ABSL_FLAG(int64_t, max_tensor_bytes, int64_t{1} << 40,
          "a model with a tensor larger than this many bytes is refused (INVALID_ARGUMENT)");
ABSL_FLAG(int64_t, cache_max_bytes, 0, "LRU limit on all blobs, in bytes (0: unlimited)");
ABSL_FLAG(int64_t, max_model_bytes, int64_t{1} << 30, "largest model UploadModel accepts");
ABSL_FLAG(int64_t, inline_model_max_bytes, int64_t{4} << 20,
          "largest model a Compile request may carry inline");
ABSL_FLAG(std::string, metrics_listen, "",
          "HOST:PORT of the Prometheus /metrics endpoint (empty: off)");
ABSL_FLAG(std::string, health_listen, "",
          "HOST:PORT of a plaintext listener serving only grpc.health.v1, for probes that cannot "
          "speak TLS (empty: off)");
ABSL_FLAG(bool, metrics_require_token, false,
          "/metrics needs HTTP Basic auth whose password is a token (read or admin role) from "
          "--token-file");
ABSL_FLAG(absl::Duration, shutdown_grace, absl::Seconds(30),
          "on SIGTERM, how long running jobs may finish before they are saved as queued");
ABSL_FLAG(absl::Duration, heartbeat_timeout, absl::Seconds(15),
          "drop a worker (and retry its tasks) after this long without a message");
ABSL_FLAG(int, executor_threads, 8,
          "threads for kilnd's blocking control-plane work (storage, worker messages)");
ABSL_FLAG(int, prepare_threads, 4,
          "threads preparing Compile and SubmitJob requests (waiting on model import children)");
ABSL_FLAG(bool, verify_cache_hits, false,
          "verify the artifact's digest before answering a Compile cache hit (default: trust "
          "the index; FetchArtifact verifies while streaming and the scrubber at rest)");
ABSL_FLAG(absl::Duration, scrub_interval, absl::Hours(6),
          "how often the scrubber re-verifies every blob at rest (0: never)");
ABSL_FLAG(int64_t, scrub_bytes_per_second, int64_t{64} << 20,
          "the scrubber's read rate limit, in bytes per second");

int main(int argc, char** argv) {
  // Accept --data-dir as well as --data_dir (absl spells flag names with underscores).
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 1; i < args.size(); ++i) {
    std::string& a = args[i];
    if (a == "--") break;
    if (a.rfind("--", 0) != 0) continue;
    size_t end = std::min(a.find('='), a.size());
    for (size_t j = 2; j < end; ++j) {
      if (a[j] == '-') a[j] = '_';
    }
  }
  std::vector<char*> arg_ptrs;
  for (std::string& a : args) arg_ptrs.push_back(a.data());
  argc = static_cast<int>(arg_ptrs.size());
  argv = arg_ptrs.data();
  absl::SetProgramUsageMessage(
      "kilnd --listen HOST:PORT --data-dir DIR [--workers N] [--measure-workers N] "
      "[--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]] [--token-file FILE] "
      "[--worker-listen HOST:PORT] [--insecure] [--cache-max-bytes B] ...");
  absl::ParseCommandLine(argc, argv);
  kiln::server::DaemonOptions options;
  options.listen = absl::GetFlag(FLAGS_listen);
  options.data_dir = absl::GetFlag(FLAGS_data_dir);
  options.worker_listen = absl::GetFlag(FLAGS_worker_listen);
  options.tls.cert = absl::GetFlag(FLAGS_tls_cert);
  options.tls.key = absl::GetFlag(FLAGS_tls_key);
  options.tls.client_ca = absl::GetFlag(FLAGS_tls_client_ca);
  options.token_file = absl::GetFlag(FLAGS_token_file);
  options.insecure = absl::GetFlag(FLAGS_insecure);
  int workers = absl::GetFlag(FLAGS_workers);
  options.workers =
      workers >= 0 ? workers : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  options.measure_workers = std::max(0, absl::GetFlag(FLAGS_measure_workers));
  options.measure_cores = std::max(1, absl::GetFlag(FLAGS_measure_cores));
  options.tune_measure_worker_wait = absl::GetFlag(FLAGS_tune_measure_worker_wait);
  options.worker_binary = absl::GetFlag(FLAGS_worker_binary);
  options.graph_hash_binary = absl::GetFlag(FLAGS_graph_hash_binary);
  options.import_memory_bytes = absl::GetFlag(FLAGS_import_memory_bytes);
  options.import_cpu_seconds = absl::GetFlag(FLAGS_import_cpu_seconds);
  options.import_timeout = absl::GetFlag(FLAGS_import_timeout);
  options.max_tensor_bytes = absl::GetFlag(FLAGS_max_tensor_bytes);
  options.cache_max_bytes = absl::GetFlag(FLAGS_cache_max_bytes);
  options.max_queued_jobs = absl::GetFlag(FLAGS_max_queued_jobs);
  options.max_jobs_per_token = absl::GetFlag(FLAGS_max_jobs_per_token);
  options.max_uploads = absl::GetFlag(FLAGS_max_uploads);
  options.max_uploads_per_token = absl::GetFlag(FLAGS_max_uploads_per_token);
  options.upload_bytes_per_minute = absl::GetFlag(FLAGS_upload_bytes_per_minute);
  options.stream_idle_timeout = absl::GetFlag(FLAGS_stream_idle_timeout);
  options.max_model_bytes = absl::GetFlag(FLAGS_max_model_bytes);
  options.inline_model_max_bytes = absl::GetFlag(FLAGS_inline_model_max_bytes);
  options.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  options.metrics_require_token = absl::GetFlag(FLAGS_metrics_require_token);
  options.health_listen = absl::GetFlag(FLAGS_health_listen);
  options.shutdown_grace = absl::GetFlag(FLAGS_shutdown_grace);
  options.heartbeat_timeout = absl::GetFlag(FLAGS_heartbeat_timeout);
  options.executor_threads = absl::GetFlag(FLAGS_executor_threads);
  options.prepare_threads = std::max(1, absl::GetFlag(FLAGS_prepare_threads));
  options.verify_cache_hits = absl::GetFlag(FLAGS_verify_cache_hits);
  options.scrub_interval = absl::GetFlag(FLAGS_scrub_interval);
  options.scrub_bytes_per_second = absl::GetFlag(FLAGS_scrub_bytes_per_second);
  return kiln::server::RunDaemon(options);
}
