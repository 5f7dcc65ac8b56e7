// RunStep and RemoteMeasurer.
#include "server/remote_measurer.h"

#include <condition_variable>
#include <mutex>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/tuning/measure_proto.h"
#include "server/compile_handler.h"
#include "server/step_handler.h"

namespace kiln::server {

absl::StatusOr<StepOutcome> RunStep(Scheduler& scheduler, const JobSpec& step,
                                    const std::function<bool(const v1::WorkerCapabilities&)>& can_run,
                                    const std::atomic<bool>* stop, const StepWaitOptions& wait) {
  struct Waiter {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<JobOutcome> outcome;
  };
  auto waiter = std::make_shared<Waiter>();
  absl::StatusOr<Ticket> ticket = scheduler.Submit(
      step, absl::Now() + wait.deadline, /*detached=*/false, [waiter](const JobOutcome& o) {
        std::lock_guard<std::mutex> lock(waiter->mu);
        waiter->outcome = o;
        waiter->cv.notify_all();
      });
  if (!ticket.ok()) return ticket.status();
  absl::Time last_seen = absl::Now();
  std::unique_lock<std::mutex> lock(waiter->mu);
  while (!waiter->outcome.has_value()) {
    waiter->cv.wait_for(lock, absl::ToChronoMilliseconds(wait.poll));
    if (waiter->outcome.has_value()) break;
    absl::Status give_up;
    if (stop != nullptr && stop->load()) {
      give_up = absl::CancelledError("the tune job was stopped");
    } else if (scheduler.HasWorker(can_run)) {
      last_seen = absl::Now();
    } else if (absl::Now() - last_seen > wait.worker_grace) {
      give_up = absl::UnavailableError(absl::StrCat(
          "no worker that can run the ", std::string(cache::JobKindName(step.kind)),
          " step has been connected for ", absl::FormatDuration(wait.worker_grace)));
    }
    if (!give_up.ok()) {
      lock.unlock();
      scheduler.Abandon(*ticket);  // not detached: the step job is cancelled
      return give_up;
    }
  }
  if (!waiter->outcome->status.ok()) return waiter->outcome->status;
  const JobResult& result = waiter->outcome->result;
  if (result.task_result == nullptr) {
    return absl::InternalError("a step job ended without its worker's result");
  }
  return StepOutcome{*result.task_result, result.worker};
}

absl::StatusOr<tuning::BatchMeasurement> RemoteMeasurer::Measure(
    const loop::Func& lowered, const std::vector<schedule::Schedule>& candidates) {
  const int step = ++steps_;
  v1::WorkerTask build;
  build.mutable_build()->set_workload(loop::PrintFunc(lowered));
  build.mutable_build()->set_target(config_.target);
  build.mutable_build()->set_target_key(config_.target_key);
  for (const schedule::Schedule& s : candidates) build.mutable_build()->add_schedules(s.ToString());
  const std::string name = absl::StrCat(config_.job_id, "/", step);
  absl::StatusOr<StepOutcome> built = RunStep(
      *config_.scheduler,
      StepJobSpec(cache::JobKind::kBuild, build, absl::StrCat("build|", name), "",
                  absl::StrCat("tune=", config_.job_id, " step=", step, " candidates=",
                               candidates.size())),
      [&](const v1::WorkerCapabilities& c) {
        return CompilesFor(c, config_.target, config_.host_cpu);
      },
      config_.stop, config_.wait);
  if (!built.ok()) return built.status();
  if (!built->result.has_build()) {
    return absl::InternalError(absl::StrCat("build step ", name, " returned no batch"));
  }

  v1::WorkerTask measure;
  *measure.mutable_measure()->mutable_batch() =
      std::move(*built->result.mutable_build()->mutable_batch());
  *measure.mutable_measure()->mutable_options() = tuning::MeasureOptionsToProto(config_.measure);
  measure.mutable_measure()->set_hardware_key(config_.hardware_key);
  absl::StatusOr<StepOutcome> measured = RunStep(
      *config_.scheduler,
      StepJobSpec(cache::JobKind::kMeasure, measure, absl::StrCat("measure|", name), "",
                  absl::StrCat("tune=", config_.job_id, " step=", step)),
      [&](const v1::WorkerCapabilities& c) { return MeasuresOn(c, config_.hardware_key); },
      config_.stop, config_.wait);
  if (!measured.ok()) return measured.status();
  if (!measured->result.has_measure()) {
    return absl::InternalError(absl::StrCat("measure step ", name, " returned no measurement"));
  }
  const v1::BatchMeasurement& m = measured->result.measure().measurement();
  if (m.candidates_size() != static_cast<int>(candidates.size())) {
    return absl::InternalError(absl::StrCat("measure step ", name, " measured ",
                                            m.candidates_size(), " candidates of ",
                                            candidates.size()));
  }
  worker_ = measured->worker;
  return tuning::MeasurementFromProto(m);
}

}  // namespace kiln::server
