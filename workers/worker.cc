// The worker's connection loop, heartbeats and task threads.
#include "workers/worker.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "compiler_core/codegen/llvm/codegen.h"
#include "compiler_core/support/status_macros.h"
#include "wire/status.h"
#include "workers/compile_task.h"
#include "workers/hub_blobs.h"

namespace kiln::workers {
namespace {

using Clock = std::chrono::system_clock;

/// One structured log line on stderr, in kilnd's shape:
/// `ts=<UTC ISO 8601> level=info component=kiln-worker pid=N event=E <fields>`.
void Log(const std::string& event, const std::string& fields = "") {
  std::string line = absl::StrCat(
      "ts=", absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone()),
      " level=info component=kiln-worker pid=", getpid(), " event=", event,
      fields.empty() ? "" : " ", fields, "\n");
  std::fputs(line.c_str(), stderr);
}

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out + "\"";
}

Clock::time_point FromUnixMs(int64_t ms) {
  return Clock::time_point(std::chrono::milliseconds(ms));
}

// kilnd files the artifact under the key it sent; an artifact for another key must not reach it.
absl::Status CheckKey(const std::string& task_id, const kiln::v1::CompileTask& task,
                      const kiln::v1::ArtifactKey& got) {
  if (!task.has_key()) return absl::OkStatus();
  const kiln::v1::ArtifactKey& want = task.key();
  auto differs = [](const std::string& a, const std::string& b) { return !a.empty() && a != b; };
  if (differs(want.graph_hash(), got.graph_hash()) ||
      differs(want.target_key(), got.target_key()) ||
      differs(want.compiler_version(), got.compiler_version()) ||
      differs(want.options_hash(), got.options_hash())) {
    return absl::InternalError(
        absl::StrCat("task ", task_id, ": compiled key (", got.graph_hash(), ", ", got.target_key(),
                     ", ", got.compiler_version(), ", ", got.options_hash(),
                     ") differs from kilnd's (", want.graph_hash(), ", ", want.target_key(), ", ",
                     want.compiler_version(), ", ", want.options_hash(), ")"));
  }
  return absl::OkStatus();
}

const char* TaskKindName(const kiln::v1::WorkerTask& task) {
  switch (task.kind_case()) {
    case kiln::v1::WorkerTask::kCompile:
      return "compile";
    case kiln::v1::WorkerTask::kWorkloads:
      return "workloads";
    case kiln::v1::WorkerTask::kBuild:
      return "build";
    case kiln::v1::WorkerTask::kMeasure:
      return "measure";
    default:
      return "unknown";
  }
}

std::string MakeScratchDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "kiln-worker-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) return "/nonexistent/kiln-worker-scratch";
  return pattern;
}

}  // namespace

Worker::Worker(WorkerOptions options) : options_(std::move(options)) {
  grpc::ChannelArguments args;
  // gRPC's own reconnect backoff grows to 120 s by default; keep it within ours so a restarted
  // kilnd is found quickly. Not GRPC_ARG_MIN_RECONNECT_BACKOFF_MS: gRPC also takes it as the
  // minimum connect timeout (default 20 s), and at 100 ms a TLS handshake after a refused
  // connection never finished in time (the worker never reconnected over TLS).
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, static_cast<int>(options_.min_backoff_ms));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, static_cast<int>(options_.max_backoff_ms));
  args.SetMaxReceiveMessageSize(8 << 20);
  channel_ = client::MakeChannel(options_.server, options_.security, args);
  hub_ = kiln::v1::WorkerHub::NewStub(channel_);
  worker_id_ = options_.id;
  scratch_dir_ = MakeScratchDir();
}

Worker::~Worker() {
  Shutdown();
  ReapTasks(/*all=*/true);
  RemoveScratchDir();
}

void Worker::RemoveScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(scratch_dir_, ec);
}

kiln::v1::Worker Worker::Capabilities() const {
  kiln::v1::Worker w;
  w.set_id(worker_id_);
  w.set_slots(options_.slots);
  w.set_pid(static_cast<int32_t>(getpid()));
  if (measures()) {
    kiln::v1::MeasureCapability& m =
        *w.mutable_capabilities()->add_capabilities()->mutable_measure();
    m.set_device_kind(options_.measure_device_kind);
    m.set_device_ordinal(options_.measure_device_ordinal);
    m.set_device_name(options_.measure_device_name);
    m.set_hardware_key(options_.measure_hardware_key);
    m.set_cores(options_.measure_cores);
    return w;
  }
  kiln::v1::CompileCapability& compile =
      *w.mutable_capabilities()->add_capabilities()->mutable_compile();
  compile.add_target_kinds("cpu");   // codegen/llvm: "host" and "cpu:<llvm cpu name>"
  compile.add_target_kinds("cuda");  // NVPTX: "cuda:sm_NN" (PTX, built with no GPU here)
  if (auto host = kiln::ResolveTarget("host"); host.ok()) {
    compile.set_host_cpu(host->cpu);
    compile.set_host_features(host->features);
  }
  return w;
}

