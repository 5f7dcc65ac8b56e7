// Executable: loads an artifact's shared object (runtime/code_module.h), resolves its kernel
// symbols, owns the aligned weights and arena, and runs the kernel sequence on a thread pool.
#include "compiler_core/runtime/executable.h"


#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/runtime/abi.h"
#include "compiler_core/runtime/code_module.h"
#include "compiler_core/runtime/thread_pool.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::runtime {
namespace {

constexpr size_t kAlignment = 64;

struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<uint8_t[], FreeDeleter>;

// A zero-filled 64-byte-aligned buffer of at least `size` bytes (never null).
AlignedBuffer AllocateAligned(size_t size) {
  const size_t rounded =
      std::max<size_t>(kAlignment, (size + kAlignment - 1) / kAlignment * kAlignment);
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(kAlignment, rounded));
  if (p == nullptr) return nullptr;
  std::memset(p, 0, rounded);
  return AlignedBuffer(p);
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

// Checks what Load relies on: binding kinds, indices and bounds, and tensor specs.
absl::Status ValidateManifest(const kiln::v1::Manifest& m, int64_t weights_size) {
  if (m.abi_version() != KILN_ABI_VERSION) {
    return absl::InvalidArgumentError(absl::StrCat("artifact abi version ", m.abi_version(),
                                                   " is not supported: this runtime implements "
                                                   "kiln abi version ",
                                                   KILN_ABI_VERSION));
  }
  // weights_bytes 0 means "not recorded" (hand-written manifests); otherwise it must agree.
  if (m.weights_bytes() != 0 && m.weights_bytes() != weights_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("manifest says weights_bytes is ", m.weights_bytes(),
                     " but the weights section has ", weights_size, " bytes"));
  }
  if (m.arena_bytes() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("arena_bytes is negative: ", m.arena_bytes()));
  }
  if (m.persistent_bytes() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("persistent_bytes is negative: ", m.persistent_bytes()));
  }
  auto check_specs = [](const auto& specs, const char* what) -> absl::Status {
    for (int i = 0; i < specs.size(); ++i) {
      const kiln::v1::TensorSpec& spec = specs[i];
      if (!ParseDType(spec.dtype()).has_value()) {
        return absl::InvalidArgumentError(absl::StrCat(
            what, " ", i, " ('", spec.name(), "') has unknown dtype '", spec.dtype(), "'"));
      }
      for (int64_t d : spec.shape()) {
        if (d < 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              what, " ", i, " ('", spec.name(), "') has a negative dimension in shape ",
              ShapeString({spec.shape().begin(), spec.shape().end()})));
        }
      }
    }
    return absl::OkStatus();
  };
  KILN_RETURN_IF_ERROR(check_specs(m.inputs(), "input"));
  KILN_RETURN_IF_ERROR(check_specs(m.outputs(), "output"));
  for (int k = 0; k < m.kernels_size(); ++k) {
    const kiln::v1::KernelCall& call = m.kernels(k);
    for (int a = 0; a < call.args_size(); ++a) {
      const kiln::v1::Binding& b = call.args(a);
      std::string where = absl::StrCat("kernel ", k, " (", call.symbol(), ") argument ", a);
      switch (b.kind()) {
        case kiln::v1::Binding::INPUT:
          if (b.index() < 0 || b.index() >= m.inputs_size()) {
            return absl::InvalidArgumentError(absl::StrCat(where, " binds input ", b.index(),
                                                           " but the model has ", m.inputs_size(),
                                                           " inputs"));
          }
          break;
        case kiln::v1::Binding::OUTPUT:
          if (b.index() < 0 || b.index() >= m.outputs_size()) {
            return absl::InvalidArgumentError(absl::StrCat(where, " binds output ", b.index(),
                                                           " but the model has ", m.outputs_size(),
                                                           " outputs"));
          }
          break;
        case kiln::v1::Binding::WEIGHT:
          if (b.offset() < 0 || b.size_bytes() < 0 || b.offset() > weights_size ||
              b.size_bytes() > weights_size - b.offset()) {
            return absl::InvalidArgumentError(absl::StrCat(where, " binds weights [", b.offset(),
                                                           ", +", b.size_bytes(), ") outside the ",
                                                           weights_size, "-byte weights section"));
          }
          break;
        case kiln::v1::Binding::ARENA:
          if (b.offset() < 0 || b.size_bytes() < 0 || b.offset() > m.arena_bytes() ||
              b.size_bytes() > m.arena_bytes() - b.offset()) {
            return absl::InvalidArgumentError(absl::StrCat(where, " binds arena [", b.offset(),
                                                           ", +", b.size_bytes(), ") outside the ",
                                                           m.arena_bytes(), "-byte arena"));
          }
          break;
        case kiln::v1::Binding::PERSISTENT:
          if (b.offset() < 0 || b.size_bytes() < 0 || b.offset() > m.persistent_bytes() ||
              b.size_bytes() > m.persistent_bytes() - b.offset()) {
            return absl::InvalidArgumentError(absl::StrCat(
                where, " binds persistent [", b.offset(), ", +", b.size_bytes(), ") outside the ",
                m.persistent_bytes(), "-byte persistent buffer"));
          }
          break;
        default:
          return absl::InvalidArgumentError(
              absl::StrCat(where, " has unknown binding kind ", static_cast<int>(b.kind())));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

struct Executable::Impl {
  Artifact artifact;  // manifest kept; code and weights cleared after loading
  std::vector<TensorType> input_types;
  std::vector<TensorType> output_types;
  std::unique_ptr<CodeModule> code;
  std::vector<kiln_kernel_fn> kernels;
  std::vector<std::vector<void*>> args;  // per kernel call, refilled by Run
  AlignedBuffer weights;
  AlignedBuffer arena;
  AlignedBuffer persistent;  // filled once by the init kernels at load
  std::unique_ptr<ThreadPool> pool;

  /// The pointer `b` binds: into the weights, the arena or the persistent buffer, or the
  /// run's input or output tensor (null while there is none: at load).
  void* Resolve(const kiln::v1::Binding& b, const std::vector<const Tensor*>* inputs,
                std::vector<Tensor>* outputs) const {
    switch (b.kind()) {
      case kiln::v1::Binding::INPUT:
        // Kernels never write their inputs; the ABI has no const pointers.
        return inputs ? const_cast<uint8_t*>((*inputs)[b.index()]->bytes.data()) : nullptr;
      case kiln::v1::Binding::OUTPUT:
        return outputs ? (*outputs)[b.index()].bytes.data() : nullptr;
      case kiln::v1::Binding::WEIGHT:
        return weights.get() + b.offset();
      case kiln::v1::Binding::ARENA:
        return arena.get() + b.offset();
      case kiln::v1::Binding::PERSISTENT:
        return persistent.get() + b.offset();
      default:
        return nullptr;  // rejected by ValidateManifest
    }
  }
  kiln_context context{};
};

Executable::Executable() : impl_(std::make_unique<Impl>()) {}
Executable::~Executable() = default;

const kiln::v1::Manifest& Executable::manifest() const { return impl_->artifact.manifest; }

absl::StatusOr<std::unique_ptr<Executable>> Executable::Load(Artifact artifact, int num_threads) {
  const kiln::v1::Manifest& m = artifact.manifest;
  KILN_RETURN_IF_ERROR(ValidateManifest(m, static_cast<int64_t>(artifact.weights.size())));

  std::unique_ptr<Executable> exe(new Executable());
  Impl& impl = *exe->impl_;
  auto to_types = [](const auto& specs) {
    std::vector<TensorType> types;
    for (const kiln::v1::TensorSpec& spec : specs) {
      types.push_back(
          TensorType{*ParseDType(spec.dtype()), {spec.shape().begin(), spec.shape().end()}});
    }
    return types;
  };
  impl.input_types = to_types(m.inputs());
  impl.output_types = to_types(m.outputs());

  if (m.kernels_size() > 0) {
    if (artifact.code.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("artifact has ", m.kernels_size(), " kernel calls but no code"));
    }
    KILN_ASSIGN_OR_RETURN(impl.code, CodeModule::Load(artifact.code));
  }
  impl.kernels.reserve(m.kernels_size());
  impl.args.reserve(m.kernels_size());
  std::vector<kiln_kernel_fn> inits(m.kernels_size(), nullptr);
  for (int k = 0; k < m.kernels_size(); ++k) {
    const kiln::v1::KernelCall& call = m.kernels(k);
    absl::StatusOr<kiln_kernel_fn> fn = impl.code->Kernel(call.symbol());
    if (!fn.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("kernel ", k, ": ", fn.status().message()));
    }
    impl.kernels.push_back(*fn);
    impl.args.emplace_back(call.args_size(), nullptr);
    if (!call.init_symbol().empty()) {
      absl::StatusOr<kiln_kernel_fn> init = impl.code->Kernel(call.init_symbol());
      if (!init.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("kernel ", k, " init: ", init.status().message()));
      }
      inits[k] = *init;
    }
  }

  impl.weights = AllocateAligned(artifact.weights.size());
  impl.arena = AllocateAligned(static_cast<size_t>(m.arena_bytes()));
  impl.persistent = AllocateAligned(static_cast<size_t>(m.persistent_bytes()));
  if (impl.weights == nullptr || impl.arena == nullptr || impl.persistent == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot allocate ", artifact.weights.size(), " bytes of weights, ", m.arena_bytes(),
        " bytes of arena and ", m.persistent_bytes(), " bytes of persistent buffer"));
  }
  if (!artifact.weights.empty()) {
    std::memcpy(impl.weights.get(), artifact.weights.data(), artifact.weights.size());
  }

  if (num_threads <= 0)
    num_threads = static_cast<int>(std::max<long>(1, ::sysconf(_SC_NPROCESSORS_ONLN)));
  impl.pool = std::make_unique<ThreadPool>(num_threads);
  impl.context.parallel_for = &ThreadPool::ParallelForTrampoline;
  impl.context.pool = impl.pool.get();

  // Init kernels compute the persistent workspaces from the weights, once; they read no input
  // or output, which are not there yet (null).
  for (int k = 0; k < m.kernels_size(); ++k) {
    if (inits[k] == nullptr) continue;
    const kiln::v1::KernelCall& call = m.kernels(k);
    std::vector<void*> args(call.args_size(), nullptr);
    for (int a = 0; a < call.args_size(); ++a) {
      args[a] = impl.Resolve(call.args(a), nullptr, nullptr);
    }
    inits[k](&impl.context, args.data());
  }

  // The code and weights now live in the loaded object and the aligned buffer.
  artifact.code.clear();
  artifact.code.shrink_to_fit();
  artifact.weights.clear();
  artifact.weights.shrink_to_fit();
  impl.artifact = std::move(artifact);
  return exe;
}

