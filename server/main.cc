// kilnd: the Kiln compile service daemon. Flags map onto DaemonOptions (see daemon.h); they are
// defined here with CLI11 (client/command_line.h: --help, --version, usage errors exit 2).
#include <algorithm>
#include <cctype>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "client/command_line.h"
#include "server/daemon.h"

namespace {

constexpr char kFooter[] =
    "Flags may be spelled with dashes or underscores (--data-dir, --data_dir) and with one\n"
    "dash or two; a flag without a value may be negated as --noinsecure or --insecure=false.\n"
    "DURATION is as 30s, 10m, 1h30m. Exit status: 0 after SIGTERM, 1 when kilnd cannot start\n"
    "or fails, 2 for a usage error.\n";

// The flags without a value, which --noNAME negates.
constexpr const char* kBoolFlags[] = {"insecure", "metrics-require-token", "verify-cache-hits"};

/// argv in the spellings kilnd has always accepted (absl flags), rewritten to CLI11's:
/// underscores in a flag name become dashes, one leading dash becomes two, and --noNAME of a
/// flag without a value becomes --NAME=false. Stops at "--".
std::vector<std::string> Canonical(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 1; i < args.size(); ++i) {
    std::string& a = args[i];
    if (a == "--") break;
    if (a.size() > 2 && a[0] == '-' && a[1] != '-' && !std::isdigit(a[1])) a.insert(0, "-");
    if (a.rfind("--", 0) != 0) continue;
    const size_t end = std::min(a.find('='), a.size());
    std::replace(a.begin() + 2, a.begin() + static_cast<std::ptrdiff_t>(end), '_', '-');
    for (const char* flag : kBoolFlags) {
      if (a == absl::StrCat("--no", flag)) a = absl::StrCat("--", flag, "=false");
    }
  }
  return args;
}

/// Adds a DURATION flag (absl::ParseDuration's syntax) writing `out`.
void AddDuration(CLI::App& app, const std::string& name, absl::Duration& out,
                 const std::string& help) {
  app.add_option_function<std::string>(
         name,
         [&out, name](const std::string& text) {
           if (!absl::ParseDuration(text, &out)) {
             throw CLI::ValidationError(
                 name, "wants a duration such as 30s, 10m or 1h30m, not '" + text + "'");
           }
         },
         help)
      ->type_name("DURATION")
      ->default_str(absl::FormatDuration(out));
}

}  // namespace