void Worker::Shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  stopping_ = true;
  for (auto& [id, task] : tasks_) task->cancelled = true;
  if (context_ != nullptr) context_->TryCancel();
  cv_.notify_all();
}

absl::Status Worker::Run() {
  auto last_registered = std::chrono::steady_clock::now();
  int64_t backoff_ms = options_.min_backoff_ms;
  std::mt19937 rng(static_cast<uint32_t>(getpid()));
  // Bounded in time: each failed round adds a backoff, and give_up_after_ms ends the loop.
  for (int64_t attempt = 1;; ++attempt) {
    bool registered = false;
    absl::Status status = Serve(registered);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) break;
    }
    auto now = std::chrono::steady_clock::now();
    if (registered) {
      last_registered = now;
      backoff_ms = options_.min_backoff_ms;
      Log("disconnected", absl::StrCat("status=", Quote(status.ToString())));
    } else if (attempt == 1 || attempt % 10 == 0) {
      Log("connect_failed", absl::StrCat("server=", options_.server, " attempt=", attempt,
                                         " status=", Quote(status.ToString())));
    }
    auto idle_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(now - last_registered).count();
    if (idle_ms > options_.give_up_after_ms) {
      return absl::UnavailableError(absl::StrCat("no connection to kilnd at ", options_.server,
                                                 " for ", idle_ms, " ms; giving up"));
    }
    int64_t wait_ms = backoff_ms / 2 + static_cast<int64_t>(rng() % (backoff_ms / 2 + 1));
    backoff_ms = std::min(backoff_ms * 2, options_.max_backoff_ms);
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_for(lock, std::chrono::milliseconds(wait_ms), [&] { return stopping_; })) break;
  }
  Log("stopped");
  return absl::OkStatus();
}

bool Worker::WaitForChannel(std::chrono::milliseconds limit) {
  const auto end = std::chrono::system_clock::now() + limit;
  while (std::chrono::system_clock::now() < end) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return false;
    }
    // try_to_connect: leaves IDLE (or a finished backoff) for CONNECTING at once.
    if (channel_->GetState(/*try_to_connect=*/true) == GRPC_CHANNEL_READY) return true;
    channel_->WaitForConnected(
        std::min(end, std::chrono::system_clock::now() + std::chrono::milliseconds(250)));
  }
  return channel_->GetState(false) == GRPC_CHANNEL_READY;
}

absl::Status Worker::Serve(bool& registered) {
  // An RPC on a channel in TRANSIENT_FAILURE fails at once and the channel then waits out its
  // backoff: wait for READY first (a TLS handshake included), up to two backoff periods.
  if (!WaitForChannel(std::chrono::milliseconds(2 * options_.max_backoff_ms))) {
    return absl::UnavailableError(absl::StrCat("cannot connect to kilnd at ", options_.server,
                                               " (channel state ",
                                               static_cast<int>(channel_->GetState(false)), ")"));
  }
  grpc::ClientContext context;
  client::AddCredentials(context, options_.security);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return absl::CancelledError("shutting down");
    context_ = &context;
  }
  std::unique_ptr<Stream> stream = hub_->Connect(&context);
  {
    std::lock_guard<std::mutex> lock(write_mu_);
    stream_ = stream.get();
  }
  kiln::v1::WorkerMessage hello;
  *hello.mutable_register_() = Capabilities();
  Send(hello);
  kiln::v1::HubMessage message;
  if (stream->Read(&message) && message.has_registered()) {
    registered = true;
    if (!message.registered().worker_id().empty()) worker_id_ = message.registered().worker_id();
    int64_t interval_ms = message.registered().heartbeat_interval_ms();
    if (interval_ms <= 0) interval_ms = 5'000;
    Log("registered", absl::StrCat("worker=", Quote(worker_id_), " server=", options_.server,
                                   " slots=", options_.slots, " heartbeat_ms=", interval_ms));
    {
      std::lock_guard<std::mutex> lock(mu_);
      connected_ = true;
    }
    std::thread heartbeat(&Worker::HeartbeatLoop, this, interval_ms);
    // Ends when kilnd closes the stream, the connection breaks, or Shutdown cancels it.
    while (stream->Read(&message)) {
      if (message.has_task()) {
        StartTask(message.task());
      } else if (message.has_cancel()) {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = tasks_.find(message.cancel().task_id());
        if (it != tasks_.end()) it->second->cancelled = true;
        Log("cancel", absl::StrCat("task=", Quote(message.cancel().task_id())));
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      connected_ = false;
      // Without the stream no result can be reported: kilnd requeues these tasks.
      for (auto& [id, task] : tasks_) task->cancelled = true;
      cv_.notify_all();
    }
    heartbeat.join();
  }
  context.TryCancel();
  ReapTasks(/*all=*/true);
  {
    std::lock_guard<std::mutex> lock(write_mu_);
    stream_ = nullptr;
  }
  grpc::Status status = stream->Finish();
  {
    std::lock_guard<std::mutex> lock(mu_);
    context_ = nullptr;
  }
  if (!registered && status.ok()) return absl::UnavailableError("kilnd did not register us");
  return wire::ToAbslStatus(status);
}

