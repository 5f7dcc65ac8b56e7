// CudaExecutable: load (checks, JIT, entries, weights, arena, inits) and run (copies in, launches
// in order on one stream, as one CUDA graph where the run never reads the device mid-way, shape
// checks, copies out).
#include "compiler_core/runtime/cuda/cuda_executable.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "compiler_core/runtime/manifest_check.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::runtime::cuda {
namespace {

// Device memory, freed on destruction.
struct DeviceBuffer {
  const CudaDriver* driver = nullptr;
  CUdeviceptr ptr = 0;
  size_t bytes = 0;

  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(driver, o.driver);
    std::swap(ptr, o.ptr);
    std::swap(bytes, o.bytes);
    return *this;
  }
  ~DeviceBuffer() {
    if (ptr != 0) driver->cuMemFree(ptr);
  }
};

// A zero-filled device buffer of at least `bytes` (at least 256, so that an empty buffer still
// has an address).
absl::StatusOr<DeviceBuffer> Allocate(const CudaDriver* d, size_t bytes, const std::string& what) {
  DeviceBuffer b;
  b.driver = d;
  b.bytes = bytes;
  const size_t size = std::max<size_t>(bytes, 256);
  KILN_RETURN_IF_ERROR(
      d->Check(d->cuMemAlloc(&b.ptr, size), absl::StrCat("allocating ", size, " bytes of ", what)));
  KILN_RETURN_IF_ERROR(d->Check(d->cuMemsetD8(b.ptr, 0, size), "cuMemsetD8"));
  return b;
}

struct Launch {
  CUfunction fn = nullptr;
  std::string entry;
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::array<int64_t, 3> block = {1, 1, 1};
};

struct Call {
  const kiln::v1::KernelCall* call = nullptr;
  std::vector<Launch> launches;
  std::vector<Launch> init_launches;
};

struct Variant {
  const kiln::v1::Manifest* manifest = nullptr;
  std::vector<Call> calls;
  std::vector<TensorType> input_types, output_types;
  DeviceBuffer persistent;
  bool has_shape_checks = false;  // a run reads the device mid-way: no graph
  // The launches captured as a CUDA graph, for the input and output buffers in `graph_io`.
  CUgraphExec graph = nullptr;
  std::vector<CUdeviceptr> graph_io;
  bool graph_failed = false;  // capture failed once: launch directly from then on
};

}  // namespace

absl::StatusOr<std::pair<int, bool>> TargetSm(const std::string& target_key) {
  std::vector<std::string> parts = absl::StrSplit(target_key, ':');
  int sm = 0;
  if (parts.size() >= 2 && parts[0] == "cuda" && parts[1].rfind("sm_", 0) == 0) {
    std::string digits = parts[1].substr(3);
    const bool arch_specific = !digits.empty() && digits.back() == 'a';
    if (arch_specific) digits.pop_back();
    if (absl::SimpleAtoi(digits, &sm) && sm > 0) return std::make_pair(sm, arch_specific);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("target key '", target_key, "' is not a CUDA target's (cuda:sm_NN:...)"));
}

absl::Status CheckSmCompatible(int target_sm, bool arch_specific, int device_sm,
                               const std::string& device_name) {
  const std::string target = absl::StrCat("sm_", target_sm, arch_specific ? "a" : "");
  const std::string device = absl::StrCat(device_name, " (sm_", device_sm, ")");
  if (arch_specific && device_sm != target_sm) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the artifact was compiled for ", target, ", which runs only on sm_", target_sm,
        " GPUs; this device is ", device, ": compile for cuda:sm_", device_sm));
  }
  if (device_sm < target_sm) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the artifact was compiled for ", target, " but this device is ", device,
        ": compile for cuda:sm_", device_sm, " or lower"));
  }
  return absl::OkStatus();
}

struct CudaExecutable::Impl {
  Artifact artifact;
  const CudaDriver* d = nullptr;
  CudaDeviceInfo info;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUmodule module = nullptr;
  CUstream stream = nullptr;
  DeviceBuffer weights, arena;
  std::vector<Variant> variants;
  std::vector<DeviceBuffer> inputs, outputs;  // of the last run, reused when the sizes agree

  ~Impl() {
    for (Variant& v : variants) {
      if (v.graph != nullptr) d->cuGraphExecDestroy(v.graph);
    }
    variants.clear();
    inputs.clear();
    outputs.clear();
    weights = DeviceBuffer();
    arena = DeviceBuffer();
    if (stream != nullptr) d->cuStreamDestroy(stream);
    if (module != nullptr) d->cuModuleUnload(module);
    if (context != nullptr) d->cuDevicePrimaryCtxRelease(device);
  }

