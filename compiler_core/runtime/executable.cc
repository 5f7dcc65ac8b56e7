// Executable: loads an artifact's shared object (runtime/code_module.h), resolves its kernel
// symbols, owns the aligned weights and arena, and runs the kernel sequence on a thread pool.
#include "compiler_core/runtime/executable.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/runtime/abi.h"
#include "compiler_core/runtime/code_module.h"
#include "compiler_core/runtime/host_check.h"
#include "compiler_core/runtime/loop_check.h"
#include "compiler_core/runtime/manifest_check.h"
#include "compiler_core/runtime/symbolic_shapes.h"
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

}  // namespace

// Where a manifest's INPUT, OUTPUT and ARENA bindings point during one run of its kernels: the
// model's inputs, outputs and arena, or a Loop body's (null while there are none: at load).
struct Frame {
  void* const* inputs = nullptr;   // one per manifest input
  void* const* outputs = nullptr;  // one per manifest output
  uint8_t* arena = nullptr;
};

struct LoopProgram;

// The resolved kernels of one manifest: the model's, a shape profile's or a Loop body's.
struct Program {
  const kiln::v1::Manifest* manifest = nullptr;     // into Impl::artifact.manifest
  std::vector<kiln_kernel_fn> kernels;              // per kernel call; null for a Loop call
  std::vector<kiln_kernel_fn> inits;                // per kernel call; null without an init
  std::vector<std::vector<void*>> args;             // per kernel call, refilled by each run
  std::vector<std::unique_ptr<LoopProgram>> loops;  // per kernel call; set for a Loop call
  AlignedBuffer persistent;                         // filled once by the init kernels at load
};

// A Loop call's body and the buffers its iterations run in (KernelCall.loop).
struct LoopProgram {
  Program body;
  AlignedBuffer arena;    // the body's arena (LoopCall.body.arena_bytes)
  AlignedBuffer scalars;  // iteration_num (i64 at 0), cond in (bool at 8), cond out (at 16)
  // The carried values, double buffered: an iteration reads state[cur] and writes state[1-cur].
  std::vector<AlignedBuffer> state[2];
  std::vector<int64_t> carried_bytes;  // per carried value
  std::vector<int64_t> scan_bytes;     // per scan output, one iteration's
  std::vector<void*> inputs, outputs;  // the body's Frame, rebuilt per iteration
};

// The kernels of one shape profile (or of the whole model when it has none).
struct Variant {
  Program program;
  std::vector<TensorType> input_types;
  std::vector<TensorType> output_types;
};

struct Executable::Impl {
  Artifact artifact;  // manifest kept; code and weights cleared after loading
  std::vector<TensorType> input_types;  // the model's; -1 for a dim that varies by profile
  /// Per graph input: whether some kernel reads it. An input no kernel reads (one whose type is
  /// all that matters, as CastLike's target_type) is checked for its dtype only.
  std::vector<bool> input_read;
  std::unique_ptr<CodeModule> code;
  std::vector<Variant> variants;  // one per profile, or one for a model without profiles
  AlignedBuffer weights;
  AlignedBuffer arena;  // shared by the variants (one runs at a time), sized for the largest
  std::unique_ptr<ThreadPool> pool;
  /// Bounded dims (Manifest.bound_symbols): each run's symbol values (Binding.DIMS) and, per
  /// graph input with dim lengths, the buffer padded to its bound shape that kernels read
  /// (empty for other inputs).
  std::vector<int64_t> symbol_values;
  std::vector<Tensor> padded_inputs;
  /// Symbolic dims (Manifest.symbols): the shape program, and the arena of the dynamic buffers,
  /// grown when a call needs more than it has.
  SymbolicShapes shapes;
  AlignedBuffer dynamic_arena;
  int64_t dynamic_capacity = 0;
  int64_t max_tensor_bytes = kMaxTensorBytes;

