// Running candidate batches in child processes.
#include "compiler_core/tuning/measure.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "compiler_core/runtime/code_module.h"
#include "compiler_core/runtime/thread_pool.h"
#include "compiler_core/tuning/measure_device.h"

namespace kiln::tuning {
namespace {

// ---- The child side -------------------------------------------------------------------------

constexpr int kMaxRepeats = 4096;
constexpr size_t kMessageBytes = 512;

/// What a child writes back through shared memory.
struct ChildReport {
  int32_t done = 0;    // 1 once the child finished normally (ok or wrong output)
  int32_t ok = 0;
  int32_t repeats = 0;
  double max_abs_error = 0;
  double times_ms[kMaxRepeats];
  char message[kMessageBytes];
};

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};
using Aligned = std::unique_ptr<uint8_t, AlignedFree>;

Aligned Allocate(int64_t bytes) {
  const size_t n = static_cast<size_t>(std::max<int64_t>(64, (bytes + 63) / 64 * 64));
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(64, n));
  if (p != nullptr) std::memset(p, 0, n);
  return Aligned(p);
}

/// Seeded inputs: floats uniform in [-1, 1], everything else 0 (a valid index).
void FillParam(const loop::Buffer& b, uint8_t* data, uint64_t seed) {
  if (b.dtype != DType::kFloat32 && b.dtype != DType::kFloat64) return;
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  const int64_t n = b.NumElements();
  for (int64_t i = 0; i < n; ++i) {
    if (b.dtype == DType::kFloat32) {
      reinterpret_cast<float*>(data)[i] = static_cast<float>(dist(gen));
    } else {
      reinterpret_cast<double*>(data)[i] = dist(gen);
    }
  }
}

bool Matches(double got, double want, double atol, double rtol) {
  if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
  return std::fabs(got - want) <= atol + rtol * std::fabs(want);
}

double ElementAsDouble(const loop::Buffer& b, const uint8_t* data, int64_t i) {
  switch (b.dtype) {
    case DType::kFloat32: return reinterpret_cast<const float*>(data)[i];
    case DType::kFloat64: return reinterpret_cast<const double*>(data)[i];
    default: return 0;
  }
}

/// The host CPU: the kernel runs on the params in place, on a thread pool.
class CpuMeasureDevice final : public MeasureDevice {
 public:
  CpuMeasureDevice(const std::string& code, const BuiltKernel& kernel,
                   const MeasureOptions& options)
      : code_(code), kernel_(kernel), options_(options), pool_(options.num_threads) {}

  absl::Status Prepare(const std::vector<uint8_t*>& params, const std::vector<int64_t>&) override {
    absl::StatusOr<std::unique_ptr<runtime::CodeModule>> module = runtime::CodeModule::Load(code_);
    if (!module.ok()) return module.status();
    module_ = std::move(*module);
    absl::StatusOr<kiln_kernel_fn> fn = module_->Kernel(kernel_.symbol);
    if (!fn.ok()) return fn.status();
    fn_ = *fn;
    for (uint8_t* p : params) args_.push_back(p);
    for (int64_t bytes : kernel_.workspace_bytes) {
      workspaces_.push_back(Allocate(bytes));
      args_.push_back(workspaces_.back().get());
    }
    ctx_ = kiln_context{&runtime::ThreadPool::ParallelForTrampoline, &pool_};
    if (options_.cache_flush_bytes > 0) flush_ = Allocate(options_.cache_flush_bytes);
    if (!kernel_.init_symbol.empty()) {
      // Load-time work (e.g. a weight transform) runs once, as at artifact load: never timed.
      absl::StatusOr<kiln_kernel_fn> init = module_->Kernel(kernel_.init_symbol);
      if (!init.ok()) return init.status();
      (*init)(&ctx_, args_.data());
    }
    return absl::OkStatus();
  }
  absl::Status Run() override {
    fn_(&ctx_, args_.data());
    return absl::OkStatus();
  }
  absl::Status ReadBack() override { return absl::OkStatus(); }  // the params are host memory
  absl::StatusOr<double> TimedRun() override {
    // Reading a buffer of cache_flush_bytes moves the kernel's data out of the private caches
    // (untimed).
    if (flush_) {
      uint64_t sum = 0;
      const uint8_t* p = flush_.get();
      for (int64_t i = 0; i < options_.cache_flush_bytes; i += 64) sum += p[i];
      sink_ = sink_ + sum;
    }
    auto start = std::chrono::steady_clock::now();
    fn_(&ctx_, args_.data());
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
  }