  absl::Status MakeCurrent() const { return d->Check(d->cuCtxSetCurrent(context), "cuCtxSetCurrent"); }

  absl::Status Resolve(const google::protobuf::RepeatedPtrField<kiln::v1::GpuLaunch>& in,
                       std::vector<Launch>& out) {
    for (const kiln::v1::GpuLaunch& l : in) {
      Launch launch;
      launch.entry = l.entry();
      if (l.grid_size() != 3 || l.block_size() != 3) {
        return absl::InvalidArgumentError(
            absl::StrCat("launch ", l.entry(), " does not have 3 grid and 3 block dims"));
      }
      for (int k = 0; k < 3; ++k) {
        if (l.grid(k) < 1 || l.grid(k) > 2147483647 || l.block(k) < 1 || l.block(k) > 1024) {
          return absl::InvalidArgumentError(
              absl::StrCat("launch ", l.entry(), " has out-of-range dims"));
        }
        launch.grid[k] = l.grid(k);
        launch.block[k] = l.block(k);
      }
      KILN_RETURN_IF_ERROR(d->Check(d->cuModuleGetFunction(&launch.fn, module, l.entry().c_str()),
                                    absl::StrCat("PTX entry ", l.entry())));
      out.push_back(std::move(launch));
    }
    return absl::OkStatus();
  }

  // The device address of binding `b` in variant `v`.
  CUdeviceptr Address(const kiln::v1::Binding& b, const Variant& v, bool at_init) const {
    switch (b.kind()) {
      case kiln::v1::Binding::INPUT:
        return at_init ? 0 : inputs[b.index()].ptr;
      case kiln::v1::Binding::OUTPUT:
        return at_init ? 0 : outputs[b.index()].ptr;
      case kiln::v1::Binding::WEIGHT:
        return weights.ptr + static_cast<CUdeviceptr>(b.offset());
      case kiln::v1::Binding::ARENA:
        return arena.ptr + static_cast<CUdeviceptr>(b.offset());
      case kiln::v1::Binding::PERSISTENT:
        return v.persistent.ptr + static_cast<CUdeviceptr>(b.offset());
      default:
        return 0;
    }
  }

  absl::Status LaunchAll(const Call& call, const std::vector<Launch>& launches, const Variant& v,
                         bool at_init) {
    std::vector<CUdeviceptr> args;
    for (const kiln::v1::Binding& b : call.call->args()) args.push_back(Address(b, v, at_init));
    std::vector<void*> params;
    for (CUdeviceptr& a : args) params.push_back(&a);
    for (const Launch& l : launches) {
      KILN_RETURN_IF_ERROR(LaunchKernel(*d, l.fn, l.entry, l.grid, l.block, stream, params.data()));
    }
    return absl::OkStatus();
  }

  // The device buffers a run of `v` binds: its inputs, then its outputs.
  std::vector<CUdeviceptr> IoOf(const Variant& v) const {
    std::vector<CUdeviceptr> io;
    for (size_t i = 0; i < v.input_types.size(); ++i) io.push_back(inputs[i].ptr);
    for (size_t o = 0; o < v.output_types.size(); ++o) io.push_back(outputs[o].ptr);
    return io;
  }

  // Captures every launch of `v` into a CUDA graph (one launch per run instead of one per
  // kernel: the launch overhead of small models). False, leaving direct launches, when the
  // driver has no graphs, the variant reads the device mid-run, or the capture fails.
  bool Graph(Variant& v) {
    if (v.graph_failed || v.has_shape_checks || !d->HasGraphs()) return false;
    std::vector<CUdeviceptr> io = IoOf(v);
    if (v.graph != nullptr && v.graph_io == io) return true;
    if (v.graph != nullptr) {
      d->cuGraphExecDestroy(v.graph);
      v.graph = nullptr;
    }
    if (d->cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS) {
      v.graph_failed = true;
      return false;
    }
    bool launched = true;
    for (const Call& call : v.calls)
      launched = launched && LaunchAll(call, call.launches, v, false).ok();
    CUgraph graph = nullptr;
    const bool captured = d->cuStreamEndCapture(stream, &graph) == CUDA_SUCCESS && launched;
    if (captured && d->cuGraphInstantiateWithFlags(&v.graph, graph, 0) == CUDA_SUCCESS) {
      v.graph_io = std::move(io);
    } else {
      v.graph = nullptr;
      v.graph_failed = true;
    }
    if (graph != nullptr) d->cuGraphDestroy(graph);
    return v.graph != nullptr;
  }

