// Benchmark (not a test): compiles a model directory's model.onnx with Kiln, then times
// inference on its test_data_set_0 inputs (a model with symbolic input dims at their shapes). Prints cold compile time and latency statistics.
//   kiln-bench-model DIR [--threads N] [--warmup W] [--runs R] [--target T] [--json]
//                        [--records FILE.jsonl] [--profile [TOP]] [--serve]
// --records: compiles with FILE's best records for this machine's hardware key at --threads
//   (tuning::DetectCpuHardware(target, threads).Key(), what `kiln tune --local --threads N`
//   writes); a file with no record for exactly that key is said on stderr and the model runs
//   untuned. The output names how many kernels got a record's schedule ("tuned_kernels").
// --profile: times every kernel call over the runs and prints the TOP (default 15) kernels by
//   median time, with their fused ops and schedule.
// --symbolic: compiles with no input shapes, so a model with symbolic dims is one artifact for
//   every shape (docs/symbolic-shapes.md), timed at the data set's shapes.
// --decode: each run is one greedy generation through the symbolic artifact (implies
//   --symbolic), as examples/decode does with DIR/greedy.txt: the prompt with an empty cache
//   (every past_* input's symbolic dims 0), then one step per further expected token, each
//   feeding the token chosen (argmax of the last logits row) and the present_* outputs as the
//   next past_*. The first generation must give greedy.txt's tokens. Timed: the whole
//   generation ("ms"), its prompt step ("prompt_ms") and its mean decode step ("step_ms").
// --serve: for bench/compare, which interleaves Kiln's runs with ONNX Runtime's. After compiling
//   and warming up, prints one JSON line {"ready":...,"compile_ms":...}, then for each line "N"
//   read from stdin runs N times and prints {"ms":[...]} (with --decode also "prompt_ms" and
//   "step_ms"); exits at end of input or on "q".
//   Errors are printed as one JSON line {"error":"..."} (and exit status 1).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "compiler_core/codegen/llvm/codegen.h"
#include "compiler_core/importer/onnx/tensor_file.h"
#include "compiler_core/pipeline/compile.h"
#include "compiler_core/runtime/executable.h"
#include "compiler_core/tuning/hardware.h"
#include "compiler_core/tuning/records.h"

namespace {

bool g_serve = false;

std::string JsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

int Fail(const std::string& message) {
  if (g_serve) {
    std::printf("{\"error\":\"%s\"}\n", JsonEscape(message).c_str());
    std::fflush(stdout);
  }
  std::fprintf(stderr, "kiln-bench-model: %s\n", message.c_str());
  return 1;
}

/// A records file's records and the schedule source over those of one hardware key.
struct BenchRecords {
  kiln::tuning::RecordSet records;
  std::string hardware_key;
  std::unique_ptr<kiln::tuning::RecordScheduleSource> source;  // null: none for the key
};

/// Reads `path` and picks the records of this machine at `threads` threads for `target_spec`.
/// A file without a record for that exact hardware key is not an error: it says so on stderr
/// (naming the units= of the keys it has) and leaves `source` null.
absl::StatusOr<std::unique_ptr<BenchRecords>> LoadRecords(const std::string& path,
                                                          const std::string& target_spec,
                                                          int threads) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("records file '", path, "' cannot be read"));
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = kiln::tuning::ParseRecordLines(text.str());
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", parsed.status().message()));
  }
  auto out = std::make_unique<BenchRecords>();
  for (kiln::v1::TuningRecord& r : *parsed) {
    if (absl::Status st = out->records.Add(std::move(r)); !st.ok()) return st;
  }
  auto target = kiln::ResolveTarget(target_spec);
  if (!target.ok()) return target.status();
  out->hardware_key = kiln::tuning::DetectCpuHardware(*target, threads).Key();
  std::vector<std::string> keys = out->records.HardwareKeysFor(target->Key());
  if (std::find(keys.begin(), keys.end(), out->hardware_key) == keys.end()) {
    std::string have;
    for (const std::string& k : keys) {
      auto info = kiln::tuning::ParseHardwareKey(k);
      absl::StrAppend(&have, have.empty() ? "" : ", ",
                      info.ok() ? absl::StrCat("units=", info->compute_units) : k);
    }
    // The target key part is long and the same for both: name only the rest of the key.
    const size_t device = out->hardware_key.find("|device=");
    const std::string shown = device == std::string::npos
                                  ? out->hardware_key
                                  : "<target>" + out->hardware_key.substr(device);
    std::fprintf(stderr,
                 "kiln-bench-model: %s has no record for this machine at %d threads (hardware "
                 "key %s; the file has %s): running untuned\n",
                 path.c_str(), threads, shown.c_str(),
                 have.empty() ? "none for this target" : have.c_str());
    return out;
  }
  out->source =
      std::make_unique<kiln::tuning::RecordScheduleSource>(out->records, out->hardware_key);
  return out;
}

