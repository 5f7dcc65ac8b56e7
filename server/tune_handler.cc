// Tune jobs: request validation, the job spec, and the tune run inside kilnd.
#include "server/tune_handler.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "compiler_core/ir/loop/parser.h"
#include "compiler_core/pipeline/compiler_version.h"
#include "compiler_core/schedule/schedule.h"
#include "compiler_core/support/status_macros.h"
#include "compiler_core/tuning/hardware.h"
#include "compiler_core/tuning/records.h"
#include "compiler_core/tuning/search.h"
#include "compiler_core/tuning/workload.h"
#include "server/artifact_key.h"
#include "server/log.h"
#include "server/scheduler.h"
#include "server/step_handler.h"
#include "server/tuning_records.h"

namespace kiln::server {
namespace {

constexpr int64_t kMaxTrials = 100000;

/// The request a tune job record persists (the model by digest).
v1::TuneRequest RequestOf(const TuneSpec& spec) {
  v1::TuneRequest r;
  r.mutable_model_digest()->set_hash(spec.compile.model_digest);
  r.mutable_model_digest()->set_size_bytes(spec.compile.model_size_bytes);
  r.set_target(spec.compile.target);
  *r.mutable_options() = spec.compile.options;
  r.set_trials(spec.trials);
  r.set_time_budget_s(spec.time_budget_s);
  r.set_seed(spec.seed);
  r.set_hardware_key(spec.hardware_key);
  r.set_random(spec.random);
  return r;
}

/// The progress message of the search's state, as the watchers get it.
v1::TuneProgress ProgressToProto(const tuning::SearchProgress& p,
                                 const std::vector<tuning::TuneTask>& tasks,
                                 const std::string& hardware_key, double elapsed_s,
                                 int records_written) {
  v1::TuneProgress out;
  out.set_hardware_key(hardware_key);
  out.set_round(p.round);
  out.set_trials(p.trials);
  out.set_trial_budget(p.trial_budget);
  out.set_current_workload(p.current_task);
  for (size_t i = 0; i < tasks.size(); ++i) {
    v1::TuneWorkload& w = *out.add_workloads();
    w.set_workload_key(tasks[i].workload_key);
    w.set_fused_ops(tasks[i].fused_ops);
    w.set_weight(tasks[i].weight);
    w.set_flops(tasks[i].flops);
    if (i < p.tasks.size()) {
      w.set_default_ms(p.tasks[i].default_ms);
      w.set_best_ms(p.tasks[i].best_ms);
      w.set_trials(p.tasks[i].trials);
      w.set_stopped(p.tasks[i].stopped);
    }
  }
  out.set_estimated_ms(p.estimated_ms);
  out.set_default_estimated_ms(p.default_estimated_ms);
  out.set_elapsed_s(elapsed_s);
  out.set_records_written(records_written);
  return out;
}

/// A workload as the worker listed it, parsed and checked against its key.
absl::StatusOr<tuning::TuneTask> TaskOf(const v1::Workload& w) {
  absl::StatusOr<loop::Func> lowered = loop::ParseFunc(w.loop_ir());
  if (!lowered.ok()) {
    return absl::InternalError(absl::StrCat("the worker listed workload ", w.workload_key(),
                                            " with loop IR that does not parse: ",
                                            lowered.status().message()));
  }
  if (tuning::WorkloadKey(*lowered) != w.workload_key()) {
    return absl::InternalError(absl::StrCat("the worker listed workload ", w.workload_key(),
                                            " but its loop IR has key ",
                                            tuning::WorkloadKey(*lowered)));
  }
  tuning::TuneTask t;
  t.workload_key = w.workload_key();
  t.lowered = *std::move(lowered);
  t.fused_ops = w.fused_ops();
  t.weight = std::max(1, w.weight());
  t.flops = w.flops();
  return t;
}

}  // namespace

absl::StatusOr<TuneSpec> PrepareTune(CompilePreparer& preparer, const v1::TuneRequest& request) {
  if (request.trials() < 0 || request.trials() > kMaxTrials) {
    return absl::InvalidArgumentError(
        absl::StrCat("trials must be in 0..", kMaxTrials, " (0: 64), not ", request.trials()));
  }
  if (!(request.time_budget_s() >= 0)) {
    return absl::InvalidArgumentError("time_budget_s must be >= 0 (0: no limit)");
  }
  v1::CompileRequest compile;
  switch (request.model_case()) {
    case v1::TuneRequest::kModelDigest:
      *compile.mutable_model_digest() = request.model_digest();
      break;
    case v1::TuneRequest::kInlineModel:
      compile.set_inline_model(request.inline_model());
      break;
    default:
      break;  // Prepare names the missing model
  }
  compile.set_target(request.target());
  *compile.mutable_options() = request.options();
  compile.mutable_options()->clear_records();
  compile.mutable_options()->clear_hardware_key();
  compile.mutable_options()->set_untuned(true);
  compile.set_priority(v1::BATCH);
  TuneSpec spec;
  KILN_ASSIGN_OR_RETURN(spec.compile, preparer.Prepare(compile, v1::BATCH));
  spec.trials = request.trials() > 0 ? request.trials() : 64;
  spec.time_budget_s = request.time_budget_s();
  spec.seed = request.seed() != 0 ? request.seed() : 1;
  spec.random = request.random();
  spec.hardware_key = request.hardware_key();
  if (!spec.hardware_key.empty()) {
    absl::StatusOr<tuning::HardwareInfo> hw = tuning::ParseHardwareKey(spec.hardware_key);
    if (!hw.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("hardware key '", spec.hardware_key, "': ", hw.status().message()));
    }
    if (hw->target_key != spec.compile.key.target_key) {
      return absl::InvalidArgumentError(absl::StrCat(
          "hardware key '", spec.hardware_key, "' is for target ", hw->target_key,
          ", but the tune's target resolves to ", spec.compile.key.target_key));
    }
  }
  return spec;
}