  // Every call of `v` in order (as one CUDA graph when it can be); shape checks synchronize
  // and read their workspace.
  absl::Status RunCalls(Variant& v, std::vector<OutputTrim>& trims) {
    if (Graph(v)) return d->Check(d->cuGraphLaunch(v.graph, stream), "cuGraphLaunch");
    for (const Call& call : v.calls) {
      KILN_RETURN_IF_ERROR(LaunchAll(call, call.launches, v, false));
      if (call.call->shape_checks_size() == 0) continue;
      absl::Status read_status;
      KILN_RETURN_IF_ERROR(CheckShapes(
          *call.call,
          [&](int arg, int64_t* out, size_t n) {
            CUdeviceptr src = Address(call.call->args(arg), v, false);
            absl::Status s = d->Check(d->cuMemcpyDtoHAsync(out, src, 8 * n, stream),
                                      "reading a shape check");
            if (s.ok()) s = d->Check(d->cuStreamSynchronize(stream), "cuStreamSynchronize");
            if (!s.ok() && read_status.ok()) read_status = s;
          },
          trims));
      KILN_RETURN_IF_ERROR(read_status);
    }
    return absl::OkStatus();
  }

  // Checks `inputs` against the manifest and picks the variant whose shapes they match (as
  // FedShape takes them: a one-element tensor for a scalar input).
  absl::StatusOr<Variant*> Select(const std::vector<const Tensor*>& in) {
    const kiln::v1::Manifest& m = artifact.manifest;
    if (static_cast<int>(in.size()) != m.inputs_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected ", m.inputs_size(), " inputs, got ", in.size()));
    }
    for (int i = 0; i < m.inputs_size(); ++i) {
      const std::string& name = m.inputs(i).name();
      if (in[i] == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat("input ", i, " ('", name, "') is null"));
      }
      if (in[i]->type.dtype != *ParseDType(m.inputs(i).dtype())) {
        return absl::InvalidArgumentError(absl::StrCat("input ", i, " ('", name,
                                                       "'): expected dtype ", m.inputs(i).dtype(),
                                                       ", got ", DTypeName(in[i]->type.dtype)));
      }
      if (static_cast<int64_t>(in[i]->bytes.size()) != in[i]->type.NumBytes()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "input ", i, " ('", name, "') holds ", in[i]->bytes.size(),
            " bytes of data, expected ", in[i]->type.NumBytes(), " for ", in[i]->type.ToString()));
      }
    }
    for (Variant& v : variants) {
      bool match = true;
      for (size_t i = 0; match && i < in.size(); ++i) {
        const std::vector<int64_t>& want = v.input_types[i].shape;
        match = FedShape(in[i]->type.shape, want) == want;
      }
      if (match) return &v;
    }
    std::vector<std::string> compiled;
    for (const Variant& v : variants) {
      std::vector<std::string> shapes;
      for (const TensorType& t : v.input_types) shapes.push_back(ShapeString(t.shape));
      compiled.push_back(absl::StrJoin(shapes, " "));
    }
    std::vector<std::string> given;
    for (const Tensor* t : in) given.push_back(ShapeString(t->type.shape));
    return absl::InvalidArgumentError(absl::StrCat("input shapes ", absl::StrJoin(given, " "),
                                                   " match no compiled shape (",
                                                   absl::StrJoin(compiled, "; "), ")"));
  }

  // Device buffers for `v`'s inputs and outputs, and the inputs copied in.
  absl::Status Stage(const Variant& v, const std::vector<const Tensor*>& in) {
    auto fit = [&](std::vector<DeviceBuffer>& bufs, const std::vector<TensorType>& types,
                   const char* what) -> absl::Status {
      bufs.resize(types.size());
      for (size_t i = 0; i < types.size(); ++i) {
        const size_t bytes = static_cast<size_t>(types[i].NumBytes());
        if (bufs[i].ptr != 0 && bufs[i].bytes == bytes) continue;
        KILN_ASSIGN_OR_RETURN(bufs[i], Allocate(d, bytes, absl::StrCat(what, " ", i)));
      }
      return absl::OkStatus();
    };
    KILN_RETURN_IF_ERROR(fit(inputs, v.input_types, "input"));
    KILN_RETURN_IF_ERROR(fit(outputs, v.output_types, "output"));
    for (size_t i = 0; i < in.size(); ++i) {
      if (in[i]->bytes.empty()) continue;
      KILN_RETURN_IF_ERROR(d->Check(
          d->cuMemcpyHtoDAsync(inputs[i].ptr, in[i]->bytes.data(), in[i]->bytes.size(), stream),
          absl::StrCat("copying input ", i, " to the device")));
    }
    return absl::OkStatus();
  }
};

