// The `kiln` command line: compile, run, check and inspect models locally, or compile and check
// through a kilnd server (--server) and query its status, jobs and workers. Its flags and help
// are defined in cli.cc.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/check.h"
#include "client/cli.h"
#include "client/depfile.h"
#include "client/inspect.h"
#include "client/json.h"
#include "client/records_file.h"
#include "client/remote_commands.h"
#include "client/run_timing.h"
#include "client/tune_commands.h"
#include "compiler_core/importer/onnx/tensor_file.h"
#include "compiler_core/pipeline/compile.h"
#include "compiler_core/runtime/artifact.h"
#include "compiler_core/runtime/chrome_trace.h"
#include "compiler_core/runtime/cuda/load_runner.h"
#include "compiler_core/support/file_bytes.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::client {
namespace {

// The CPU or SM a compile was for, with a tensor-core precision: "znver4", "sm_90 tf32".
std::string TargetText(const Target& target) {
  if (target.IsGpu() && target.gpu.precision != "fp32") {
    return absl::StrCat(target.cpu, " ", target.gpu.precision);
  }
  return target.cpu;
}

absl::StatusOr<pipeline::CompileOptions> OptionsFrom(const Args& args) {
  pipeline::CompileOptions options;
  options.target = args.Get("--target", "host");
  options.precision = args.Get("--precision", "fp32");
  options.print_ir_after = SplitAll(args, "--print-ir-after");
  options.disabled_passes = SplitAll(args, "--disable-pass");
  KILN_ASSIGN_OR_RETURN(options.shape_profiles,
                        ShapeProfilesFrom(args, &options.bounded_min_shapes));
  KILN_ASSIGN_OR_RETURN(options.constant_inputs, ConstantInputsFrom(args));
  return options;
}

/// --records FILE [--hardware-key K]: the compile applies the file's best records.
absl::Status WithRecords(const Args& args, pipeline::CompileOptions& options,
                         std::unique_ptr<FileRecords>& records) {
  if (!args.Has("--records")) return absl::OkStatus();
  auto loaded = LoadRecordsFile(args.Get("--records"), options.target, args.Get("--hardware-key"));
  if (!loaded.ok()) return loaded.status();
  records = std::move(*loaded);
  options.schedules = records->source.get();
  return absl::OkStatus();
}

void PrintTimings(const pipeline::CompileResult& r) {
  std::cout << absl::StrFormat(
      "compiled in %.0f ms (import %.0f, passes %.0f, lower+schedule %.0f, codegen %.0f)\n",
      r.timings.total_ms, r.timings.import_ms, r.timings.passes_ms, r.timings.lower_ms,
      r.timings.codegen_ms);
}

/// The compile's stage times (--time-passes), as LLVM's -time-passes: per category (each graph
/// pass on its own; all kernels' lowering, scheduling and LLVM IR emission summed), then the
/// slowest single stages, with their share of the compile's wall time.
class TimePasses {
 public:
  void Add(const std::string& stage, double ms) { stages_.push_back({stage, ms}); }

  void Print(double total_ms) const {
    std::map<std::string, std::pair<double, int>> by_category;
    std::vector<std::string> order;
    for (const auto& [stage, ms] : stages_) {
      std::string category = stage;
      for (const char* prefix :
           {"import: ", "lower: ", "schedule: ", "codegen: emit ", "verify: graph after ",
            "codegen: verify module ", "codegen: optimize (LLVM O3) ", "codegen: object file "}) {
        if (absl::StartsWith(stage, prefix)) {
          category = std::string(absl::StripSuffix(absl::StripSuffix(prefix, " "), ":"));
        }
      }
      if (!by_category.count(category)) order.push_back(category);
      by_category[category].first += ms;
      by_category[category].second += 1;
    }
    std::cout << absl::StrFormat("time report (--time-passes): total %.1f ms\n", total_ms)
              << absl::StrFormat("  %10s %6s %6s  %s\n", "ms", "%", "count", "stage");
    for (const std::string& c : order) {
      const auto& [ms, count] = by_category.at(c);
      std::cout << absl::StrFormat("  %10.1f %5.1f%% %6d  %s\n", ms, 100 * ms / total_ms, count, c);
    }
    if (std::any_of(stages_.begin(), stages_.end(),
                    [](const auto& s) { return absl::StrContains(s.first, " shard "); })) {
      std::cout << "  (codegen shards run in parallel: a codegen category sums its shards' times,"
                   " which can exceed its share of the wall time)\n";
    }
    std::vector<std::pair<std::string, double>> sorted = stages_;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    std::cout << "  slowest single stages:\n";
    for (size_t i = 0; i < sorted.size() && i < 10; ++i) {
      std::cout << absl::StrFormat("  %10.1f %5.1f%%         %s\n", sorted[i].second,
                                   100 * sorted[i].second / total_ms, sorted[i].first);
    }
  }

