// Compile jobs: the typed request (CompileSpec, from CompilePreparer), its JobSpec and results,
// and the handler that sends compiles to workers with a compile capability and files the
// artifacts they upload.
#ifndef KILN_SERVER_COMPILE_HANDLER_H_
#define KILN_SERVER_COMPILE_HANDLER_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "kiln/v1/service.pb.h"
#include "server/cache/storage.h"
#include "server/job.h"
#include "server/job_handler.h"

namespace kiln::server {

/// A validated compile request with its full cache key (see CompilePreparer).
struct CompileSpec {
  /// SHA-256 hex of the model blob (an inline model is stored as a blob first).
  std::string model_digest;
  int64_t model_size_bytes = 0;
  /// The target spec as the worker receives it: "host" or "cpu:<name>".
  std::string target;
  /// Canonical options (artifact_key.h).
  v1::CompileOptions options;
  cache::ArtifactKey key;
  /// INTERACTIVE or BATCH (never UNSPECIFIED).
  v1::Priority priority = v1::INTERACTIVE;
  /// Whether kilnd knew the model's workloads, so that options.records holds only theirs.
  bool workloads_known = false;
};

/// The job of `spec`: deduplicated on the full artifact key; its persisted request is the
/// CompileRequest that RecoverJobs prepares again after a restart.
JobSpec CompileJobSpec(const CompileSpec& spec);

/// The compile request a job of kind kCompile carries. Precondition: `job` was made by
/// CompileJobSpec.
const CompileSpec& CompileSpecOf(const JobSpec& job);

/// The response for an artifact found in the cache under `key` (cache_hit unset: callers decide).
v1::CompileResponse CachedCompileResponse(const cache::ArtifactKey& key,
                                          const cache::ArtifactEntry& entry);

/// A compile job's result: `response` in the final event's `result`, persisted as is.
JobResult CompileJobResult(const v1::CompileResponse& response);

/// The compile response inside a finished compile job's result.
inline const v1::CompileResponse& CompileResponseOf(const JobResult& result) {
  return result.event.result();
}

/// The target-descriptor kind of a target spec: "host" and "cpu:<name>" are "cpu"; otherwise
/// the part before ':' (e.g. "cuda" for "cuda:sm_90").
std::string TargetKind(const std::string& target);

/// Whether a worker with `capabilities` compiles for `target` ("host", "cpu:<name>"): a compile
/// capability listing the target's kind, and for "host" the same host CPU as `host_cpu` (kilnd
/// resolved "host" on its own host; empty host_cpu: no check).
bool CompilesFor(const v1::WorkerCapabilities& capabilities, const std::string& target,
                 const std::string& host_cpu);

/// Checks a worker's compile result before the scheduler sees it: the uploaded artifact (a
/// blob in `storage`, digest-verified when written) parses as an artifact (format, checksums)
/// and its manifest names exactly the key the worker reports (runtime::CheckManifestKey).
/// Reads the whole artifact: call it off the scheduler's lock (the worker hub runs it on the
/// executor). Errors: kInternal naming what is wrong (the job then fails; nothing is filed).
absl::Status CheckUploadedArtifact(cache::Storage* storage, const v1::CompileResult& compiled);

/// Runs compile jobs on workers whose CompileCapability lists the target's kind.
class CompileHandler final : public JobHandler {
 public:
  /// `storage` files the uploaded artifacts and must outlive the handler. `host_cpu` is the LLVM
  /// CPU name of kilnd's host: "host" jobs go only to workers reporting that host CPU (or none),
  /// because the cache key of "host" was resolved on kilnd's host. Empty: no check.
  CompileHandler(cache::Storage* storage, std::string host_cpu)
      : storage_(storage), host_cpu_(std::move(host_cpu)) {}

  cache::JobKind kind() const override { return cache::JobKind::kCompile; }
  bool CanRun(const JobSpec& job, const v1::WorkerCapabilities& capabilities) const override;
  void BuildTask(const JobSpec& job, v1::WorkerTask& task) const override;
  /// When kilnd did not know the model's workloads yet, also stores the keys the worker
  /// reports (Storage::PutModelWorkloads) and files the artifact under the key of the model's
  /// own records too, where the next compile of the model looks.
  /// Errors: kInternal if the result has no compile member, names another cache key than the
  /// job's, or names an artifact that cannot be linked into the cache.
  absl::StatusOr<JobResult> TaskSucceeded(const JobSpec& job, const std::string& job_id,
                                          const std::string& worker_id,
                                          const v1::TaskResult& result) override;
  void DescribeResult(const std::string& persisted, v1::JobEvent& event) const override;

 private:
  void LearnWorkloads(const CompileSpec& spec, const cache::ArtifactEntry& entry,
                      const v1::CompileResult& compiled);

  cache::Storage* storage_;
  const std::string host_cpu_;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_COMPILE_HANDLER_H_
