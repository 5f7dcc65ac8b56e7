// KilnService client calls, chunked transfers, a compile's progress, and the JSON form of a
// compile result.
#include "client/remote.h"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "compiler_core/importer/onnx/model_checks.h"
#include "compiler_core/runtime/artifact.h"
#include "compiler_core/support/status_macros.h"
#include "compiler_core/support/target.h"
#include "wire/chunked.h"
#include "wire/status.h"

namespace kiln::client {

std::string TargetToSend(const std::string& target) {
  return target == "native" ? NativeTargetSpec() : target;
}

namespace {

// The status of a call to `rpc`, its message prefixed `<rpc>: `.
absl::Status FromGrpc(const std::string& rpc, const grpc::Status& s) {
  return wire::ToAbslStatus(s, rpc);
}

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

RemoteClient::RemoteClient(const std::string& server, int64_t timeout_ms, ChannelSecurity security)
    : timeout_ms_(timeout_ms), security_(std::move(security)) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(8 << 20);
  // Each client gets its own connection (a benchmark's concurrent clients really are distinct).
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  stub_ = kiln::v1::KilnService::NewStub(MakeChannel(server, security_, args));
}

absl::Status CheckFetchedArtifact(const std::string& artifact, const kiln::v1::ArtifactKey& key) {
  absl::StatusOr<runtime::Artifact> parsed = runtime::ParseArtifact(artifact);
  if (!parsed.ok()) {
    return absl::DataLossError(
        absl::StrCat("the fetched artifact is not a valid artifact: ", parsed.status().message()));
  }
  // The options hash is kilnd's to check (it did, on upload): kilnd files an artifact under
  // several keys that differ only in tuning records that do not apply to it.
  absl::Status matches = runtime::CheckManifestKey(
      parsed->manifest,
      runtime::ArtifactKeyFields{key.graph_hash(), key.target_key(), key.compiler_version(), ""});
  if (!matches.ok()) {
    return absl::DataLossError(
        absl::StrCat("the fetched artifact is not the one asked for: ", matches.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadModelForUpload(const std::string& path) {
  KILN_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path));
  std::string dir = std::filesystem::path(path).parent_path().string();
  return importer::InlineExternalDataOfModel(bytes, dir.empty() ? "." : dir);
}

absl::StatusOr<std::unique_ptr<RemoteClient>> RemoteClientFrom(const Args& args,
                                                               int64_t timeout_ms) {
  if (!args.Has("--server")) return absl::InvalidArgumentError("missing --server HOST:PORT");
  KILN_ASSIGN_OR_RETURN(ChannelSecurity security,
                        LoadChannelSecurity(args.Get("--tls-ca"), args.Get("--token-file"),
                                            args.Get("--tls-server-name")));
  return std::make_unique<RemoteClient>(args.Get("--server"), timeout_ms, std::move(security));
}

void RemoteClient::Prepare(grpc::ClientContext& context) const {
  AddCredentials(context, security_);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms_));
}

absl::StatusOr<std::vector<kiln::v1::Digest>> RemoteClient::FindMissingBlobs(
    const std::vector<kiln::v1::Digest>& digests) {
  grpc::ClientContext context;
  Prepare(context);
  kiln::v1::FindMissingBlobsRequest request;
  for (const auto& d : digests) *request.add_digests() = d;
  kiln::v1::FindMissingBlobsResponse response;
  KILN_RETURN_IF_ERROR(
      FromGrpc("FindMissingBlobs", stub_->FindMissingBlobs(&context, request, &response)));
  return std::vector<kiln::v1::Digest>(response.missing().begin(), response.missing().end());
}

absl::StatusOr<kiln::v1::UploadModelResponse> RemoteClient::UploadModel(
    const std::string& bytes, const kiln::v1::Digest& digest) {
  grpc::ClientContext context;
  Prepare(context);
  kiln::v1::UploadModelResponse response;
  auto writer = stub_->UploadModel(&context, &response);
  // kilnd may end the call early (already present, too large): Write then fails and Finish
  // says why.
  wire::WriteChunks<kiln::v1::UploadModelRequest>(*writer, digest, bytes);
  KILN_RETURN_IF_ERROR(FromGrpc("UploadModel", writer->Finish()));
  return response;
}

absl::StatusOr<kiln::v1::CompileResponse> RemoteClient::Compile(
    const kiln::v1::CompileRequest& request) {
  grpc::ClientContext context;
  Prepare(context);
  kiln::v1::CompileResponse response;
  KILN_RETURN_IF_ERROR(FromGrpc("Compile", stub_->Compile(&context, request, &response)));
  return response;
}

absl::StatusOr<std::string> RemoteClient::FetchArtifact(const kiln::v1::Digest& digest) {
  grpc::ClientContext context;
  Prepare(context);
  kiln::v1::FetchArtifactRequest request;
  *request.mutable_digest() = digest;
  auto reader = stub_->FetchArtifact(&context, request);
  return wire::ReceiveVerified(context, *reader, digest, "FetchArtifact", "server",
                               "FetchArtifact");
}

absl::StatusOr<RemoteCompileResult> RemoteClient::CompileModel(const std::string& model_bytes,
                                                               const RemoteCompileOptions& options,
                                                               CompileObserver* observer) {
  auto start = std::chrono::steady_clock::now();
  kiln::v1::Digest digest = DigestOf(model_bytes);
  KILN_ASSIGN_OR_RETURN(RemoteCompileResult result,
                        CompileModel(model_bytes, digest, options, observer));
  result.total_ms = MsSince(start);
  return result;
}

void SetInputShapes(const importer::ShapeProfiles& profiles, kiln::v1::CompileOptions& options,
                    const importer::InputShapes& min_shapes) {
  options.clear_input_shapes();
  for (const auto& [name, dims] : importer::GivenShapes(profiles)) {
    kiln::v1::InputShape* shape = options.add_input_shapes();
    shape->set_name(name);
    for (int64_t d : dims) shape->add_dims(d);
    if (auto mins = min_shapes.find(name); mins != min_shapes.end()) {
      for (int64_t d : mins->second) shape->add_min_dims(d);
    }
  }
}

absl::StatusOr<RemoteCompileResult> RemoteClient::CompileModel(const std::string& model_bytes,
                                                               const kiln::v1::Digest& digest,
                                                               const RemoteCompileOptions& options,
                                                               CompileObserver* observer) {
  auto start = std::chrono::steady_clock::now();
  RemoteCompileResult result;
  KILN_ASSIGN_OR_RETURN(result.uploaded, EnsureModel(model_bytes, digest, observer));
  kiln::v1::CompileRequest request;
  *request.mutable_model_digest() = digest;
  request.set_target(TargetToSend(options.target));
  for (const std::string& p : options.disabled_passes)
    request.mutable_options()->add_disabled_passes(p);
  request.mutable_options()->set_hardware_key(options.hardware_key);
  request.mutable_options()->set_untuned(options.untuned);
  if (options.precision != "fp32") request.mutable_options()->set_precision(options.precision);
  SetInputShapes(options.shape_profiles, *request.mutable_options(), options.bounded_min_shapes);
  for (const auto& [name, tensor] : options.constant_inputs) {
    kiln::v1::ConstantInput* c = request.mutable_options()->add_constant_inputs();
    c->set_name(name);
    c->set_tensor(tensor);
  }
  request.set_priority(options.priority);
  KILN_ASSIGN_OR_RETURN(result.response, observer != nullptr ? CompileObserved(request, *observer)
                                                             : Compile(request));
  absl::StatusOr<std::string> artifact = FetchArtifact(result.response.artifact_digest());
  if (absl::IsDataLoss(artifact.status()) && result.response.cache_hit()) {
    // A cache hit trusts kilnd's index; the fetch verifies, and kilnd evicts a blob found
    // corrupted. Compiling once more rebuilds it.
    KILN_ASSIGN_OR_RETURN(result.response, Compile(request));
    artifact = FetchArtifact(result.response.artifact_digest());
  }
  KILN_ASSIGN_OR_RETURN(result.artifact, std::move(artifact));
  KILN_RETURN_IF_ERROR(CheckFetchedArtifact(result.artifact, result.response.key()));
  result.total_ms = MsSince(start);
  return result;
}

absl::StatusOr<bool> RemoteClient::EnsureModel(const std::string& model_bytes,
                                               const kiln::v1::Digest& digest,
                                               CompileObserver* observer) {
  KILN_ASSIGN_OR_RETURN(std::vector<kiln::v1::Digest> missing, FindMissingBlobs({digest}));
  if (missing.empty()) return false;
  auto start = std::chrono::steady_clock::now();
  if (observer != nullptr) observer->Uploading(static_cast<int64_t>(model_bytes.size()));
  KILN_ASSIGN_OR_RETURN(kiln::v1::UploadModelResponse uploaded, UploadModel(model_bytes, digest));
  if (observer != nullptr) observer->Uploaded(MsSince(start));
  return !uploaded.already_present();
}

std::optional<kiln::v1::Job> RemoteClient::FindCompileJob(const kiln::v1::CompileRequest& request) {
  absl::StatusOr<kiln::v1::ListJobsResponse> jobs =
      ListJobs(kiln::v1::JOB_STATE_UNSPECIFIED, 32, {"compile"});
  if (!jobs.ok()) return std::nullopt;
  // Newest first: the first live job of this model, one of the request's target before others
  // (a compile of "native" is filed under its resolved target).
  std::optional<kiln::v1::Job> found;
  for (const kiln::v1::Job& job : jobs->jobs()) {
    if (job.model_digest() != request.model_digest().hash() ||
        (job.state() != kiln::v1::QUEUED && job.state() != kiln::v1::RUNNING)) {
      continue;
    }
    if (job.target() == request.target()) return job;
    if (!found.has_value()) found = job;
  }
  return found;
}

absl::StatusOr<kiln::v1::CompileResponse> RemoteClient::CompileObserved(
    const kiln::v1::CompileRequest& request, CompileObserver& observer) {
  // kilnd answers a cache hit at once and names the job of a miss only when it has run, so the
  // Compile call runs on a thread of its own while this one looks for the job it waits on
  // (ListJobs) and follows it (WatchJob) until the Compile call returns.
  struct Call {
    std::mutex mu;
    std::condition_variable done_cv;
    bool done = false;
    absl::StatusOr<kiln::v1::CompileResponse> response;
    grpc::ClientContext* watch = nullptr;  // the WatchJob to end when Compile returns
  } call;
  std::thread compile([&] {
    absl::StatusOr<kiln::v1::CompileResponse> response = Compile(request);
    std::lock_guard<std::mutex> lock(call.mu);
    call.response = std::move(response);
    call.done = true;
    if (call.watch != nullptr) call.watch->TryCancel();
    call.done_cv.notify_all();
  });
  // A hit usually answers within the first wait; then no ListJobs is sent at all.
  auto wait = std::chrono::milliseconds(100);
  while (true) {
    {
      std::unique_lock<std::mutex> lock(call.mu);
      if (call.done_cv.wait_for(lock, wait, [&] { return call.done; })) break;
    }
    wait = std::chrono::milliseconds(250);
    std::optional<kiln::v1::Job> job = FindCompileJob(request);
    if (!job.has_value()) continue;
    grpc::ClientContext context;  // no deadline: ends with the job or with the Compile call
    AddCredentials(context, security_);
    {
      std::lock_guard<std::mutex> lock(call.mu);
      if (call.done) break;
      call.watch = &context;
    }
    kiln::v1::WatchJobRequest watch;
    watch.set_job_id(job->id());
    auto reader = stub_->WatchJob(&context, watch);
    kiln::v1::JobEvent event;
    while (reader->Read(&event)) observer.JobEvent(event);
    (void)reader->Finish();  // cancelled when Compile returned first; progress is best effort
    {
      std::lock_guard<std::mutex> lock(call.mu);
      call.watch = nullptr;
    }
    break;
  }
  compile.join();
  return std::move(call.response);
}

absl::StatusOr<kiln::v1::SubmitJobResponse> RemoteClient::SubmitJob(
    const kiln::v1::SubmitJobRequest& request) {
  grpc::ClientContext context;
  Prepare(context);
  kiln::v1::SubmitJobResponse response;
  KILN_RETURN_IF_ERROR(FromGrpc("SubmitJob", stub_->SubmitJob(&context, request, &response)));
  return response;
}

absl::StatusOr<kiln::v1::JobEvent> RemoteClient::WatchJob(
    const std::string& job_id, const std::function<bool(const kiln::v1::JobEvent&)>& on_event) {
  grpc::ClientContext context;  // no deadline
  AddCredentials(context, security_);
  kiln::v1::WatchJobRequest request;
  request.set_job_id(job_id);
  auto reader = stub_->WatchJob(&context, request);
  kiln::v1::JobEvent event, last;
  bool seen = false, stopped = false;
  while (reader->Read(&event)) {
    last = event;
    seen = true;
    if (!on_event(event)) {
      stopped = true;
      context.TryCancel();
      break;
    }
  }
  grpc::Status status = reader->Finish();
  if (stopped) return last;
  KILN_RETURN_IF_ERROR(FromGrpc("WatchJob", status));
  const kiln::v1::JobState state = last.state();
  if (!seen || (state != kiln::v1::SUCCEEDED && state != kiln::v1::FAILED &&
                state != kiln::v1::CANCELLED)) {
    return absl::UnavailableError(absl::StrCat(
        "WatchJob: the stream of job ", job_id, " ended before the job did (kilnd restarting?)"));
  }
  return last;
}

absl::StatusOr<kiln::v1::JobState> RemoteClient::CancelJob(const std::string& job_id) {
  grpc::ClientContext context;
  Prepare(context);
  kiln::v1::CancelJobRequest request;
  request.set_job_id(job_id);
  kiln::v1::CancelJobResponse response;
  KILN_RETURN_IF_ERROR(FromGrpc("CancelJob", stub_->CancelJob(&context, request, &response)));
  return response.state();
}

absl::StatusOr<kiln::v1::GetStatsResponse> RemoteClient::GetStats() {
  grpc::ClientContext context;
  Prepare(context);
  kiln::v1::GetStatsResponse response;
  KILN_RETURN_IF_ERROR(FromGrpc("GetStats", stub_->GetStats(&context, {}, &response)));
  return response;
}

absl::StatusOr<std::vector<kiln::v1::TuningRecord>> RemoteClient::ListTuningRecords(
    const std::string& hardware_key) {
  grpc::ClientContext context;
  Prepare(context);
  kiln::v1::ListTuningRecordsRequest request;
  request.set_hardware_key(hardware_key);
  kiln::v1::ListTuningRecordsResponse response;
  KILN_RETURN_IF_ERROR(
      FromGrpc("ListTuningRecords", stub_->ListTuningRecords(&context, request, &response)));
  return std::vector<kiln::v1::TuningRecord>(response.records().begin(), response.records().end());
}

absl::StatusOr<int> RemoteClient::ImportTuningRecords(
    const std::vector<kiln::v1::TuningRecord>& records) {
  grpc::ClientContext context;
  Prepare(context);
  kiln::v1::ImportTuningRecordsRequest request;
  for (const kiln::v1::TuningRecord& r : records) *request.add_records() = r;
  kiln::v1::ImportTuningRecordsResponse response;
  KILN_RETURN_IF_ERROR(
      FromGrpc("ImportTuningRecords", stub_->ImportTuningRecords(&context, request, &response)));
  return response.imported();
}

absl::StatusOr<kiln::v1::ListJobsResponse> RemoteClient::ListJobs(
    kiln::v1::JobState state, int limit, const std::vector<std::string>& kinds) {
  grpc::ClientContext context;
  Prepare(context);
  kiln::v1::ListJobsRequest request;
  request.set_state(state);
  request.set_limit(limit);
  for (const std::string& k : kinds) request.add_kinds(k);
  kiln::v1::ListJobsResponse response;
  KILN_RETURN_IF_ERROR(FromGrpc("ListJobs", stub_->ListJobs(&context, request, &response)));
  return response;
}

absl::StatusOr<kiln::v1::ListWorkersResponse> RemoteClient::ListWorkers() {
  grpc::ClientContext context;
  Prepare(context);
  kiln::v1::ListWorkersResponse response;
  KILN_RETURN_IF_ERROR(FromGrpc("ListWorkers", stub_->ListWorkers(&context, {}, &response)));
  return response;
}

google::protobuf::Struct CompileResultJson(const RemoteCompileResult& r) {
  const kiln::v1::CompileResponse& c = r.response;
  google::protobuf::Struct json;
  SetBool(json, "cache_hit", c.cache_hit());
  SetString(json, "graph_hash", c.key().graph_hash());
  SetString(json, "target_key", c.key().target_key());
  SetString(json, "compiler_version", c.key().compiler_version());
  SetString(json, "options_hash", c.key().options_hash());
  SetString(json, "artifact_digest", c.artifact_digest().hash());
  SetNumber(json, "artifact_bytes", static_cast<double>(c.artifact_digest().size_bytes()));
  SetNumber(json, "compile_ms", c.compile_ms());
  SetNumber(json, "server_ms", c.server_ms());
  SetNumber(json, "total_ms", r.total_ms);
  SetBool(json, "uploaded", r.uploaded);
  SetString(json, "job_id", c.job_id());
  SetString(json, "worker", c.worker());
  return json;
}

}  // namespace kiln::client