 private:
  const std::string& code_;
  const BuiltKernel& kernel_;
  const MeasureOptions& options_;
  runtime::ThreadPool pool_;
  std::unique_ptr<runtime::CodeModule> module_;
  kiln_kernel_fn fn_ = nullptr;
  kiln_context ctx_{};
  std::vector<void*> args_;
  std::vector<Aligned> workspaces_;
  Aligned flush_;
  volatile uint64_t sink_ = 0;
};

/// Runs one kernel in this (child) process and fills `report`. `reference` holds the reference's
/// params after its run (nullptr when this is the reference: then the params are copied there).
void ChildMain(const loop::Func& workload, const CandidateBatch& batch, const BuiltKernel& kernel,
               const MeasureOptions& options, uint8_t* reference, ChildReport* report) {
  auto fail = [&](const std::string& message) {
    std::snprintf(report->message, kMessageBytes, "%s", message.c_str());
    report->done = 1;
  };
  std::unique_ptr<MeasureDevice> device;
  if (batch.ptx) {
    absl::StatusOr<std::unique_ptr<MeasureDevice>> cuda =
        MakeCudaMeasureDevice(batch, kernel, options);
    if (!cuda.ok()) return fail(cuda.status().ToString());
    device = std::move(*cuda);
  } else {
    device = std::make_unique<CpuMeasureDevice>(batch.code, kernel, options);
  }
  std::vector<Aligned> buffers;
  std::vector<uint8_t*> params;
  std::vector<int64_t> param_bytes;
  for (size_t p = 0; p < workload.params.size(); ++p) {
    buffers.push_back(Allocate(workload.params[p]->NumBytes()));
    FillParam(*workload.params[p], buffers.back().get(), options.input_seed + p);
    params.push_back(buffers.back().get());
    param_bytes.push_back(workload.params[p]->NumBytes());
  }
  if (absl::Status s = device->Prepare(params, param_bytes); !s.ok()) return fail(s.ToString());
  if (absl::Status s = device->Run(); !s.ok()) return fail(s.ToString());
  if (absl::Status s = device->ReadBack(); !s.ok()) return fail(s.ToString());
  // Compare (or publish, for the reference) every param: inputs stay as they were, results
  // must match.
  size_t offset = 0;
  for (size_t p = 0; p < workload.params.size() && reference != nullptr; ++p) {
    const loop::Buffer& b = *workload.params[p];
    const size_t bytes = static_cast<size_t>(b.NumBytes());
    const uint8_t* got = params[p];
    const uint8_t* want = reference + offset;
    offset += bytes;
    if (b.dtype == DType::kFloat32 || b.dtype == DType::kFloat64) {
      double scale = 1;
      for (int64_t i = 0; i < b.NumElements(); ++i) {
        const double w = std::fabs(ElementAsDouble(b, want, i));
        if (std::isfinite(w)) scale = std::max(scale, w);
      }
      for (int64_t i = 0; i < b.NumElements(); ++i) {
        const double g = ElementAsDouble(b, got, i), w = ElementAsDouble(b, want, i);
        if (!std::isnan(g) && !std::isnan(w)) {
          report->max_abs_error = std::max(report->max_abs_error, std::fabs(g - w));
        }
        if (!Matches(g, w, options.atol * scale, options.rtol)) {
          return fail(absl::StrFormat(
              "wrong output: param %d (%%%s) element %d is %g, the reference has %g", p, b.name,
              i, g, w));
        }
      }
    } else if (std::memcmp(got, want, bytes) != 0) {
      return fail(absl::StrFormat("wrong output: param %d (%%%s) differs from the reference", p,
                                  b.name));
    }
  }
  if (reference == nullptr) {
    // The caller's region for the reference's params follows the report.
    uint8_t* out = reinterpret_cast<uint8_t*>(report + 1);
    for (size_t p = 0; p < workload.params.size(); ++p) {
      std::memcpy(out, params[p], static_cast<size_t>(param_bytes[p]));
      out += param_bytes[p];
    }
  }
  for (int i = 0; i < options.warmup_runs; ++i) {
    absl::StatusOr<double> ms = device->TimedRun();
    if (!ms.ok()) return fail(ms.status().ToString());
  }
  double total = 0;
  const int max_repeats = std::min(kMaxRepeats, std::max(1, options.max_repeats));
  int n = 0;
  while (n < max_repeats && (n < options.min_repeats || total < options.min_measure_ms)) {
    absl::StatusOr<double> ms = device->TimedRun();
    if (!ms.ok()) return fail(ms.status().ToString());
    report->times_ms[n++] = *ms;
    total += *ms;
  }
  report->repeats = n;
  report->ok = 1;
  report->done = 1;
}