  /// Checks bounded input `i` of shape `t` against its dims' lengths and records the symbols'
  /// values in `symbol_values` (`set`: which are known). Errors: kInvalidArgument naming the
  /// input, the dim and the range.
  absl::Status ReadBoundedInput(int i, const Tensor& t, std::vector<bool>& set) {
    const kiln::v1::Manifest& m = artifact.manifest;
    const kiln::v1::TensorSpec& spec = m.inputs(i);
    const std::vector<int64_t> bound(spec.shape().begin(), spec.shape().end());
    std::vector<std::string> want;
    for (int d = 0; d < spec.lengths_size(); ++d) {
      const int sym = spec.lengths(d).symbol();
      want.push_back(
          sym < 0 ? absl::StrCat(bound[d])
                  : absl::StrCat(m.bound_symbols(sym).min(), "..", m.bound_symbols(sym).max()));
    }
    auto bad = [&](const std::string& why) {
      return absl::InvalidArgumentError(
          absl::StrCat("input ", i, " ('", spec.name(), "'): got shape ", ShapeString(t.type.shape),
                       ", expected [", absl::StrJoin(want, ","), "]: ", why));
    };
    if (t.type.rank() != static_cast<int64_t>(bound.size())) return bad("another rank");
    for (size_t d = 0; d < bound.size(); ++d) {
      const kiln::v1::DimLength& l = spec.lengths(static_cast<int>(d));
      const int64_t got = t.type.shape[d];
      if (l.symbol() < 0) {
        if (got != bound[d]) return bad(absl::StrCat("dim ", d, " is fixed at ", bound[d]));
        continue;
      }
      const kiln::v1::BoundSymbol& sym = m.bound_symbols(l.symbol());
      if (got * l.div() % l.mul() != 0) {
        return bad(absl::StrCat("dim ", d, " must be a multiple of ", l.mul()));
      }
      const int64_t value = got * l.div() / l.mul();
      if (value < sym.min() || value > sym.max()) {
        return bad(absl::StrCat("dim ", d, " is outside the bounded range of ", SymbolText(sym)));
      }
      if (set[l.symbol()] && symbol_values[l.symbol()] != value) {
        return bad(absl::StrCat("dim ", d, " is ", SymbolText(sym),
                                ", which an earlier dim set to ", symbol_values[l.symbol()]));
      }
      symbol_values[l.symbol()] = value;
      set[l.symbol()] = true;
    }
    return absl::OkStatus();
  }

  /// The pointer `b` binds: into the weights, `p`'s persistent buffer, or the frame's inputs,
  /// outputs or arena (null where the frame has none: at load).
  void* Resolve(const kiln::v1::Binding& b, const Program& p, const Frame& f) const {
    switch (b.kind()) {
      case kiln::v1::Binding::INPUT:
        return f.inputs ? f.inputs[b.index()] : nullptr;
      case kiln::v1::Binding::OUTPUT:
        return f.outputs ? f.outputs[b.index()] : nullptr;
      case kiln::v1::Binding::WEIGHT:
        return weights.get() + b.offset();
      case kiln::v1::Binding::ARENA:
        return f.arena + b.offset();
      case kiln::v1::Binding::PERSISTENT:
        return p.persistent.get() + b.offset();
      case kiln::v1::Binding::DIMS:
        return const_cast<int64_t*>(shapes.empty() ? symbol_values.data()
                                                   : shapes.values().data());
      case kiln::v1::Binding::SHAPE_VALUE:
        return const_cast<SymbolicShapes&>(shapes).shape_value(static_cast<size_t>(b.index()));
      case kiln::v1::Binding::DYNAMIC:
        // Placed by the call's shape program (null at load: no init reads one).
        return dynamic_arena == nullptr
                   ? nullptr
                   : dynamic_arena.get() + shapes.dynamic_offsets()[static_cast<size_t>(b.index())];
      default:
        return nullptr;  // rejected by ValidateManifest
    }
  }