CudaExecutable::CudaExecutable() : impl_(std::make_unique<Impl>()) {}
CudaExecutable::~CudaExecutable() = default;

const kiln::v1::Manifest& CudaExecutable::manifest() const { return impl_->artifact.manifest; }
const CudaDeviceInfo& CudaExecutable::device() const { return impl_->info; }

absl::StatusOr<std::unique_ptr<CudaExecutable>> CudaExecutable::Load(Artifact artifact,
                                                                     int ordinal) {
  const kiln::v1::Manifest& am = artifact.manifest;
  if (am.code_kind() != kiln::v1::PTX) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the artifact holds host code for ", am.target_key(),
        ", not PTX: compile it with --target cuda:sm_NN to run it on a GPU"));
  }
  KILN_ASSIGN_OR_RETURN(auto sm, TargetSm(am.target_key()));
  const int64_t weights_size = static_cast<int64_t>(artifact.weights.size());
  if (am.profiles_size() > 0) {
    KILN_RETURN_IF_ERROR(ValidateProfiles(am, weights_size));
  } else {
    KILN_RETURN_IF_ERROR(ValidateManifest(am, weights_size));
  }
  if (am.bound_symbols_size() > 0) {
    return absl::UnimplementedError("the CUDA runtime does not run bounded dims yet");
  }
  KILN_ASSIGN_OR_RETURN(CudaDeviceInfo info, QueryCudaDevice(ordinal));
  KILN_RETURN_IF_ERROR(CheckSmCompatible(sm.first, sm.second, info.sm, info.name));

  std::unique_ptr<CudaExecutable> exe(new CudaExecutable());
  Impl& impl = *exe->impl_;
  KILN_ASSIGN_OR_RETURN(impl.d, CudaDriver::Get());
  const CudaDriver* d = impl.d;
  impl.info = info;
  impl.artifact = std::move(artifact);
  const kiln::v1::Manifest& m = impl.artifact.manifest;
  KILN_RETURN_IF_ERROR(d->Check(d->cuDeviceGet(&impl.device, ordinal), "cuDeviceGet"));
  KILN_RETURN_IF_ERROR(d->Check(d->cuDevicePrimaryCtxRetain(&impl.context, impl.device),
                                "cuDevicePrimaryCtxRetain"));
  KILN_RETURN_IF_ERROR(impl.MakeCurrent());
  KILN_RETURN_IF_ERROR(d->Check(d->cuStreamCreate(&impl.stream, 0), "cuStreamCreate"));

  KILN_ASSIGN_OR_RETURN(impl.module,
                        LoadPtxModule(*d, impl.artifact.code,
                                      absl::StrCat("loading the PTX (", m.target_key(), ") on ",
                                                   info.name, ", driver ", info.driver_version)));

  std::vector<const kiln::v1::Manifest*> manifests;
  if (m.profiles_size() == 0) manifests.push_back(&m);
  for (const kiln::v1::Manifest& p : m.profiles()) manifests.push_back(&p);
  int64_t arena_bytes = 0;
  for (const kiln::v1::Manifest* vm : manifests) {
    arena_bytes = std::max(arena_bytes, vm->arena_bytes());
    Variant v;
    v.manifest = vm;
    v.input_types = TypesOf(vm->inputs());
    v.output_types = TypesOf(vm->outputs());
    for (int k = 0; k < vm->kernels_size(); ++k) {
      const kiln::v1::KernelCall& kc = vm->kernels(k);
      if (kc.has_loop()) {
        return absl::UnimplementedError(absl::StrCat(
            "kernel ", k, ": ", kc.loop().what(),
            " runs a Loop at run time, which the CUDA runtime does not run yet"));
      }
      if (kc.code_kind() != kiln::v1::PTX) {
        return absl::InvalidArgumentError(
            absl::StrCat("kernel ", k, " (", kc.symbol(), ") is not a PTX kernel"));
      }
      for (const kiln::v1::Binding& b : kc.args()) {
        if (b.kind() == kiln::v1::Binding::DIMS) {
          return absl::UnimplementedError("the CUDA runtime does not run bounded dims yet");
        }
      }
      v.has_shape_checks = v.has_shape_checks || kc.shape_checks_size() > 0;
      Call call;
      call.call = &kc;
      KILN_RETURN_IF_ERROR(impl.Resolve(kc.launches(), call.launches));
      KILN_RETURN_IF_ERROR(impl.Resolve(kc.init_launches(), call.init_launches));
      v.calls.push_back(std::move(call));
    }
    KILN_ASSIGN_OR_RETURN(v.persistent, Allocate(d, static_cast<size_t>(vm->persistent_bytes()),
                                                 "persistent workspaces"));
    impl.variants.push_back(std::move(v));
  }
  KILN_ASSIGN_OR_RETURN(impl.weights,
                        Allocate(d, impl.artifact.weights.size(), "weights"));
  if (!impl.artifact.weights.empty()) {
    KILN_RETURN_IF_ERROR(d->Check(d->cuMemcpyHtoD(impl.weights.ptr, impl.artifact.weights.data(),
                                                  impl.artifact.weights.size()),
                                  "uploading the weights"));
  }
  KILN_ASSIGN_OR_RETURN(impl.arena, Allocate(d, static_cast<size_t>(arena_bytes), "the arena"));
  for (const Variant& v : impl.variants) {
    for (const Call& call : v.calls) {
      KILN_RETURN_IF_ERROR(impl.LaunchAll(call, call.init_launches, v, /*at_init=*/true));
    }
  }
  KILN_RETURN_IF_ERROR(d->Check(d->cuStreamSynchronize(impl.stream), "running the init kernels"));
  impl.artifact.code.clear();
  impl.artifact.weights.clear();
  return exe;
}

