// The kind-independent description of a job as the job queue, the worker registry and the job
// handlers pass it around: what to run (JobSpec, with a handler-owned payload), what it
// produced (JobResult) and how waiters and watchers hear of it.
#ifndef KILN_SERVER_JOB_H_
#define KILN_SERVER_JOB_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "kiln/v1/service.pb.h"
#include "server/cache/storage.h"

namespace kiln::server {

/// The typed request of one job kind (e.g. CompileJob). Only the kind's handler looks inside.
class JobPayload {
 public:
  virtual ~JobPayload() = default;
};

/// A job to run, as the queue sees it. Built by the kind's code (e.g. CompileJobSpec).
struct JobSpec {
  cache::JobKind kind = cache::JobKind::kCompile;
  /// Single-flight key, chosen by the kind: two live jobs of one kind with equal keys are one
  /// job (compile: the full artifact key).
  std::string dedup_key;
  /// INTERACTIVE or BATCH (never UNSPECIFIED).
  v1::Priority priority = v1::INTERACTIVE;
  /// The model blob the job reads, pinned against eviction while the job is live; may be empty.
  std::string model_digest;
  /// The serialized request the job record persists: enough to prepare the job again after a
  /// restart (recovery.cc).
  std::string request;
  /// The principal that submitted the job (auth::Principal::id; empty without authentication),
  /// persisted as the job record's owner: watching or cancelling another's job needs `admin`.
  std::string owner;
  /// Short key=value fields for the job.queued log line (e.g. "target=host").
  std::string log_summary;
  /// The kind's typed request; never null for a job that runs.
  std::shared_ptr<const JobPayload> payload;
};

/// The payload of a kind whose typed request is a `T` (CompileSpec, TuneSpec, a step's task).
template <typename T>
class TypedPayload final : public JobPayload {
 public:
  explicit TypedPayload(T value) : value(std::move(value)) {}
  const T value;
};

template <typename T>
std::shared_ptr<const JobPayload> MakePayload(T value) {
  return std::make_shared<const TypedPayload<T>>(std::move(value));
}

/// `job`'s payload as the `T` MakePayload made it from. Precondition: it was made so.
template <typename T>
const T& PayloadAs(const JobSpec& job) {
  return static_cast<const TypedPayload<T>&>(*job.payload).value;
}

/// What a finished job produced, rendered by its handler; opaque to the queue.
struct JobResult {
  /// The kind's result fields of the job's final event (a compile sets `result`); the queue sets
  /// job_id, state, message and time.
  v1::JobEvent event;
  /// Stored as the job record's result (JobHandler::DescribeResult reads it back).
  std::string persisted;
  /// Time the worker spent on the job's task, for the metrics of the kind.
  double work_seconds = 0;
  /// The worker's result itself, for waiters of kinds whose result is too big to persist (the
  /// built code of a build step); in memory only.
  std::shared_ptr<const v1::TaskResult> task_result;
  /// The worker that ran the job's task (step kinds).
  std::string worker;
};

/// What a waiter of a job receives: OK with the job's result, or the job's error.
struct JobOutcome {
  absl::Status status;
  JobResult result;
};
using JobCallback = std::function<void(const JobOutcome&)>;
/// A watch event; `last` is true for the final one (terminal state, or kilnd shutting down).
using JobEventCallback = std::function<void(const v1::JobEvent& event, bool last)>;

/// Identifies one waiter of one job.
struct Ticket {
  std::string job_id;
  uint64_t waiter = 0;  // 0: no waiter registered (no callback given)
  bool joined = false;  // an identical live job existed; this request joined it
};

}  // namespace kiln::server

#endif  // KILN_SERVER_JOB_H_
