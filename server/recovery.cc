// Re-queues persisted live jobs at startup.
#include "server/recovery.h"

#include "absl/strings/str_cat.h"
#include "compiler_core/support/status_macros.h"
#include "server/compile_handler.h"
#include "server/log.h"
#include "server/tune_handler.h"

namespace kiln::server {
namespace {

/// The compile spec of a persisted job, validated again (the model may have been evicted).
absl::StatusOr<CompileSpec> PrepareAgain(const cache::JobRecord& record,
                                         CompilePreparer* preparer) {
  if (record.kind != cache::JobKind::kCompile) {
    return absl::UnimplementedError(absl::StrCat(
        "this kilnd cannot run ", std::string(cache::JobKindName(record.kind)), " jobs"));
  }
  v1::CompileRequest request;
  if (!request.ParseFromString(record.request)) {
    return absl::InternalError("the persisted request cannot be parsed");
  }
  return preparer->Prepare(request, v1::BATCH);
}

/// The job of a persisted tune job, validated again.
absl::StatusOr<JobSpec> PrepareTuneAgain(const cache::JobRecord& record,
                                         CompilePreparer* preparer) {
  v1::TuneRequest request;
  if (!request.ParseFromString(record.request)) {
    return absl::InternalError("the persisted request cannot be parsed");
  }
  KILN_ASSIGN_OR_RETURN(TuneSpec spec, PrepareTune(*preparer, request));
  return TuneJobSpec(spec);
}

absl::Status FailOnRecovery(cache::Storage* storage, const cache::JobRecord& record,
                            const absl::Status& why) {
  cache::JobUpdate update;
  update.state = cache::JobState::kFailed;
  update.error = absl::Status(why.code(), absl::StrCat("cannot resume after a restart: ",
                                                       why.message()));
  KILN_ASSIGN_OR_RETURN(cache::JobRecord updated, storage->UpdateJob(record.id, update));
  (void)updated;
  LogWarning("job.recovery_failed", {{"job", record.id}, {"status", why}});
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RecoveryCounts> RecoverJobs(cache::Storage* storage, CompilePreparer* preparer,
                                           Scheduler* scheduler) {
  RecoveryCounts counts;
  std::vector<cache::JobRecord> live;
  for (cache::JobState state : {cache::JobState::kRunning, cache::JobState::kQueued}) {
    KILN_ASSIGN_OR_RETURN(std::vector<cache::JobRecord> jobs, storage->JobsInState(state));
    live.insert(live.end(), jobs.begin(), jobs.end());
  }
  for (const cache::JobRecord& record : live) {
    if (record.kind == cache::JobKind::kTune) {
      // Tuned again from the start; what it measured before is in the store already.
      absl::StatusOr<JobSpec> tune = PrepareTuneAgain(record, preparer);
      if (!tune.ok()) {
        KILN_RETURN_IF_ERROR(FailOnRecovery(storage, record, tune.status()));
        ++counts.failed;
        continue;
      }
      KILN_RETURN_IF_ERROR(scheduler->Restore(record, *tune));
      ++counts.requeued;
      continue;
    }
    if (record.kind != cache::JobKind::kCompile) {
      // A tune job's step: its tune job starts its steps afresh.
      KILN_RETURN_IF_ERROR(FailOnRecovery(
          storage, record,
          absl::AbortedError("a step of a tune job, which runs its steps again when it resumes")));
      ++counts.failed;
      continue;
    }
    absl::StatusOr<CompileSpec> spec = PrepareAgain(record, preparer);
    if (!spec.ok()) {
      KILN_RETURN_IF_ERROR(FailOnRecovery(storage, record, spec.status()));
      ++counts.failed;
      continue;
    }
    KILN_ASSIGN_OR_RETURN(std::optional<cache::ArtifactEntry> entry,
                          storage->LookupArtifact(spec->key));
    if (entry.has_value()) {
      v1::CompileResponse result = CachedCompileResponse(spec->key, *entry);
      result.set_job_id(record.id);
      cache::JobUpdate update;
      update.state = cache::JobState::kSucceeded;
      update.result = result.SerializeAsString();
      KILN_ASSIGN_OR_RETURN(cache::JobRecord updated, storage->UpdateJob(record.id, update));
      (void)updated;
      ++counts.from_cache;
      continue;
    }
    KILN_RETURN_IF_ERROR(scheduler->Restore(record, CompileJobSpec(*spec)));
    ++counts.requeued;
  }
  if (!live.empty()) {
    LogInfo("jobs.recovered", {{"requeued", counts.requeued},
                               {"from_cache", counts.from_cache},
                               {"failed", counts.failed}});
  }
  return counts;
}

}  // namespace kiln::server