absl::StatusOr<std::vector<Tensor>> Executable::Run(const std::vector<const Tensor*>& inputs) {
  return RunImpl(inputs, nullptr);
}

absl::StatusOr<std::vector<Tensor>> Executable::RunProfiled(
    const std::vector<const Tensor*>& inputs, std::vector<double>* kernel_ms) {
  if (kernel_ms == nullptr) return absl::InvalidArgumentError("RunProfiled: kernel_ms is null");
  kernel_ms->assign(static_cast<size_t>(impl_->artifact.manifest.kernels_size()), 0.0);
  return RunImpl(inputs, kernel_ms);
}

absl::StatusOr<std::vector<Tensor>> Executable::RunImpl(const std::vector<const Tensor*>& inputs,
                                                        std::vector<double>* kernel_ms) {
  Impl& impl = *impl_;
  const kiln::v1::Manifest& m = impl.artifact.manifest;
  if (static_cast<int>(inputs.size()) != m.inputs_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", m.inputs_size(), " inputs, got ", inputs.size()));
  }
  for (int i = 0; i < m.inputs_size(); ++i) {
    const Tensor* t = inputs[i];
    const TensorType& want = impl.input_types[i];
    const std::string& name = m.inputs(i).name();
    if (t == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " ('", name, "') is null"));
    }
    if (t->type.dtype != want.dtype) {
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " ('", name,
                                                     "'): expected dtype ", DTypeName(want.dtype),
                                                     ", got ", DTypeName(t->type.dtype)));
    }
    if (t->type.shape != want.shape) {
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " ('", name,
                                                     "'): expected shape ", ShapeString(want.shape),
                                                     ", got ", ShapeString(t->type.shape)));
    }
    if (static_cast<int64_t>(t->bytes.size()) != want.NumBytes()) {
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " ('", name, "') holds ",
                                                     t->bytes.size(), " bytes of data, expected ",
                                                     want.NumBytes(), " for ", want.ToString()));
    }
  }

  std::vector<Tensor> outputs(impl.output_types.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    outputs[i].type = impl.output_types[i];
    outputs[i].bytes.assign(static_cast<size_t>(outputs[i].type.NumBytes()), 0);
  }

  for (int k = 0; k < m.kernels_size(); ++k) {
    const kiln::v1::KernelCall& call = m.kernels(k);
    std::vector<void*>& args = impl.args[k];
    for (int a = 0; a < call.args_size(); ++a) {
      args[a] = impl.Resolve(call.args(a), &inputs, &outputs);
    }
    if (kernel_ms == nullptr) {
      impl.kernels[k](&impl.context, args.data());
    } else {
      const auto start = std::chrono::steady_clock::now();
      impl.kernels[k](&impl.context, args.data());
      (*kernel_ms)[k] = std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - start)
                            .count();
    }
  }
  return outputs;
}

}  // namespace kiln::runtime