 private:
  std::vector<std::pair<std::string, double>> stages_;
};

int CompileHere(const Args& args, const std::string& out);

int Compile(const Args& args) {
  const std::string out = args.Get("--output");
  if (out.empty()) return FailUsage(args, "missing -o OUT.kiln");
  if (args.Has("--local") && args.Has("--server")) {
    return FailUsage(args, "--local and --server do not go together");
  }
  if (args.Has("--time-passes") && args.Has("--server")) {
    return FailUsage(args, "--time-passes times a local compile (drop --server, or --local)");
  }
  const int status = args.Has("--server") ? CompileOnServer(args, out) : CompileHere(args, out);
  if (status != 0 || !args.Has("--depfile")) return status;
  absl::Status written = WriteCompileDepfile(args.Get("--depfile"), out, args);
  return written.ok() ? 0 : FailStatus(written);
}

// A local compile of `args` into `out`.
int CompileHere(const Args& args, const std::string& out) {
  if (args.Has("--tune")) return FailUsage(args, "--tune=background needs --server");
  absl::StatusOr<pipeline::CompileOptions> parsed = OptionsFrom(args);
  if (!parsed.ok()) return FailStatus(parsed.status());
  pipeline::CompileOptions& options = *parsed;
  std::unique_ptr<FileRecords> records;
  absl::Status loaded = WithRecords(args, options, records);
  if (!loaded.ok()) return FailStatus(loaded);
  TimePasses time_passes;
  if (args.Has("--time-passes")) {
    options.on_stage = [&](const std::string& stage, double ms) { time_passes.Add(stage, ms); };
  }
  auto result = pipeline::CompileModelFile(args.positional[0], options);
  if (!result.ok()) return FailStatus(result.status());
  absl::Status st = runtime::WriteArtifactFile(out, result->artifact);
  if (!st.ok()) return FailStatus(st);
  if (args.Has("--json")) {
    google::protobuf::Struct json = LocalCompileJson(*result);
    SetString(json, "output", out);
    std::error_code ec;
    SetNumber(json, "artifact_bytes", static_cast<double>(std::filesystem::file_size(out, ec)));
    std::cout << ToJson(json) << "\n";
    return 0;
  }
  PrintTimings(*result);
  if (args.Has("--time-passes")) time_passes.Print(result->timings.total_ms);
  const kiln::v1::Manifest& m = result->artifact.manifest;
  int kernels = m.kernels_size();
  for (const kiln::v1::Manifest& p : m.profiles()) kernels += p.kernels_size();
  std::vector<std::string> bounded;
  for (const auto& b : m.bound_symbols()) {
    bounded.push_back(absl::StrCat(b.name(), "=", b.min(), "..", b.max()));
  }
  std::cout << "wrote " << out << " ("
            << (m.profiles_size() > 0 ? absl::StrCat(m.profiles_size(), " shape profiles, ") : "")
            << (bounded.empty() ? ""
                                : absl::StrCat("bounded dims ", absl::StrJoin(bounded, " "), ", "))
            << kernels << " kernels, graph " << result->graph_hash.substr(0, 16) << ", target "
            << TargetText(result->target) << ")\n";
  return 0;
}

std::string SafeFileName(const std::string& name) {
  std::string s = name;
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') c = '_';
  }
  return s.empty() ? "output" : s;
}

