// The compile job kind: spec ↔ job, eligibility by compile capability, the CompileTask, and
// filing the artifact a worker reports.
#include "server/compile_handler.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "compiler_core/runtime/artifact.h"
#include "server/artifact_key.h"
#include "server/log.h"
#include "server/tuning_records.h"
#include "wire/options.h"

namespace kiln::server {
namespace {

/// The request a job record persists: enough to prepare the job again after a restart.
std::string SerializeRequest(const CompileSpec& spec) {
  v1::CompileRequest request;
  request.mutable_model_digest()->set_hash(spec.model_digest);
  request.mutable_model_digest()->set_size_bytes(spec.model_size_bytes);
  request.set_target(spec.target);
  *request.mutable_options() = spec.options;
  request.set_priority(spec.priority);
  return request.SerializeAsString();
}

}  // namespace

JobSpec CompileJobSpec(const CompileSpec& spec) {
  JobSpec job;
  job.kind = cache::JobKind::kCompile;
  job.dedup_key = KeyString(spec.key);
  job.priority = spec.priority;
  job.model_digest = spec.model_digest;
  job.request = SerializeRequest(spec);
  job.log_summary =
      absl::StrCat("target=", spec.target, " graph_hash=", spec.key.graph_hash.substr(0, 12));
  job.payload = MakePayload(spec);
  return job;
}

const CompileSpec& CompileSpecOf(const JobSpec& job) {
  return PayloadAs<CompileSpec>(job);
}

v1::CompileResponse CachedCompileResponse(const cache::ArtifactKey& key,
                                          const cache::ArtifactEntry& entry) {
  v1::CompileResponse r;
  r.mutable_artifact_digest()->set_hash(entry.artifact_digest);
  r.mutable_artifact_digest()->set_size_bytes(entry.size_bytes);
  *r.mutable_key() = KeyToProto(key);
  r.set_compile_ms(static_cast<double>(entry.compile_ms));
  return r;
}

JobResult CompileJobResult(const v1::CompileResponse& response) {
  JobResult result;
  *result.event.mutable_result() = response;
  result.persisted = response.SerializeAsString();
  result.work_seconds = response.compile_ms() / 1000.0;
  return result;
}

std::string TargetKind(const std::string& target) {
  if (target == "host") return "cpu";
  return target.substr(0, target.find(':'));
}

void CompileHandler::LearnWorkloads(const CompileSpec& spec, const cache::ArtifactEntry& entry,
                                    const v1::CompileResult& compiled) {
  // Known: Prepare read them from the store, and the same graph, target and options lower to
  // the same kernels.
  if (spec.workloads_known) return;
  const std::vector<std::string> keys(compiled.workload_keys().begin(),
                                      compiled.workload_keys().end());
  absl::Status put = storage_->PutModelWorkloads(spec.key.graph_hash, spec.key.target_key,
                                                 WorkloadOptionsHash(spec.options), keys);
  if (!put.ok()) LogWarning("compile.workloads_not_stored", {{"status", put}});
  cache::ArtifactKey own = spec.key;
  own.options_hash = wire::OptionsHash(OnlyRecordsOf(spec.options, keys));
  if (own.options_hash == spec.key.options_hash) return;
  absl::StatusOr<cache::ArtifactEntry> linked =
      storage_->LinkArtifact(own, entry.artifact_digest, entry.compile_ms);
  if (!linked.ok()) LogWarning("compile.own_key_not_filed", {{"status", linked.status()}});
}

bool CompilesFor(const v1::WorkerCapabilities& capabilities, const std::string& target,
                 const std::string& host_cpu) {
  const std::string kind = TargetKind(target);
  for (const v1::Capability& c : capabilities.capabilities()) {
    if (!c.has_compile()) continue;
    bool supported = false;
    for (const std::string& k : c.compile().target_kinds()) supported = supported || k == kind;
    if (!supported) continue;
    if (target != "host" || host_cpu.empty() || c.compile().host_cpu().empty() ||
        c.compile().host_cpu() == host_cpu) {
      return true;
    }
  }
  return false;
}

bool CompileHandler::CanRun(const JobSpec& job, const v1::WorkerCapabilities& capabilities) const {
  return CompilesFor(capabilities, CompileSpecOf(job).target, host_cpu_);
}

void CompileHandler::BuildTask(const JobSpec& job, v1::WorkerTask& task) const {
  const CompileSpec& spec = CompileSpecOf(job);
  v1::CompileTask& compile = *task.mutable_compile();
  compile.mutable_model_digest()->set_hash(spec.model_digest);
  compile.mutable_model_digest()->set_size_bytes(spec.model_size_bytes);
  compile.set_target(spec.target);
  *compile.mutable_options() = spec.options;
  *compile.mutable_key() = KeyToProto(spec.key);
}

absl::Status CheckUploadedArtifact(cache::Storage* storage, const v1::CompileResult& compiled) {
  const std::string& digest = compiled.artifact_digest().hash();
  // Its digest was verified as it was written; ParseArtifact checks the format's own checksum.
  absl::StatusOr<std::string> bytes = storage->ReadBlobUnverified(digest);
  if (!bytes.ok()) {
    return absl::InternalError(absl::StrCat("the reported artifact ", digest.substr(0, 12),
                                            " cannot be read: ", bytes.status().ToString()));
  }
  absl::StatusOr<runtime::Artifact> artifact = runtime::ParseArtifact(*bytes);
  if (!artifact.ok()) {
    return absl::InternalError(
        absl::StrCat("the uploaded artifact ", digest.substr(0, 12),
                     " is not a valid artifact: ", artifact.status().message()));
  }
  const v1::ArtifactKey& key = compiled.key();
  absl::Status matches = runtime::CheckManifestKey(
      artifact->manifest, runtime::ArtifactKeyFields{key.graph_hash(), key.target_key(),
                                                     key.compiler_version(), key.options_hash()});
  if (!matches.ok()) {
    return absl::InternalError(absl::StrCat("the uploaded artifact ", digest.substr(0, 12),
                                            " does not match its key: ", matches.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<JobResult> CompileHandler::TaskSucceeded(const JobSpec& job,
                                                        const std::string& job_id,
                                                        const std::string& worker_id,
                                                        const v1::TaskResult& result) {
  const cache::ArtifactKey& key = CompileSpecOf(job).key;
  if (!result.has_compile()) {
    return absl::InternalError(absl::StrCat("worker ", worker_id, " reported task ",
                                            result.task_id(), " done without a compile result"));
  }
  const v1::CompileResult& compiled = result.compile();
  // The worker hub checked that the artifact's manifest names compiled.key()
  // (CheckUploadedArtifact); this checks that that is the job's key.
  if (compiled.key().graph_hash() != key.graph_hash ||
      compiled.key().target_key() != key.target_key ||
      compiled.key().compiler_version() != key.compiler_version ||
      compiled.key().options_hash() != key.options_hash) {
    return absl::InternalError(
        absl::StrCat("worker ", worker_id, " compiled for key (", compiled.key().graph_hash(), ", ",
                     compiled.key().target_key(), ", ", compiled.key().compiler_version(), ", ",
                     compiled.key().options_hash(), ") but kilnd expected (", key.graph_hash, ", ",
                     key.target_key, ", ", key.compiler_version, ", ", key.options_hash, ")"));
  }
  absl::StatusOr<cache::ArtifactEntry> entry = storage_->LinkArtifact(
      key, compiled.artifact_digest().hash(), static_cast<int64_t>(compiled.compile_ms()));
  if (!entry.ok()) {
    return absl::InternalError(
        absl::StrCat("worker ", worker_id, " reported artifact ", compiled.artifact_digest().hash(),
                     " but it cannot be filed: ", entry.status().ToString()));
  }
  if (!compiled.workload_keys().empty()) LearnWorkloads(CompileSpecOf(job), *entry, compiled);
  v1::CompileResponse response = CachedCompileResponse(key, *entry);
  response.set_compile_ms(compiled.compile_ms());
  response.set_worker(worker_id);
  response.set_job_id(job_id);
  return CompileJobResult(response);
}

void CompileHandler::DescribeResult(const std::string& persisted, v1::JobEvent& event) const {
  event.mutable_result()->ParseFromString(persisted);
}

}  // namespace kiln::server
