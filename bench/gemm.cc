// Benchmark (not a test): Kiln's generated matmul kernel against OpenBLAS cblas_sgemm.
//   kiln-bench-gemm [--threads 1,2] [--min-ms 300] [--only NAME_SUBSTRING] [--no-input-b]
//
// Each case is a 1-node graph Y[M,N] = A[M,K] · B[K,N] (batched when batch > 1), compiled with
// pipeline::CompileGraph and run through runtime::Executable:
//   "const B": B is a constant (an initializer), as Kiln compiles a model's weights;
//   "input B": B is a second graph input, as for attention's activations × activations.
// OpenBLAS computes the same product with cblas_sgemm (row-major, no transposes; one call per
// batch). Kiln's time is the kernel calls' own time (Executable::RunProfiled, summed), so the
// output allocation Run does is not counted; OpenBLAS's is the sgemm call. Kiln and OpenBLAS
// runs alternate in blocks so machine noise hits both alike. Medians; GFLOP/s = 2·b·M·N·K / t.
//
// Conv shapes are the im2col-equivalent GEMMs of ResNet-18 (224×224 input) with the weights as
// B: M = output pixels (Hout·Wout), N = output channels, K = Cin·kh·kw.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "compiler_core/ir/graph/graph.h"
#include "compiler_core/pipeline/compile.h"
#include "compiler_core/runtime/executable.h"

// Not in every cblas.h (Debian's openblas one has it; declared here to be safe).
extern "C" void openblas_set_num_threads(int num_threads);
extern "C" char* openblas_get_corename(void);