// `kiln run --repeat N --warmup W [--profile FILE]`: times (or profiles) the runs, prints the
// latency and, profiling, the slowest kernels; writes the Chrome trace.
int TimeOrProfile(const Args& args, runtime::ModelRunner& exe,
                  const std::vector<const Tensor*>& ptrs, int repeat, int warmup) {
  if (!args.Has("--profile")) {
    auto stats = TimeRuns(exe, ptrs, repeat, warmup);
    if (!stats.ok()) return FailStatus(stats.status());
    std::cout << "latency: " << FormatLatency(*stats, warmup) << "\n";
    return 0;
  }
  std::vector<runtime::ProfiledRun> runs;
  auto kernels = ProfileRuns(exe, ptrs, repeat, warmup, &runs);
  if (!kernels.ok()) return FailStatus(kernels.status());
  std::vector<double> totals;
  for (const runtime::ProfiledRun& r : runs) totals.push_back(r.total_ms);
  std::cout << "latency: " << FormatLatency(Summarize(totals), warmup) << "\n";
  const kiln::v1::Manifest& m = exe.manifest();
  double kernel_sum = 0;
  for (const KernelProfile& k : *kernels) kernel_sum += k.median_ms;
  std::cout << "kernels by median time (" << kernels->size() << " kernels, "
            << absl::StrFormat("%.3f", kernel_sum) << " ms in all):\n";
  for (size_t i = 0; i < kernels->size() && i < 10; ++i) {
    const KernelProfile& k = (*kernels)[i];
    const int64_t flops = k.index < m.kernels_size() ? m.kernels(k.index).flops() : 0;
    std::cout << absl::StrFormat("  kernel_%-4d %-28s %9.3f ms %5.1f%%", k.index, k.name,
                                 k.median_ms, kernel_sum > 0 ? 100 * k.median_ms / kernel_sum : 0)
              << (flops > 0 && k.median_ms > 0
                      ? absl::StrFormat("  %7.2f GFLOP/s", flops / (k.median_ms * 1e6))
                      : "")
              << "\n";
  }
  const std::string trace_path = args.Get("--profile");
  absl::Status st = WriteFileAtomically(trace_path, runtime::ChromeTraceJson(m, runs));
  if (!st.ok()) return FailStatus(st);
  std::cout << "wrote " << trace_path << " (Chrome trace of " << runs.size()
            << " runs: open it in Perfetto or chrome://tracing)\n";
  return 0;
}

