// Loading libcuda.so.1 and resolving the driver entry points (cuda_driver.h).
#include "compiler_core/runtime/cuda/cuda_driver.h"

#include <dlfcn.h>

#include <cstring>
#include <mutex>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace kiln::runtime::cuda {
namespace {

// Resolves `name` from `handle` into `*fn`; false if missing.
template <typename Fn>
bool Resolve(void* handle, const char* name, Fn*& fn, std::string& missing) {
  fn = reinterpret_cast<Fn*>(dlsym(handle, name));
  if (fn == nullptr && missing.empty()) missing = name;
  return fn != nullptr;
}

absl::StatusOr<CudaDriver> LoadDriver() {
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    return absl::UnavailableError(
        absl::StrCat("no CUDA driver: cannot load libcuda.so.1 (", error ? error : "not found",
                     "); the NVIDIA driver is needed to run CUDA artifacts"));
  }
  CudaDriver d{};
  std::string missing;
  Resolve(handle, "cuInit", d.cuInit, missing);
  Resolve(handle, "cuDriverGetVersion", d.cuDriverGetVersion, missing);
  Resolve(handle, "cuDeviceGetCount", d.cuDeviceGetCount, missing);
  Resolve(handle, "cuDeviceGet", d.cuDeviceGet, missing);
  Resolve(handle, "cuDeviceGetName", d.cuDeviceGetName, missing);
  Resolve(handle, "cuDeviceGetAttribute", d.cuDeviceGetAttribute, missing);
  Resolve(handle, "cuDeviceTotalMem_v2", d.cuDeviceTotalMem, missing);
  Resolve(handle, "cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain, missing);
  Resolve(handle, "cuDevicePrimaryCtxRelease_v2", d.cuDevicePrimaryCtxRelease, missing);
  Resolve(handle, "cuCtxSetCurrent", d.cuCtxSetCurrent, missing);
  Resolve(handle, "cuModuleLoadDataEx", d.cuModuleLoadDataEx, missing);
  Resolve(handle, "cuModuleUnload", d.cuModuleUnload, missing);
  Resolve(handle, "cuModuleGetFunction", d.cuModuleGetFunction, missing);
  Resolve(handle, "cuMemAlloc_v2", d.cuMemAlloc, missing);
  Resolve(handle, "cuMemFree_v2", d.cuMemFree, missing);
  Resolve(handle, "cuMemsetD8_v2", d.cuMemsetD8, missing);
  Resolve(handle, "cuMemcpyHtoD_v2", d.cuMemcpyHtoD, missing);
  Resolve(handle, "cuMemcpyDtoH_v2", d.cuMemcpyDtoH, missing);
  Resolve(handle, "cuMemcpyHtoDAsync_v2", d.cuMemcpyHtoDAsync, missing);
  Resolve(handle, "cuMemcpyDtoHAsync_v2", d.cuMemcpyDtoHAsync, missing);
  Resolve(handle, "cuLaunchKernel", d.cuLaunchKernel, missing);
  Resolve(handle, "cuStreamCreate", d.cuStreamCreate, missing);
  Resolve(handle, "cuStreamDestroy_v2", d.cuStreamDestroy, missing);
  Resolve(handle, "cuStreamSynchronize", d.cuStreamSynchronize, missing);
  Resolve(handle, "cuEventCreate", d.cuEventCreate, missing);
  Resolve(handle, "cuEventRecord", d.cuEventRecord, missing);
  Resolve(handle, "cuEventSynchronize", d.cuEventSynchronize, missing);
  Resolve(handle, "cuEventElapsedTime", d.cuEventElapsedTime, missing);
  Resolve(handle, "cuEventDestroy_v2", d.cuEventDestroy, missing);
  Resolve(handle, "cuGetErrorName", d.cuGetErrorName, missing);
  Resolve(handle, "cuGetErrorString", d.cuGetErrorString, missing);
  // Optional: graphs. A missing one leaves its pointer null (HasGraphs() false).
  std::string optional;
  Resolve(handle, "cuStreamBeginCapture_v2", d.cuStreamBeginCapture, optional);
  Resolve(handle, "cuStreamEndCapture", d.cuStreamEndCapture, optional);
  Resolve(handle, "cuGraphInstantiateWithFlags", d.cuGraphInstantiateWithFlags, optional);
  Resolve(handle, "cuGraphLaunch", d.cuGraphLaunch, optional);
  Resolve(handle, "cuGraphExecDestroy", d.cuGraphExecDestroy, optional);
  Resolve(handle, "cuGraphDestroy", d.cuGraphDestroy, optional);
  if (!optional.empty()) d.cuGraphLaunch = nullptr;
  if (!missing.empty()) {
    return absl::UnavailableError(
        absl::StrCat("libcuda.so.1 has no ", missing, ": the NVIDIA driver is too old"));
  }
  CUresult init = d.cuInit(0);
  if (init != CUDA_SUCCESS) {
    return absl::UnavailableError(absl::StrCat(
        "CUDA driver found but cuInit failed: ", d.Check(init, "cuInit").message()));
  }
  return d;  // the handle stays open for the life of the process
}

}  // namespace