JobSpec TuneJobSpec(const TuneSpec& spec) {
  JobSpec job;
  job.kind = cache::JobKind::kTune;
  job.dedup_key = absl::StrCat("tune|", KeyString(spec.compile.key), "|", spec.hardware_key, "|",
                               spec.trials, "|", spec.time_budget_s, "|", spec.seed, "|",
                               spec.random ? "random" : "model");
  job.priority = v1::BATCH;
  job.model_digest = spec.compile.model_digest;
  job.request = RequestOf(spec).SerializeAsString();
  job.log_summary = absl::StrCat("target=", spec.compile.target, " trials=", spec.trials,
                                 " graph_hash=", spec.compile.key.graph_hash.substr(0, 12));
  job.payload = MakePayload(spec);
  return job;
}

const TuneSpec& TuneSpecOf(const JobSpec& job) {
  return PayloadAs<TuneSpec>(job);
}

TuneHandler::~TuneHandler() { StopAll(); }

void TuneHandler::StopAll() {
  std::vector<std::unique_ptr<Run>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all = std::move(runs_);
    runs_.clear();
  }
  for (auto& run : all) {
    run->stop = true;
    run->thread.join();
  }
}

void TuneHandler::ReapDone() {
  for (auto it = runs_.begin(); it != runs_.end();) {
    if ((*it)->done) {
      (*it)->thread.join();
      it = runs_.erase(it);
    } else {
      ++it;
    }
  }
}

void TuneHandler::Start(const std::string& job_id, const std::string& run_id,
                        const JobSpec& job) {
  std::lock_guard<std::mutex> lock(mu_);
  ReapDone();
  for (auto& run : runs_) {
    if (run->job_id == job_id) run->stop = true;  // an older run of the same job: it ends soon
  }
  auto run = std::make_unique<Run>();
  Run* r = run.get();
  r->job_id = job_id;
  const TuneSpec spec = TuneSpecOf(job);
  r->thread = std::thread([this, job_id, run_id, spec, r] {
    RunTune(job_id, run_id, spec, r->stop);
    r->done = true;
  });
  runs_.push_back(std::move(run));
}

void TuneHandler::Stop(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& run : runs_) {
    if (run->job_id == job_id) run->stop = true;
  }
}

void TuneHandler::DescribeResult(const std::string& persisted, v1::JobEvent& event) const {
  event.mutable_tune_result()->ParseFromString(persisted);
}

void TuneHandler::RunTune(const std::string& job_id, const std::string& run_id,
                          const TuneSpec& spec, const std::atomic<bool>& stop) {
  int written = 0;
  absl::StatusOr<v1::TuneResult> tuned = Tune(job_id, spec, stop, &written);
  JobResult result;
  absl::Status status = tuned.status();
  if (tuned.ok()) {
    *result.event.mutable_tune_result() = *tuned;
    result.persisted = tuned->SerializeAsString();
    result.work_seconds = tuned->progress().elapsed_s();
  } else if (written > 0) {
    status = absl::Status(status.code(),
                          absl::StrCat(status.message(), " (the ", written,
                                       " tuning records measured before are kept)"));
  }
  LogInfo("tune.end", {{"job", job_id}, {"status", status}, {"records", written}});
  scheduler_->FinishInProcess(job_id, run_id, status, result);
}

