// The CLI's remote mode: a client of kilnd's KilnService. Compiling a model uploads it only if
// the server lacks it (FindMissingBlobs, then UploadModel in chunks of at most 1 MiB), asks for
// the compile, and fetches the artifact, verified against its digest.
#ifndef KILN_CLIENT_REMOTE_H_
#define KILN_CLIENT_REMOTE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/args.h"
#include "client/channel.h"
#include "client/json.h"
#include "compiler_core/importer/onnx/shape_profiles.h"
#include "compiler_core/support/file_bytes.h"
#include "kiln/v1/service.grpc.pb.h"
#include "wire/digest.h"

namespace kiln::client {

/// What to compile for, and how long to wait.
struct RemoteCompileOptions {
  std::string target = "host";
  /// --precision: "fp32" (or empty), or tf32|fp16|bf16 for a cuda target (tensor cores).
  std::string precision;
  std::vector<std::string> disabled_passes;
  /// Whose tuning records kilnd applies ("" = its choice) or none at all (untuned).
  std::string hardware_key;
  bool untuned = false;
  /// Shapes of graph inputs with symbolic dims (--input-shape), one entry per shape profile.
  importer::ShapeProfiles shape_profiles;
  /// Bounded dims (--input-shape x=1..4,...): per input, every dim's minimum (one profile).
  importer::InputShapes bounded_min_shapes;
  /// Graph inputs compiled as constants (--constant-input): name → serialized TensorProto.
  std::map<std::string, std::string> constant_inputs;
  kiln::v1::Priority priority = kiln::v1::INTERACTIVE;
  /// Deadline of each RPC, in ms.
  int64_t timeout_ms = 600'000;
};

/// Writes `profiles` into `options.input_shapes` (importer::GivenShapes: profile by profile,
/// each in name order; the k-th entry of an input is profile k's), with `min_shapes` (bounded
/// dims) as the entries' min_dims.
void SetInputShapes(const importer::ShapeProfiles& profiles, kiln::v1::CompileOptions& options,
                    const importer::InputShapes& min_shapes = {});

/// The outcome of RemoteClient::CompileModel.
struct RemoteCompileResult {
  kiln::v1::CompileResponse response;
  bool uploaded = false;  // the model was sent (the server did not have it)
  std::string artifact;   // the artifact's bytes, digest-verified
  double total_ms = 0;    // the whole round trip, as the client saw it
};

/// What a remote compile reports while it runs (RemoteClient::CompileModel with an observer,
/// e.g. the progress lines of `kiln compile --server` on a terminal). Every call comes from the
/// thread that called CompileModel, in order. Progress is best effort: a failure to follow the
/// job never fails the compile.
class CompileObserver {
 public:
  virtual ~CompileObserver() = default;
  /// The server lacks the model: `bytes` are being uploaded.
  virtual void Uploading(int64_t bytes) { (void)bytes; }
  /// The upload took `ms`.
  virtual void Uploaded(double ms) { (void)ms; }
  /// An event of the compile job kilnd queued for this compile (a cache miss): queued, running
  /// on a worker (again after a lost worker), the terminal state. A cache hit has none, and a
  /// compile that ends before the client finds its job (ListJobs, polled while the Compile call
  /// runs: kilnd names the job only in its answer) has none either.
  virtual void JobEvent(const kiln::v1::JobEvent& event) { (void)event; }
};

/// A connection to one kilnd. Thread-safe (gRPC stubs are).
class RemoteClient {
 public:
  /// `server` is "HOST:PORT"; `security` says TLS or plaintext and the bearer token every
  /// call carries. Does not contact the server.
  explicit RemoteClient(const std::string& server, int64_t timeout_ms = 600'000,
                        ChannelSecurity security = {});

  /// The digests among `digests` that the server lacks.
  absl::StatusOr<std::vector<kiln::v1::Digest>> FindMissingBlobs(
      const std::vector<kiln::v1::Digest>& digests);
  /// Uploads `bytes` as a model under `digest` (normally DigestOf(bytes); a test may lie).
  absl::StatusOr<kiln::v1::UploadModelResponse> UploadModel(const std::string& bytes,
                                                            const kiln::v1::Digest& digest);
  absl::StatusOr<kiln::v1::CompileResponse> Compile(const kiln::v1::CompileRequest& request);
  /// Fetches an artifact and checks its size and SHA-256 (kDataLoss if they differ).
  absl::StatusOr<std::string> FetchArtifact(const kiln::v1::Digest& digest);

  /// FindMissingBlobs → UploadModel if missing → Compile → FetchArtifact. With `observer`,
  /// reports the upload and, while the Compile call waits on a compile job (a cache miss), that
  /// job's events (CompileObserver); a cache hit is still one Compile call.
  /// Errors: the server's status for each step, with its code and message.
  absl::StatusOr<RemoteCompileResult> CompileModel(const std::string& model_bytes,
                                                   const RemoteCompileOptions& options,
                                                   CompileObserver* observer = nullptr);
  /// The same with the model's digest already computed (DigestOf(model_bytes)).
  absl::StatusOr<RemoteCompileResult> CompileModel(const std::string& model_bytes,
                                                   const kiln::v1::Digest& digest,
                                                   const RemoteCompileOptions& options,
                                                   CompileObserver* observer = nullptr);