int TunedKernels(const kiln::v1::Manifest& m) {
  int n = 0;
  for (const auto& k : m.kernels()) n += k.tuned() ? 1 : 0;
  return n;
}

/// One greedy generation (--decode) through a symbolic artifact.
class Generation {
 public:
  /// Reads DIR/greedy.txt ("prompt ID ..." and "tokens ID ..." lines) and finds the token
  /// input (the int64 input not named past*), the logits output (named "logits", else the
  /// first) and each past_X input's present_X output. Errors: kInvalidArgument.
  static absl::StatusOr<Generation> Make(const std::string& dir, const kiln::v1::Manifest& m) {
    Generation g;
    std::ifstream in(dir + "/greedy.txt");
    if (!in) return absl::NotFoundError(dir + "/greedy.txt cannot be read");
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string key;
      fields >> key;
      std::vector<int64_t>* to = key == "prompt" ? &g.prompt_ : key == "tokens" ? &g.expected_ : nullptr;
      for (int64_t t; to != nullptr && fields >> t;) to->push_back(t);
    }
    if (g.prompt_.empty() || g.expected_.empty()) {
      return absl::InvalidArgumentError(dir + "/greedy.txt has no prompt or no tokens line");
    }
    std::map<std::string, int> outputs;
    for (int o = 0; o < m.outputs_size(); ++o) outputs[m.outputs(o).name()] = o;
    g.logits_ = outputs.count("logits") ? outputs["logits"] : 0;
    for (int i = 0; i < m.inputs_size(); ++i) {
      const kiln::v1::TensorSpec& spec = m.inputs(i);
      if (spec.name().rfind("past", 0) != 0) {
        if (kiln::ParseDType(spec.dtype()) != kiln::DType::kInt64 || g.ids_ >= 0) {
          return absl::InvalidArgumentError("input '" + spec.name() +
                                            "' is neither past* nor the one int64 token input");
        }
        g.ids_ = i;
        continue;
      }
      const std::string present = "present" + spec.name().substr(4);
      if (!outputs.count(present)) {
        return absl::InvalidArgumentError("input '" + spec.name() + "' has no output '" + present + "'");
      }
      std::optional<kiln::DType> dtype = kiln::ParseDType(spec.dtype());
      if (!dtype) return absl::InvalidArgumentError("input '" + spec.name() + "' has an unknown dtype");
      kiln::Tensor empty;
      empty.type.dtype = *dtype;
      for (int64_t d : spec.shape()) empty.type.shape.push_back(d < 0 ? 0 : d);
      empty.bytes.assign(static_cast<size_t>(empty.type.NumBytes()), 0);
      g.past_.push_back({i, outputs[present], std::move(empty)});
    }
    if (g.ids_ < 0) return absl::InvalidArgumentError("the model has no int64 token input");
    return g;
  }

  /// Generates greedy.txt's number of tokens; `prompt_ms` is the first step's time and
  /// `step_ms` the mean of the others'. Errors: a failed run, or (with `check`) tokens other
  /// than greedy.txt's (kDataLoss, naming the first that differs).
  absl::Status Run(kiln::runtime::Executable& exe, bool check, double& prompt_ms, double& step_ms) {
    std::vector<kiln::Tensor> feeds(past_.size() + 1);
    for (size_t p = 0; p < past_.size(); ++p) feeds[static_cast<size_t>(past_[p].input)] = past_[p].empty;
    std::vector<int64_t> ids = prompt_;
    double steps_ms = 0;
    for (size_t step = 0; step < expected_.size(); ++step) {
      kiln::Tensor& t = feeds[static_cast<size_t>(ids_)];
      t.type = kiln::TensorType{kiln::DType::kInt64, {1, static_cast<int64_t>(ids.size())}};
      t.bytes.resize(ids.size() * sizeof(int64_t));
      std::memcpy(t.bytes.data(), ids.data(), t.bytes.size());
      std::vector<const kiln::Tensor*> ptrs;
      for (const kiln::Tensor& f : feeds) ptrs.push_back(&f);
      auto start = std::chrono::steady_clock::now();
      absl::StatusOr<std::vector<kiln::Tensor>> out = exe.Run(ptrs);
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      if (!out.ok()) return out.status();
      if (step == 0) {
        prompt_ms = ms;
      } else {
        steps_ms += ms;
      }
      const kiln::Tensor& logits = (*out)[static_cast<size_t>(logits_)];
      const int64_t vocab = logits.type.shape.back();
      const float* last = logits.data<float>() + logits.type.NumElements() - vocab;
      const int64_t token = std::max_element(last, last + vocab) - last;
      if (check && token != expected_[step]) {
        return absl::DataLossError(absl::StrCat("token ", step, " is ", token, ", greedy.txt says ",
                                                expected_[step]));
      }
      for (const Past& p : past_) {
        feeds[static_cast<size_t>(p.input)] = std::move((*out)[static_cast<size_t>(p.output)]);
      }
      ids = {token};
    }
    step_ms = expected_.size() > 1 ? steps_ms / static_cast<double>(expected_.size() - 1) : 0;
    return absl::OkStatus();
  }

 private:
  struct Past {
    int input;
    int output;
    kiln::Tensor empty;
  };
  std::vector<int64_t> prompt_, expected_;
  int ids_ = -1, logits_ = 0;
  std::vector<Past> past_;
};

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * (v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

/// --decode: warm-up generations (the first checked against greedy.txt), then timed ones, or
/// the --serve protocol with prompt_ms and step_ms beside ms.
int Decode(const std::string& dir, kiln::runtime::Executable& exe, int threads, double compile_ms,
           int warmup, int runs) {
  absl::StatusOr<Generation> gen = Generation::Make(dir, exe.manifest());
  if (!gen.ok()) return Fail(std::string(gen.status().message()));
  double prompt_ms = 0, step_ms = 0;
  for (int i = 0; i < std::max(1, warmup); ++i) {
    if (absl::Status st = gen->Run(exe, i == 0, prompt_ms, step_ms); !st.ok()) {
      return Fail(std::string(st.message()));
    }
  }
  auto timed = [&](std::vector<double>& total, std::vector<double>& prompt,
                   std::vector<double>& step) -> absl::Status {
    auto start = std::chrono::steady_clock::now();
    if (absl::Status st = gen->Run(exe, false, prompt_ms, step_ms); !st.ok()) return st;
    total.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    prompt.push_back(prompt_ms);
    step.push_back(step_ms);
    return absl::OkStatus();
  };
  if (g_serve) {
    std::printf("{\"ready\":true,\"model\":\"%s\",\"threads\":%d,\"compile_ms\":%.1f,\"kernels\":%d}\n",
                std::filesystem::path(dir).filename().c_str(), threads, compile_ms,
                exe.manifest().kernels_size());
    std::fflush(stdout);
    char line[64];
    while (std::fgets(line, sizeof line, stdin) != nullptr) {
      int n = 0;
      if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &n) || n <= 0) break;
      std::vector<double> total, prompt, step;
      for (int i = 0; i < n; ++i) {
        if (absl::Status st = timed(total, prompt, step); !st.ok()) return Fail(std::string(st.message()));
      }
      auto list = [](const std::vector<double>& v) {
        std::string s;
        for (size_t i = 0; i < v.size(); ++i) absl::StrAppend(&s, i ? "," : "", absl::StrFormat("%.5f", v[i]));
        return s;
      };
      std::printf("{\"ms\":[%s],\"prompt_ms\":[%s],\"step_ms\":[%s]}\n", list(total).c_str(),
                  list(prompt).c_str(), list(step).c_str());
      std::fflush(stdout);
    }
    return 0;
  }
  std::vector<double> total, prompt, step;
  for (int i = 0; i < runs; ++i) {
    if (absl::Status st = timed(total, prompt, step); !st.ok()) return Fail(std::string(st.message()));
  }
  const double step_p50 = Percentile(step, 0.5);
  std::printf("%s: one artifact, compile %.0f ms, threads %d: generation median %.3f ms, prompt "
              "median %.3f ms, decode step median %.3f ms (%.1f tokens/s) over %d generations\n",
              dir.c_str(), compile_ms, threads, Percentile(total, 0.5), Percentile(prompt, 0.5),
              step_p50, step_p50 > 0 ? 1000.0 / step_p50 : 0.0, runs);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    return Fail(
        "usage: kiln-bench-model DIR [--threads N] [--warmup W] [--runs R] [--target T] "
        "[--json] [--records FILE.jsonl] [--profile [TOP]] [--serve] [--data-set N] "
        "[--input-shape NAME=D0,D1,... (a dim may be MIN..MAX)] [--symbolic] [--decode]");
  }
  std::string dir = argv[1];
  int threads = 0, warmup = 10, runs = 50;
  bool json = false, profile = false, symbolic = false, decode = false;
  int top = 15;
  std::string records_path;
  kiln::pipeline::CompileOptions options;
  std::vector<kiln::importer::NamedShape> given_shapes;
  int data_set = 0;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&](int* out) { return i + 1 < argc && absl::SimpleAtoi(argv[++i], out); };
    if (a == "--threads" && next(&threads)) continue;
    if (a == "--warmup" && next(&warmup)) continue;
    if (a == "--runs" && next(&runs)) continue;
    if (a == "--target" && i + 1 < argc) { options.target = argv[++i]; continue; }
    if (a == "--records" && i + 1 < argc) { records_path = argv[++i]; continue; }
    if (a == "--json") { json = true; continue; }
    if (a == "--data-set" && next(&data_set)) continue;
    if (a == "--input-shape" && i + 1 < argc) {
      absl::Status parsed =
          kiln::importer::ParseInputShape(argv[++i], given_shapes, &options.bounded_min_shapes);
      if (!parsed.ok()) return Fail(std::string(parsed.message()));
      continue;
    }
    if (a == "--serve") { g_serve = true; continue; }
    if (a == "--symbolic") { symbolic = true; continue; }
    if (a == "--decode") { symbolic = decode = true; continue; }
    if (a == "--profile") {
      profile = true;
      if (i + 1 < argc && absl::SimpleAtoi(argv[i + 1], &top)) ++i;
      continue;
    }
    return Fail("bad argument '" + a + "'");
  }
  std::unique_ptr<BenchRecords> records;
  if (!records_path.empty()) {
    auto loaded = LoadRecords(records_path, options.target, threads);
    if (!loaded.ok()) return Fail(std::string(loaded.status().message()));
    records = std::move(*loaded);
    options.schedules = records->source.get();
  }
  // A model with symbolic input dims runs at the shapes of its test_data_set_N inputs, or is
  // compiled for the given --input-shape (bounded dims included).
  const std::string data_dir = dir + "/test_data_set_" + std::to_string(data_set);
  auto signatures = kiln::importer::ReadInputSignaturesFile(dir + "/model.onnx");
  if (!signatures.ok()) return Fail(std::string(signatures.status().message()));
  auto shapes = kiln::importer::DataSetInputShapes(*signatures, data_dir);
  if (!shapes.ok()) return Fail(std::string(shapes.status().message()));
  if (symbolic) {
    if (!given_shapes.empty()) return Fail("--symbolic and --input-shape exclude each other");
  } else if (!given_shapes.empty()) {
    auto profiles = kiln::importer::BoundedProfilesOf(given_shapes, options.bounded_min_shapes);
    if (!profiles.ok()) return Fail(std::string(profiles.status().message()));
    options.shape_profiles = *profiles;
  } else if (!shapes->empty()) {
    options.shape_profiles = {*shapes};
  }
  auto compiled = kiln::pipeline::CompileModelFile(dir + "/model.onnx", options);
  if (!compiled.ok()) return Fail(std::string(compiled.status().message()));
  double compile_ms = compiled->timings.total_ms;
  auto exe = kiln::runtime::Executable::Load(std::move(compiled->artifact), threads);
  if (!exe.ok()) return Fail(std::string(exe.status().message()));
  if (decode) return Decode(dir, **exe, threads, compile_ms, warmup, runs);
  std::vector<kiln::importer::NamedTensor> inputs;
  for (int i = 0; i < (*exe)->manifest().inputs_size(); ++i) {
    auto t = kiln::importer::ReadTensorFile(data_dir + "/input_" + std::to_string(i) + ".pb");
    if (!t.ok()) return Fail(std::string(t.status().message()));
    inputs.push_back(std::move(*t));
  }
  std::vector<const kiln::Tensor*> ptrs;
  for (const auto& t : inputs) ptrs.push_back(&t.tensor);
  for (int i = 0; i < warmup; ++i) {
    auto out = (*exe)->Run(ptrs);
    if (!out.ok()) return Fail(std::string(out.status().message()));
  }
  if (g_serve) {
    std::printf("{\"ready\":true,\"model\":\"%s\",\"threads\":%d,\"compile_ms\":%.1f,\"kernels\":%d,"
                "\"tuned_kernels\":%d}\n",
                std::filesystem::path(dir).filename().c_str(), threads, compile_ms,
                (*exe)->manifest().kernels_size(), TunedKernels((*exe)->manifest()));
    std::fflush(stdout);
    char line[64];
    while (std::fgets(line, sizeof line, stdin) != nullptr) {
      int n = 0;
      if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &n) || n <= 0) break;
      std::string reply = "{\"ms\":[";
      for (int i = 0; i < n; ++i) {
        auto start = std::chrono::steady_clock::now();
        auto out = (*exe)->Run(ptrs);
        double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        if (!out.ok()) return Fail(std::string(out.status().message()));
        absl::StrAppend(&reply, i ? "," : "", absl::StrFormat("%.5f", t));
      }
      std::printf("%s]}\n", reply.c_str());
      std::fflush(stdout);
    }
    return 0;
  }
  if (profile) {
    const auto& m = (*exe)->manifest();
    std::vector<std::vector<double>> per_kernel(m.kernels_size());
    std::vector<double> totals, kernel_ms;
    for (int i = 0; i < runs; ++i) {
      auto start = std::chrono::steady_clock::now();
      auto out = (*exe)->RunProfiled(ptrs, &kernel_ms);
      totals.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      if (!out.ok()) return Fail(std::string(out.status().message()));
      for (size_t k = 0; k < kernel_ms.size(); ++k) per_kernel[k].push_back(kernel_ms[k]);
    }
    std::vector<std::pair<double, int>> order;
    double sum = 0;
    for (int k = 0; k < m.kernels_size(); ++k) {
      double med = Percentile(per_kernel[k], 0.5);
      sum += med;
      order.push_back({med, k});
    }
    std::sort(order.begin(), order.end(), [](auto& a, auto& b) { return a.first > b.first; });
    // Time by fused-op pattern, to see which kind of kernel dominates.
    std::map<std::string, std::pair<double, int>> by_ops;
    for (auto& [med, k] : order) {
      auto& e = by_ops[m.kernels(k).fused_ops()];
      e.first += med;
      e.second += 1;
    }
    std::printf("%s: threads %d, %d kernels, run median %.3f ms, sum of kernel medians %.3f ms (%d runs)\n",
                dir.c_str(), threads, m.kernels_size(), Percentile(totals, 0.5), sum, runs);
    std::printf("by fused ops:\n");
    std::vector<std::pair<double, std::string>> ops_order;
    for (auto& [ops, e] : by_ops) ops_order.push_back({e.first, ops});
    std::sort(ops_order.rbegin(), ops_order.rend());
    for (auto& [t, ops] : ops_order) {
      std::printf("  %8.3f ms %5.1f%%  x%-3d %s\n", t, 100 * t / sum, by_ops[ops].second, ops.c_str());
    }
    std::printf("top kernels by median time:\n");
    for (int r = 0; r < std::min<int>(top, static_cast<int>(order.size())); ++r) {
      auto [med, k] = order[r];
      const auto& call = m.kernels(k);
      std::string sched = call.schedule();
      for (char& c : sched) if (c == '\n') c = ' ';
      std::printf("  #%-3d %8.3f ms %5.1f%%  %-28s %s\n        schedule: %s\n", k, med, 100 * med / sum,
                  call.symbol().c_str(), call.fused_ops().c_str(), sched.c_str());
    }
    return 0;
  }
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    auto start = std::chrono::steady_clock::now();
    auto out = (*exe)->Run(ptrs);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    if (!out.ok()) return Fail(std::string(out.status().message()));
  }
  double p50 = Percentile(ms, 0.5), p90 = Percentile(ms, 0.9);
  if (json) {
    std::printf("{\"model\":\"%s\",\"threads\":%d,\"compile_ms\":%.1f,\"p50_ms\":%.4f,\"p90_ms\":%.4f,\"runs\":%d,"
                "\"tuned_kernels\":%d}\n",
                std::filesystem::path(dir).filename().c_str(), threads, compile_ms, p50, p90, runs,
                TunedKernels((*exe)->manifest()));
  } else {
    std::printf("%s: compile %.0f ms, threads %d, median %.3f ms, p90 %.3f ms over %d runs%s\n",
                dir.c_str(), compile_ms, threads, p50, p90, runs,
                records ? absl::StrFormat(", %d/%d kernels tuned", TunedKernels((*exe)->manifest()),
                                          (*exe)->manifest().kernels_size()).c_str()
                        : "");
  }
  return 0;
}