bool Worker::Send(const kiln::v1::WorkerMessage& message) {
  std::lock_guard<std::mutex> lock(write_mu_);
  return stream_ != nullptr && stream_->Write(message);
}

int Worker::Busy() {
  int busy = 0;
  for (auto& [id, task] : tasks_) busy += task->done ? 0 : 1;
  return busy;
}

void Worker::HeartbeatLoop(int64_t interval_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  // Bounded by the connection: ends when it drops or on Shutdown.
  while (!stopping_ && connected_) {
    cv_.wait_for(lock, std::chrono::milliseconds(interval_ms));
    if (stopping_ || !connected_) break;
    kiln::v1::WorkerMessage beat;
    beat.mutable_heartbeat()->set_busy(Busy());
    lock.unlock();
    Send(beat);
    lock.lock();
  }
}

void Worker::ReapTasks(bool all) {
  std::map<std::string, std::unique_ptr<Task>> finished;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = tasks_.begin(); it != tasks_.end();) {
      if (all || it->second->done) {
        finished.insert(tasks_.extract(it++));
      } else {
        ++it;
      }
    }
  }
  for (auto& [id, task] : finished) {
    if (task->thread.joinable()) task->thread.join();
  }
}

void Worker::StartTask(const kiln::v1::WorkerTask& task) {
  ReapTasks(/*all=*/false);
  std::string refusal;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (tasks_.count(task.task_id()) != 0) {
      Log("duplicate_task", absl::StrCat("task=", Quote(task.task_id())));
      return;
    }
    if (Busy() >= options_.slots) {
      refusal = absl::StrCat("worker ", worker_id_, " has all ", options_.slots, " slots busy");
    } else {
      auto state = std::make_unique<Task>();
      Task* raw = state.get();
      tasks_[task.task_id()] = std::move(state);
      raw->thread = std::thread(&Worker::RunTask, this, task, std::ref(*raw));
      return;
    }
  }
  kiln::v1::WorkerMessage message;
  message.mutable_result()->set_task_id(task.task_id());
  message.mutable_result()->set_error_code(static_cast<int>(absl::StatusCode::kResourceExhausted));
  message.mutable_result()->set_error_message(refusal);
  message.mutable_result()->set_refused(true);
  Send(message);
}

void Worker::RunTask(const kiln::v1::WorkerTask& task, Task& state) {
  auto start = std::chrono::steady_clock::now();
  Log("task_start",
      absl::StrCat("task=", Quote(task.task_id()), " job=", Quote(task.job_id()),
                   " kind=", TaskKindName(task),
                   task.has_compile()
                       ? absl::StrCat(" model=", task.compile().model_digest().hash().substr(0, 16),
                                      " target=", Quote(task.compile().target()))
                       : ""));
  auto deadline =
      task.deadline_unix_ms() > 0 ? FromUnixMs(task.deadline_unix_ms()) : Clock::time_point::max();
  // Between stages: a cancelled or expired task stops (a running compile cannot be interrupted).
  auto check = [&]() -> absl::Status {
    if (state.cancelled) {
      return absl::CancelledError(absl::StrCat("task ", task.task_id(), " cancelled"));
    }
    if (Clock::now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("task ", task.task_id(), " passed its deadline"));
    }
    return absl::OkStatus();
  };
  kiln::v1::TaskResult result;
  result.set_task_id(task.task_id());
  absl::Status status;
  const bool measure_task = task.kind_case() == kiln::v1::WorkerTask::kMeasure;
  if (task.kind_case() == kiln::v1::WorkerTask::KIND_NOT_SET) {
    status = absl::UnimplementedError(
        absl::StrCat("task ", task.task_id(), ": a task kind this worker does not know"));
  } else if (measures() != measure_task) {
    status = absl::UnimplementedError(absl::StrCat(
        "task ", task.task_id(), ": this is a ", measures() ? "measure" : "compile",
        " worker; it does not run ", TaskKindName(task), " tasks"));
  } else if (task.kind_case() == kiln::v1::WorkerTask::kCompile) {
    kiln::v1::CompileResult compiled;
    status = RunCompile(task, deadline, check, compiled);
    if (status.ok()) *result.mutable_compile() = std::move(compiled);
  } else {
    status = RunTuneStep(task, deadline, check, result);
  }
  result.set_error_code(static_cast<int>(status.code()));
  result.set_error_message(std::string(status.message()));
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  Log("task_end",
      absl::StrCat(
          "task=", Quote(task.task_id()), " code=", absl::StatusCodeToString(status.code()),
          " ms=", static_cast<int64_t>(ms),
          !status.ok() ? absl::StrCat(" error=", Quote(std::string(status.message())))
          : result.has_compile()
              ? absl::StrCat(" artifact=", result.compile().artifact_digest().hash().substr(0, 16))
              : ""));
  kiln::v1::WorkerMessage message;
  *message.mutable_result() = std::move(result);
  Send(message);
  state.done = true;
}

