// The embeddable runtime's C ABI (include/kiln/kiln_runtime.h) over runtime::LoadRunner: a
// kiln_model owns one ModelRunner (the CPU Executable or the CUDA runtime, by the artifact's
// code kind), the input/output descriptions the header hands out, and a mutex that serializes
// runs. Inputs are copied into Tensors and outputs out of them (the C++ runtime's Run owns its
// output tensors); for the models Kiln runs that copy is a small part of a run.
#include "kiln/kiln_runtime.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/dtype.h"
#include "compiler_core/ir/graph/tensor.h"
#include "compiler_core/runtime/artifact.h"
#include "compiler_core/runtime/cuda/load_runner.h"
#include "compiler_core/support/target.h"

namespace {

thread_local std::string last_error;

kiln_status Fail(const absl::Status& status) {
  last_error = std::string(status.message());
  return static_cast<kiln_status>(status.code());
}

kiln_status Fail(kiln_status code, std::string message) {
  last_error = std::move(message);
  return code;
}

// One input's or output's description, with the storage kiln_tensor_info points into.
struct TensorInfo {
  std::string name;
  kiln_dtype dtype = KILN_DTYPE_UNDEFINED;
  std::vector<int64_t> shape, min_shape, max_shape;
  size_t max_num_bytes = 0;
};

kiln_dtype ToCDType(const std::string& printed) {
  std::optional<kiln::DType> dtype = kiln::ParseDType(printed);
  return dtype ? static_cast<kiln_dtype>(kiln::DTypeToOnnx(*dtype)) : KILN_DTYPE_UNDEFINED;
}

// Describes manifest tensor `index` of `specs_of(manifest)`: its dims as the header says, -1
// where shape profiles differ or a dim is bounded, with each dim's range.
template <typename SpecsOf>
TensorInfo Describe(const kiln::v1::Manifest& m, int index, SpecsOf specs_of) {
  const kiln::v1::TensorSpec& spec = specs_of(m).Get(index);
  TensorInfo info;
  info.name = spec.name();
  info.dtype = ToCDType(spec.dtype());
  info.shape.assign(spec.shape().begin(), spec.shape().end());
  info.min_shape = info.shape;
  info.max_shape = info.shape;
  for (const kiln::v1::Manifest& p : m.profiles()) {
    const kiln::v1::TensorSpec& ps = specs_of(p).Get(index);
    for (size_t d = 0; d < info.shape.size() && d < static_cast<size_t>(ps.shape_size()); ++d) {
      if (info.shape[d] != -1) continue;
      const int64_t v = ps.shape(static_cast<int>(d));
      const bool first = info.min_shape[d] == -1;
      info.min_shape[d] = first ? v : std::min(info.min_shape[d], v);
      info.max_shape[d] = first ? v : std::max(info.max_shape[d], v);
    }
  }
  for (int d = 0; d < spec.lengths_size() && d < static_cast<int>(info.shape.size()); ++d) {
    const kiln::v1::DimLength& l = spec.lengths(d);
    if (l.symbol() < 0 || l.symbol() >= m.bound_symbols_size() || l.div() == 0) continue;
    info.min_shape[d] = m.bound_symbols(l.symbol()).min() * l.mul() / l.div();
    info.shape[d] = -1;
  }
  // A symbolic dim (Manifest.symbols): its symbol's range when it is one symbol, else from 0
  // with no upper bound (-1).
  for (int d = 0; d < spec.dims_size() && d < static_cast<int>(info.shape.size()); ++d) {
    const std::string& expr = spec.dims(d);
    if (expr.empty()) continue;
    info.shape[d] = -1;
    info.min_shape[d] = 0;
    info.max_shape[d] = -1;
    for (const kiln::v1::SymbolSpec& s : m.symbols()) {
      if (s.name() != expr) continue;
      info.min_shape[d] = s.min();
      info.max_shape[d] = s.max();
    }
  }
  if (spec.bounded()) {  // a data-dependent shape: each dim anywhere up to its bound
    for (size_t d = 0; d < info.shape.size(); ++d) {
      info.shape[d] = -1;
      info.min_shape[d] = 0;
    }
  }
  int64_t elements = 1;
  for (int64_t v : info.max_shape) elements *= std::max<int64_t>(v, 0);
  // No upper bound on some dim: unknown (0); a run reports the size it needs (OUT_OF_RANGE).
  for (int64_t v : info.max_shape) {
    if (v == -1) elements = 0;
  }
  info.max_num_bytes = static_cast<size_t>(elements) * kiln_dtype_size(info.dtype);
  return info;
}

void Fill(const TensorInfo& from, kiln_tensor_info* to) {
  to->name = from.name.c_str();
  to->dtype = from.dtype;
  to->rank = from.shape.size();
  to->shape = from.shape.data();
  to->min_shape = from.min_shape.data();
  to->max_shape = from.max_shape.data();
  to->max_num_bytes = from.max_num_bytes;
}

std::string ShapeString(const int64_t* shape, size_t rank) {
  std::string s = "[";
  for (size_t d = 0; d < rank; ++d) absl::StrAppend(&s, d ? "," : "", shape[d]);
  return s + "]";
}

}  // namespace