  /// Resolves `m`'s kernel symbols into `p` (and its Loop bodies', recursively) and allocates
  /// the persistent buffers and the Loop bodies' arenas and carried-value buffers.
  absl::Status BuildProgram(const kiln::v1::Manifest& m, Program& p) {
    p.manifest = &m;
    for (int k = 0; k < m.kernels_size(); ++k) {
      const kiln::v1::KernelCall& call = m.kernels(k);
      p.args.emplace_back(call.args_size(), nullptr);
      p.kernels.push_back(nullptr);
      p.inits.push_back(nullptr);
      p.loops.emplace_back();
      if (call.has_loop()) {
        absl::Status built =
            BuildLoop(call.loop(), *(p.loops.back() = std::make_unique<LoopProgram>()));
        if (!built.ok()) {
          return absl::Status(built.code(), absl::StrCat("kernel ", k, " (", call.loop().what(),
                                                         ") body: ", built.message()));
        }
        continue;
      }
      absl::StatusOr<kiln_kernel_fn> fn = code->Kernel(call.symbol());
      if (!fn.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("kernel ", k, ": ", fn.status().message()));
      }
      p.kernels.back() = *fn;
      if (!call.init_symbol().empty()) {
        absl::StatusOr<kiln_kernel_fn> init = code->Kernel(call.init_symbol());
        if (!init.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat("kernel ", k, " init: ", init.status().message()));
        }
        p.inits.back() = *init;
      }
    }
    p.persistent = AllocateAligned(static_cast<size_t>(m.persistent_bytes()));
    if (p.persistent == nullptr) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "cannot allocate ", m.persistent_bytes(), " bytes of persistent buffer"));
    }
    return absl::OkStatus();
  }

  absl::Status BuildLoop(const kiln::v1::LoopCall& loop, LoopProgram& lp) {
    const kiln::v1::Manifest& body = loop.body();
    KILN_RETURN_IF_ERROR(BuildProgram(body, lp.body));
    const std::vector<TensorType> in = TypesOf(body.inputs()), out = TypesOf(body.outputs());
    const int nc = loop.num_carried();
    lp.arena = AllocateAligned(static_cast<size_t>(body.arena_bytes()));
    lp.scalars = AllocateAligned(64);
    bool allocated = lp.arena != nullptr && lp.scalars != nullptr;
    for (int i = 0; i < nc; ++i) {
      lp.carried_bytes.push_back(in[2 + i].NumBytes());
      for (auto& state : lp.state) {
        state.push_back(AllocateAligned(static_cast<size_t>(lp.carried_bytes.back())));
        allocated = allocated && state.back() != nullptr;
      }
    }
    for (size_t k = 1 + nc; k < out.size(); ++k) lp.scan_bytes.push_back(out[k].NumBytes());
    lp.inputs.assign(in.size(), nullptr);
    lp.outputs.assign(out.size(), nullptr);
    if (!allocated) {
      return absl::ResourceExhaustedError(absl::StrCat("cannot allocate the ", body.arena_bytes(),
                                                       "-byte arena and the carried "
                                                       "values of a Loop body"));
    }
    return absl::OkStatus();
  }

  /// Runs the init kernels of `p` and of its Loop bodies (they read weights only).
  void RunInits(Program& p, uint8_t* arena) {
    const Frame frame{nullptr, nullptr, arena};
    for (size_t k = 0; k < p.inits.size(); ++k) {
      if (p.loops[k] != nullptr) RunInits(p.loops[k]->body, p.loops[k]->arena.get());
      if (p.inits[k] == nullptr) continue;
      const kiln::v1::KernelCall& call = p.manifest->kernels(static_cast<int>(k));
      std::vector<void*> args(call.args_size(), nullptr);
      for (int i = 0; i < call.args_size(); ++i) args[i] = Resolve(call.args(i), p, frame);
      p.inits[k](&context, args.data());
    }
  }

  /// Runs `p`'s kernels in `f`, checking each call's shapes; with `kernel_ms`, times each call,
  /// and with `kernel_start_ms` stores when each began, in ms after `run_start`. Bounded
  /// outputs' run-time shapes are appended to `trims`.
  absl::Status RunProgram(Program& p, const Frame& f, std::vector<double>* kernel_ms,
                          std::vector<double>* kernel_start_ms,
                          std::chrono::steady_clock::time_point run_start,
                          std::vector<OutputTrim>& trims) {
    const kiln::v1::Manifest& m = *p.manifest;
    for (int k = 0; k < m.kernels_size(); ++k) {
      const kiln::v1::KernelCall& call = m.kernels(k);
      std::vector<void*>& args = p.args[k];
      for (int a = 0; a < call.args_size(); ++a) args[a] = Resolve(call.args(a), p, f);
      std::chrono::steady_clock::time_point start;
      if (kernel_ms != nullptr) start = std::chrono::steady_clock::now();
      if (p.loops[k] != nullptr) {
        KILN_RETURN_IF_ERROR(RunLoop(p, *p.loops[k], call, args, f, trims));
      } else {
        p.kernels[k](&context, args.data());
      }
      if (kernel_ms != nullptr) {
        (*kernel_ms)[k] =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
        if (kernel_start_ms != nullptr) {
          (*kernel_start_ms)[k] =
              std::chrono::duration<double, std::milli>(start - run_start).count();
        }
      }
      if (call.shape_checks_size() > 0) {
        KILN_RETURN_IF_ERROR(CheckShapes(
            call,
            [&](int arg, int64_t* out, size_t n) { std::memcpy(out, args[arg], 8 * n); },
            trims));
      }
    }
    return absl::OkStatus();
  }

  /// One Loop call (LoopCall) of program `p`: `args` are its bound inputs and outputs.
  absl::Status RunLoop(const Program& p, LoopProgram& lp, const kiln::v1::KernelCall& call,
                       const std::vector<void*>& args, const Frame& f,
                       std::vector<OutputTrim>& trims) {
    const kiln::v1::LoopCall& loop = call.loop();
    const int nc = loop.num_carried();
    const int num_outer = static_cast<int>(lp.inputs.size()) - 2 - nc;
    const int num_scans = static_cast<int>(lp.scan_bytes.size());
    const int final_at = 2 + nc + num_outer;  // args index of the first output
    int64_t trips = 0;
    std::memcpy(&trips, args[0], sizeof(trips));
    bool cond = *static_cast<const uint8_t*>(args[1]) != 0;
    uint8_t* scalars = lp.scalars.get();
    for (int i = 0; i < nc; ++i) {
      std::memcpy(lp.state[0][i].get(), args[2 + i], static_cast<size_t>(lp.carried_bytes[i]));
    }
    lp.inputs[0] = scalars;
    lp.inputs[1] = scalars + 8;
    lp.outputs[0] = scalars + 16;
    for (int j = 0; j < num_outer; ++j) lp.inputs[2 + nc + j] = args[2 + nc + j];
    std::vector<OutputTrim> body_trims;
    int cur = 0;
    int64_t n = 0;
    for (; n < trips && cond; ++n) {
      if (num_scans > 0 && n >= loop.scan_length()) {
        return absl::InvalidArgumentError(absl::StrCat(
            loop.what(), ": the loop runs more than the ", loop.scan_length(),
            " iterations its scan outputs were compiled for (the length ONNX shape inference, the "
            "declared graph output or a constant trip count gave)"));
      }
      std::memcpy(scalars, &n, sizeof(n));
      scalars[8] = 1;
      for (int i = 0; i < nc; ++i) {
        lp.inputs[2 + i] = lp.state[cur][i].get();
        lp.outputs[1 + i] = lp.state[1 - cur][i].get();
      }
      for (int s = 0; s < num_scans; ++s) {
        lp.outputs[1 + nc + s] =
            static_cast<uint8_t*>(args[final_at + nc + s]) + n * lp.scan_bytes[s];
      }
      const Frame body{lp.inputs.data(), lp.outputs.data(), lp.arena.get()};
      KILN_RETURN_IF_ERROR(RunProgram(lp.body, body, nullptr, nullptr, {}, body_trims));
      cond = scalars[16] != 0;
      cur = 1 - cur;
    }
    for (int i = 0; i < nc; ++i) {
      std::memcpy(args[final_at + i], lp.state[cur][i].get(),
                  static_cast<size_t>(lp.carried_bytes[i]));
    }
    if (num_scans == 0 || n == loop.scan_length()) return absl::OkStatus();
    for (int s = 0; s < num_scans; ++s) {
      // Only a graph output that nothing else reads is bounded (CheckLoopCall checked its spec).
      const kiln::v1::Binding& b = call.args(final_at + nc + s);
      const kiln::v1::Manifest& owner = *p.manifest;
      if (b.kind() != kiln::v1::Binding::OUTPUT || f.outputs == nullptr ||
          !owner.outputs(static_cast<int>(b.index())).bounded()) {
        return absl::InvalidArgumentError(absl::StrCat(
            loop.what(), ": the loop ran ", n, " iterations, but its scan output ", s,
            " was compiled for ", loop.scan_length(),
            " (the length ONNX shape inference, the declared graph output or a constant trip "
            "count gave) and is read as such"));
      }
      const kiln::v1::TensorSpec& spec = owner.outputs(static_cast<int>(b.index()));
      std::vector<int64_t> shape(spec.shape().begin(), spec.shape().end());
      shape[0] = n;
      trims.push_back({static_cast<int>(b.index()), std::move(shape)});
    }
    return absl::OkStatus();
  }

  /// Resolves `m`'s kernel symbols into a new variant and allocates its persistent buffer.
  absl::Status AddVariant(const kiln::v1::Manifest& m) {
    Variant v;
    v.input_types = TypesOf(m.inputs());
    v.output_types = TypesOf(m.outputs());
    KILN_RETURN_IF_ERROR(BuildProgram(m, v.program));
    variants.push_back(std::move(v));
    return absl::OkStatus();
  }

  /// The variant whose input shapes are those of `inputs` as FedShape takes them (already
  /// checked against the model's dtypes and known dims). Errors: kInvalidArgument listing the
  /// compiled profiles.
  absl::StatusOr<Variant*> Select(const std::vector<const Tensor*>& inputs) {
    if (artifact.manifest.profiles_size() == 0) return &variants[0];  // shapes checked
    for (Variant& v : variants) {
      bool match = true;
      for (size_t i = 0; match && i < inputs.size(); ++i) {
        const std::vector<int64_t>& want = v.input_types[i].shape;
        match = !input_read[i] || FedShape(inputs[i]->type.shape, want) == want;
      }
      if (match) return &v;
    }
    const kiln::v1::Manifest& m = artifact.manifest;
    auto shapes_text = [&](const std::vector<std::vector<int64_t>>& shapes) {
      std::vector<std::string> parts;
      for (int i = 0; i < m.inputs_size(); ++i) {
        parts.push_back(absl::StrCat(m.inputs(i).name(), "=", ShapeString(shapes[i])));
      }
      return absl::StrJoin(parts, " ");
    };
    std::vector<std::vector<int64_t>> got;
    for (const Tensor* t : inputs) got.push_back(t->type.shape);
    std::vector<std::string> compiled;
    for (const Variant& v : variants) {
      std::vector<std::vector<int64_t>> shapes;
      for (const TensorType& t : v.input_types) shapes.push_back(t.shape);
      compiled.push_back(shapes_text(shapes));
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "input shapes ", shapes_text(got), " match none of the artifact's ", variants.size(),
        " shape profiles: ", absl::StrJoin(compiled, " | ")));
  }

  kiln_context context{};
};

