// The CUDA measure device: a PTX batch's kernel in the child's own CUDA context (so a fault,
// which leaves the context unusable, dies with the child), its params and workspaces in device
// memory, timed with CUDA events around its launches; a cache flush overwrites a buffer of
// cache_flush_bytes (2 x L2) before each timed run.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler_core/runtime/cuda/cuda_driver.h"
#include "compiler_core/runtime/cuda/cuda_executable.h"
#include "compiler_core/support/status_macros.h"
#include "compiler_core/tuning/measure_device.h"

namespace kiln::tuning {
namespace {

using runtime::cuda::CudaDriver;
using runtime::cuda::CUdeviceptr;

class CudaMeasureDevice final : public MeasureDevice {
 public:
  CudaMeasureDevice(const CandidateBatch& batch, const BuiltKernel& kernel,
                    const MeasureOptions& options)
      : batch_(batch), kernel_(kernel), options_(options) {}
  // The child exits right after measuring; the driver reclaims the context with the process.
  ~CudaMeasureDevice() override = default;

  absl::Status Load() {
    KILN_ASSIGN_OR_RETURN(d_, CudaDriver::Get());
    KILN_RETURN_IF_ERROR(d_->Check(d_->cuDeviceGet(&device_, options_.device), "cuDeviceGet"));
    runtime::cuda::CUcontext ctx = nullptr;
    KILN_RETURN_IF_ERROR(
        d_->Check(d_->cuDevicePrimaryCtxRetain(&ctx, device_), "cuDevicePrimaryCtxRetain"));
    KILN_RETURN_IF_ERROR(d_->Check(d_->cuCtxSetCurrent(ctx), "cuCtxSetCurrent"));
    KILN_RETURN_IF_ERROR(d_->Check(d_->cuStreamCreate(&stream_, 0), "cuStreamCreate"));
    KILN_ASSIGN_OR_RETURN(
        module_, runtime::cuda::LoadPtxModule(*d_, batch_.code, "loading the batch's PTX"));
    auto resolve = [&](const std::vector<KernelLaunch>& in,
                       std::vector<Resolved>& out) -> absl::Status {
      for (const KernelLaunch& l : in) {
        Resolved r{nullptr, l};
        KILN_RETURN_IF_ERROR(d_->Check(d_->cuModuleGetFunction(&r.fn, module_, l.entry.c_str()),
                                       absl::StrCat("PTX entry ", l.entry)));
        out.push_back(r);
      }
      return absl::OkStatus();
    };
    KILN_RETURN_IF_ERROR(resolve(kernel_.launches, launches_));
    return resolve(kernel_.init_launches, init_launches_);
  }

  absl::Status Prepare(const std::vector<uint8_t*>& params,
                       const std::vector<int64_t>& param_bytes) override {
    host_ = params;
    bytes_ = param_bytes;
    for (size_t p = 0; p < params.size(); ++p) {
      KILN_ASSIGN_OR_RETURN(CUdeviceptr ptr, Alloc(param_bytes[p]));
      if (param_bytes[p] > 0) {
        KILN_RETURN_IF_ERROR(
            d_->Check(d_->cuMemcpyHtoD(ptr, params[p], static_cast<size_t>(param_bytes[p])),
                      "copying a param to the device"));
      }
      args_.push_back(ptr);
    }
    for (int64_t bytes : kernel_.workspace_bytes) {
      KILN_ASSIGN_OR_RETURN(CUdeviceptr ptr, Alloc(bytes));
      args_.push_back(ptr);
    }
    for (CUdeviceptr& a : args_) arg_ptrs_.push_back(&a);
    if (options_.cache_flush_bytes > 0) {
      KILN_ASSIGN_OR_RETURN(flush_, Alloc(options_.cache_flush_bytes));
    }
    KILN_RETURN_IF_ERROR(d_->Check(d_->cuEventCreate(&start_, 0), "cuEventCreate"));
    KILN_RETURN_IF_ERROR(d_->Check(d_->cuEventCreate(&end_, 0), "cuEventCreate"));
    KILN_RETURN_IF_ERROR(Launch(init_launches_));
    return Sync();
  }

  absl::Status Run() override {
    KILN_RETURN_IF_ERROR(Launch(launches_));
    return Sync();
  }