// ---- The parent side ------------------------------------------------------------------------

/// Anonymous shared memory a child writes its report (and, for the reference, its params) to.
class SharedRegion {
 public:
  explicit SharedRegion(size_t bytes) : bytes_(bytes) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    data_ = p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
  }
  ~SharedRegion() {
    if (data_ != nullptr) ::munmap(data_, bytes_);
  }
  uint8_t* data() const { return data_; }

 private:
  size_t bytes_;
  uint8_t* data_;
};

double Percentile(std::vector<double> sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(sorted.size() - 1, lo + 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

absl::StatusOr<Measurement> RunOne(const loop::Func& workload, const CandidateBatch& batch,
                                   const BuiltKernel& kernel, const MeasureOptions& options,
                                   uint8_t* reference, SharedRegion& region) {
  Measurement m;
  if (!kernel.status.ok() || kernel.symbol.empty()) {
    m.status = kernel.status.ok() ? absl::FailedPreconditionError("not built") : kernel.status;
    return m;
  }
  auto* report = new (region.data()) ChildReport();
  const pid_t pid = ::fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    ::alarm(static_cast<unsigned>(std::max(1.0, std::ceil(options.timeout_s))));
    ChildMain(workload, batch, kernel, options, reference, report);
    ::_exit(0);
  }
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0) {
    if (errno != EINTR) return absl::InternalError(absl::StrCat("waitpid: ", std::strerror(errno)));
  }
  if (WIFSIGNALED(wstatus)) {
    const int sig = WTERMSIG(wstatus);
    m.status = sig == SIGALRM
                   ? absl::DeadlineExceededError(
                         absl::StrCat("ran past the ", options.timeout_s, " s timeout"))
                   : absl::AbortedError(absl::StrCat("crashed with signal ", sig, " (",
                                                     ::strsignal(sig), ")"));
    return m;
  }
  if (!report->done) {
    m.status = absl::AbortedError(
        absl::StrCat("exited with status ", WEXITSTATUS(wstatus), " before reporting"));
    return m;
  }
  m.max_abs_error = report->max_abs_error;
  if (!report->ok) {
    m.status = absl::FailedPreconditionError(report->message);
    return m;
  }
  std::vector<double> times(report->times_ms, report->times_ms + report->repeats);
  std::sort(times.begin(), times.end());
  m.repeats = report->repeats;
  m.median_ms = Percentile(times, 0.5);
  m.p10_ms = Percentile(times, 0.1);
  m.p90_ms = Percentile(times, 0.9);
  m.min_ms = times.empty() ? 0 : times.front();
  return m;
}

}  // namespace

int64_t CacheFlushBytesFor(const HardwareInfo& hardware) {
  const std::vector<int64_t>& c = hardware.cache_bytes;
  if (c.empty()) return 0;
  const int64_t private_cache = c.size() >= 2 ? c[c.size() - 2] : c.back();
  return private_cache > 0 ? 2 * private_cache : 0;
}

absl::StatusOr<BatchMeasurement> RunCandidates(const loop::Func& lowered,
                                               const CandidateBatch& batch,
                                               const MeasureOptions& options) {
  size_t param_bytes = 0;
  for (const loop::BufferRef& p : lowered.params) param_bytes += p->NumBytes();
  SharedRegion region(sizeof(ChildReport) + param_bytes);
  if (region.data() == nullptr) {
    return absl::InternalError(absl::StrCat("mmap of ", param_bytes, " bytes failed"));
  }
  // The reference's params land after its report; copy them out before the next child.
  std::vector<uint8_t> reference(param_bytes);
  BatchMeasurement out;
  absl::StatusOr<Measurement> ref =
      RunOne(lowered, batch, batch.reference, options, nullptr, region);
  if (!ref.ok()) return ref.status();
  if (!ref->status.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the reference kernel failed: ", ref->status.ToString()));
  }
  out.reference = *ref;
  std::memcpy(reference.data(), region.data() + sizeof(ChildReport), param_bytes);
  for (const BuiltKernel& k : batch.candidates) {
    absl::StatusOr<Measurement> m = RunOne(lowered, batch, k, options, reference.data(), region);
    if (!m.ok()) return m.status();
    out.candidates.push_back(*m);
  }
  return out;
}

}  // namespace kiln::tuning