Executable::Executable() : impl_(std::make_unique<Impl>()) {}
Executable::~Executable() = default;

const kiln::v1::Manifest& Executable::manifest() const { return impl_->artifact.manifest; }

void Executable::SetMaxTensorBytes(int64_t bytes) { impl_->max_tensor_bytes = bytes; }

absl::StatusOr<std::unique_ptr<Executable>> Executable::Load(Artifact artifact, int num_threads) {
  if (artifact.manifest.code_kind() != kiln::v1::HOST) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the artifact holds PTX for ", artifact.manifest.target_key(),
        ", not host code: run it on a GPU (kiln run|check --device cuda:N)"));
  }
  // A manifest without a target key is hand-made (tests); every compiled one has a key.
  if (!artifact.manifest.target_key().empty()) {
    KILN_RETURN_IF_ERROR(CheckTargetRunsHere(artifact.manifest.target_key()));
  }
  const int64_t weights_size = static_cast<int64_t>(artifact.weights.size());
  if (artifact.manifest.profiles_size() > 0) {
    KILN_RETURN_IF_ERROR(ValidateProfiles(artifact.manifest, weights_size));
  } else {
    KILN_RETURN_IF_ERROR(ValidateManifest(artifact.manifest, weights_size));
  }

  std::unique_ptr<Executable> exe(new Executable());
  Impl& impl = *exe->impl_;
  impl.artifact = std::move(artifact);
  Artifact& a = impl.artifact;
  const kiln::v1::Manifest& m = a.manifest;
  impl.input_types = TypesOf(m.inputs());
  KILN_ASSIGN_OR_RETURN(impl.shapes, SymbolicShapes::FromManifest(m));
  impl.symbol_values.assign(static_cast<size_t>(m.bound_symbols_size()), 0);
  impl.padded_inputs.resize(static_cast<size_t>(m.inputs_size()));
  for (int i = 0; i < m.inputs_size(); ++i) {
    if (m.inputs(i).lengths_size() == 0) continue;
    impl.padded_inputs[i].type = impl.input_types[i];
    impl.padded_inputs[i].bytes.assign(static_cast<size_t>(impl.input_types[i].NumBytes()), 0);
  }

  std::vector<const kiln::v1::Manifest*> variant_manifests;
  if (m.profiles_size() == 0) variant_manifests.push_back(&m);
  for (const kiln::v1::Manifest& p : m.profiles()) variant_manifests.push_back(&p);
  impl.input_read.assign(static_cast<size_t>(m.inputs_size()), false);
  for (const kiln::v1::Manifest* v : variant_manifests) {
    for (const kiln::v1::KernelCall& call : v->kernels()) {
      for (const kiln::v1::Binding& b : call.args()) {
        if (b.kind() == kiln::v1::Binding::INPUT) impl.input_read[b.index()] = true;
      }
    }
  }
  int64_t arena_bytes = 0;
  int kernel_calls = 0;
  for (const kiln::v1::Manifest* v : variant_manifests) {
    arena_bytes = std::max(arena_bytes, v->arena_bytes());
    kernel_calls += v->kernels_size();
  }
  if (kernel_calls > 0) {
    if (a.code.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("artifact has ", kernel_calls, " kernel calls but no code"));
    }
    KILN_ASSIGN_OR_RETURN(impl.code, CodeModule::Load(a.code));
  }
  for (size_t k = 0; k < variant_manifests.size(); ++k) {
    absl::Status added = impl.AddVariant(*variant_manifests[k]);
    if (!added.ok() && m.profiles_size() > 0) {
      return absl::Status(added.code(),
                          absl::StrCat("shape profile ", k, ": ", added.message()));
    }
    KILN_RETURN_IF_ERROR(added);
  }

  impl.weights = AllocateAligned(a.weights.size());
  impl.arena = AllocateAligned(static_cast<size_t>(arena_bytes));
  if (impl.weights == nullptr || impl.arena == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot allocate ", a.weights.size(),
                                                     " bytes of weights and ", arena_bytes,
                                                     " bytes of arena"));
  }
  if (!a.weights.empty()) std::memcpy(impl.weights.get(), a.weights.data(), a.weights.size());

  if (num_threads <= 0)
    num_threads = static_cast<int>(std::max<long>(1, ::sysconf(_SC_NPROCESSORS_ONLN)));
  impl.pool = std::make_unique<ThreadPool>(num_threads);
  impl.context.parallel_for = &ThreadPool::ParallelForTrampoline;
  impl.context.pool = impl.pool.get();

  // Init kernels compute the persistent workspaces from the weights, once; they read no input
  // or output, which are not there yet (null).
  for (Variant& v : impl.variants) impl.RunInits(v.program, impl.arena.get());

  // The code and weights now live in the loaded object and the aligned buffer.
  a.code.clear();
  a.code.shrink_to_fit();
  a.weights.clear();
  a.weights.shrink_to_fit();
  return exe;
}