absl::StatusOr<v1::TuneResult> TuneHandler::Tune(const std::string& job_id, const TuneSpec& spec,
                                                 const std::atomic<bool>& stop,
                                                 int* records_written) {
  Scheduler& scheduler = *scheduler_;
  const CompileSpec& c = spec.compile;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed_s = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };

  // 1. The model's workloads, from a compile worker.
  scheduler.Progress(job_id, "listing the model's workloads");
  v1::WorkerTask list;
  v1::WorkloadsTask& w = *list.mutable_workloads();
  w.mutable_model_digest()->set_hash(c.model_digest);
  w.mutable_model_digest()->set_size_bytes(c.model_size_bytes);
  w.set_target(c.target);
  *w.mutable_options() = c.options;
  w.set_target_key(c.key.target_key);
  auto compiles = [&](const v1::WorkerCapabilities& caps) {
    return CompilesFor(caps, c.target, options_.host_cpu);
  };
  KILN_ASSIGN_OR_RETURN(
      StepOutcome listed,
      RunStep(scheduler,
              StepJobSpec(cache::JobKind::kWorkloads, list, absl::StrCat("workloads|", job_id),
                          c.model_digest, absl::StrCat("tune=", job_id)),
              compiles, &stop, options_.wait));
  if (!listed.result.has_workloads()) {
    return absl::InternalError("the workloads step returned no workloads");
  }
  std::vector<tuning::TuneTask> tasks;
  for (const v1::Workload& workload : listed.result.workloads().workloads()) {
    KILN_ASSIGN_OR_RETURN(tuning::TuneTask t, TaskOf(workload));
    tasks.push_back(std::move(t));
  }
  if (tasks.empty()) return absl::InvalidArgumentError("the model has no kernels to tune");
  {
    std::vector<std::string> keys;
    for (const tuning::TuneTask& t : tasks) keys.push_back(t.workload_key);
    absl::Status put = options_.storage->PutModelWorkloads(
        c.key.graph_hash, c.key.target_key, WorkloadOptionsHash(c.options), keys);
    if (!put.ok()) LogWarning("tune.workloads_not_stored", {{"job", job_id}, {"status", put}});
  }

  // 2. The hardware: a measure worker of the target.
  std::string hardware_key;
  const absl::Time wait_until = absl::Now() + options_.measure_worker_wait;
  for (bool told = false; hardware_key.empty();) {
    std::vector<std::string> keys;
    for (const v1::Worker& worker : scheduler.ListWorkers()) {
      for (const v1::Capability& cap : worker.capabilities().capabilities()) {
        if (!cap.has_measure()) continue;
        const std::string& key = cap.measure().hardware_key();
        if (spec.hardware_key.empty() ? absl::StartsWith(key, c.key.target_key + "|")
                                      : key == spec.hardware_key) {
          keys.push_back(key);
        }
      }
    }
    if (!keys.empty()) {
      hardware_key = *std::min_element(keys.begin(), keys.end());
      break;
    }
    if (stop) return absl::CancelledError("the tune was stopped");
    if (absl::Now() > wait_until) {
      // "cpu:znver4" of the target key: its feature list is a thousand characters.
      const std::string short_target =
          c.key.target_key.substr(0, c.key.target_key.find(':', c.key.target_key.find(':') + 1));
      return absl::FailedPreconditionError(absl::StrCat(
          "no measure worker for ",
          spec.hardware_key.empty()
              ? absl::StrCat("target ", short_target, " ('", c.target, "')")
              : absl::StrCat("hardware key ", spec.hardware_key),
          " is connected (waited ", absl::FormatDuration(options_.measure_worker_wait),
          "): start one on that machine with `kiln-worker --connect <this kilnd> --measure cpu`, "
          "or `kilnd --measure-workers N` here"));
    }
    if (!told) {
      scheduler.Progress(job_id, "waiting for a measure worker");
      told = true;
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
  KILN_ASSIGN_OR_RETURN(tuning::HardwareInfo hw, tuning::ParseHardwareKey(hardware_key));
  KILN_ASSIGN_OR_RETURN(Target target, options_.targets->Resolve(c.target));

  // 3. Seeds from similar hardware, and the cost model learned on this hardware so far.
  KILN_ASSIGN_OR_RETURN(std::vector<v1::TuningRecord> stored,
                        options_.storage->ListTuningRecords(""));
  tuning::RecordSet known;
  for (v1::TuningRecord& r : stored) known.Add(std::move(r)).IgnoreError();
  for (tuning::TuneTask& t : tasks) {
    if (known.Best(t.workload_key, hardware_key) != nullptr) continue;
    const std::string default_schedule = schedule::DefaultSchedule(t.lowered, target).ToString();
    for (const v1::TuningRecord* r : known.Nearest(t.workload_key, hw, 2, default_schedule)) {
      t.seeds.push_back({r->schedule(), r->hardware_key()});
    }
  }
  tuning::SearchOptions search;
  search.trials = spec.trials;
  search.time_budget_s = spec.time_budget_s;
  search.seed = spec.seed;
  search.use_cost_model = !spec.random;
  if (search.use_cost_model) {
    KILN_ASSIGN_OR_RETURN(std::optional<std::string> model,
                          options_.storage->GetCostModel(hardware_key));
    if (model.has_value()) search.initial_model = *std::move(model);
  }
  LogInfo("tune.start", {{"job", job_id},
                         {"workloads", static_cast<int>(tasks.size())},
                         {"hardware_key", hardware_key},
                         {"trials", spec.trials},
                         {"warm_model", !search.initial_model.empty()}});

  // 4. The search, measured through the workers; every round's records filed at once.
  const int threads = std::max(1, hw.compute_units);
  RemoteMeasurer::Config mc;
  mc.scheduler = &scheduler;
  mc.job_id = job_id;
  mc.target = c.target;
  mc.target_key = c.key.target_key;
  mc.host_cpu = options_.host_cpu;
  mc.hardware_key = hardware_key;
  mc.measure = options_.measure;
  mc.measure.num_threads = threads;
  if (mc.measure.cache_flush_bytes < 0) {
    mc.measure.cache_flush_bytes = tuning::CacheFlushBytesFor(hw);
  }
  mc.wait = options_.wait;
  mc.stop = &stop;
  RemoteMeasurer measurer(mc);
  absl::Status filing;
  auto on_progress = [&](const tuning::SearchProgress& p) {
    if (!p.new_records.empty()) {
      filing = options_.storage->PutTuningRecords(p.new_records);
      if (!filing.ok()) return false;
      *records_written += static_cast<int>(p.new_records.size());
    }
    v1::JobEvent fields;
    *fields.mutable_tune_progress() =
        ProgressToProto(p, tasks, hardware_key, elapsed_s(), *records_written);
    const tuning::TaskProgress& t = p.tasks[p.current_task];
    scheduler.Progress(
        job_id,
        absl::StrFormat("trial %d/%d, workload %d/%d: best %.4f ms (default %.4f); model "
                        "%.3f ms (default %.3f)",
                        p.trials, p.trial_budget, p.current_task + 1, p.tasks.size(), t.best_ms,
                        t.default_ms, p.estimated_ms, p.default_estimated_ms),
        &fields);
    return !stop.load();
  };
  absl::StatusOr<tuning::SearchResult> result =
      tuning::TuneTasks(tasks, target, measurer, tuning::FeatureContextFor(hw, target, threads),
                        search, on_progress, pipeline::kCompilerVersion);
  if (!filing.ok()) {
    return absl::Status(filing.code(),
                        absl::StrCat("filing tuning records: ", filing.message()));
  }
  if (!result.ok()) return result.status();
  if (!result->model.empty()) {
    absl::Status saved = options_.storage->PutCostModel(hardware_key, result->model);
    if (!saved.ok()) LogWarning("tune.cost_model_not_saved", {{"job", job_id}, {"status", saved}});
  }
  if (result->cancelled) return absl::CancelledError("the tune was stopped");
  v1::TuneResult out;
  *out.mutable_progress() =
      ProgressToProto(result->progress, tasks, hardware_key, elapsed_s(), *records_written);
  out.set_model_digest(c.model_digest);
  out.set_target_key(c.key.target_key);
  out.set_stopped_by_time(spec.time_budget_s > 0 && result->progress.trials < spec.trials &&
                          elapsed_s() >= spec.time_budget_s);
  return out;
}

}  // namespace kiln::server