absl::StatusOr<std::vector<Tensor>> CudaExecutable::Run(const std::vector<const Tensor*>& inputs) {
  Impl& impl = *impl_;
  const CudaDriver* d = impl.d;
  KILN_RETURN_IF_ERROR(impl.MakeCurrent());
  KILN_ASSIGN_OR_RETURN(Variant * v, impl.Select(inputs));
  KILN_RETURN_IF_ERROR(impl.Stage(*v, inputs));
  std::vector<OutputTrim> trims;
  KILN_RETURN_IF_ERROR(impl.RunCalls(*v, trims));
  std::vector<Tensor> outputs(v->output_types.size());
  for (size_t o = 0; o < outputs.size(); ++o) {
    outputs[o].type = v->output_types[o];
    outputs[o].bytes.assign(static_cast<size_t>(outputs[o].type.NumBytes()), 0);
    if (outputs[o].bytes.empty()) continue;
    KILN_RETURN_IF_ERROR(d->Check(d->cuMemcpyDtoHAsync(outputs[o].bytes.data(),
                                                       impl.outputs[o].ptr,
                                                       outputs[o].bytes.size(), impl.stream),
                                  absl::StrCat("copying output ", o, " to the host")));
  }
  KILN_RETURN_IF_ERROR(d->Check(d->cuStreamSynchronize(impl.stream), "running the kernels"));
  for (const OutputTrim& trim : trims) TrimToShape(outputs[trim.output], trim.shape);
  return outputs;
}

absl::StatusOr<std::vector<double>> CudaExecutable::TimeRuns(
    const std::vector<const Tensor*>& inputs, int warmup, int repeats) {
  Impl& impl = *impl_;
  const CudaDriver* d = impl.d;
  KILN_RETURN_IF_ERROR(impl.MakeCurrent());
  KILN_ASSIGN_OR_RETURN(Variant * v, impl.Select(inputs));
  KILN_RETURN_IF_ERROR(impl.Stage(*v, inputs));
  CUevent start = nullptr, end = nullptr;
  KILN_RETURN_IF_ERROR(d->Check(d->cuEventCreate(&start, 0), "cuEventCreate"));
  absl::Status s = d->Check(d->cuEventCreate(&end, 0), "cuEventCreate");
  std::vector<double> times;
  std::vector<OutputTrim> trims;
  for (int r = 0; s.ok() && r < warmup + repeats; ++r) {
    trims.clear();
    s = d->Check(d->cuEventRecord(start, impl.stream), "cuEventRecord");
    if (s.ok()) s = impl.RunCalls(*v, trims);
    if (s.ok()) s = d->Check(d->cuEventRecord(end, impl.stream), "cuEventRecord");
    if (s.ok()) s = d->Check(d->cuEventSynchronize(end), "running the kernels");
    float ms = 0;
    if (s.ok()) s = d->Check(d->cuEventElapsedTime(&ms, start, end), "cuEventElapsedTime");
    if (s.ok() && r >= warmup) times.push_back(ms);
  }
  if (start != nullptr) d->cuEventDestroy(start);
  if (end != nullptr) d->cuEventDestroy(end);
  if (!s.ok()) return s;
  return times;
}

}  // namespace kiln::runtime::cuda