  absl::Status ReadBack() override {
    for (size_t p = 0; p < host_.size(); ++p) {
      if (bytes_[p] == 0) continue;
      KILN_RETURN_IF_ERROR(
          d_->Check(d_->cuMemcpyDtoH(host_[p], args_[p], static_cast<size_t>(bytes_[p])),
                    "copying a param to the host"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<double> TimedRun() override {
    if (flush_ != 0) {
      KILN_RETURN_IF_ERROR(
          d_->Check(d_->cuMemsetD8(flush_, 1, static_cast<size_t>(options_.cache_flush_bytes)),
                    "flushing the L2"));
    }
    KILN_RETURN_IF_ERROR(d_->Check(d_->cuEventRecord(start_, stream_), "cuEventRecord"));
    KILN_RETURN_IF_ERROR(Launch(launches_));
    KILN_RETURN_IF_ERROR(d_->Check(d_->cuEventRecord(end_, stream_), "cuEventRecord"));
    KILN_RETURN_IF_ERROR(d_->Check(d_->cuEventSynchronize(end_), "running the kernel"));
    float ms = 0;
    KILN_RETURN_IF_ERROR(
        d_->Check(d_->cuEventElapsedTime(&ms, start_, end_), "cuEventElapsedTime"));
    return static_cast<double>(ms);
  }

 private:
  struct Resolved {
    runtime::cuda::CUfunction fn;
    KernelLaunch launch;
  };

  absl::StatusOr<CUdeviceptr> Alloc(int64_t bytes) {
    CUdeviceptr ptr = 0;
    const size_t size = static_cast<size_t>(std::max<int64_t>(bytes, 256));
    KILN_RETURN_IF_ERROR(d_->Check(d_->cuMemAlloc(&ptr, size), "cuMemAlloc"));
    KILN_RETURN_IF_ERROR(d_->Check(d_->cuMemsetD8(ptr, 0, size), "cuMemsetD8"));
    return ptr;
  }

  absl::Status Launch(const std::vector<Resolved>& launches) {
    for (const Resolved& r : launches) {
      KILN_RETURN_IF_ERROR(runtime::cuda::LaunchKernel(*d_, r.fn, r.launch.entry, r.launch.grid,
                                                       r.launch.block, stream_, arg_ptrs_.data()));
    }
    return absl::OkStatus();
  }

  absl::Status Sync() { return d_->Check(d_->cuStreamSynchronize(stream_), "running the kernel"); }

  const CandidateBatch& batch_;
  const BuiltKernel& kernel_;
  const MeasureOptions& options_;
  const CudaDriver* d_ = nullptr;
  runtime::cuda::CUdevice device_ = 0;
  runtime::cuda::CUstream stream_ = nullptr;
  runtime::cuda::CUmodule module_ = nullptr;
  runtime::cuda::CUevent start_ = nullptr, end_ = nullptr;
  std::vector<Resolved> launches_, init_launches_;
  std::vector<uint8_t*> host_;
  std::vector<int64_t> bytes_;
  std::vector<CUdeviceptr> args_;
  std::vector<void*> arg_ptrs_;
  CUdeviceptr flush_ = 0;
};

// What a child that queried the device writes back through shared memory.
struct QueryReport {
  int32_t done = 0;
  int32_t code = 0;  // absl::StatusCode of the query
  char message[512] = {};
  char name[256] = {};
  int32_t sm = 0, multiprocessors = 0, driver_version = 0;
  int64_t memory_bytes = 0, shared_bytes_per_sm = 0, l2_bytes = 0;
};

}  // namespace

absl::StatusOr<runtime::cuda::CudaDeviceInfo> QueryCudaDeviceInChild(int ordinal) {
  void* region = ::mmap(nullptr, sizeof(QueryReport), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) return absl::InternalError("mmap failed");
  auto* report = new (region) QueryReport();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::munmap(region, sizeof(QueryReport));
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    ::alarm(60);
    absl::StatusOr<runtime::cuda::CudaDeviceInfo> info = runtime::cuda::QueryCudaDevice(ordinal);
    report->code = static_cast<int32_t>(info.status().code());
    std::snprintf(report->message, sizeof(report->message), "%s",
                  std::string(info.status().message()).c_str());
    if (info.ok()) {
      std::snprintf(report->name, sizeof(report->name), "%s", info->name.c_str());
      report->sm = info->sm;
      report->multiprocessors = info->multiprocessors;
      report->driver_version = info->driver_version;
      report->memory_bytes = info->memory_bytes;
      report->shared_bytes_per_sm = info->shared_bytes_per_sm;
      report->l2_bytes = info->l2_bytes;
    }
    report->done = 1;
    ::_exit(0);
  }
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  QueryReport r = *report;
  ::munmap(region, sizeof(QueryReport));
  if (!r.done) return absl::InternalError("the device query process died");
  if (r.code != 0) return absl::Status(static_cast<absl::StatusCode>(r.code), r.message);
  runtime::cuda::CudaDeviceInfo info;
  info.ordinal = ordinal;
  info.name = r.name;
  info.sm = r.sm;
  info.multiprocessors = r.multiprocessors;
  info.driver_version = r.driver_version;
  info.memory_bytes = r.memory_bytes;
  info.shared_bytes_per_sm = r.shared_bytes_per_sm;
  info.l2_bytes = r.l2_bytes;
  return info;
}

absl::StatusOr<HardwareInfo> DetectCudaHardware(const Target& target, int ordinal) {
  KILN_ASSIGN_OR_RETURN(runtime::cuda::CudaDeviceInfo info, QueryCudaDeviceInChild(ordinal));
  if (target.IsGpu()) {
    KILN_RETURN_IF_ERROR(runtime::cuda::CheckSmCompatible(target.gpu.sm, target.gpu.arch_specific,
                                                          info.sm, info.name));
  }
  HardwareInfo hw;
  hw.target_key = target.Key();
  hw.device =
      absl::StrCat(info.name, ", ", info.memory_bytes >> 20, " MiB, driver ", info.driver_version);
  hw.compute_units = info.multiprocessors;
  if (info.l2_bytes > 0) hw.cache_bytes = {info.l2_bytes};
  return hw;
}

absl::StatusOr<std::unique_ptr<MeasureDevice>> MakeCudaMeasureDevice(
    const CandidateBatch& batch, const BuiltKernel& kernel, const MeasureOptions& options) {
  auto device = std::make_unique<CudaMeasureDevice>(batch, kernel, options);
  KILN_RETURN_IF_ERROR(device->Load());
  return std::unique_ptr<MeasureDevice>(std::move(device));
}

}  // namespace kiln::tuning