struct kiln_model {
  std::unique_ptr<kiln::runtime::ModelRunner> runner;
  std::vector<TensorInfo> inputs, outputs;
  std::string graph_hash, target, compiler_version, model_name, options_hash, tuning_digest;
  std::mutex run_mu;
};

namespace {

kiln_status Load(kiln::runtime::Artifact artifact, const kiln_load_options* options,
                 kiln_model** out) {
  int32_t threads = 0, device = 0;
  if (options != nullptr) {
    if (options->struct_size < offsetof(kiln_load_options, device) + sizeof(int32_t)) {
      return Fail(KILN_INVALID_ARGUMENT,
                  absl::StrCat("kiln_load_options.struct_size is ", options->struct_size,
                               ", expected at least ", sizeof(kiln_load_options),
                               " (initialize it with KILN_LOAD_OPTIONS_INIT)"));
    }
    threads = options->num_threads;
    device = options->device;
  }
  auto model = std::make_unique<kiln_model>();
  const kiln::v1::Manifest& m = artifact.manifest;
  for (int i = 0; i < m.inputs_size(); ++i) {
    model->inputs.push_back(Describe(
        m, i, [](const kiln::v1::Manifest& x) -> const auto& { return x.inputs(); }));
  }
  for (int i = 0; i < m.outputs_size(); ++i) {
    model->outputs.push_back(Describe(
        m, i, [](const kiln::v1::Manifest& x) -> const auto& { return x.outputs(); }));
  }
  model->graph_hash = m.graph_hash();
  model->target = m.target_key();
  model->compiler_version = m.compiler_version();
  model->model_name = m.model_name();
  model->options_hash = m.options_hash();
  model->tuning_digest = m.tuning_digest();
  const std::string device_spec =
      m.code_kind() == kiln::v1::PTX ? absl::StrCat("cuda:", device) : std::string("cpu");
  auto runner = kiln::runtime::cuda::LoadRunner(std::move(artifact), device_spec, threads);
  if (!runner.ok()) return Fail(runner.status());
  model->runner = std::move(*runner);
  *out = model.release();
  return KILN_OK;
}

// The index in `infos` of the tensor a caller names, or by position `i` for a null name.
kiln_status Resolve(const std::vector<TensorInfo>& infos, const char* name, size_t i,
                    const char* what, size_t* index) {
  if (name == nullptr) {
    if (i >= infos.size()) {
      return Fail(KILN_INVALID_ARGUMENT, absl::StrCat(what, " ", i, " is past the model's ",
                                                      infos.size(), " ", what, "s"));
    }
    *index = i;
    return KILN_OK;
  }
  for (size_t k = 0; k < infos.size(); ++k) {
    if (infos[k].name == name) {
      *index = k;
      return KILN_OK;
    }
  }
  std::string known;
  for (const TensorInfo& info : infos)
    absl::StrAppend(&known, known.empty() ? "" : ", ", info.name);
  return Fail(KILN_INVALID_ARGUMENT, absl::StrCat("the model has no ", what, " named '", name,
                                                  "' (", what, "s: ", known, ")"));
}

// kiln_model_input / kiln_model_output: tensor `i` of `infos` into *info.
kiln_status DescribeOne(const std::vector<TensorInfo>& infos, size_t i, const char* what,
                        kiln_tensor_info* info) {
  if (info == nullptr) {
    return Fail(KILN_INVALID_ARGUMENT, absl::StrCat("kiln_model_", what, ": info is NULL"));
  }
  if (i >= infos.size()) {
    return Fail(KILN_OUT_OF_RANGE,
                absl::StrCat(what, " ", i, " is past the model's ", infos.size(), " ", what, "s"));
  }
  Fill(infos[i], info);
  return KILN_OK;
}

}  // namespace