absl::StatusOr<std::vector<Tensor>> Executable::Run(const std::vector<const Tensor*>& inputs) {
  return RunImpl(inputs, nullptr, nullptr);
}

absl::StatusOr<std::vector<Tensor>> Executable::RunProfiled(
    const std::vector<const Tensor*>& inputs, std::vector<double>* kernel_ms) {
  if (kernel_ms == nullptr) return absl::InvalidArgumentError("RunProfiled: kernel_ms is null");
  return RunImpl(inputs, kernel_ms, nullptr);
}

absl::StatusOr<std::vector<Tensor>> Executable::RunProfiled(
    const std::vector<const Tensor*>& inputs, std::vector<double>* kernel_ms,
    std::vector<double>* kernel_start_ms) {
  if (kernel_ms == nullptr || kernel_start_ms == nullptr) {
    return absl::InvalidArgumentError("RunProfiled: kernel_ms and kernel_start_ms must be set");
  }
  return RunImpl(inputs, kernel_ms, kernel_start_ms);
}

absl::StatusOr<std::vector<Tensor>> Executable::RunImpl(const std::vector<const Tensor*>& inputs,
                                                        std::vector<double>* kernel_ms,
                                                        std::vector<double>* kernel_start_ms) {
  const auto run_start = std::chrono::steady_clock::now();
  Impl& impl = *impl_;
  const kiln::v1::Manifest& m = impl.artifact.manifest;
  if (static_cast<int>(inputs.size()) != m.inputs_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", m.inputs_size(), " inputs, got ", inputs.size()));
  }
  std::vector<bool> symbol_set(impl.symbol_values.size(), false);
  std::vector<const Tensor*> feeds = inputs;
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
    if (m.inputs(i).lengths_size() > 0) {
      KILN_RETURN_IF_ERROR(impl.ReadBoundedInput(i, *t, symbol_set));
      if (static_cast<int64_t>(t->bytes.size()) != t->type.NumBytes()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "input ", i, " ('", name, "') holds ", t->bytes.size(), " bytes of data, expected ",
            t->type.NumBytes(), " for ", t->type.ToString()));
      }
      PadToBound(*t, want.shape, impl.padded_inputs[i]);
      feeds[i] = &impl.padded_inputs[i];
      continue;
    }
    const std::vector<int64_t>& got = FedShape(t->type.shape, want.shape);
    // With symbolic dims the shape program checks every input's shape (naming the symbol).
    bool shape_ok =
        !impl.shapes.empty() || got.size() == want.shape.size() || !impl.input_read[i];
    for (size_t d = 0; shape_ok && impl.shapes.empty() && impl.input_read[i] &&
                       d < want.shape.size();
         ++d) {
      shape_ok = want.shape[d] == -1 || want.shape[d] == got[d];
    }
    if (!shape_ok) {
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " ('", name,
                                                     "'): expected shape ", ShapeString(want.shape),
                                                     ", got ", ShapeString(t->type.shape)));
    }
    if (static_cast<int64_t>(t->bytes.size()) != t->type.NumBytes()) {
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " ('", name, "') holds ",
                                                     t->bytes.size(), " bytes of data, expected ",
                                                     t->type.NumBytes(), " for ",
                                                     t->type.ToString()));
    }
  }
  if (!impl.shapes.empty()) {
    // The shape program: the symbols from the inputs' shapes, then every symbolic size.
    std::vector<std::vector<int64_t>> fed;
    for (int i = 0; i < m.inputs_size(); ++i) {
      fed.push_back(FedShape(inputs[i]->type.shape, impl.input_types[i].shape));
    }
    KILN_RETURN_IF_ERROR(impl.shapes.Bind(fed, impl.max_tensor_bytes));
    if (impl.shapes.dynamic_bytes() > impl.dynamic_capacity || impl.dynamic_arena == nullptr) {
      // Grow by half again at least, so that a growing cache reallocates O(log n) times.
      const int64_t want = std::max(impl.shapes.dynamic_bytes(), impl.dynamic_capacity * 3 / 2);
      impl.dynamic_arena = AllocateAligned(static_cast<size_t>(want));
      if (impl.dynamic_arena == nullptr) {
        return absl::ResourceExhaustedError(
            absl::StrCat("cannot allocate ", want, " bytes for the intermediates of this call"));
      }
      impl.dynamic_capacity = want;
    }
  }
  KILN_ASSIGN_OR_RETURN(Variant * variant, impl.Select(inputs));
  Variant& v = *variant;
  const kiln::v1::Manifest& vm = *v.program.manifest;

  std::vector<Tensor> outputs(v.output_types.size());
  std::vector<void*> input_ptrs(feeds.size()), output_ptrs(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    outputs[i].type = v.output_types[i];
    if (!impl.shapes.empty()) outputs[i].type.shape = impl.shapes.output_shapes()[i];
    outputs[i].bytes.assign(static_cast<size_t>(outputs[i].type.NumBytes()), 0);
    output_ptrs[i] = outputs[i].bytes.data();
  }
  // Kernels never write their inputs; the ABI has no const pointers.
  for (size_t i = 0; i < feeds.size(); ++i) {
    input_ptrs[i] = const_cast<uint8_t*>(feeds[i]->bytes.data());
  }
  if (kernel_ms != nullptr) kernel_ms->assign(static_cast<size_t>(vm.kernels_size()), 0.0);
  if (kernel_start_ms != nullptr) {
    kernel_start_ms->assign(static_cast<size_t>(vm.kernels_size()), 0.0);
  }
  std::vector<OutputTrim> trims;
  const Frame frame{input_ptrs.data(), output_ptrs.data(), impl.arena.get()};
  KILN_RETURN_IF_ERROR(
      impl.RunProgram(v.program, frame, kernel_ms, kernel_start_ms, run_start, trims));
  for (const OutputTrim& trim : trims) TrimToShape(outputs[trim.output], trim.shape);
  for (int o = 0; o < vm.outputs_size(); ++o) {
    const kiln::v1::TensorSpec& spec = vm.outputs(o);
    if (spec.lengths_size() == 0) continue;
    std::vector<int64_t> shape(spec.shape().begin(), spec.shape().end());
    for (int d = 0; d < spec.lengths_size(); ++d) {
      const kiln::v1::DimLength& l = spec.lengths(d);
      if (l.symbol() >= 0) shape[d] = impl.symbol_values[l.symbol()] * l.mul() / l.div();
    }
    TrimToShape(outputs[o], shape);
  }
  return outputs;
}

}  // namespace kiln::runtime
