// Wiring and lifetime of the daemon.
#include "server/daemon.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "compiler_core/pipeline/compiler_version.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "server/auth/authenticator.h"
#include "server/auth/tls.h"
#include "server/cache/storage.h"
#include "server/compile_handler.h"
#include "server/compile_prep.h"
#include "server/executor.h"
#include "server/log.h"
#include "server/metrics/endpoint.h"
#include "server/metrics/service_metrics.h"
#include "server/model_index.h"
#include "server/prometheus_hooks.h"
#include "server/recovery.h"
#include "server/scheduler.h"
#include "server/scrubber.h"
#include "server/service.h"
#include "server/service_context.h"
#include "server/step_handler.h"
#include "server/supervisor.h"
#include "server/tune_handler.h"
#include "server/worker_hub.h"

namespace kiln::server {
namespace {

/// Bounds kilnd's shutdown: if Done() is not called within `limit` of construction, logs
/// `kilnd.shutdown_stuck` with the stage last named and exits the process with status 70
/// (EX_SOFTWARE).
class ShutdownWatchdog {
 public:
  explicit ShutdownWatchdog(absl::Duration limit)
      : thread_([this, limit] {
          std::unique_lock<std::mutex> lock(mu_);
          if (cv_.wait_for(lock, absl::ToChronoMilliseconds(limit), [this] { return done_; })) {
            return;
          }
          LogError("kilnd.shutdown_stuck",
                   {{"stage", stage_}, {"after_ms", absl::ToInt64Milliseconds(limit)}});
          std::_Exit(70);
        }) {}
  ~ShutdownWatchdog() { Done(); }

  void Stage(const char* stage) {
    std::lock_guard<std::mutex> lock(mu_);
    stage_ = stage;
  }