int Run(const Args& args) {
  std::string out_dir = args.Get("--output-dir");
  int repeat = 0, warmup = 0;
  if (args.Has("--repeat") && (!absl::SimpleAtoi(args.Get("--repeat"), &repeat) || repeat < 1)) {
    return FailUsage(args, "--repeat needs a positive integer");
  }
  if (args.Has("--warmup") && (!absl::SimpleAtoi(args.Get("--warmup"), &warmup) || warmup < 0)) {
    return FailUsage(args, "--warmup needs a non-negative integer");
  }
  const bool timing = args.Has("--repeat") || args.Has("--profile");
  if (timing && repeat == 0) repeat = args.Has("--profile") ? 10 : 1;
  if (timing && !args.Has("--warmup")) warmup = 1;
  if (out_dir.empty() && !timing) {
    return FailUsage(args, "missing --output-dir DIR (or --repeat N / --profile FILE to time)");
  }
  int threads = 0;
  if (args.Has("--threads") && !absl::SimpleAtoi(args.Get("--threads"), &threads)) {
    return FailUsage(args, "--threads needs an integer");
  }
  std::map<std::string, std::string> files;
  for (const std::string& spec : args.GetAll("--input")) {
    auto eq = spec.find('=');
    if (eq == std::string::npos) {
      return FailUsage(args, "--input wants NAME=FILE.pb, got '" + spec + "'");
    }
    files[spec.substr(0, eq)] = spec.substr(eq + 1);
  }
  auto artifact = runtime::ReadArtifactFile(args.positional[0]);
  if (!artifact.ok()) return FailStatus(artifact.status());
  // A CUDA artifact runs on the first GPU unless --device says otherwise.
  const std::string device = args.Get(
      "--device", artifact->manifest.code_kind() == kiln::v1::PTX ? "cuda:0" : "cpu");
  auto exe = runtime::cuda::LoadRunner(std::move(*artifact), device, threads);
  if (!exe.ok()) return FailStatus(exe.status());
  const auto& m = (*exe)->manifest();
  std::vector<std::string> input_names;
  for (const auto& in : m.inputs()) input_names.push_back(in.name());
  auto has_input = [&](const std::string& name) {
    return std::find(input_names.begin(), input_names.end(), name) != input_names.end();
  };
  // Each file read: a tensor, or (for a sequence input "NAME" compiled as NAME[0], NAME[1], ...)
  // an onnx.SequenceProto whose elements feed NAME[k].
  std::map<std::string, importer::NamedTensor> given;
  for (const auto& [name, file] : files) {
    if (has_input(name)) {
      auto t = importer::ReadTensorFile(file);
      if (!t.ok()) return FailStatus(t.status());
      given[name] = std::move(*t);
      continue;
    }
    if (!has_input(importer::SequenceElementName(name, 0))) {
      return Fail("run: the model has no input named '" + name + "' (its inputs: " +
                  absl::StrJoin(input_names, ", ") + ")");
    }
    auto elements = importer::ReadSequenceFile(file);
    if (!elements.ok()) return FailStatus(elements.status());
    int64_t compiled = 0;
    while (has_input(importer::SequenceElementName(name, compiled))) ++compiled;
    if (static_cast<int64_t>(elements->size()) != compiled) {
      return Fail(absl::StrCat("run: --input ", name, ": a sequence of ", elements->size(),
                               " tensors, the artifact was compiled for ", compiled));
    }
    for (size_t k = 0; k < elements->size(); ++k) {
      given[importer::SequenceElementName(name, static_cast<int64_t>(k))] =
          std::move((*elements)[k]);
    }
  }
  std::vector<importer::NamedTensor> inputs;
  for (const auto& in : m.inputs()) {
    auto it = given.find(in.name());
    if (it == given.end()) return Fail("run: missing --input " + in.name() + "=FILE.pb");
    inputs.push_back(std::move(it->second));
  }
  std::vector<const Tensor*> ptrs;
  for (const auto& t : inputs) ptrs.push_back(&t.tensor);
  if (timing) {
    if (int status = TimeOrProfile(args, **exe, ptrs, repeat, warmup); status != 0) return status;
    if (out_dir.empty()) return 0;
  }
  auto outputs = (*exe)->Run(ptrs);
  if (!outputs.ok()) return FailStatus(outputs.status());
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return Fail("run: cannot create '" + out_dir + "': " + ec.message());
  for (int i = 0; i < m.outputs_size(); ++i) {
    // A sequence output (NAME[0], NAME[1], ...) is written as one SequenceProto NAME.pb.
    std::optional<std::pair<std::string, int64_t>> seq =
        importer::ParseSequenceElementName(m.outputs(i).name());
    if (seq && seq->second == 0) {
      std::vector<const Tensor*> elements;
      std::vector<std::string> types;
      for (int k = i; k < m.outputs_size(); ++k) {
        auto e = importer::ParseSequenceElementName(m.outputs(k).name());
        if (!e || e->first != seq->first || e->second != k - i) break;
        elements.push_back(&(*outputs)[k]);
        types.push_back((*outputs)[k].type.ToString());
      }
      std::string path =
          (std::filesystem::path(out_dir) / (SafeFileName(seq->first) + ".pb")).string();
      absl::Status st = importer::WriteSequenceFile(path, seq->first, elements);
      if (!st.ok()) return FailStatus(st);
      std::cout << "wrote " << path << " sequence(" << absl::StrJoin(types, ", ") << ")\n";
      i += static_cast<int>(elements.size()) - 1;
      continue;
    }
    std::string path = (std::filesystem::path(out_dir) / (SafeFileName(m.outputs(i).name()) + ".pb")).string();
    absl::Status st = importer::WriteTensorFile(path, m.outputs(i).name(), (*outputs)[i]);
    if (!st.ok()) return FailStatus(st);
    std::cout << "wrote " << path << " " << (*outputs)[i].type.ToString() << "\n";
  }
  return 0;
}