absl::Status Worker::RunCompile(const kiln::v1::WorkerTask& task, Clock::time_point deadline,
                                const std::function<absl::Status()>& check,
                                kiln::v1::CompileResult& result) {
  const kiln::v1::CompileTask& compile = task.compile();
  auto transfer_deadline = [&] {
    return std::min(deadline,
                    Clock::now() + std::chrono::milliseconds(options_.transfer_timeout_ms));
  };
  KILN_RETURN_IF_ERROR(check());
  KILN_ASSIGN_OR_RETURN(std::string model, FetchModel(*hub_, options_.security,
                                                      compile.model_digest(), transfer_deadline()));
  KILN_RETURN_IF_ERROR(check());
  KILN_ASSIGN_OR_RETURN(
      CompiledArtifact compiled,
      CompileInChild(model, compile.target(), compile.options(), options_.compile_sandbox,
                     absl::FromChrono(deadline - Clock::now())));
  KILN_RETURN_IF_ERROR(check());
  KILN_RETURN_IF_ERROR(CheckKey(task.task_id(), compile, compiled.key));
  KILN_ASSIGN_OR_RETURN(
      kiln::v1::Digest digest,
      UploadArtifact(*hub_, options_.security, compiled.bytes, transfer_deadline()));
  *result.mutable_artifact_digest() = digest;
  *result.mutable_key() = compiled.key;
  result.set_compile_ms(compiled.compile_ms);
  for (const std::string& w : compiled.workload_keys) result.add_workload_keys(w);
  return absl::OkStatus();
}

absl::Status Worker::RunTuneStep(const kiln::v1::WorkerTask& task, Clock::time_point deadline,
                                 const std::function<absl::Status()>& check,
                                 kiln::v1::TaskResult& result) {
  KILN_RETURN_IF_ERROR(check());
  switch (task.kind_case()) {
    case kiln::v1::WorkerTask::kWorkloads: {
      const auto transfer_deadline =
          std::min(deadline, Clock::now() + std::chrono::milliseconds(options_.transfer_timeout_ms));
      KILN_ASSIGN_OR_RETURN(
          std::string model,
          FetchModel(*hub_, options_.security, task.workloads().model_digest(), transfer_deadline));
      KILN_RETURN_IF_ERROR(check());
      KILN_ASSIGN_OR_RETURN(*result.mutable_workloads(),
                            ListWorkloadsInChild(model, task.workloads(), options_.compile_sandbox,
                                                 absl::FromChrono(deadline - Clock::now())));
      return absl::OkStatus();
    }
    case kiln::v1::WorkerTask::kBuild: {
      KILN_ASSIGN_OR_RETURN(
          *result.mutable_build(),
          BuildBatchInChild(task.build(), options_.build_faults, options_.compile_sandbox,
                            absl::FromChrono(deadline - Clock::now())));
      return absl::OkStatus();
    }
    case kiln::v1::WorkerTask::kMeasure: {
      KILN_ASSIGN_OR_RETURN(*result.mutable_measure(),
                            MeasureBatch(task.measure(), options_.measure_hardware_key,
                                         options_.measure_cores, options_.measure_device_ordinal));
      return absl::OkStatus();
    }
    default:
      return absl::UnimplementedError(absl::StrCat("task ", task.task_id(), ": not a tune step"));
  }
}

}  // namespace kiln::workers