  void Done() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  const char* stage_ = "starting";
  bool done_ = false;
  std::thread thread_;  // last: starts once the members it reads exist
};


// kiln_build_info's labels: the release is what kCompilerVersion names between "kiln-" and "+".
metrics::BuildInfo KilndBuildInfo() {
  std::string_view version = pipeline::kCompilerVersion;
  version = version.substr(0, version.find('+'));
  if (absl::StartsWith(absl::string_view(version.data(), version.size()), "kiln-")) {
    version.remove_prefix(5);
  }
  return metrics::BuildInfo{std::string(version), pipeline::kCompilerVersion};
}

std::string SelfDir() {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

/// The address local workers dial: the listen host, or loopback for a wildcard host.
std::string LocalConnectAddress(const std::string& listen, int port) {
  std::string host = listen.substr(0, listen.rfind(':'));
  if (host.empty() || host == "0.0.0.0" || host == "[::]" || host == "::" || host == "*") {
    host = "127.0.0.1";
  }
  return absl::StrCat(host, ":", port);
}

/// Writes DATA_DIR/NAME (temp file + rename, mode 0600), e.g. kilnd.port so that tests and
/// scripts find an ephemeral port.
void WriteDataFile(const std::string& data_dir, const std::string& name, const std::string& text) {
  std::string path = absl::StrCat(data_dir, "/", name);
  std::string tmp = absl::StrCat(path, ".tmp");
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
  }
  ::chmod(tmp.c_str(), 0600);
  std::rename(tmp.c_str(), path.c_str());
}

int Fail(std::string_view event, const absl::Status& status) {
  LogError(event, {{"status", status}});
  std::fprintf(stderr, "kilnd: %s\n", std::string(status.message()).c_str());
  return 1;
}

}  // namespace

int RunDaemon(const DaemonOptions& options) {
  // Block the shutdown signals in every thread (threads inherit the mask) and sigwait for them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  LogInfo("kilnd.starting", {{"pid", static_cast<int>(getpid())},
                             {"compiler_version", pipeline::kCompilerVersion},
                             {"data_dir", options.data_dir},
                             {"listen", options.listen},
                             {"workers", options.workers}});

  // Security first: nothing listens or touches storage with a bad flag.
  if (options.metrics_require_token && options.token_file.empty()) {
    return Fail("kilnd.metrics_token_without_tokens",
                absl::InvalidArgumentError(
                    "--metrics-require-token needs --token-file (the tokens a scrape may use)"));
  }
  auth::Authenticator authenticator;
  if (!options.token_file.empty()) {
    absl::Status loaded = authenticator.Load(options.token_file);
    if (!loaded.ok()) return Fail("kilnd.token_file_failed", loaded);
  }
  const bool tls = options.tls.enabled();
  for (const auto& [flag, address] :
       {std::pair<std::string, std::string>{"--listen", options.listen},
        {"--worker-listen", options.worker_listen}}) {
    if (address.empty()) continue;
    absl::Status allowed = auth::CheckListenerSecurity(
        flag, address, tls, !options.token_file.empty(), options.insecure);
    if (!allowed.ok()) return Fail("kilnd.insecure_listener", allowed);
  }
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (tls) {
    absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> made =
        auth::TlsServerCredentials(options.tls, &authenticator);
    if (!made.ok()) return Fail("kilnd.tls_failed", made.status());
    credentials = *std::move(made);
  }

  cache::StorageOptions storage_options;
  storage_options.data_dir = options.data_dir;
  storage_options.max_cache_bytes = options.cache_max_bytes;
  absl::StatusOr<std::unique_ptr<cache::Storage>> storage =
      cache::OpenSqliteStorage(storage_options);
  if (!storage.ok()) return Fail("kilnd.storage_failed", storage.status());
  if (absl::StatusOr<cache::StorageStats> opened = (*storage)->Stats();
      opened.ok() && (opened->reindexed_blobs > 0 || opened->quarantined_blobs > 0)) {
    LogWarning("kilnd.blobs_recovered", {{"reindexed", opened->reindexed_blobs},
                                         {"quarantined", opened->quarantined_blobs},
                                         {"quarantine_dir", options.data_dir + "/quarantine"}});
  }

  auto service_metrics = std::make_shared<metrics::ServiceMetrics>(KilndBuildInfo());
  PrometheusHooks hooks(service_metrics.get());

  Scrubber scrubber(ScrubberOptions{storage->get(), &hooks, options.scrub_interval,
                                    options.scrub_bytes_per_second});
  scrubber.Start();
  Executor executor(options.executor_threads);
  Executor prepare_executor(options.prepare_threads);
  GraphHashSandbox sandbox;
  sandbox.binary = options.graph_hash_binary.empty() ? absl::StrCat(SelfDir(), "/kiln-graph-hash")
                                                     : options.graph_hash_binary;
  sandbox.limits.max_memory_bytes = options.import_memory_bytes;
  sandbox.limits.max_cpu_seconds = options.import_cpu_seconds;
  sandbox.limits.timeout = options.import_timeout;
  sandbox.max_tensor_bytes = options.max_tensor_bytes;
  if (::access(sandbox.binary.c_str(), X_OK) != 0) {
    return Fail("kilnd.no_graph_hash_binary",
                absl::FailedPreconditionError(absl::StrCat(
                    "kiln-graph-hash, which imports models in a sandbox for kilnd, is not "
                    "executable at '",
                    sandbox.binary, "' (--graph-hash-binary)")));
  }
  ModelIndex models(storage->get(), sandbox);
  TargetResolver targets;
  CompilePreparer preparer(storage->get(), &models, &targets, options.inline_model_max_bytes);
  absl::StatusOr<Target> host = targets.Resolve("host");
  if (!host.ok()) return Fail("kilnd.host_target_failed", host.status());

  CompileHandler compile_handler(storage->get(), host->cpu);
  StepHandler workloads_handler(cache::JobKind::kWorkloads, host->cpu);
  StepHandler build_handler(cache::JobKind::kBuild, host->cpu);
  StepHandler measure_handler(cache::JobKind::kMeasure, host->cpu);
  TuneHandlerOptions tune_options;
  tune_options.storage = storage->get();
  tune_options.targets = &targets;
  tune_options.host_cpu = host->cpu;
  tune_options.measure_worker_wait = options.tune_measure_worker_wait;
  tune_options.wait.worker_grace = options.tune_measure_worker_wait;
  TuneHandler tune_handler(tune_options);
  SchedulerOptions scheduler_options;
  scheduler_options.storage = storage->get();
  scheduler_options.metrics = &hooks;
  scheduler_options.handlers = {&compile_handler, &workloads_handler, &build_handler,
                                &measure_handler, &tune_handler};
  scheduler_options.heartbeat_timeout = options.heartbeat_timeout;
  scheduler_options.max_queued_jobs = options.max_queued_jobs;
  scheduler_options.max_jobs_per_token = options.max_jobs_per_token;
  Scheduler scheduler(scheduler_options);
  tune_handler.SetScheduler(&scheduler);
  // Tune runs call the scheduler from their own threads: on every way out of this function
  // (an early error return included) they are stopped and joined before the scheduler goes.
  struct StopTunes {
    TuneHandler& handler;
    ~StopTunes() { handler.StopAll(); }
  } stop_tunes{tune_handler};
  // Scrapes read the store and the scheduler: the endpoint starts after them and stops first.
  std::unique_ptr<metrics::MetricsEndpoint> metrics_endpoint;
  struct ClearCollectHook {
    metrics::ServiceMetrics& metrics;
    ~ClearCollectHook() { metrics.SetCollectHook(nullptr); }
  } clear_collect_hook{*service_metrics};
  if (!options.metrics_listen.empty()) {
    CollectServiceState(service_metrics.get(), storage->get(), &scheduler);
    metrics::ScrapeAuth scrape_auth;
    if (options.metrics_require_token) {
      // HTTP Basic (what Prometheus' basic_auth sends): any user name, a token with the read or
      // admin role as the password.
      scrape_auth = [&authenticator](const std::string&, const std::string& password) {
        absl::StatusOr<auth::Principal> principal =
            authenticator.Authenticate(absl::StrCat("Bearer ", password));
        return principal.ok() && principal->Has(auth::kRead | auth::kAdmin);
      };
    }
    auto started =
        metrics::StartMetricsEndpoint(service_metrics, options.metrics_listen, scrape_auth);
    if (!started.ok()) return Fail("kilnd.metrics_failed", started.status());
    metrics_endpoint = *std::move(started);
    LogInfo("kilnd.metrics", {{"address", metrics_endpoint->address()},
                              {"require_token", options.metrics_require_token}});
  }
  absl::StatusOr<RecoveryCounts> recovered = RecoverJobs(storage->get(), &preparer, &scheduler);
  if (!recovered.ok()) return Fail("kilnd.recovery_failed", recovered.status());

  std::unique_ptr<Supervisor> supervisor;
  ServiceContext ctx;
  ctx.storage = storage->get();
  ctx.scheduler = &scheduler;
  ctx.preparer = &preparer;
  ctx.executor = &executor;
  ctx.prepare_executor = &prepare_executor;
  ctx.metrics = &hooks;
  ctx.auth = &authenticator;
  UploadLimiter uploads(UploadLimits{options.max_uploads, options.max_uploads_per_token,
                                     options.upload_bytes_per_minute, options.stream_idle_timeout});
  ctx.uploads = &uploads;
  ctx.limits.max_model_bytes = options.max_model_bytes;
  ctx.limits.verify_cache_hits = options.verify_cache_hits;
  ctx.limits.heartbeat_interval = options.heartbeat_interval;
  // Set once the supervisor runs; read by worker registrations on the executor.
  std::atomic<Supervisor*> local_workers{nullptr};
  std::atomic<Supervisor*> local_measure_workers{nullptr};
  ctx.is_local_worker = [&local_workers, &local_measure_workers](int pid) {
    for (Supervisor* s : {local_workers.load(), local_measure_workers.load()}) {
      if (s != nullptr && s->IsWorker(pid)) return true;
    }
    return false;
  };
  KilnServiceImpl service(&ctx);
  WorkerHubImpl hub(&ctx);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  // Chunks are at most 1 MiB; inline models can be larger.
  int64_t max_message = std::max<int64_t>(options.inline_model_max_bytes + (1 << 20), 8 << 20);
  const int max_receive = static_cast<int>(std::min<int64_t>(max_message, INT32_MAX));
  // kilnd's own workers dial loopback in plaintext when the listeners speak TLS (they have no
  // CA to verify with); their calls still carry a worker token.
  const bool local_workers_wanted = options.workers > 0 || options.measure_workers > 0;
  const bool local_plaintext = tls && local_workers_wanted;
  int port = 0, hub_port = 0, local_port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen, credentials, &port);
  builder.RegisterService(&service);
  builder.SetMaxReceiveMessageSize(max_receive);
  std::unique_ptr<grpc::Server> hub_server;
  if (options.worker_listen.empty()) {
    builder.RegisterService(&hub);
    if (local_plaintext) {
      builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &local_port);
    }
  } else {
    grpc::ServerBuilder hub_builder;
    hub_builder.AddListeningPort(options.worker_listen, credentials, &hub_port);
    if (local_plaintext) {
      hub_builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &local_port);
    }
    hub_builder.RegisterService(&hub);
    hub_builder.SetMaxReceiveMessageSize(max_receive);
    hub_server = hub_builder.BuildAndStart();
    if (hub_server == nullptr || hub_port == 0) {
      return Fail("kilnd.listen_failed",
                  absl::UnavailableError(absl::StrCat("cannot listen on ", options.worker_listen,
                                                      " (--worker-listen)")));
    }
    WriteDataFile(options.data_dir, "kilnd.worker_port", absl::StrCat(hub_port, "\n"));
  }
  // Plaintext grpc.health.v1 alone, for probes that cannot speak TLS (the kubelet's grpc
  // probe): it tells SERVING or NOT_SERVING and nothing else, so it needs no credentials.
  std::unique_ptr<grpc::Server> health_server;
  int health_port = 0;
  if (!options.health_listen.empty()) {
    grpc::ServerBuilder health_builder;
    health_builder.AddListeningPort(options.health_listen, grpc::InsecureServerCredentials(),
                                    &health_port);
    health_server = health_builder.BuildAndStart();
    if (health_server == nullptr || health_port == 0) {
      if (hub_server) hub_server->Shutdown();
      return Fail("kilnd.listen_failed",
                  absl::UnavailableError(absl::StrCat("cannot listen on ", options.health_listen,
                                                      " (--health-listen)")));
    }
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    if (hub_server) hub_server->Shutdown();
    if (health_server) health_server->Shutdown();
    return Fail("kilnd.listen_failed",
                absl::UnavailableError(absl::StrCat("cannot listen on ", options.listen)));
  }
  WriteDataFile(options.data_dir, "kilnd.port", absl::StrCat(port, "\n"));
  LogInfo("kilnd.listening", {{"address", LocalConnectAddress(options.listen, port)},
                              {"port", port},
                              {"worker_port", hub_port},
                              {"health_port", health_port},
                              {"tls", tls},
                              {"tokens", authenticator.enabled()},
                              {"jobs_requeued", recovered->requeued}});

  // Local workers: a fresh worker token each start (never in the token file), handed over in
  // DATA_DIR/worker.token (mode 0600).
  std::vector<std::string> local_security;
  if (authenticator.enabled() && local_workers_wanted) {
    std::string token = auth::RandomToken();
    authenticator.AddInternalToken(token, auth::Principal{"local-worker", auth::kWorker});
    WriteDataFile(options.data_dir, "worker.token", absl::StrCat(token, "\n"));
    local_security = {"--token-file", absl::StrCat(options.data_dir, "/worker.token")};
  }
  const std::string local_address = local_plaintext ? absl::StrCat("127.0.0.1:", local_port)
                                    : options.worker_listen.empty()
                                        ? LocalConnectAddress(options.listen, port)
                                        : LocalConnectAddress(options.worker_listen, hub_port);

  const std::string worker_binary = options.worker_binary.empty()
                                        ? absl::StrCat(SelfDir(), "/kiln-worker")
                                        : options.worker_binary;
  // Local workers of one kind (`extra` after --connect; `slot_args` per worker), supervised;
  // null when none are asked for or they cannot start (remote workers can still join, and
  // cache hits need no worker).
  auto start_workers = [&](int count, std::vector<std::string> extra,
                           std::function<std::vector<std::string>(int)> slot_args,
                           std::atomic<Supervisor*>& published,
                           std::string_view failure_event) -> std::unique_ptr<Supervisor> {
    if (count <= 0) return nullptr;
    SupervisorOptions sup;
    sup.worker_binary = worker_binary;
    sup.args = {"--connect", local_address};
    sup.args.insert(sup.args.end(), local_security.begin(), local_security.end());
    sup.args.insert(sup.args.end(), extra.begin(), extra.end());
    sup.slot_args = std::move(slot_args);
    sup.workers = count;
    sup.metrics = &hooks;
    auto started = std::make_unique<Supervisor>(sup);
    absl::Status status = started->Start();
    if (!status.ok()) {
      LogError(failure_event, {{"status", status}});
      return nullptr;
    }
    published = started.get();
    return started;
  };
  supervisor =
      start_workers(options.workers, {}, nullptr, local_workers, "kilnd.no_local_workers");
  const int measure_cores = std::max(1, options.measure_cores);
  std::unique_ptr<Supervisor> measure_supervisor = start_workers(
      options.measure_workers, {"--measure", "cpu", "--cores", absl::StrCat(measure_cores)},
      [measure_cores](int slot) {
        return std::vector<std::string>{"--core-offset", absl::StrCat(slot * measure_cores)};
      },
      local_measure_workers, "kilnd.no_measure_workers");

  int sig = 0;
  for (;;) {
    sigwait(&signals, &sig);
    if (sig != SIGHUP) break;
    absl::Status reloaded = authenticator.Reload();
    if (reloaded.ok()) {
      LogInfo("kilnd.tokens_reloaded", {{"file", options.token_file}});
    } else {
      LogError("kilnd.tokens_reload_failed", {{"status", reloaded}});
    }
  }
  LogInfo("kilnd.shutdown", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"},
                             {"grace_ms", absl::ToInt64Milliseconds(options.shutdown_grace)}});
  // Every stage below is bounded; should one hang all the same (an RPC that never finishes
  // holds up the gRPC server's Shutdown forever), the watchdog names it and exits 70 rather
  // than leave a supervisor's SIGKILL to end an unexplained hang.
  ShutdownWatchdog watchdog(options.shutdown_grace + absl::Seconds(30));
  watchdog.Stage("draining the scheduler");
  ctx.draining = true;
  server->GetHealthCheckService()->SetServingStatus(false);
  if (health_server) health_server->GetHealthCheckService()->SetServingStatus(false);
  scheduler.Drain(options.shutdown_grace);
  watchdog.Stage("stopping the tune runs");
  tune_handler.StopAll();  // now, not only at stop_tunes: before the workers are stopped
  watchdog.Stage("stopping the local workers");
  if (supervisor) supervisor->Stop();  // still in local_workers: Stop keeps the object alive
  if (measure_supervisor) measure_supervisor->Stop();
  watchdog.Stage("shutting down the gRPC servers");
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  if (hub_server) hub_server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  if (health_server) health_server->Shutdown(std::chrono::system_clock::now());
  watchdog.Stage("stopping the scrubber and the executors");
  scrubber.Stop();
  prepare_executor.Shutdown();
  executor.Shutdown();
  watchdog.Done();
  for (const char* name : {"kilnd.port", "kilnd.worker_port", "worker.token"}) {
    std::remove(absl::StrCat(options.data_dir, "/", name).c_str());
  }
  LogInfo("kilnd.stopped");
  return 0;
}

}  // namespace kiln::server