int Check(const Args& args) {
  if (args.Has("--local") && args.Has("--server")) {
    return FailUsage(args, "--local and --server do not go together");
  }
  if (args.Has("--server")) return CheckOnServer(args);
  absl::StatusOr<pipeline::CompileOptions> parsed = OptionsFrom(args);
  if (!parsed.ok()) return FailStatus(parsed.status());
  pipeline::CompileOptions& options = *parsed;
  std::unique_ptr<FileRecords> records;
  absl::Status loaded = WithRecords(args, options, records);
  if (!loaded.ok()) return FailStatus(loaded);
  // A CUDA target's artifact runs on the first GPU unless --device says otherwise.
  const std::string device =
      args.Get("--device", absl::StartsWith(options.target, "cuda") ? "cuda:0" : "cpu");
  const Tolerance tolerance = ToleranceFor(options.precision);
  (args.Has("--json") ? std::cerr : std::cout) << ToleranceNote(options.precision);
  auto report = CheckModelDir(args.positional[0], options, tolerance, device);
  if (!report.ok()) return FailStatus(report.status());
  if (args.Has("--json")) {
    std::cout << CheckReportJson(*report, args.positional[0]) << "\n";
    return report->all_pass ? 0 : 1;
  }
  if (!report->symbolic.empty()) std::cout << "symbolic dims: " << report->symbolic << "\n";
  if (report->input_shapes.empty()) {
    PrintTimings(report->compile);
    std::cout << "graph " << report->compile.graph_hash.substr(0, 16) << ", target "
              << TargetText(report->compile.target) << "\n";
  }
  for (const std::string& shapes : report->input_shapes) {
    std::cout << "input shapes: " << shapes << ", target " << TargetText(report->compile.target)
              << "\n";
  }
  for (const OutputComparison& c : report->outputs) std::cout << FormatComparison(c) << "\n";
  for (const std::string& skipped : report->skipped) std::cout << "SKIP " << skipped << "\n";
  std::cout << (report->all_pass ? "PASS" : "FAIL") << " " << args.positional[0] << "\n";
  return report->all_pass ? 0 : 1;
}

int Inspect(const Args& args) {
  auto artifact = runtime::ReadArtifactFile(args.positional[0]);
  if (!artifact.ok()) return FailStatus(artifact.status());
  if (args.Has("--json")) {
    std::cout << InspectJson(*artifact, args.positional[0]) << "\n";
  } else if (args.Has("--dot")) {
    std::cout << InspectDot(artifact->manifest);
  } else {
    InspectDetails details;
    details.kernels = args.Has("--kernels");
    details.memory = args.Has("--memory");
    std::cout << InspectText(*artifact, args.positional[0], details);
  }
  return 0;
}

}  // namespace
}  // namespace kiln::client

int main(int argc, char** argv) {
  using namespace kiln::client;
  Args args;
  if (std::optional<int> done = ParseKilnCommandLine(argc, argv, args)) return *done;
  const std::string& cmd = args.command;
  if (cmd == "compile") return Compile(args);
  if (cmd == "run") return Run(args);
  if (cmd == "check") return Check(args);
  if (cmd == "inspect") return Inspect(args);
  if (cmd == "tune") return TuneCommand(args);
  if (cmd == "cancel") return CancelCommand(args);
  if (cmd == "status") return StatusCommand(args);
  if (cmd == "jobs") return JobsCommand(args);
  if (cmd == "workers") return WorkersCommand(args);
  if (cmd == "records") return RecordsCommand(args);
  return Fail("no command '" + cmd + "'");  // every command of client/cli.cc is above
}
