// kiln tune --server, kiln cancel, and the background tune of kiln compile --tune=background.
#include "client/remote_tune.h"

#include <unistd.h>

#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/json.h"
#include "client/remote.h"
#include "client/remote_commands.h"
#include "client/tune_summary.h"
#include "compiler_core/support/status_macros.h"
#include "wire/status.h"

namespace kiln::client {
namespace {

/// One line for a terminal: trials, the workload of the round, the estimated model latency.
std::string ProgressLine(const kiln::v1::TuneProgress& p) {
  std::string line = absl::StrFormat("trial %d/%d", p.trials(), p.trial_budget());
  if (p.current_workload() < p.workloads_size()) {
    const kiln::v1::TuneWorkload& w = p.workloads(p.current_workload());
    line += absl::StrFormat("  workload %d/%d %s: best %.4f ms (default %.4f)",
                            p.current_workload() + 1, p.workloads_size(),
                            w.fused_ops().substr(0, 20), w.best_ms(), w.default_ms());
  }
  line += absl::StrFormat("  model %.3f ms (default %.3f)  %.0f s", p.estimated_ms(),
                          p.default_estimated_ms(), p.elapsed_s());
  return line;
}

/// The summary table and what was filed where.
void PrintTuneSummary(const kiln::v1::TuneProgress& p) {
  std::vector<WorkloadSummary> rows;
  for (const kiln::v1::TuneWorkload& w : p.workloads()) {
    rows.push_back({w.workload_key(), w.fused_ops(), w.weight(), w.default_ms(), w.best_ms(),
                    w.trials()});
  }
  PrintWorkloadSummary(rows, p.default_estimated_ms(), p.estimated_ms(),
                       absl::StrFormat("; %d records filed on %s", p.records_written(),
                                       p.hardware_key()));
}

/// The --json object of a finished tune: job_id, state, hardware_key, trials, trial_budget,
/// records_written, elapsed_s, default_estimated_ms, estimated_ms, and workloads: per workload
/// workload_key, fused_ops, weight, flops, default_ms, tuned_ms (the best median) and trials.
google::protobuf::Struct TuneJson(const std::string& job_id, const kiln::v1::JobEvent& last) {
  const kiln::v1::TuneProgress& p =
      last.has_tune_result() ? last.tune_result().progress() : last.tune_progress();
  google::protobuf::Struct json;
  SetString(json, "job_id", job_id);
  SetString(json, "state", kiln::v1::JobState_Name(last.state()));
  SetString(json, "hardware_key", p.hardware_key());
  SetNumber(json, "trials", static_cast<double>(p.trials()));
  SetNumber(json, "trial_budget", static_cast<double>(p.trial_budget()));
  SetNumber(json, "records_written", p.records_written());
  SetNumber(json, "elapsed_s", p.elapsed_s());
  SetNumber(json, "default_estimated_ms", p.default_estimated_ms());
  SetNumber(json, "estimated_ms", p.estimated_ms());
  std::vector<google::protobuf::Struct> workloads;
  for (const kiln::v1::TuneWorkload& w : p.workloads()) {
    google::protobuf::Struct& o = workloads.emplace_back();
    SetString(o, "workload_key", w.workload_key());
    SetString(o, "fused_ops", w.fused_ops());
    SetNumber(o, "weight", w.weight());
    SetNumber(o, "flops", static_cast<double>(w.flops()));
    SetNumber(o, "default_ms", w.default_ms());
    SetNumber(o, "tuned_ms", w.best_ms());
    SetNumber(o, "trials", w.trials());
  }
  SetList(json, "workloads", std::move(workloads));
  return json;
}

}  // namespace

std::string TuneFlagError(const Args& args) {
  int64_t trials = 64;
  if (args.Has("--trials") && (!absl::SimpleAtoi(args.Get("--trials"), &trials) || trials < 1)) {
    return "--trials must be a positive integer";
  }
  double budget = 0;
  if (args.Has("--time-budget-s") &&
      (!absl::SimpleAtod(args.Get("--time-budget-s"), &budget) || budget < 0)) {
    return "--time-budget-s must be a non-negative number";
  }
  uint64_t seed = 1;
  if (args.Has("--seed") && !absl::SimpleAtoi(args.Get("--seed"), &seed)) {
    return "--seed must be a non-negative integer";
  }
  return "";
}

absl::StatusOr<kiln::v1::TuneRequest> TuneRequestFrom(const Args& args) {
  if (std::string error = TuneFlagError(args); !error.empty()) {
    return absl::InvalidArgumentError(error);
  }
  kiln::v1::TuneRequest request;
  request.set_target(TargetToSend(args.Get("--target", "host")));
  for (const std::string& p : SplitAll(args, "--disable-pass")) {
    request.mutable_options()->add_disabled_passes(p);
  }
  importer::InputShapes min_shapes;
  KILN_ASSIGN_OR_RETURN(importer::InputShapes shapes,
                        OneShapeProfileFrom(args, "kiln tune", &min_shapes));
  SetInputShapes(shapes.empty() ? importer::ShapeProfiles{} : importer::ShapeProfiles{shapes},
                 *request.mutable_options(), min_shapes);
  int64_t trials = 64;
  double budget = 0;
  uint64_t seed = 1;
  // TuneFlagError checked these.
  if (args.Has("--trials")) (void)absl::SimpleAtoi(args.Get("--trials"), &trials);
  if (args.Has("--time-budget-s")) (void)absl::SimpleAtod(args.Get("--time-budget-s"), &budget);
  if (args.Has("--seed")) (void)absl::SimpleAtoi(args.Get("--seed"), &seed);
  request.set_trials(trials);
  request.set_time_budget_s(budget);
  request.set_seed(seed);
  request.set_hardware_key(args.Get("--hardware-key"));
  request.set_random(args.Has("--random"));
  return request;
}

absl::StatusOr<std::string> SubmitTune(RemoteClient& client, const std::string& model_bytes,
                                       kiln::v1::TuneRequest request) {
  const kiln::v1::Digest digest = DigestOf(model_bytes);
  KILN_ASSIGN_OR_RETURN(bool uploaded, client.EnsureModel(model_bytes, digest));
  (void)uploaded;
  *request.mutable_model_digest() = digest;
  kiln::v1::SubmitJobRequest submit;
  *submit.mutable_tune() = std::move(request);
  KILN_ASSIGN_OR_RETURN(kiln::v1::SubmitJobResponse response, client.SubmitJob(submit));
  return response.job_id();
}

int TuneOnServer(const Args& args) {
  if (std::string error = TuneFlagError(args); !error.empty()) return FailUsage(args, error);
  int timeout_s = 600;
  if (args.Has("--timeout-s") &&
      (!absl::SimpleAtoi(args.Get("--timeout-s"), &timeout_s) || timeout_s <= 0)) {
    return FailUsage(args, "--timeout-s needs a positive integer");
  }
  absl::StatusOr<kiln::v1::TuneRequest> request = TuneRequestFrom(args);
  if (!request.ok()) return Fail(absl::StrCat("tune: ", request.status().message()));
  absl::StatusOr<std::string> model = ReadModelForUpload(args.positional[0]);
  if (!model.ok()) return FailStatus(model.status());
  absl::StatusOr<std::unique_ptr<RemoteClient>> connected =
      RemoteClientFrom(args, int64_t{timeout_s} * 1000);
  if (!connected.ok()) return Fail(absl::StrCat("tune: ", connected.status().message()));
  RemoteClient& client = **connected;
  absl::StatusOr<std::string> job_id = SubmitTune(client, *model, *request);
  if (!job_id.ok()) return FailStatus(job_id.status());
  const bool json = args.Has("--json");
  const bool live = !json && ::isatty(STDOUT_FILENO);
  if (!json) {
    std::cout << "tune job " << *job_id << " (" << request->trials() << " trials"
              << (request->time_budget_s() > 0
                      ? absl::StrFormat(", at most %.0f s", request->time_budget_s())
                      : "")
              << "); `kiln cancel " << *job_id << " --server " << args.Get("--server")
              << "` stops it and keeps what it measured\n"
              << std::flush;
  }
  std::string last_message;
  absl::StatusOr<kiln::v1::JobEvent> last =
      client.WatchJob(*job_id, [&](const kiln::v1::JobEvent& e) {
        if (json) return true;
        if (e.has_tune_progress() && live) {
          std::cout << "\r" << ProgressLine(e.tune_progress()) << "   " << std::flush;
        } else if (e.has_tune_progress()) {
          if (e.tune_progress().round() % 10 == 1) {
            std::cout << ProgressLine(e.tune_progress()) << "\n" << std::flush;
          }
        } else if (e.message() != last_message && e.state() != kiln::v1::SUCCEEDED &&
                   e.state() != kiln::v1::FAILED && e.state() != kiln::v1::CANCELLED) {
          std::cout << (live ? "\r" : "") << e.message() << (live ? "   " : "\n") << std::flush;
        }
        last_message = e.message();
        return true;
      });
  if (live) std::cout << "\n";
  if (!last.ok()) return FailStatus(last.status());
  if (json && last->state() == kiln::v1::SUCCEEDED) {
    std::cout << ToJson(TuneJson(*job_id, *last)) << "\n";  // stdout holds JSON only on success
  } else if (!json && last->has_tune_result()) {
    PrintTuneSummary(last->tune_result().progress());
  }
  switch (last->state()) {
    case kiln::v1::SUCCEEDED:
      return 0;
    case kiln::v1::CANCELLED:
      return Fail(absl::StrCat("tune job ", *job_id, " was cancelled; the records it measured "
                               "are kept"));
    default:
      return FailStatus(
          absl::Status(wire::CodeFromInt(last->error_code()),
                       absl::StrCat("tune job ", *job_id, ": ", last->error_message())));
  }
}

int CancelCommand(const Args& args) {
  if (!args.Has("--server")) return FailUsage(args, "missing --server HOST:PORT (or KILN_SERVER)");
  absl::StatusOr<std::unique_ptr<RemoteClient>> client = RemoteClientFrom(args);
  if (!client.ok()) return Fail(absl::StrCat("cancel: ", client.status().message()));
  absl::StatusOr<kiln::v1::JobState> state = (*client)->CancelJob(args.positional[0]);
  if (!state.ok()) return FailStatus(state.status());
  std::cout << args.positional[0] << " " << kiln::v1::JobState_Name(*state) << "\n";
  return 0;
}

}  // namespace kiln::client
