// KilnService. Every handler copies its request, posts the work to the executor and returns its
// reactor; replies come from the executor or from the scheduler when a job ends.
#include "server/service.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "compiler_core/pipeline/compiler_version.h"
#include "server/artifact_key.h"
#include "server/blob_streams.h"
#include "server/compile_handler.h"
#include "server/job_state.h"
#include "server/log.h"
#include "server/rpc_auth.h"
#include "server/rpc_call.h"
#include "server/tune_handler.h"
#include "server/watch_reactor.h"
#include "wire/digest.h"

namespace kiln::server {
namespace {

absl::Status Draining() {
  return absl::UnavailableError("kilnd is shutting down; retry against the restarted server");
}

double MsSince(absl::Time start) { return absl::ToDoubleMilliseconds(absl::Now() - start); }

/// The cache entry for `key` if its artifact is intact. A corrupted artifact is evicted by
/// storage on read, so it counts as a miss and gets rebuilt. Blocking.
absl::StatusOr<std::optional<cache::ArtifactEntry>> LookupIntact(ServiceContext* ctx,
                                                                 const cache::ArtifactKey& key) {
  absl::StatusOr<std::optional<cache::ArtifactEntry>> entry = ctx->storage->LookupArtifact(key);
  if (!entry.ok() || !entry->has_value() || !ctx->limits.verify_cache_hits) return entry;
  absl::StatusOr<std::string> blob = ctx->storage->GetBlob((*entry)->artifact_digest);
  if (blob.ok()) return entry;
  if (absl::IsDataLoss(blob.status()) || absl::IsNotFound(blob.status())) {
    if (absl::IsDataLoss(blob.status()) && ctx->metrics) ctx->metrics->BlobCorrupted();
    LogError("artifact.evicted", {{"artifact", (*entry)->artifact_digest},
                                  {"graph_hash", key.graph_hash.substr(0, 12)},
                                  {"status", blob.status()}});
    return std::optional<cache::ArtifactEntry>();
  }
  return blob.status();
}

/// `job` submitted by `owner` through SubmitJob: a batch job is the submitter's to watch and
/// cancel, so identical jobs of different owners are not merged into one.
JobSpec OwnedBy(JobSpec job, const std::string& owner) {
  job.owner = owner;
  if (!owner.empty()) absl::StrAppend(&job.dedup_key, "|owner=", owner);
  return job;
}

void CountLookup(ServiceContext* ctx, bool hit) {
  (hit ? ctx->cache_hits : ctx->cache_misses).fetch_add(1);
  if (ctx->metrics) ctx->metrics->CacheLookup(hit);
}

v1::CompileResponse HitResponse(const CompileSpec& spec, const cache::ArtifactEntry& entry) {
  v1::CompileResponse r = CachedCompileResponse(spec.key, entry);
  r.set_cache_hit(true);
  return r;
}

v1::Job ToProtoJob(const cache::JobRecord& record) {
  v1::Job job;
  job.set_id(record.id);
  job.set_state(ToProtoState(record.state));
  job.set_priority(record.priority >= 2 ? v1::INTERACTIVE : v1::BATCH);
  job.set_model_digest(record.model_digest);
  job.set_kind(std::string(cache::JobKindName(record.kind)));
  v1::CompileRequest request;
  v1::TuneRequest tune;
  if (record.kind == cache::JobKind::kCompile && request.ParseFromString(record.request)) {
    job.set_target(request.target());
  } else if (record.kind == cache::JobKind::kTune && tune.ParseFromString(record.request)) {
    job.set_target(tune.target());
  }
  job.set_attempts(record.attempts);
  job.set_worker(record.worker);
  job.set_created_ms(record.created_ms);
  job.set_updated_ms(record.updated_ms);
  job.set_error_code(static_cast<int32_t>(record.error.code()));
  job.set_error_message(std::string(record.error.message()));
  return job;
}

}  // namespace

grpc::ServerUnaryReactor* KilnServiceImpl::FindMissingBlobs(
    grpc::CallbackServerContext* context, const v1::FindMissingBlobsRequest* request,
    v1::FindMissingBlobsResponse* response) {
  auto call = UnaryCall<v1::FindMissingBlobsResponse>::Start(context, response, "FindMissingBlobs",
                                                             ctx_->metrics);
  absl::StatusOr<auth::Principal> who =
      AuthorizeCall(ctx_, *context, method_roles::kUpload, "FindMissingBlobs");
  if (!who.ok()) {
    call->Reply(who.status());
    return call->reactor();
  }
  std::vector<std::string> digests;
  std::map<std::string, int64_t> sizes;
  for (const v1::Digest& d : request->digests()) {
    if (absl::Status valid = wire::CheckDigest(d.hash()); !valid.ok()) {
      call->Reply(valid);
      return call->reactor();
    }
    digests.push_back(d.hash());
    sizes[d.hash()] = d.size_bytes();
  }
  ctx_->executor->Post([ctx = ctx_, call, digests = std::move(digests), sizes] {
    absl::StatusOr<std::vector<std::string>> missing = ctx->storage->FindMissing(digests);
    if (!missing.ok()) return (void)call->Reply(missing.status());
    call->Reply(absl::OkStatus(), [&](v1::FindMissingBlobsResponse& r) {
      for (const std::string& hash : *missing) {
        v1::Digest* d = r.add_missing();
        d->set_hash(hash);
        d->set_size_bytes(sizes.at(hash));
      }
    });
  });
  return call->reactor();
}

grpc::ServerReadReactor<v1::UploadModelRequest>* KilnServiceImpl::UploadModel(
    grpc::CallbackServerContext* context, v1::UploadModelResponse* response) {
  absl::StatusOr<auth::Principal> who =
      AuthorizeCall(ctx_, *context, method_roles::kUpload, "UploadModel");
  if (!who.ok()) {
    return new RefusedStream<grpc::ServerReadReactor<v1::UploadModelRequest>>(
        ctx_, *context, who.status(), "UploadModel");
  }
  return StartModelUpload(ctx_, context, response, who->id);
}

grpc::ServerUnaryReactor* KilnServiceImpl::Compile(grpc::CallbackServerContext* context,
                                                   const v1::CompileRequest* request,
                                                   v1::CompileResponse* response) {
  auto call = UnaryCall<v1::CompileResponse>::Start(context, response, "Compile", ctx_->metrics);
  absl::StatusOr<auth::Principal> who =
      AuthorizeCall(ctx_, *context, method_roles::kCompile, "Compile");
  if (!who.ok()) {
    call->Reply(who.status());
    return call->reactor();
  }
  if (ctx_->draining.load()) {
    call->Reply(Draining());
    return call->reactor();
  }
  absl::Time deadline = absl::FromChrono(context->deadline());
  // No deadline reads as time_point::max(); far-future deadlines mean "none" too.
  if (deadline > absl::Now() + absl::Hours(24 * 365)) deadline = absl::InfiniteFuture();
  ctx_->prepare_executor->Post([ctx = ctx_, call, request = *request, deadline, owner = who->id] {
    absl::StatusOr<CompileSpec> spec = ctx->preparer->Prepare(request, v1::INTERACTIVE);
    if (!spec.ok()) return (void)call->Reply(spec.status());
    if (call->finished()) return;  // the client left while the model was imported
    absl::StatusOr<std::optional<cache::ArtifactEntry>> entry = LookupIntact(ctx, spec->key);
    if (!entry.ok()) return (void)call->Reply(entry.status());
    if (entry->has_value()) {
      CountLookup(ctx, /*hit=*/true);
      v1::CompileResponse hit = HitResponse(*spec, **entry);
      call->Reply(absl::OkStatus(), [&](v1::CompileResponse& r) {
        r = hit;
        r.set_server_ms(MsSince(call->start()));
      });
      return;
    }
    CountLookup(ctx, /*hit=*/false);
    JobSpec job = CompileJobSpec(*spec);
    job.owner = owner;
    absl::StatusOr<Ticket> ticket = ctx->scheduler->Submit(
        job, deadline, /*detached=*/false, [call](const JobOutcome& outcome) {
          call->Reply(outcome.status, [&](v1::CompileResponse& r) {
            r = CompileResponseOf(outcome.result);
            r.set_cache_hit(false);
            r.set_server_ms(MsSince(call->start()));
          });
        });
    if (!ticket.ok()) return (void)call->Reply(ticket.status());
    Scheduler* scheduler = ctx->scheduler;
    call->OnClientGone([scheduler, ticket = *ticket] { scheduler->Abandon(ticket); });
  });
  return call->reactor();
}

grpc::ServerWriteReactor<v1::FetchArtifactResponse>* KilnServiceImpl::FetchArtifact(
    grpc::CallbackServerContext* context, const v1::FetchArtifactRequest* request) {
  absl::StatusOr<auth::Principal> who =
      AuthorizeCall(ctx_, *context, method_roles::kFetch, "FetchArtifact");
  if (!who.ok()) {
    return new RefusedStream<grpc::ServerWriteReactor<v1::FetchArtifactResponse>>(
        ctx_, *context, who.status(), "FetchArtifact");
  }
  return StartBlobFetch(ctx_, context, request->digest().hash(), "FetchArtifact");
}

grpc::ServerUnaryReactor* KilnServiceImpl::SubmitJob(grpc::CallbackServerContext* context,
                                                     const v1::SubmitJobRequest* request,
                                                     v1::SubmitJobResponse* response) {
  auto call =
      UnaryCall<v1::SubmitJobResponse>::Start(context, response, "SubmitJob", ctx_->metrics);
  absl::StatusOr<auth::Principal> who =
      AuthorizeCall(ctx_, *context, method_roles::kJobs, "SubmitJob");
  if (!who.ok()) {
    call->Reply(who.status());
    return call->reactor();
  }
  if (ctx_->draining.load()) {
    call->Reply(Draining());
    return call->reactor();
  }
  if (!who->Has(request->has_tune() ? method_roles::kTune : method_roles::kCompile)) {
    call->Reply(absl::PermissionDeniedError(
        absl::StrCat("SubmitJob of a ", request->has_tune() ? "tune" : "compile",
                     " job needs role ", request->has_tune() ? "tune" : "compile", "; ", who->id,
                     " has ", auth::RoleNames(who->roles))));
    return call->reactor();
  }
  if (request->has_tune()) {
    ctx_->prepare_executor->Post([ctx = ctx_, call, request = request->tune(), owner = who->id] {
      absl::StatusOr<TuneSpec> spec = PrepareTune(*ctx->preparer, request);
      if (!spec.ok()) return (void)call->Reply(spec.status());
      absl::StatusOr<Ticket> ticket = ctx->scheduler->Submit(
          OwnedBy(TuneJobSpec(*spec), owner), absl::InfiniteFuture(), /*detached=*/true, nullptr);
      if (!ticket.ok()) return (void)call->Reply(ticket.status());
      call->Reply(absl::OkStatus(),
                  [&](v1::SubmitJobResponse& r) { r.set_job_id(ticket->job_id); });
    });
    return call->reactor();
  }
  if (!request->has_compile()) {
    call->Reply(absl::InvalidArgumentError("SubmitJob needs a compile or a tune request"));
    return call->reactor();
  }
  ctx_->prepare_executor->Post([ctx = ctx_, call, request = request->compile(), owner = who->id] {
    absl::StatusOr<CompileSpec> spec = ctx->preparer->Prepare(request, v1::BATCH);
    if (!spec.ok()) return (void)call->Reply(spec.status());
    absl::StatusOr<std::optional<cache::ArtifactEntry>> entry = LookupIntact(ctx, spec->key);
    if (!entry.ok()) return (void)call->Reply(entry.status());
    CountLookup(ctx, entry->has_value());
    if (entry->has_value()) {
      v1::CompileResponse hit = HitResponse(*spec, **entry);
      absl::StatusOr<std::string> id = ctx->scheduler->RecordCacheHit(
          OwnedBy(CompileJobSpec(*spec), owner), [&](const std::string& job_id) {
            v1::CompileResponse response = hit;
            response.set_job_id(job_id);
            return CompileJobResult(response);
          });
      if (!id.ok()) return (void)call->Reply(id.status());
      call->Reply(absl::OkStatus(), [&](v1::SubmitJobResponse& r) {
        r.set_job_id(*id);
        r.set_cache_hit(true);
      });
      return;
    }
    absl::StatusOr<Ticket> ticket = ctx->scheduler->Submit(
        OwnedBy(CompileJobSpec(*spec), owner), absl::InfiniteFuture(), /*detached=*/true, nullptr);
    if (!ticket.ok()) return (void)call->Reply(ticket.status());
    call->Reply(absl::OkStatus(), [&](v1::SubmitJobResponse& r) { r.set_job_id(ticket->job_id); });
  });
  return call->reactor();
}

grpc::ServerWriteReactor<v1::JobEvent>* KilnServiceImpl::WatchJob(
    grpc::CallbackServerContext* context, const v1::WatchJobRequest* request) {
  absl::StatusOr<auth::Principal> who =
      AuthorizeCall(ctx_, *context, method_roles::kJobs, "WatchJob");
  if (!who.ok()) {
    return new RefusedStream<grpc::ServerWriteReactor<v1::JobEvent>>(ctx_, *context, who.status(),
                                                                     "WatchJob");
  }
  return StartWatch(ctx_, context, request->job_id(), *std::move(who));
}

grpc::ServerUnaryReactor* KilnServiceImpl::CancelJob(grpc::CallbackServerContext* context,
                                                     const v1::CancelJobRequest* request,
                                                     v1::CancelJobResponse* response) {
  auto call =
      UnaryCall<v1::CancelJobResponse>::Start(context, response, "CancelJob", ctx_->metrics);
  absl::StatusOr<auth::Principal> who =
      AuthorizeCall(ctx_, *context, method_roles::kJobs, "CancelJob");
  if (!who.ok()) {
    call->Reply(who.status());
    return call->reactor();
  }
  ctx_->executor->Post([ctx = ctx_, call, job_id = request->job_id(), who = *who] {
    if (!who.Has(auth::kAdmin)) {
      absl::StatusOr<cache::JobRecord> job = ctx->storage->GetJob(job_id);
      if (job.ok() && !MayAccessJob(who, *job)) return (void)call->Reply(NotYourJob(who, job_id));
    }
    absl::StatusOr<v1::JobState> state = ctx->scheduler->Cancel(job_id);
    if (!state.ok()) return (void)call->Reply(state.status());
    call->Reply(absl::OkStatus(), [&](v1::CancelJobResponse& r) { r.set_state(*state); });
  });
  return call->reactor();
}

grpc::ServerUnaryReactor* KilnServiceImpl::ListJobs(grpc::CallbackServerContext* context,
                                                    const v1::ListJobsRequest* request,
                                                    v1::ListJobsResponse* response) {
  auto call = UnaryCall<v1::ListJobsResponse>::Start(context, response, "ListJobs", ctx_->metrics);
  absl::StatusOr<auth::Principal> who =
      AuthorizeCall(ctx_, *context, method_roles::kJobs, "ListJobs");
  if (!who.ok()) {
    call->Reply(who.status());
    return call->reactor();
  }
  cache::JobFilter filter;
  filter.limit = request->limit() > 0 ? request->limit() : 100;
  if (!who->Has(auth::kAdmin) && !who->id.empty()) filter.owner = who->id;  // only one's own
  if (request->state() != v1::JOB_STATE_UNSPECIFIED) {
    filter.state = FromProtoState(request->state());
    if (!filter.state) {
      call->Reply(absl::InvalidArgumentError(
          absl::StrCat("unknown job state ", static_cast<int>(request->state()))));
      return call->reactor();
    }
  }
  if (request->kinds().empty()) filter.kinds = {cache::JobKind::kCompile, cache::JobKind::kTune};
  for (const std::string& name : request->kinds()) {
    if (name == "all") {
      filter.kinds.clear();
      break;
    }
    absl::StatusOr<cache::JobKind> kind = cache::ParseJobKind(name);
    if (!kind.ok()) {
      call->Reply(kind.status());
      return call->reactor();
    }
    filter.kinds.push_back(*kind);
  }
  ctx_->executor->Post([ctx = ctx_, call, filter] {
    absl::StatusOr<std::vector<cache::JobRecord>> jobs = ctx->storage->ListJobs(filter);
    if (!jobs.ok()) return (void)call->Reply(jobs.status());
    call->Reply(absl::OkStatus(), [&](v1::ListJobsResponse& r) {
      for (const cache::JobRecord& record : *jobs) *r.add_jobs() = ToProtoJob(record);
    });
  });
  return call->reactor();
}

grpc::ServerUnaryReactor* KilnServiceImpl::ListWorkers(grpc::CallbackServerContext* context,
                                                       const v1::ListWorkersRequest* request,
                                                       v1::ListWorkersResponse* response) {
  auto call =
      UnaryCall<v1::ListWorkersResponse>::Start(context, response, "ListWorkers", ctx_->metrics);
  absl::StatusOr<auth::Principal> who =
      AuthorizeCall(ctx_, *context, method_roles::kStatus, "ListWorkers");
  if (!who.ok()) {
    call->Reply(who.status());
    return call->reactor();
  }
  // In memory only, one short lock: no need for the executor.
  std::vector<v1::Worker> workers = ctx_->scheduler->ListWorkers();
  call->Reply(absl::OkStatus(), [&](v1::ListWorkersResponse& r) {
    for (v1::Worker& w : workers) *r.add_workers() = std::move(w);
  });
  return call->reactor();
}

grpc::ServerUnaryReactor* KilnServiceImpl::GetStats(grpc::CallbackServerContext* context,
                                                    const v1::GetStatsRequest* request,
                                                    v1::GetStatsResponse* response) {
  auto call = UnaryCall<v1::GetStatsResponse>::Start(context, response, "GetStats", ctx_->metrics);
  absl::StatusOr<auth::Principal> who =
      AuthorizeCall(ctx_, *context, method_roles::kStatus, "GetStats");
  if (!who.ok()) {
    call->Reply(who.status());
    return call->reactor();
  }
  ctx_->executor->Post([ctx = ctx_, call] {
    absl::StatusOr<cache::StorageStats> stats = ctx->storage->Stats();
    if (!stats.ok()) return (void)call->Reply(stats.status());
    Scheduler::Counts counts = ctx->scheduler->GetCounts();
    call->Reply(absl::OkStatus(), [&](v1::GetStatsResponse& r) {
      r.set_blob_count(stats->blob_count);
      r.set_blob_bytes(stats->blob_bytes);
      r.set_artifact_count(stats->artifact_count);
      r.set_cache_hits(ctx->cache_hits.load());
      r.set_cache_misses(ctx->cache_misses.load());
      r.set_jobs_queued(counts.queued);
      r.set_jobs_running(counts.running);
      auto by_state = [&](cache::JobState s) {
        auto it = stats->jobs_by_state.find(s);
        return it == stats->jobs_by_state.end() ? int64_t{0} : it->second;
      };
      r.set_jobs_succeeded(by_state(cache::JobState::kSucceeded));
      r.set_jobs_failed(by_state(cache::JobState::kFailed));
      r.set_workers(counts.workers);
      r.set_compiler_version(pipeline::kCompilerVersion);
      r.set_uptime_ms(absl::ToInt64Milliseconds(absl::Now() - ctx->started));
    });
  });
  return call->reactor();
}

grpc::ServerUnaryReactor* KilnServiceImpl::ListTuningRecords(
    grpc::CallbackServerContext* context, const v1::ListTuningRecordsRequest* request,
    v1::ListTuningRecordsResponse* response) {
  auto call = UnaryCall<v1::ListTuningRecordsResponse>::Start(context, response,
                                                              "ListTuningRecords", ctx_->metrics);
  absl::StatusOr<auth::Principal> who =
      AuthorizeCall(ctx_, *context, method_roles::kRecords, "ListTuningRecords");
  if (!who.ok()) {
    call->Reply(who.status());
    return call->reactor();
  }
  std::string hardware_key = request->hardware_key();
  ctx_->executor->Post([ctx = ctx_, call, hardware_key] {
    absl::StatusOr<std::vector<v1::TuningRecord>> records =
        ctx->storage->ListTuningRecords(hardware_key);
    if (!records.ok()) return (void)call->Reply(records.status());
    call->Reply(absl::OkStatus(), [&](v1::ListTuningRecordsResponse& r) {
      for (v1::TuningRecord& rec : *records) *r.add_records() = std::move(rec);
    });
  });
  return call->reactor();
}

grpc::ServerUnaryReactor* KilnServiceImpl::ImportTuningRecords(
    grpc::CallbackServerContext* context, const v1::ImportTuningRecordsRequest* request,
    v1::ImportTuningRecordsResponse* response) {
  auto call = UnaryCall<v1::ImportTuningRecordsResponse>::Start(
      context, response, "ImportTuningRecords", ctx_->metrics);
  absl::StatusOr<auth::Principal> who =
      AuthorizeCall(ctx_, *context, method_roles::kTune, "ImportTuningRecords");
  if (!who.ok()) {
    call->Reply(who.status());
    return call->reactor();
  }
  std::vector<v1::TuningRecord> records(request->records().begin(), request->records().end());
  ctx_->executor->Post([ctx = ctx_, call, records = std::move(records)]() mutable {
    for (v1::TuningRecord& r : records) {
      if (r.provenance() == v1::TuningRecord::MEASURED) {
        r.set_provenance(v1::TuningRecord::IMPORTED);
      }
    }
    absl::Status st = ctx->storage->PutTuningRecords(records);
    if (!st.ok()) return (void)call->Reply(st);
    const int n = static_cast<int>(records.size());
    call->Reply(absl::OkStatus(), [&](v1::ImportTuningRecordsResponse& r) { r.set_imported(n); });
  });
  return call->reactor();
}

}  // namespace kiln::server
