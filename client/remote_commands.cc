// Remote subcommands over KilnService.
#include "client/remote_commands.h"

#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "client/check.h"
#include "client/check_data.h"
#include "client/json.h"
#include "client/remote.h"
#include "client/remote_tune.h"
#include "compiler_core/runtime/artifact.h"
#include "compiler_core/support/status_macros.h"
#include "compiler_core/tuning/records.h"
#include "wire/status.h"
#include "workers/protocol.h"

namespace kiln::client {
namespace {

/// The remote client and options of --server, --timeout-s, --target, --disable-pass.
struct Remote {
  std::unique_ptr<RemoteClient> client;
  RemoteCompileOptions options;
  std::string error;
  bool usage_error = false;  // `error` is about the command line (exit 2)

  /// The exit status of `error`, printed for `args`' command.
  int Fail(const Args& args) const {
    return usage_error ? FailUsage(args, error) : client::Fail(args.command + ": " + error);
  }
};

/// --timeout-s (default 600); nullopt when it is not a positive integer.
std::optional<int> TimeoutSeconds(const Args& args) {
  int timeout_s = 600;
  if (args.Has("--timeout-s") &&
      (!absl::SimpleAtoi(args.Get("--timeout-s"), &timeout_s) || timeout_s <= 0)) {
    return std::nullopt;
  }
  return timeout_s;
}

Remote RemoteFrom(const Args& args) {
  Remote r;
  const std::optional<int> timeout_s = TimeoutSeconds(args);
  if (!timeout_s.has_value()) {
    r.error = "--timeout-s needs a positive integer";
    r.usage_error = true;
    return r;
  }
  r.options.target = args.Get("--target", "host");
  r.options.precision = args.Get("--precision", "fp32");
  r.options.disabled_passes = SplitAll(args, "--disable-pass");
  r.options.hardware_key = args.Get("--hardware-key");
  r.options.untuned = args.Has("--untuned");
  absl::StatusOr<importer::ShapeProfiles> shapes =
      ShapeProfilesFrom(args, &r.options.bounded_min_shapes);
  if (!shapes.ok()) {
    r.error = std::string(shapes.status().message());
    return r;
  }
  r.options.shape_profiles = *shapes;
  absl::StatusOr<std::map<std::string, std::string>> constants = ConstantInputsFrom(args);
  if (!constants.ok()) {
    r.error = std::string(constants.status().message());
    return r;
  }
  r.options.constant_inputs = *std::move(constants);
  r.options.timeout_ms = int64_t{*timeout_s} * 1000;
  absl::StatusOr<std::unique_ptr<RemoteClient>> client =
      RemoteClientFrom(args, r.options.timeout_ms);
  if (!client.ok()) {
    r.error = std::string(client.status().message());
    return r;
  }
  r.client = *std::move(client);
  return r;
}

/// Whether a remote compile prints its progress to stderr: with --progress or when stderr is a
/// terminal; never with --quiet or --json.
bool ShowProgress(const Args& args) {
  if (args.Has("--quiet") || args.Has("--json")) return false;
  return args.Has("--progress") || ::isatty(STDERR_FILENO) != 0;
}

/// "4.9 MB", "812.0 KB", "300 bytes" (decimal units).
std::string SizeText(int64_t bytes) {
  if (bytes >= 1'000'000) return absl::StrFormat("%.1f MB", bytes / 1e6);
  if (bytes >= 1'000) return absl::StrFormat("%.1f KB", bytes / 1e3);
  return absl::StrCat(bytes, " bytes");
}

/// The progress lines of a remote compile, on stderr: "uploading model 4.9 MB ... done (12 ms)",
/// "queued (job ...)", "running on worker ...", "done: cache miss, compiled in 812 ms; artifact
/// 5.0 MB fetched and verified (total 1234 ms)". kilnd's compile jobs report no stages (import,
/// passes, codegen) while they run: a worker reports only its result.
class ProgressLines final : public CompileObserver {
 public:
  void Uploading(int64_t bytes) override {
    std::cerr << "uploading model " << SizeText(bytes) << " ... " << std::flush;
    line_open_ = true;
  }
  void Uploaded(double ms) override {
    std::cerr << absl::StrFormat("done (%.0f ms)\n", ms) << std::flush;
    line_open_ = false;
  }
  void JobEvent(const kiln::v1::JobEvent& e) override {
    if (e.state() == kiln::v1::QUEUED && queued_ && e.message() != "queued") {
      Line(e.message());  // queued again: why (a lost worker, a refusal)
    } else if (e.state() == kiln::v1::QUEUED || e.state() == kiln::v1::RUNNING) {
      Queued(e.job_id());
    }
    if (e.state() != kiln::v1::RUNNING) return;
    absl::string_view message = e.message();
    if (absl::ConsumePrefix(&message, "running on ")) {
      absl::ConsumeSuffix(&message, " (attempt 1)");
      Running(std::string(message));
    } else if (!message.empty() && message != last_) {
      Line(std::string(message));
    }
  }

  /// The last lines of a compile that succeeded: the job and worker of a miss when no event
  /// named them (the job ended before the client found it), then "done: ...".
  void Done(const RemoteCompileResult& r) {
    const kiln::v1::CompileResponse& c = r.response;
    if (!c.job_id().empty()) Queued(c.job_id());
    if (!c.worker().empty() && !running_) Running(c.worker());
    const std::string fetched =
        absl::StrFormat("artifact %s fetched and verified (total %.0f ms)",
                        SizeText(c.artifact_digest().size_bytes()), r.total_ms);
    Line(c.cache_hit() ? absl::StrCat("done: cache hit; ", fetched)
                       : absl::StrFormat("done: cache miss, compiled in %.0f ms; %s",
                                         c.compile_ms(), fetched));
  }
  /// Ends a line left open (an upload that failed) before an error is printed.
  void Failed() {
    if (line_open_) std::cerr << "failed\n" << std::flush;
    line_open_ = false;
  }

 private:
  void Line(const std::string& text) {
    std::cerr << text << "\n" << std::flush;
    last_ = text;
  }
  void Queued(const std::string& job_id) {
    if (queued_) return;
    queued_ = true;
    Line(absl::StrCat("queued (job ", job_id, ")"));
  }
  void Running(const std::string& worker) {
    const std::string line = absl::StrCat("running on worker ", worker);
    if (line == last_) return;
    running_ = true;
    Line(line);
  }

  bool line_open_ = false;
  bool queued_ = false;
  bool running_ = false;
  std::string last_;
};

/// Compiles `model_path` on the server (the artifact's digest verified, not yet parsed), its
/// progress on stderr where ShowProgress says so.
absl::StatusOr<RemoteCompileResult> CompileRemotely(const Args& args,
                                                    const std::string& model_path) {
  Remote remote = RemoteFrom(args);
  if (!remote.error.empty()) return absl::InvalidArgumentError(remote.error);
  KILN_ASSIGN_OR_RETURN(std::string model, ReadModelForUpload(model_path));
  if (!ShowProgress(args)) return remote.client->CompileModel(model, remote.options);
  ProgressLines progress;
  absl::StatusOr<RemoteCompileResult> result =
      remote.client->CompileModel(model, remote.options, &progress);
  if (result.ok()) {
    progress.Done(*result);
  } else {
    progress.Failed();
  }
  return result;
}

/// "cpu:znver4" from a target key "cpu:znver4:<triple>:v512:<features>".
std::string ShortTarget(const std::string& key) {
  size_t second = key.find(':', key.find(':') + 1);
  return key.substr(0, second);
}

void PrintRemoteSummary(const RemoteCompileResult& r) {
  const kiln::v1::CompileResponse& c = r.response;
  std::cout << absl::StrFormat(
      "cache %s: graph %s, target %s, %s; model %s; artifact %s (%d bytes)\n",
      c.cache_hit() ? "hit" : "miss", c.key().graph_hash().substr(0, 16),
      ShortTarget(c.key().target_key()),
      c.key().compiler_version(), r.uploaded ? "uploaded" : "already on the server",
      c.artifact_digest().hash().substr(0, 16), c.artifact_digest().size_bytes());
  std::cout << absl::StrFormat("compile %.0f ms%s, server %.0f ms, total %.0f ms\n", c.compile_ms(),
                               c.cache_hit() ? " (cached)" : "", c.server_ms(), r.total_ms);
}

std::string TimeText(int64_t unix_ms) {
  if (unix_ms <= 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixMillis(unix_ms), absl::UTCTimeZone());
}

/// The client of `--server` (required) for the server-only commands; nullptr after printing
/// the error, whose exit status is then in `exit_status`.
std::unique_ptr<RemoteClient> ServerFrom(const Args& args, int& exit_status) {
  if (!args.Has("--server")) {
    exit_status = FailUsage(args, "missing --server HOST:PORT (or KILN_SERVER)");
    return nullptr;
  }
  Remote remote = RemoteFrom(args);
  if (remote.client == nullptr) exit_status = remote.Fail(args);
  return std::move(remote.client);
}

}  // namespace

int CompileOnServer(const Args& args, const std::string& out) {
  if (!TimeoutSeconds(args).has_value()) {
    return FailUsage(args, "--timeout-s needs a positive integer");
  }
  // --tune=background: compile now (the records known today), tune in a batch job after.
  std::optional<kiln::v1::TuneRequest> tune;
  if (std::string error = TuneFlagError(args); args.Has("--tune") && !error.empty()) {
    return FailUsage(args, error);
  }
  if (args.Has("--tune")) {
    if (args.Get("--tune") != "background") {
      return FailUsage(args,
                       "--tune takes 'background' (tune in a batch job after this "
                       "compile), not '" +
                           args.Get("--tune") + "'");
    }
    absl::StatusOr<kiln::v1::TuneRequest> request = TuneRequestFrom(args);
    if (!request.ok()) return Fail(absl::StrCat("compile: ", request.status().message()));
    tune = *std::move(request);
  }
  auto result = CompileRemotely(args, args.positional[0]);
  if (!result.ok()) return FailStatus(result.status());
  // Never write something the runtime would refuse.
  absl::Status st = runtime::ParseArtifact(result->artifact).status();
  if (st.ok()) st = WriteFileAtomically(out, result->artifact);
  if (!st.ok()) return FailStatus(st);
  std::string tune_job;
  if (tune.has_value()) {
    Remote remote = RemoteFrom(args);
    absl::StatusOr<std::string> model = ReadModelForUpload(args.positional[0]);
    absl::StatusOr<std::string> job =
        model.ok() ? SubmitTune(*remote.client, *model, *tune) : model.status();
    if (!job.ok()) {
      return FailStatus(absl::Status(job.status().code(),
                                     absl::StrCat("the artifact was written to ", out,
                                                  ", but the background tune was refused: ",
                                                  job.status().message())));
    }
    tune_job = *job;
  }
  if (args.Has("--json")) {
    google::protobuf::Struct json = CompileResultJson(*result);
    if (!tune_job.empty()) SetString(json, "tune_job_id", tune_job);
    std::cout << ToJson(json) << "\n";
  } else {
    PrintRemoteSummary(*result);
    std::cout << "wrote " << out << "\n";
    if (!tune_job.empty()) {
      std::cout << "tune job " << tune_job << " queued: the next compile of this model after it "
                << "succeeds returns the tuned artifact\n";
    }
  }
  return 0;
}

int CheckOnServer(const Args& args) {
  const std::string& dir = args.positional[0];
  Remote remote = RemoteFrom(args);
  if (!remote.error.empty()) return remote.Fail(args);
  // As a local check: one compile per distinct input shapes of a symbolic model's data sets.
  auto compiles =
      PlanCheckCompiles(dir, remote.options.shape_profiles, remote.options.constant_inputs);
  if (!compiles.ok()) return FailStatus(compiles.status());
  auto model = ReadModelForUpload((std::filesystem::path(dir) / "model.onnx").string());
  if (!model.ok()) return FailStatus(model.status());
  const bool json = args.Has("--json");
  std::vector<OutputComparison> outputs;
  std::vector<std::string> skipped;
  std::vector<std::string> cache;
  std::vector<google::protobuf::Struct> compiled;  // --json: each compile
  // As a local check: a CUDA artifact runs on the first GPU unless --device says otherwise, and
  // a tensor-core precision checks with its stated tolerance.
  const std::string device =
      args.Get("--device", absl::StartsWith(remote.options.target, "cuda") ? "cuda:0" : "cpu");
  const Tolerance tolerance = ToleranceFor(remote.options.precision);
  (json ? std::cerr : std::cout) << ToleranceNote(remote.options.precision);
  const bool progress = ShowProgress(args);
  // As a local check: a model with dynamic input dims and no --input-shape is compiled once,
  // with symbolic dims (one cache entry), and every data set runs through that artifact; a
  // model whose ops cannot all be compiled so yet is compiled per input shapes, saying why.
  if (std::optional<CheckCompile> all =
          SymbolicCheckCompile(*compiles, remote.options.shape_profiles)) {
    ProgressLines lines;
    auto result =
        remote.client->CompileModel(*model, remote.options, progress ? &lines : nullptr);
    if (result.ok()) {
      if (progress) lines.Done(*result);
      const std::string note = absl::StrCat("one artifact for all ", all->data_sets.size(),
                                            " data sets");
      if (json) {
        google::protobuf::Struct c = CompileResultJson(*result);
        SetString(c, "symbolic", note);
        compiled.push_back(std::move(c));
      } else {
        PrintRemoteSummary(*result);
        std::cout << "symbolic dims: " << note << "\n";
      }
      cache.push_back(result->response.cache_hit() ? "hit" : "miss");
      auto artifact = runtime::ParseArtifact(result->artifact);
      if (!artifact.ok()) return FailStatus(artifact.status());
      auto checked = CheckCompiled(*all, *artifact, &skipped, tolerance, device);
      if (!checked.ok()) return FailStatus(checked.status());
      outputs = std::move(*checked);
      compiles->clear();
    } else if (result.status().code() == absl::StatusCode::kUnimplemented) {
      if (progress) lines.Failed();
      (json ? std::cerr : std::cout) << "symbolic dims: not supported yet ("
                                     << result.status().message()
                                     << "): one compile per input shapes\n";
    } else {
      if (progress) lines.Failed();
      return FailStatus(result.status());
    }
  }
  for (const CheckCompile& compile : *compiles) {
    RemoteCompileOptions options = remote.options;
    options.shape_profiles = compile.shape_profiles;
    ProgressLines lines;
    auto result = remote.client->CompileModel(*model, options, progress ? &lines : nullptr);
    if (!result.ok()) {
      if (progress) lines.Failed();
      return FailStatus(result.status());
    }
    if (progress) lines.Done(*result);
    const std::string shapes =
        compile.shape_profiles.empty()
            ? ""
            : importer::FormatProfiles(compile.shape_profiles, options.bounded_min_shapes);
    if (json) {
      google::protobuf::Struct c = CompileResultJson(*result);
      SetString(c, "input_shapes", shapes);
      compiled.push_back(std::move(c));
    } else {
      PrintRemoteSummary(*result);
      if (!shapes.empty()) std::cout << "input shapes: " << shapes << "\n";
    }
    cache.push_back(result->response.cache_hit() ? "hit" : "miss");
    auto artifact = runtime::ParseArtifact(result->artifact);
    if (!artifact.ok()) return FailStatus(artifact.status());
    auto checked = CheckCompiled(compile, *artifact, &skipped, tolerance, device);
    if (!checked.ok()) return FailStatus(checked.status());
    outputs.insert(outputs.end(), checked->begin(), checked->end());
  }
  bool all_pass = !outputs.empty();
  for (const OutputComparison& c : outputs) all_pass = all_pass && c.pass;
  if (json) {
    google::protobuf::Struct report = CheckJson(dir, outputs, skipped, all_pass);
    SetList(report, "compiles", std::move(compiled));
    std::cout << ToJson(report) << "\n";
    return all_pass ? 0 : 1;
  }
  for (const OutputComparison& c : outputs) std::cout << FormatComparison(c) << "\n";
  for (const std::string& s : skipped) std::cout << "SKIP " << s << "\n";
  std::cout << (all_pass ? "PASS" : "FAIL") << " " << dir << " (cache "
            << absl::StrJoin(cache, ", ") << ")\n";
  return all_pass ? 0 : 1;
}

int StatusCommand(const Args& args) {
  int exit_status = 1;
  auto client = ServerFrom(args, exit_status);
  if (!client) return exit_status;
  auto s = client->GetStats();
  if (!s.ok()) return FailStatus(s.status());
  if (args.Has("--json")) {
    std::cout << ToJson(*s) << "\n";
    return 0;
  }
  std::cout << absl::StrFormat(
      "compiler version: %s\nuptime:           %.1f s\nworkers:          %d\n"
      "jobs:             %d queued, %d running, %d succeeded, %d failed\n"
      "cache:            %d hits, %d misses\n"
      "storage:          %d artifacts, %d blobs, %d bytes\n",
      s->compiler_version(), s->uptime_ms() / 1000.0, s->workers(), s->jobs_queued(),
      s->jobs_running(), s->jobs_succeeded(), s->jobs_failed(), s->cache_hits(), s->cache_misses(),
      s->artifact_count(), s->blob_count(), s->blob_bytes());
  return 0;
}

int JobsCommand(const Args& args) {
  kiln::v1::JobState state = kiln::v1::JOB_STATE_UNSPECIFIED;
  if (args.Has("--state") &&
      !kiln::v1::JobState_Parse(absl::AsciiStrToUpper(args.Get("--state")), &state)) {
    return FailUsage(args, "unknown --state '" + args.Get("--state") + "'");
  }
  int limit = 0;
  if (args.Has("--limit") && (!absl::SimpleAtoi(args.Get("--limit"), &limit) || limit < 0)) {
    return FailUsage(args, "--limit needs an integer >= 0");
  }
  int exit_status = 1;
  auto client = ServerFrom(args, exit_status);
  if (!client) return exit_status;
  auto jobs = client->ListJobs(state, limit, SplitAll(args, "--kind"));
  if (!jobs.ok()) return FailStatus(jobs.status());
  if (args.Has("--json")) {
    std::cout << ToJson(*jobs) << "\n";
    return 0;
  }
  std::cout << absl::StrFormat("%-24s %-9s %-10s %-11s %-16s %-24s %3s %-20s %s\n", "ID",
                               "KIND", "STATE", "PRIORITY", "MODEL", "TARGET", "TRY",
                               "UPDATED (UTC)", "WORKER / ERROR");
  for (const kiln::v1::Job& j : jobs->jobs()) {
    std::string last =
        j.error_message().empty()
            ? j.worker()
            : absl::StrCat(absl::StatusCodeToString(wire::CodeFromInt(j.error_code())), ": ",
                           j.error_message());
    std::cout << absl::StrFormat(
        "%-24s %-9s %-10s %-11s %-16s %-24s %3d %-20s %s\n", j.id(), j.kind(),
        kiln::v1::JobState_Name(j.state()),
        kiln::v1::Priority_Name(j.priority()), j.model_digest().substr(0, 16), j.target(),
        j.attempts(), TimeText(j.updated_ms()), last);
  }
  return 0;
}

int WorkersCommand(const Args& args) {
  int exit_status = 1;
  auto client = ServerFrom(args, exit_status);
  if (!client) return exit_status;
  auto workers = client->ListWorkers();
  if (!workers.ok()) return FailStatus(workers.status());
  if (args.Has("--json")) {
    std::cout << ToJson(*workers) << "\n";
    return 0;
  }
  std::cout << absl::StrFormat("%-24s %-10s %-7s %-8s %-20s %-22s %s\n", "ID", "BUSY/SLOTS", "PID",
                               "LOCAL", "HEARTBEAT (UTC)", "ADDRESS", "CAPABILITIES");
  for (const kiln::v1::Worker& w : workers->workers()) {
    std::cout << absl::StrFormat("%-24s %4d/%-5d %-7d %-8s %-20s %-22s %s\n", w.id(), w.busy(),
                                 w.slots(), w.pid(), w.local() ? "yes" : "no",
                                 TimeText(w.last_heartbeat_ms()), w.address(),
                                 kiln::workers::CapabilitiesText(w.capabilities()));
  }
  return 0;
}

namespace {

/// "cpu:znver2|device=AMD EPYC|units=1|cache=..." for a key "<target key>|device=...": the
/// CPU name and the fields that tell keys of one target apart.
std::string HardwareTail(const std::string& key) {
  const size_t bar = key.find('|');
  if (bar == std::string::npos) return key;
  return ShortTarget(key.substr(0, bar)) + key.substr(bar);
}

}  // namespace

int RecordsCommand(const Args& args) {
  const std::string verb = args.positional[0];
  if (verb != "list" && verb != "export" && verb != "import") {
    return FailUsage(args, "unknown verb '" + verb + "' (list, export, import)");
  }
  if (verb == "export" && args.Has("--json")) {
    return FailUsage(args, "--json goes with list or import (export prints JSON lines)");
  }
  if ((verb == "import") != (args.positional.size() == 2)) {
    return FailUsage(args,
                     "usage: kiln records list|export --server HOST:PORT [--hardware-key K] "
                     "| kiln records import FILE.jsonl --server HOST:PORT");
  }
  int exit_status = 1;
  std::unique_ptr<RemoteClient> client = ServerFrom(args, exit_status);
  if (!client) return exit_status;
  if (verb == "import") {
    // Every line is checked before anything is sent: one bad line imports nothing.
    absl::StatusOr<std::string> text = ReadFileBytes(args.positional[1]);
    if (!text.ok()) return FailStatus(text.status());
    auto records = tuning::ParseRecordLines(*text);
    if (!records.ok()) {
      return FailStatus(absl::InvalidArgumentError(
          absl::StrCat(args.positional[1], ": ", records.status().message())));
    }
    auto imported = client->ImportTuningRecords(*records);
    if (!imported.ok()) return FailStatus(imported.status());
    if (args.Has("--json")) {
      kiln::v1::ImportTuningRecordsResponse response;
      response.set_imported(*imported);
      std::cout << ToJson(response) << "\n";
      return 0;
    }
    std::cout << "imported " << *imported << " records\n";
    return 0;
  }
  const std::string hardware_key = args.Get("--hardware-key");
  auto records = client->ListTuningRecords(hardware_key);
  if (!records.ok()) return FailStatus(records.status());
  if (records->empty() && !hardware_key.empty()) {
    // The short form `list` prints ("cpu:znver4|device=...") names the same hardware.
    records = client->ListTuningRecords("");
    if (!records.ok()) return FailStatus(records.status());
    std::vector<kiln::v1::TuningRecord> matching;
    for (kiln::v1::TuningRecord& r : *records) {
      if (HardwareTail(r.hardware_key()) == hardware_key) matching.push_back(std::move(r));
    }
    *records = std::move(matching);
  }
  if (verb == "export") {
    for (const kiln::v1::TuningRecord& r : *records) std::cout << tuning::RecordToJsonLine(r) << "\n";
    return 0;
  }
  if (args.Has("--json")) {
    kiln::v1::ListTuningRecordsResponse response;
    for (kiln::v1::TuningRecord& r : *records) *response.add_records() = std::move(r);
    std::cout << ToJson(response) << "\n";
    return 0;
  }
  std::cout << absl::StrFormat("%-12s %-11s %-10s %10s %10s %7s %9s  %s\n", "WORKLOAD",
                               "PROVENANCE", "WORKER", "MEDIAN MS", "DEFAULT", "REPEATS",
                               "CONFIRMED", "HARDWARE");
  for (const kiln::v1::TuningRecord& r : *records) {
    std::cout << absl::StrFormat("%-12s %-11s %-10s %10.4f %10.4f %7d %9s  %s\n",
                                 r.workload_key().substr(0, 12),
                                 kiln::v1::TuningRecord::Provenance_Name(r.provenance()),
                                 r.worker().substr(0, 10), r.median_ms(), r.default_median_ms(),
                                 r.repeats(), r.confirmed() ? "yes" : "no",
                                 HardwareTail(r.hardware_key()));
  }
  std::cout << records->size() << " records\n";
  return 0;
}

}  // namespace kiln::client