absl::StatusOr<const CudaDriver*> CudaDriver::Get() {
  static absl::StatusOr<CudaDriver>* driver = nullptr;
  static std::once_flag once;
  std::call_once(once, [] { driver = new absl::StatusOr<CudaDriver>(LoadDriver()); });
  if (!driver->ok()) return driver->status();
  return &**driver;
}

absl::Status CudaDriver::Check(CUresult result, const std::string& what) const {
  if (result == CUDA_SUCCESS) return absl::OkStatus();
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName == nullptr || cuGetErrorName(result, &name) != CUDA_SUCCESS) name = nullptr;
  if (cuGetErrorString == nullptr || cuGetErrorString(result, &text) != CUDA_SUCCESS) {
    text = nullptr;
  }
  std::string message = absl::StrCat(what, ": ", name ? name : "CUDA error",
                                     " (", text ? text : absl::StrCat("code ", result), ")");
  switch (result) {
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
      return absl::FailedPreconditionError(message);
    case 2:  // CUDA_ERROR_OUT_OF_MEMORY
      return absl::ResourceExhaustedError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::StatusOr<CUmodule> LoadPtxModule(const CudaDriver& d, const std::string& ptx,
                                       const std::string& what) {
  std::string image = ptx;
  image.push_back('\0');
  std::string log(8192, '\0');
  int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {log.data(), reinterpret_cast<void*>(static_cast<uintptr_t>(log.size()))};
  CUmodule module = nullptr;
  CUresult loaded = d.cuModuleLoadDataEx(&module, image.data(), 2, options, values);
  if (loaded == CUDA_SUCCESS) return module;
  log.resize(std::strlen(log.c_str()));
  absl::Status s = d.Check(loaded, what);
  return absl::Status(s.code(), absl::StrCat(s.message(), log.empty() ? "" : ": ", log));
}

absl::Status LaunchKernel(const CudaDriver& d, CUfunction fn, const std::string& entry,
                          const std::array<int64_t, 3>& grid, const std::array<int64_t, 3>& block,
                          CUstream stream, void** params) {
  return d.Check(d.cuLaunchKernel(fn, static_cast<unsigned>(grid[0]),
                                  static_cast<unsigned>(grid[1]), static_cast<unsigned>(grid[2]),
                                  static_cast<unsigned>(block[0]), static_cast<unsigned>(block[1]),
                                  static_cast<unsigned>(block[2]), 0, stream, params, nullptr),
                 absl::StrCat("launching ", entry));
}

absl::StatusOr<CudaDeviceInfo> QueryCudaDevice(int ordinal) {
  const CudaDriver* d;
  {
    absl::StatusOr<const CudaDriver*> got = CudaDriver::Get();
    if (!got.ok()) return got.status();
    d = *got;
  }
  int count = 0;
  if (absl::Status s = d->Check(d->cuDeviceGetCount(&count), "cuDeviceGetCount"); !s.ok()) {
    return s;
  }
  if (ordinal < 0 || ordinal >= count) {
    return absl::NotFoundError(
        absl::StrCat("no CUDA device cuda:", ordinal, " (this machine has ", count, ")"));
  }
  CudaDeviceInfo info;
  info.ordinal = ordinal;
  CUdevice dev = 0;
  absl::Status s = d->Check(d->cuDeviceGet(&dev, ordinal), "cuDeviceGet");
  char name[256] = {};
  int major = 0, minor = 0;
  size_t memory = 0;
  if (s.ok()) s = d->Check(d->cuDeviceGetName(name, sizeof(name) - 1, dev), "cuDeviceGetName");
  if (s.ok()) {
    s = d->Check(d->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
                 "cuDeviceGetAttribute");
  }
  if (s.ok()) {
    s = d->Check(d->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
                 "cuDeviceGetAttribute");
  }
  if (s.ok()) {
    s = d->Check(d->cuDeviceGetAttribute(&info.multiprocessors,
                                         CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
                 "cuDeviceGetAttribute");
  }
  int shared = 0, l2 = 0;
  if (s.ok()) {
    s = d->Check(d->cuDeviceGetAttribute(
                     &shared, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, dev),
                 "cuDeviceGetAttribute");
  }
  if (s.ok()) {
    s = d->Check(d->cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev),
                 "cuDeviceGetAttribute");
  }
  info.shared_bytes_per_sm = shared;
  info.l2_bytes = l2;
  if (s.ok()) s = d->Check(d->cuDeviceTotalMem(&memory, dev), "cuDeviceTotalMem");
  if (s.ok()) s = d->Check(d->cuDriverGetVersion(&info.driver_version), "cuDriverGetVersion");
  if (!s.ok()) return s;
  info.name = name;
  info.sm = major * 10 + minor;
  info.memory_bytes = static_cast<int64_t>(memory);
  return info;
}

absl::StatusOr<int> ParseCudaDevice(const std::string& spec) {
  if (spec == "cuda") return 0;
  int ordinal = -1;
  if (spec.rfind("cuda:", 0) == 0 && absl::SimpleAtoi(spec.substr(5), &ordinal) && ordinal >= 0) {
    return ordinal;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("device '", spec, "': expected cpu or cuda:N (N = 0, 1, ...)"));
}

}  // namespace kiln::runtime::cuda