  /// Uploads `model_bytes` (digest `digest`) unless the server has it; returns whether it sent
  /// them. `observer` (may be null) hears of an upload.
  absl::StatusOr<bool> EnsureModel(const std::string& model_bytes, const kiln::v1::Digest& digest,
                                   CompileObserver* observer = nullptr);
  absl::StatusOr<kiln::v1::SubmitJobResponse> SubmitJob(const kiln::v1::SubmitJobRequest& request);
  /// Streams the job's events to `on_event` until the stream ends (after a terminal state) or
  /// `on_event` returns false. No deadline: a tune may run for hours. Returns the last event.
  /// Errors: the server's (kNotFound for an unknown job), kUnavailable when the stream broke
  /// before a terminal state.
  absl::StatusOr<kiln::v1::JobEvent> WatchJob(
      const std::string& job_id,
      const std::function<bool(const kiln::v1::JobEvent&)>& on_event);
  absl::StatusOr<kiln::v1::JobState> CancelJob(const std::string& job_id);

  absl::StatusOr<kiln::v1::GetStatsResponse> GetStats();
  /// Jobs, newest first; `kinds` as ListJobsRequest.kinds (empty: compiles and tunes).
  absl::StatusOr<kiln::v1::ListJobsResponse> ListJobs(kiln::v1::JobState state, int limit,
                                                      const std::vector<std::string>& kinds = {});
  absl::StatusOr<kiln::v1::ListWorkersResponse> ListWorkers();
  /// The server's tuning records of `hardware_key` ("" = all).
  absl::StatusOr<std::vector<kiln::v1::TuningRecord>> ListTuningRecords(
      const std::string& hardware_key);
  /// Stores `records` on the server, all or none; returns how many.
  absl::StatusOr<int> ImportTuningRecords(const std::vector<kiln::v1::TuningRecord>& records);

 private:
  void Prepare(grpc::ClientContext& context) const;
  /// Compile, with the events of the job it waits on sent to `observer` meanwhile.
  absl::StatusOr<kiln::v1::CompileResponse> CompileObserved(const kiln::v1::CompileRequest& request,
                                                            CompileObserver& observer);
  /// The queued or running compile job of `request`'s model (the newest, one of its target
  /// first); nullopt when there is none, or the server does not list jobs to this client.
  std::optional<kiln::v1::Job> FindCompileJob(const kiln::v1::CompileRequest& request);

  int64_t timeout_ms_;
  ChannelSecurity security_;
  std::unique_ptr<kiln::v1::KilnService::Stub> stub_;
};

/// A client of the kilnd that `args` name: --server HOST:PORT, and the connection flags
/// (kConnectionFlags; the token falls back to KILN_TOKEN). Errors: kInvalidArgument for a
/// missing --server, LoadChannelSecurity's for unreadable files.
absl::StatusOr<std::unique_ptr<RemoteClient>> RemoteClientFrom(const Args& args,
                                                               int64_t timeout_ms = 600'000);

/// The Digest of `bytes` (SHA-256 hex, size): wire::DigestOf, named here for the client's users.
using wire::DigestOf;

/// The --json object of a remote compile, for build systems: cache_hit, graph_hash,
/// target_key, compiler_version, options_hash, artifact_digest, artifact_bytes, compile_ms,
/// server_ms, total_ms, uploaded, job_id ("" on a cache hit), worker (likewise).
google::protobuf::Struct CompileResultJson(const RemoteCompileResult& result);

/// Checks a fetched artifact before anything loads it: it parses (format, checksums) and its
/// manifest names `key`'s graph hash, target key and compiler version, the key the server
/// answered for the request. Errors:
/// kDataLoss naming what differs.
absl::Status CheckFetchedArtifact(const std::string& artifact, const kiln::v1::ArtifactKey& key);

/// The bytes of the model file at `path` as they are uploaded: its external data (relative to
/// its directory) inlined, since kilnd refuses external data in uploaded models. Errors:
/// kNotFound naming the path, importer::InlineExternalDataOfModel's.
absl::StatusOr<std::string> ReadModelForUpload(const std::string& path);

/// The target spec a request to kilnd carries for `target`: "native" (this machine's CPU,
/// which kilnd cannot know) as NativeTargetSpec()'s cpu:<name>:<features>, others as given.
std::string TargetToSend(const std::string& target);

/// The bytes of the file at `path` (kiln_support). Errors: kNotFound naming the path.
using ::kiln::ReadFileBytes;
/// Writes a file atomically, a device in place (kiln_support).
using ::kiln::WriteFileAtomically;

}  // namespace kiln::client

#endif  // KILN_CLIENT_REMOTE_H_
