// Benchmark (not a test): compiles a model directory's model.onnx with Kiln, then times
// inference on its test_data_set_0 inputs. Prints cold compile time and latency statistics.
//   kiln-bench-model DIR [--threads N] [--warmup W] [--runs R] [--target T] [--json]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "compiler_core/importer/onnx/tensor_file.h"
#include "compiler_core/pipeline/compile.h"
#include "compiler_core/runtime/executable.h"

namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "kiln-bench-model: %s\n", message.c_str());
  return 1;
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * (v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Fail("usage: kiln-bench-model DIR [--threads N] [--warmup W] [--runs R] [--target T] [--json]");
  std::string dir = argv[1];
  int threads = 0, warmup = 10, runs = 50;
  bool json = false;
  kiln::pipeline::CompileOptions options;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&](int* out) { return i + 1 < argc && absl::SimpleAtoi(argv[++i], out); };
    if (a == "--threads" && next(&threads)) continue;
    if (a == "--warmup" && next(&warmup)) continue;
    if (a == "--runs" && next(&runs)) continue;
    if (a == "--target" && i + 1 < argc) { options.target = argv[++i]; continue; }
    if (a == "--json") { json = true; continue; }
    return Fail("bad argument '" + a + "'");
  }
  auto compiled = kiln::pipeline::CompileModelFile(dir + "/model.onnx", options);
  if (!compiled.ok()) return Fail(std::string(compiled.status().message()));
  double compile_ms = compiled->timings.total_ms;
  auto exe = kiln::runtime::Executable::Load(std::move(compiled->artifact), threads);
  if (!exe.ok()) return Fail(std::string(exe.status().message()));
  std::vector<kiln::importer::NamedTensor> inputs;
  for (int i = 0; i < (*exe)->manifest().inputs_size(); ++i) {
    auto t = kiln::importer::ReadTensorFile(dir + "/test_data_set_0/input_" + std::to_string(i) + ".pb");
    if (!t.ok()) return Fail(std::string(t.status().message()));
    inputs.push_back(std::move(*t));
  }
  std::vector<const kiln::Tensor*> ptrs;
  for (const auto& t : inputs) ptrs.push_back(&t.tensor);
  for (int i = 0; i < warmup; ++i) {
    auto out = (*exe)->Run(ptrs);
    if (!out.ok()) return Fail(std::string(out.status().message()));
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
    std::printf("{\"model\":\"%s\",\"threads\":%d,\"compile_ms\":%.1f,\"p50_ms\":%.4f,\"p90_ms\":%.4f,\"runs\":%d}\n",
                std::filesystem::path(dir).filename().c_str(), threads, compile_ms, p50, p90, runs);
  } else {
    std::printf("%s: compile %.0f ms, threads %d, median %.3f ms, p90 %.3f ms over %d runs\n",
                dir.c_str(), compile_ms, threads, p50, p90, runs);
  }
  return 0;
}
