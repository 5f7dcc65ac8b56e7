// kilnd's lifetime: open storage, recover jobs, serve KilnService + WorkerHub (+ health and
// reflection), start local workers, wait for SIGTERM/SIGINT, then shut down gracefully.
#ifndef KILN_SERVER_DAEMON_H_
#define KILN_SERVER_DAEMON_H_

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "server/auth/tls.h"

namespace kiln::server {

struct DaemonOptions {
  std::string listen = "127.0.0.1:7878";
  std::string data_dir = "./kiln-data";
  /// The worker hub's own listener; empty: the hub is served on `listen` too.
  std::string worker_listen;
  /// TLS for every listener (empty: plaintext).
  auth::TlsFiles tls;
  /// Bearer tokens with roles (empty: no authentication); reloaded on SIGHUP.
  std::string token_file;
  /// Allow listening beyond loopback without TLS and tokens.
  bool insecure = false;
  /// Local workers to start; 0: none (remote workers only).
  int workers = 1;
  /// Local measure workers to start (`kiln-worker --measure cpu`), each owning
  /// `measure_cores` cores: worker i pins to cores [i * measure_cores, (i+1) * measure_cores)
  /// of those kilnd may use. 0: none.
  int measure_workers = 0;
  int measure_cores = 1;
  /// How long a tune job waits for a measure worker of its target (at its start, and for a
  /// lost one to come back) before it fails.
  absl::Duration tune_measure_worker_wait = absl::Seconds(30);
  std::string worker_binary;  // default: kiln-worker next to kilnd
  /// The model importer's sandbox: kiln-graph-hash (default: next to kilnd) in a child with
  /// these limits on address space, CPU time and wall time.
  std::string graph_hash_binary;
  int64_t import_memory_bytes = int64_t{8} << 30;
  int64_t import_cpu_seconds = 300;
  absl::Duration import_timeout = absl::Minutes(10);
  /// A model with a tensor larger than this (static size) is refused: INVALID_ARGUMENT.
  int64_t max_tensor_bytes = int64_t{1} << 40;
  int64_t cache_max_bytes = 0;
  /// Limits (RESOURCE_EXHAUSTED past them, naming the flag): queued client jobs, live jobs of
  /// one token, model uploads at once (all, one token's), upload bytes of one token per minute
  /// (0: none), and how long an upload stream may go without a message.
  int64_t max_queued_jobs = 10000;
  int64_t max_jobs_per_token = 256;
  int max_uploads = 64;
  int max_uploads_per_token = 8;
  int64_t upload_bytes_per_minute = 0;
  absl::Duration stream_idle_timeout = absl::Seconds(60);
  int64_t max_model_bytes = int64_t{1} << 30;
  int64_t inline_model_max_bytes = int64_t{4} << 20;
  std::string metrics_listen;  // empty: no /metrics endpoint
  /// HOST:PORT of a plaintext listener serving grpc.health.v1 only (empty: none).
  std::string health_listen;
  /// Scrapes of /metrics need HTTP Basic credentials whose password is a token with the read
  /// or admin role (needs token_file).
  bool metrics_require_token = false;
  absl::Duration shutdown_grace = absl::Seconds(30);
  absl::Duration heartbeat_interval = absl::Seconds(3);
  absl::Duration heartbeat_timeout = absl::Seconds(15);
  int executor_threads = 8;
  /// Threads preparing Compile and SubmitJob requests (model imports run in children).
  int prepare_threads = 4;
  bool verify_cache_hits = false;
  /// The scrubber: every blob re-verified at rest this often (zero: never), reading at most
  /// `scrub_bytes_per_second`.
  absl::Duration scrub_interval = absl::Hours(6);
  int64_t scrub_bytes_per_second = int64_t{64} << 20;
};

/// Runs kilnd until SIGTERM or SIGINT (SIGHUP reloads the token file). Call before starting any
/// thread: it blocks those signals process-wide to wait for them. Returns the process exit code (0
/// after a clean shutdown).
int RunDaemon(const DaemonOptions& options);

}  // namespace kiln::server

#endif  // KILN_SERVER_DAEMON_H_