extern "C" {

uint32_t kiln_runtime_abi_version(void) { return KILN_RUNTIME_ABI_VERSION; }

const char* kiln_runtime_version(void) {
#define KILN_STR2(x) #x
#define KILN_STR(x) KILN_STR2(x)
  return KILN_STR(KILN_RUNTIME_VERSION_MAJOR) "." KILN_STR(KILN_RUNTIME_VERSION_MINOR) "." KILN_STR(
      KILN_RUNTIME_VERSION_PATCH);
#undef KILN_STR
#undef KILN_STR2
}

const char* kiln_last_error(void) { return last_error.c_str(); }

const char* kiln_native_target(void) {
  static const std::string* const kSpec = new std::string(kiln::NativeTargetSpec());
  return kSpec->c_str();
}

size_t kiln_dtype_size(kiln_dtype dtype) {
  std::optional<kiln::DType> d = kiln::DTypeFromOnnx(static_cast<int>(dtype));
  return d ? kiln::DTypeSize(*d) : 0;
}

kiln_status kiln_model_load_file(const char* path, const kiln_load_options* options,
                                 kiln_model** model) {
  if (path == nullptr || model == nullptr) {
    return Fail(KILN_INVALID_ARGUMENT, "kiln_model_load_file: path and model must not be NULL");
  }
  *model = nullptr;
  auto artifact = kiln::runtime::ReadArtifactFile(path);
  if (!artifact.ok()) return Fail(artifact.status());
  return Load(std::move(*artifact), options, model);
}

kiln_status kiln_model_load_memory(const void* data, size_t size, const kiln_load_options* options,
                                   kiln_model** model) {
  if ((data == nullptr && size != 0) || model == nullptr) {
    return Fail(KILN_INVALID_ARGUMENT, "kiln_model_load_memory: data and model must not be NULL");
  }
  *model = nullptr;
  auto artifact =
      kiln::runtime::ParseArtifact(std::string_view(static_cast<const char*>(data), size));
  if (!artifact.ok()) return Fail(artifact.status());
  return Load(std::move(*artifact), options, model);
}

void kiln_model_free(kiln_model* model) { delete model; }

size_t kiln_model_num_inputs(const kiln_model* model) {
  return model == nullptr ? 0 : model->inputs.size();
}

size_t kiln_model_num_outputs(const kiln_model* model) {
  return model == nullptr ? 0 : model->outputs.size();
}

kiln_status kiln_model_input(const kiln_model* model, size_t i, kiln_tensor_info* info) {
  if (model == nullptr) return Fail(KILN_INVALID_ARGUMENT, "kiln_model_input: model is NULL");
  return DescribeOne(model->inputs, i, "input", info);
}

kiln_status kiln_model_output(const kiln_model* model, size_t i, kiln_tensor_info* info) {
  if (model == nullptr) return Fail(KILN_INVALID_ARGUMENT, "kiln_model_output: model is NULL");
  return DescribeOne(model->outputs, i, "output", info);
}

const char* kiln_model_property(const kiln_model* model, const char* key) {
  if (model == nullptr || key == nullptr) return nullptr;
  const std::string k = key;
  if (k == "graph_hash") return model->graph_hash.c_str();
  if (k == "target") return model->target.c_str();
  if (k == "compiler_version") return model->compiler_version.c_str();
  if (k == "model_name") return model->model_name.c_str();
  if (k == "options_hash") return model->options_hash.c_str();
  if (k == "tuning_digest") return model->tuning_digest.c_str();
  return nullptr;
}

kiln_status kiln_model_run(kiln_model* model, const kiln_tensor* inputs, size_t num_inputs,
                           kiln_output* outputs, size_t num_outputs) {
  if (model == nullptr || (inputs == nullptr && num_inputs != 0) ||
      (outputs == nullptr && num_outputs != 0)) {
    return Fail(KILN_INVALID_ARGUMENT,
                "kiln_model_run: model, inputs and outputs must not be NULL");
  }
  const size_t n_in = model->inputs.size();
  std::vector<kiln::Tensor> tensors(n_in);
  std::vector<bool> given(n_in, false);
  for (size_t i = 0; i < num_inputs; ++i) {
    const kiln_tensor& in = inputs[i];
    size_t k = 0;
    if (kiln_status s = Resolve(model->inputs, in.name, i, "input", &k); s != KILN_OK) return s;
    const TensorInfo& info = model->inputs[k];
    if (given[k]) {
      return Fail(KILN_INVALID_ARGUMENT, absl::StrCat("input '", info.name, "' is given twice"));
    }
    given[k] = true;
    std::optional<kiln::DType> dtype = kiln::DTypeFromOnnx(static_cast<int>(in.dtype));
    if (in.dtype != info.dtype || !dtype) {
      return Fail(KILN_INVALID_ARGUMENT,
                  absl::StrCat("input '", info.name, "': expected dtype ", info.dtype,
                               " (ONNX TensorProto.DataType), got ", static_cast<int>(in.dtype)));
    }
    if (in.rank > KILN_MAX_RANK || (in.shape == nullptr && in.rank != 0)) {
      return Fail(KILN_INVALID_ARGUMENT,
                  absl::StrCat("input '", info.name, "': rank ", in.rank, " with ",
                               in.shape == nullptr ? "a NULL shape" : "more dims than allowed"));
    }
    kiln::Tensor& t = tensors[k];
    t.type.dtype = *dtype;
    t.type.shape.assign(in.shape, in.shape + in.rank);
    for (int64_t v : t.type.shape) {
      if (v < 0) {
        return Fail(KILN_INVALID_ARGUMENT,
                    absl::StrCat("input '", info.name, "': shape ", ShapeString(in.shape, in.rank),
                                 " has a negative dim"));
      }
    }
    const int64_t want_bytes = t.type.CheckedNumBytes();
    if (want_bytes < 0 || static_cast<uint64_t>(want_bytes) != in.num_bytes) {
      return Fail(KILN_INVALID_ARGUMENT,
                  absl::StrCat("input '", info.name, "': shape ", ShapeString(in.shape, in.rank),
                               " needs ", want_bytes, " bytes, got num_bytes ", in.num_bytes));
    }
    if (in.data == nullptr && in.num_bytes != 0) {
      return Fail(KILN_INVALID_ARGUMENT, absl::StrCat("input '", info.name, "': data is NULL"));
    }
    t.bytes.resize(in.num_bytes);
    if (in.num_bytes != 0) std::memcpy(t.bytes.data(), in.data, in.num_bytes);
  }
  for (size_t k = 0; k < n_in; ++k) {
    if (!given[k]) {
      return Fail(KILN_INVALID_ARGUMENT,
                  absl::StrCat("input '", model->inputs[k].name, "' is missing"));
    }
  }
  std::vector<size_t> out_index(num_outputs);
  for (size_t i = 0; i < num_outputs; ++i) {
    if (kiln_status s = Resolve(model->outputs, outputs[i].name, i, "output", &out_index[i]);
        s != KILN_OK) {
      return s;
    }
  }
  std::vector<const kiln::Tensor*> feeds;
  for (const kiln::Tensor& t : tensors) feeds.push_back(&t);
  absl::StatusOr<std::vector<kiln::Tensor>> results;
  {
    std::lock_guard<std::mutex> lock(model->run_mu);
    results = model->runner->Run(feeds);
  }
  if (!results.ok()) return Fail(results.status());
  // Check every buffer before writing any, so a failed run leaves the caller's buffers alone.
  bool too_small = false;
  std::string first_small;
  for (size_t i = 0; i < num_outputs; ++i) {
    const kiln::Tensor& r = (*results)[out_index[i]];
    if (r.type.rank() > KILN_MAX_RANK) {
      return Fail(KILN_INTERNAL, absl::StrCat("output '", model->outputs[out_index[i]].name,
                                              "' has rank ", r.type.rank(), " > KILN_MAX_RANK"));
    }
    outputs[i].num_bytes = r.bytes.size();
    if (r.bytes.size() > outputs[i].capacity_bytes ||
        (outputs[i].data == nullptr && !r.bytes.empty())) {
      if (!too_small) {
        first_small =
            absl::StrCat("output '", model->outputs[out_index[i]].name, "' needs ", r.bytes.size(),
                         " bytes, its buffer holds ", outputs[i].capacity_bytes);
      }
      too_small = true;
    }
  }
  if (too_small) return Fail(KILN_OUT_OF_RANGE, first_small);
  for (size_t i = 0; i < num_outputs; ++i) {
    const kiln::Tensor& r = (*results)[out_index[i]];
    kiln_output& o = outputs[i];
    o.dtype = static_cast<kiln_dtype>(kiln::DTypeToOnnx(r.type.dtype));
    o.rank = r.type.shape.size();
    std::copy(r.type.shape.begin(), r.type.shape.end(), o.shape);
    if (!r.bytes.empty()) std::memcpy(o.data, r.bytes.data(), r.bytes.size());
  }
  last_error.clear();
  return KILN_OK;
}

}  // extern "C"
