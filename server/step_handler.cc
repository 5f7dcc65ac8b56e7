// Step jobs of tune jobs: specs, eligibility and results.
#include "server/step_handler.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "server/compile_handler.h"

namespace kiln::server {
namespace {

/// A step job's payload: its worker task, kind member set.
const v1::WorkerTask& TaskOf(const JobSpec& job) { return PayloadAs<v1::WorkerTask>(job); }

}  // namespace

JobSpec StepJobSpec(cache::JobKind kind, const v1::WorkerTask& task, std::string dedup_key,
                    std::string model_digest, std::string log_summary) {
  JobSpec job;
  job.kind = kind;
  job.dedup_key = std::move(dedup_key);
  job.priority = v1::BATCH;
  job.model_digest = std::move(model_digest);
  job.request = log_summary;
  job.log_summary = std::move(log_summary);
  job.payload = MakePayload(task);
  return job;
}

bool MeasuresOn(const v1::WorkerCapabilities& capabilities, const std::string& hardware_key) {
  for (const v1::Capability& c : capabilities.capabilities()) {
    if (c.has_measure() && c.measure().hardware_key() == hardware_key) return true;
  }
  return false;
}

bool StepHandler::CanRun(const JobSpec& job, const v1::WorkerCapabilities& capabilities) const {
  const v1::WorkerTask& task = TaskOf(job);
  switch (task.kind_case()) {
    case v1::WorkerTask::kWorkloads:
      return CompilesFor(capabilities, task.workloads().target(), host_cpu_);
    case v1::WorkerTask::kBuild:
      return CompilesFor(capabilities, task.build().target(), host_cpu_);
    case v1::WorkerTask::kMeasure:
      return MeasuresOn(capabilities, task.measure().hardware_key());
    default:
      return false;
  }
}

void StepHandler::BuildTask(const JobSpec& job, v1::WorkerTask& task) const {
  const v1::WorkerTask& step = TaskOf(job);
  switch (step.kind_case()) {
    case v1::WorkerTask::kWorkloads:
      *task.mutable_workloads() = step.workloads();
      break;
    case v1::WorkerTask::kBuild:
      *task.mutable_build() = step.build();
      break;
    case v1::WorkerTask::kMeasure:
      *task.mutable_measure() = step.measure();
      break;
    default:
      break;
  }
}

absl::StatusOr<JobResult> StepHandler::TaskSucceeded(const JobSpec& job,
                                                     const std::string& job_id,
                                                     const std::string& worker_id,
                                                     const v1::TaskResult& result) {
  (void)job_id;
  // The result kinds mirror the task kinds (same field numbers in both oneofs).
  if (static_cast<int>(result.kind_case()) != static_cast<int>(TaskOf(job).kind_case())) {
    return absl::InternalError(absl::StrCat("worker ", worker_id, " answered ",
                                            std::string(cache::JobKindName(kind_)), " task ",
                                            result.task_id(), " with another kind of result"));
  }
  JobResult done;
  done.persisted = absl::StrCat(std::string(cache::JobKindName(kind_)), " by ", worker_id);
  done.task_result = std::make_shared<const v1::TaskResult>(result);
  done.worker = worker_id;
  return done;
}

}  // namespace kiln::server
