// The CUDA driver API, loaded at run time: dlopen("libcuda.so.1") and Kiln's own declarations
// of the few driver functions it calls (as Triton and tinygrad do), so nothing CUDA is needed
// to build Kiln and a machine without a GPU runs everything else. Types and constants follow
// the CUDA Driver API reference (cuda.h, CUDA 12); only stable, versioned entry points
// (the *_v2 names) are used.
#ifndef KILN_COMPILER_CORE_RUNTIME_CUDA_CUDA_DRIVER_H_
#define KILN_COMPILER_CORE_RUNTIME_CUDA_CUDA_DRIVER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kiln::runtime::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = uint64_t;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphExec = struct CUgraphExec_st*;

inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222;
inline constexpr CUresult CUDA_ERROR_NO_BINARY_FOR_GPU = 209;
inline constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
inline constexpr int CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38;
inline constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
inline constexpr int CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;
inline constexpr int CU_JIT_ERROR_LOG_BUFFER = 5;
inline constexpr int CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;

/// The driver entry points Kiln calls, resolved from libcuda.so.1.
struct CudaDriver {
  CUresult (*cuInit)(unsigned flags);
  CUresult (*cuDriverGetVersion)(int* version);
  CUresult (*cuDeviceGetCount)(int* count);
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal);
  CUresult (*cuDeviceGetName)(char* name, int len, CUdevice device);
  CUresult (*cuDeviceGetAttribute)(int* value, int attribute, CUdevice device);
  CUresult (*cuDeviceTotalMem)(size_t* bytes, CUdevice device);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* ctx, CUdevice device);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice device);
  CUresult (*cuCtxSetCurrent)(CUcontext ctx);
  CUresult (*cuModuleLoadDataEx)(CUmodule* module, const void* image, unsigned num_options,
                                 int* options, void** option_values);
  CUresult (*cuModuleUnload)(CUmodule module);
  CUresult (*cuModuleGetFunction)(CUfunction* fn, CUmodule module, const char* name);
  CUresult (*cuMemAlloc)(CUdeviceptr* ptr, size_t bytes);
  CUresult (*cuMemFree)(CUdeviceptr ptr);
  CUresult (*cuMemsetD8)(CUdeviceptr ptr, unsigned char value, size_t bytes);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr dst, const void* src, size_t bytes);
  CUresult (*cuMemcpyDtoH)(void* dst, CUdeviceptr src, size_t bytes);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void* src, size_t bytes, CUstream s);
  CUresult (*cuMemcpyDtoHAsync)(void* dst, CUdeviceptr src, size_t bytes, CUstream s);
  CUresult (*cuLaunchKernel)(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned shared_bytes, CUstream stream,
                             void** params, void** extra);
  CUresult (*cuStreamCreate)(CUstream* stream, unsigned flags);
  CUresult (*cuStreamDestroy)(CUstream stream);
  CUresult (*cuStreamSynchronize)(CUstream stream);
  CUresult (*cuEventCreate)(CUevent* event, unsigned flags);
  CUresult (*cuEventRecord)(CUevent event, CUstream stream);
  CUresult (*cuEventSynchronize)(CUevent event);
  CUresult (*cuEventElapsedTime)(float* ms, CUevent start, CUevent end);
  CUresult (*cuEventDestroy)(CUevent event);
  // CUDA graphs (optional: null when the driver lacks them; the runtime then launches directly).
  CUresult (*cuStreamBeginCapture)(CUstream stream, int mode);
  CUresult (*cuStreamEndCapture)(CUstream stream, CUgraph* graph);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec* exec, CUgraph graph,
                                          unsigned long long flags);
  CUresult (*cuGraphLaunch)(CUgraphExec exec, CUstream stream);
  CUresult (*cuGraphExecDestroy)(CUgraphExec exec);
  CUresult (*cuGraphDestroy)(CUgraph graph);
  CUresult (*cuGetErrorName)(CUresult error, const char** name);
  CUresult (*cuGetErrorString)(CUresult error, const char** text);

  /// The process's driver: loaded and cuInit'ed on first use. Errors: kUnavailable when
  /// libcuda.so.1 cannot be loaded (no NVIDIA driver: the message says so, for tests to skip
  /// with), lacks an entry point, or cuInit fails (no device, driver/kernel mismatch).
  static absl::StatusOr<const CudaDriver*> Get();
  /// Whether the graph entry points were found (CUDA 11.4 and later drivers).
  bool HasGraphs() const {
    return cuGraphLaunch != nullptr && cuGraphInstantiateWithFlags != nullptr;
  }

  /// `what` failed with `result`, as a status: "what: CUDA_ERROR_NAME (description)".
  /// kFailedPrecondition for an unsupported PTX version or a missing binary for the GPU,
  /// kResourceExhausted for out-of-memory, kInternal otherwise. OK for CUDA_SUCCESS.
  absl::Status Check(CUresult result, const std::string& what) const;
};

/// JIT-compiles PTX text into a module of the current context (cuModuleLoadDataEx); `what`
/// names it in errors, which carry the driver's JIT error log (why it refused, e.g. a PTX
/// version newer than the driver).
absl::StatusOr<CUmodule> LoadPtxModule(const CudaDriver& d, const std::string& ptx,
                                       const std::string& what);

/// Launches `fn` (PTX entry `entry`, for errors) on `stream` with `grid` and `block` dimensions
/// (x, y, z) and kernel parameters `params` (one pointer per argument).
absl::Status LaunchKernel(const CudaDriver& d, CUfunction fn, const std::string& entry,
                          const std::array<int64_t, 3>& grid, const std::array<int64_t, 3>& block,
                          CUstream stream, void** params);

/// One GPU as the driver reports it: name, compute capability, SMs, memory, driver version.
struct CudaDeviceInfo {
  int ordinal = 0;
  std::string name;  // e.g. "NVIDIA H200"
  int sm = 0;        // compute capability * 10, e.g. 90
  int multiprocessors = 0;
  int64_t memory_bytes = 0;
  int driver_version = 0;  // e.g. 13000 for CUDA 13.0
  int64_t shared_bytes_per_sm = 0;
  int64_t l2_bytes = 0;
};

/// Queries device `ordinal`. Errors: kUnavailable without a driver, kNotFound for an ordinal
/// past the device count.
absl::StatusOr<CudaDeviceInfo> QueryCudaDevice(int ordinal);

/// Parses a device spec "cuda:N" (or "cuda" for 0). Errors: kInvalidArgument.
absl::StatusOr<int> ParseCudaDevice(const std::string& spec);

}  // namespace kiln::runtime::cuda

#endif  // KILN_COMPILER_CORE_RUNTIME_CUDA_CUDA_DRIVER_H_