int main(int argc, char** argv) {
  kiln::server::DaemonOptions options;
  int workers = -1;
  CLI::App app("kilnd: the Kiln compile service daemon", "kilnd");
  kiln::client::SetUpApp(app, "kilnd");
  app.footer(kFooter);
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--listen", options.listen,
                 "HOST:PORT to serve on; port 0 picks one (written to DATA_DIR/kilnd.port)")
      ->type_name("HOST:PORT")
      ->capture_default_str();
  app.add_option("--data-dir", options.data_dir, "directory of the cache database and blobs")
      ->type_name("DIR")
      ->capture_default_str();
  app.add_option("--worker-listen", options.worker_listen,
                 "HOST:PORT of the worker hub, open only to the worker role or a worker client "
                 "certificate (empty: the hub shares --listen)")
      ->type_name("HOST:PORT");
  app.add_option("--tls-cert", options.tls.cert,
                 "PEM server certificate chain: TLS on every listener")
      ->type_name("FILE");
  app.add_option("--tls-key", options.tls.key, "PEM private key of --tls-cert")->type_name("FILE");
  app.add_option("--tls-client-ca", options.tls.client_ca,
                 "PEM CA of worker client certificates (a verified one grants the worker role)")
      ->type_name("FILE");
  app.add_option("--token-file", options.token_file,
                 "bearer tokens, one per line as `TOKEN ROLE[,ROLE...]` (roles: compile, tune, "
                 "read, admin, worker); reloaded on SIGHUP")
      ->type_name("FILE");
  app.add_flag("--insecure", options.insecure,
               "allow listening beyond loopback without TLS and tokens");
  app.add_option("--workers", workers,
                 "local kiln-worker processes to start (-1: one per core, 0: none)")
      ->capture_default_str();
  app.add_option("--measure-workers", options.measure_workers,
                 "local measure workers to start (kiln-worker --measure cpu), for tune jobs")
      ->capture_default_str();
  app.add_option("--measure-cores", options.measure_cores,
                 "cores each local measure worker owns (pinned; worker i takes the i-th group)")
      ->capture_default_str();
  AddDuration(app, "--tune-measure-worker-wait", options.tune_measure_worker_wait,
              "how long a tune job waits for a measure worker of its target before it fails");
  app.add_option("--worker-binary", options.worker_binary,
                 "kiln-worker to start (default: next to kilnd)")
      ->type_name("FILE");
  app.add_option("--graph-hash-binary", options.graph_hash_binary,
                 "kiln-graph-hash, which imports models for kilnd in a limited child (default: "
                 "next to kilnd)")
      ->type_name("FILE");
  app.add_option("--import-memory-bytes", options.import_memory_bytes,
                 "address-space limit of the model import child, in bytes")
      ->capture_default_str();
  app.add_option("--import-cpu-seconds", options.import_cpu_seconds,
                 "CPU-time limit of the model import child")
      ->capture_default_str();
  AddDuration(app, "--import-timeout", options.import_timeout,
              "wall-time limit of the model import child");
  app.add_option("--max-queued-jobs", options.max_queued_jobs,
                 "queued compile and tune jobs at most")
      ->capture_default_str();
  app.add_option("--max-jobs-per-token", options.max_jobs_per_token,
                 "queued or running jobs of one token at most")
      ->capture_default_str();
  app.add_option("--max-uploads", options.max_uploads, "model uploads in progress at most")
      ->capture_default_str();
  app.add_option("--max-uploads-per-token", options.max_uploads_per_token,
                 "model uploads of one token in progress at most")
      ->capture_default_str();
  app.add_option("--upload-bytes-per-minute", options.upload_bytes_per_minute,
                 "model bytes one token may upload per minute (0: no limit)")
      ->capture_default_str();
  AddDuration(app, "--stream-idle-timeout", options.stream_idle_timeout,
              "an upload stream that sends nothing this long is cancelled");
  app.add_option("--max-tensor-bytes", options.max_tensor_bytes,
                 "a model with a tensor larger than this many bytes is refused "
                 "(INVALID_ARGUMENT)")
      ->capture_default_str();
  app.add_option("--cache-max-bytes", options.cache_max_bytes,
                 "LRU limit on all blobs, in bytes (0: unlimited)")
      ->capture_default_str();
  app.add_option("--max-model-bytes", options.max_model_bytes, "largest model UploadModel accepts")
      ->capture_default_str();
  app.add_option("--inline-model-max-bytes", options.inline_model_max_bytes,
                 "largest model a Compile request may carry inline")
      ->capture_default_str();
  app.add_option("--metrics-listen", options.metrics_listen,
                 "HOST:PORT of the Prometheus /metrics endpoint (empty: off)")
      ->type_name("HOST:PORT");
  app.add_option("--health-listen", options.health_listen,
                 "HOST:PORT of a plaintext listener serving only grpc.health.v1, for probes "
                 "that cannot speak TLS (empty: off)")
      ->type_name("HOST:PORT");
  app.add_flag("--metrics-require-token", options.metrics_require_token,
               "/metrics needs HTTP Basic auth whose password is a token (read or admin role) "
               "from --token-file");
  AddDuration(app, "--shutdown-grace", options.shutdown_grace,
              "on SIGTERM, how long running jobs may finish before they are saved as queued");
  AddDuration(app, "--heartbeat-timeout", options.heartbeat_timeout,
              "drop a worker (and retry its tasks) after this long without a message");
  app.add_option("--executor-threads", options.executor_threads,
                 "threads for kilnd's blocking control-plane work (storage, worker messages)")
      ->capture_default_str();
  app.add_option("--prepare-threads", options.prepare_threads,
                 "threads preparing Compile and SubmitJob requests (waiting on model import "
                 "children)")
      ->capture_default_str();
  app.add_flag("--verify-cache-hits", options.verify_cache_hits,
               "verify the artifact's digest before answering a Compile cache hit (default: "
               "trust the index; FetchArtifact verifies while streaming and the scrubber at "
               "rest)");
  AddDuration(app, "--scrub-interval", options.scrub_interval,
              "how often the scrubber re-verifies every blob at rest (0: never)");
  app.add_option("--scrub-bytes-per-second", options.scrub_bytes_per_second,
                 "the scrubber's read rate limit, in bytes per second")
      ->capture_default_str();

  std::vector<std::string> args = Canonical(argc, argv);
  std::vector<char*> arg_ptrs;
  for (std::string& a : args) arg_ptrs.push_back(a.data());
  if (std::optional<int> done =
          kiln::client::ParseCommandLine(app, static_cast<int>(arg_ptrs.size()), arg_ptrs.data())) {
    return *done;
  }
  options.workers =
      workers >= 0 ? workers : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  options.measure_workers = std::max(0, options.measure_workers);
  options.measure_cores = std::max(1, options.measure_cores);
  options.prepare_threads = std::max(1, options.prepare_threads);
  return kiln::server::RunDaemon(options);
}