namespace {

using Clock = std::chrono::steady_clock;

struct Case {
  std::string name;
  int64_t batch, m, n, k;
};

std::vector<Case> Cases() {
  return {
      {"square 256", 1, 256, 256, 256},
      {"square 512", 1, 512, 512, 512},
      {"square 1024", 1, 1024, 1024, 1024},
      {"square 2048", 1, 2048, 2048, 2048},
      // ResNet-18 (im2col: M = Hout*Wout, N = Cout, K = Cin*kh*kw). (xN) = how many such layers.
      {"r18 conv1 7x7/2", 1, 12544, 64, 147},
      {"r18 layer1 3x3 (x4)", 1, 3136, 64, 576},
      {"r18 layer2.0 3x3/2", 1, 784, 128, 576},
      {"r18 layer2 3x3 (x3)", 1, 784, 128, 1152},
      {"r18 layer2 ds 1x1/2", 1, 784, 128, 64},
      {"r18 layer3.0 3x3/2", 1, 196, 256, 1152},
      {"r18 layer3 3x3 (x3)", 1, 196, 256, 2304},
      {"r18 layer3 ds 1x1/2", 1, 196, 256, 128},
      {"r18 layer4.0 3x3/2", 1, 49, 512, 2304},
      {"r18 layer4 3x3 (x3)", 1, 49, 512, 4608},
      {"r18 layer4 ds 1x1/2", 1, 49, 512, 256},
      {"r18 fc", 1, 1, 1000, 512},
      // Transformer encoder (seq 64, d_model 256, 4 heads of 64, ff 1024); B is the weight
      // (out proj is a Gemm with transB: the same product with B pre-transposed).
      {"tf qkv proj", 1, 64, 768, 256},
      {"tf out proj", 1, 64, 256, 256},
      {"tf ff1", 1, 64, 1024, 256},
      {"tf ff2", 1, 64, 256, 1024},
      // Attention: both operands are activations (see the "input B" column).
      {"tf attn QK^T, PV", 4, 64, 64, 64},
  };
}

std::shared_ptr<kiln::Tensor> RandomTensor(std::vector<int64_t> shape, unsigned seed) {
  auto t = kiln::Tensor::Zeros({kiln::DType::kFloat32, std::move(shape)});
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  float* p = t->mutable_data<float>();
  for (int64_t i = 0; i < t->type.NumElements(); ++i) p[i] = dist(gen);
  return t;
}

std::vector<int64_t> Shape(int64_t batch, int64_t rows, int64_t cols) {
  if (batch == 1) return {rows, cols};
  return {batch, rows, cols};
}

struct KilnCase {
  std::unique_ptr<kiln::runtime::Executable> exe;
  double compile_ms = 0;
  std::string schedule;  // of the (largest) kernel
  int kernels = 0;
};

// Compiles Y = A · B; B constant when `const_b`, else a second input.
absl::StatusOr<KilnCase> CompileKiln(const Case& c, const kiln::Tensor& b_data, bool const_b,
                                     int threads) {
  auto g = std::make_unique<kiln::graph::Graph>();
  g->set_name("gemm");
  kiln::graph::Value* a = g->AddInput("A", {kiln::DType::kFloat32, Shape(c.batch, c.m, c.k)});
  kiln::graph::Value* b;
  if (const_b) {
    b = g->AddConstant("B", std::make_shared<kiln::Tensor>(b_data));
  } else {
    b = g->AddInput("B", b_data.type);
  }
  kiln::graph::Node* mm = g->AddNode(kiln::graph::OpKind::kMatMul, "mm", {a, b},
                                     {{kiln::DType::kFloat32, Shape(c.batch, c.m, c.n)}});
  g->SetOutputs({mm->output(0)});
  auto compiled = kiln::pipeline::CompileGraph(std::move(g), {});
  if (!compiled.ok()) return compiled.status();
  KilnCase kc;
  kc.compile_ms = compiled->timings.total_ms;
  auto exe = kiln::runtime::Executable::Load(std::move(compiled->artifact), threads);
  if (!exe.ok()) return exe.status();
  kc.exe = std::move(*exe);
  kc.kernels = kc.exe->manifest().kernels_size();
  for (const auto& call : kc.exe->manifest().kernels()) {
    if (call.fused_ops().find("MatMul") != std::string::npos) kc.schedule = call.schedule();
  }
  for (char& ch : kc.schedule) if (ch == '\n') ch = ' ';
  return kc;
}

double Median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Timing {
  double kiln_const_ms = NAN, kiln_input_ms = NAN, blas_ms = NAN;
  double max_err = 0;  // Kiln (const B) vs OpenBLAS, max |diff| / (1 + |ref|)
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> thread_counts = {1, 2};
  double min_ms = 300;
  std::string only;
  bool input_b = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      thread_counts.clear();
      for (absl::string_view s : absl::StrSplit(argv[++i], ',')) {
        int t = 0;
        if (absl::SimpleAtoi(s, &t) && t > 0) thread_counts.push_back(t);
      }
      continue;
    }
    if (a == "--min-ms" && i + 1 < argc && absl::SimpleAtod(argv[i + 1], &min_ms)) { ++i; continue; }
    if (a == "--only" && i + 1 < argc) { only = argv[++i]; continue; }
    if (a == "--no-input-b") { input_b = false; continue; }
    std::fprintf(stderr, "usage: kiln-bench-gemm [--threads 1,2] [--min-ms MS] [--only NAME] [--no-input-b]\n");
    return 1;
  }

  std::printf("Kiln matmul vs OpenBLAS cblas_sgemm (%s, core %s), f32, row-major Y[M,N] = A[M,K]·B[K,N]\n",
              OPENBLAS_VERSION, openblas_get_corename());
  std::printf("GF/s = GFLOP/s (2·batch·M·N·K / median time); ratio = Kiln(const B) / OpenBLAS\n\n");
  std::printf("%-24s %-16s %3s | %9s %9s | %8s %6s | %9s | %9s | %s\n", "case", "b x M x N x K",
              "thr", "Kiln GF/s", "BLAS GF/s", "ratio", "", "Kiln inB", "compile", "max err");
  std::printf("%s\n", std::string(118, '-').c_str());

  unsigned seed = 1;
  for (const Case& c : Cases()) {
    if (!only.empty() && c.name.find(only) == std::string::npos) continue;
    auto a = RandomTensor(Shape(c.batch, c.m, c.k), seed++);
    auto b = RandomTensor(Shape(c.batch, c.k, c.n), seed++);
    std::vector<float> y_blas(static_cast<size_t>(c.batch * c.m * c.n));
    const double flops = 2.0 * c.batch * c.m * c.n * c.k;
    const std::string dims = std::to_string(c.batch) + "x" + std::to_string(c.m) + "x" +
                             std::to_string(c.n) + "x" + std::to_string(c.k);
    for (int threads : thread_counts) {
      auto kc = CompileKiln(c, *b, /*const_b=*/true, threads);
      if (!kc.ok()) {
        std::printf("%-24s %-16s %3d | kiln: %s\n", c.name.c_str(), dims.c_str(), threads,
                    std::string(kc.status().message()).c_str());
        continue;
      }
      absl::StatusOr<KilnCase> ki = absl::UnknownError("skipped");
      if (input_b) ki = CompileKiln(c, *b, /*const_b=*/false, threads);
      openblas_set_num_threads(threads);

      const float* pa = a->data<float>();
      const float* pb = b->data<float>();
      auto blas = [&] {
        for (int64_t i = 0; i < c.batch; ++i) {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c.m, c.n, c.k, 1.0f,
                      pa + i * c.m * c.k, c.k, pb + i * c.k * c.n, c.n, 0.0f,
                      y_blas.data() + i * c.m * c.n, c.n);
        }
      };
      std::vector<double> kernel_ms;
      std::vector<kiln::Tensor> y_kiln;
      std::string error;
      auto kiln_run = [&](kiln::runtime::Executable& exe,
                          const std::vector<const kiln::Tensor*>& in) -> double {
        auto out = exe.RunProfiled(in, &kernel_ms);
        if (!out.ok()) {
          error = std::string(out.status().message());
          return NAN;
        }
        y_kiln = std::move(*out);
        double sum = 0;
        for (double t : kernel_ms) sum += t;
        return sum;
      };
      std::vector<const kiln::Tensor*> in_const = {a.get()}, in_input = {a.get(), b.get()};

      // Warm up each, and estimate how many runs make a block of ~min_ms/4.
      auto t0 = Clock::now();
      blas();
      blas();
      double one = std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / 2;
      kiln_run(*kc->exe, in_const);
      if (ki.ok()) kiln_run(*ki->exe, in_input);
      const int per_block = std::clamp(static_cast<int>(min_ms / 4 / std::max(one, 1e-3)), 1, 500);

      std::vector<double> tk, ti, tb;
      for (int round = 0; round < 4 && error.empty(); ++round) {
        for (int r = 0; r < per_block; ++r) tk.push_back(kiln_run(*kc->exe, in_const));
        if (ki.ok()) {
          for (int r = 0; r < per_block; ++r) ti.push_back(kiln_run(*ki->exe, in_input));
        }
        for (int r = 0; r < per_block; ++r) {
          auto s = Clock::now();
          blas();
          tb.push_back(std::chrono::duration<double, std::milli>(Clock::now() - s).count());
        }
        // OpenBLAS's idle workers spin for a while after a call; let them go to sleep before
        // Kiln's threads need the cores.
        if (threads > 1) std::this_thread::sleep_for(std::chrono::milliseconds(150));
      }
      if (!error.empty()) {
        std::printf("%-24s %-16s %3d | kiln: %s\n", c.name.c_str(), dims.c_str(), threads,
                    error.c_str());
        continue;
      }
      // Check the result (last const-B run) against OpenBLAS.
      kiln_run(*kc->exe, in_const);
      double max_err = 0;
      const float* yk = y_kiln[0].data<float>();
      for (size_t i = 0; i < y_blas.size(); ++i) {
        max_err = std::max<double>(max_err, std::fabs(yk[i] - y_blas[i]) / (1 + std::fabs(y_blas[i])));
      }
      const double mk = Median(tk), mb = Median(tb), mi = Median(ti);
      const double gk = flops / mk / 1e6, gb = flops / mb / 1e6, gi = flops / mi / 1e6;
      char input_col[32];
      if (ki.ok()) {
        std::snprintf(input_col, sizeof input_col, "%9.1f", gi);
      } else {
        std::snprintf(input_col, sizeof input_col, "%9s", input_b ? "error" : "-");
      }
      std::printf("%-24s %-16s %3d | %9.1f %9.1f | %7.0f%% %6s | %s | %7.0fms | %.1e\n",
                  c.name.c_str(), dims.c_str(), threads, gk, gb, 100 * mb / mk,
                  c.m == 1024 && c.n == 1024 && c.k == 1024 ? (mb / mk >= 0.7 ? "OK" : "<70%") : "",
                  input_col, kc->compile_ms, max_err);
      if (threads == thread_counts.front()) {
        std::printf("%-24s   schedule (const B, %d kernel%s): %s\n", "", kc->kernels,
                    kc->kernels == 1 ? "" : "s", kc->schedule.c_str());
        if (input_b && !ki.ok()) {
          std::printf("%-24s   input B: %s\n", "", std::string(ki.status().message()).c_str());
        }
      }
      std::fflush(stdout);
    }
  }
  return 0;
}
