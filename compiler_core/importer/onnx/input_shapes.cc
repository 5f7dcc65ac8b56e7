// --input-shape parsing and the binding of symbolic input dims in a ModelProto.
#include "compiler_core/importer/onnx/input_shapes.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "compiler_core/importer/onnx/model_checks.h"
#include "compiler_core/importer/onnx/tensor_file.h"
#include "compiler_core/support/status_macros.h"
#include "onnx/onnx_pb.h"

namespace kiln::importer {
namespace {

InputSignature SignatureOf(const onnx::ValueInfoProto& vi) {
  InputSignature s;
  s.name = vi.name();
  s.sequence = vi.type().has_sequence_type();
  if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return s;
  for (const auto& d : vi.type().tensor_type().shape().dim()) {
    s.dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    s.dim_params.push_back(d.has_dim_value() ? "" : d.dim_param());
  }
  return s;
}

std::vector<const onnx::ValueInfoProto*> GraphInputs(const onnx::GraphProto& g) {
  std::set<std::string> initializers;
  for (const auto& init : g.initializer()) initializers.insert(init.name());
  std::vector<const onnx::ValueInfoProto*> inputs;
  for (const auto& in : g.input()) {
    if (!initializers.count(in.name())) inputs.push_back(&in);
  }
  return inputs;
}

// Where a dim_param got its value, for the error when another input gives it another one.
struct Binding {
  int64_t value;
  std::string input;
  int dim;
};

}  // namespace

bool InputSignature::symbolic() const {
  for (int64_t d : dims) {
    if (d < 0) return true;
  }
  return false;
}

std::string InputSignature::DimsText() const {
  std::vector<std::string> parts;
  for (size_t i = 0; i < dims.size(); ++i) {
    parts.push_back(dims[i] >= 0           ? absl::StrCat(dims[i])
                    : dim_params[i].empty() ? std::string("?")
                                            : dim_params[i]);
  }
  return absl::StrCat("[", absl::StrJoin(parts, ","), "]");
}

absl::StatusOr<std::vector<InputSignature>> ReadInputSignatures(std::string_view bytes) {
  onnx::ModelProto model;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) || !model.has_graph()) {
    return absl::InvalidArgumentError("cannot parse the ONNX model: not a ModelProto with a graph");
  }
  std::vector<InputSignature> out;
  for (const onnx::ValueInfoProto* in : GraphInputs(model.graph())) out.push_back(SignatureOf(*in));
  return out;
}

absl::StatusOr<std::vector<InputSignature>> ReadInputSignaturesFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ONNX model '", path, "'"));
  std::stringstream bytes;
  bytes << in.rdbuf();
  return ReadInputSignatures(bytes.str());
}

absl::StatusOr<InputShapes> DataSetInputShapes(const std::vector<InputSignature>& inputs,
                                               const std::string& data_set_dir) {
  InputShapes shapes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].sequence) {
      KILN_ASSIGN_OR_RETURN(std::vector<NamedTensor> elements,
                            ReadSequenceFile(absl::StrCat(data_set_dir, "/input_", i, ".pb")));
      for (size_t k = 0; k < elements.size(); ++k) {
        shapes[SequenceElementName(inputs[i].name, static_cast<int64_t>(k))] =
            elements[k].tensor.type.shape;
      }
      continue;
    }
    if (!inputs[i].symbolic()) continue;
    absl::StatusOr<NamedTensor> t =
        ReadTensorFile(absl::StrCat(data_set_dir, "/input_", i, ".pb"));
    if (!t.ok()) return t.status();
    shapes[inputs[i].name] = t->tensor.type.shape;
  }
  return shapes;
}

absl::Status BindInputShapes(const InputShapes& shapes, onnx::GraphProto& graph) {
  std::vector<const onnx::ValueInfoProto*> inputs = GraphInputs(graph);
  std::vector<std::string> names;
  std::set<std::string> sequences;
  for (const auto* in : inputs) {
    // A declared negative dim is neither a size nor symbolic (SignatureOf would take it for one).
    if (in->type().has_tensor_type() && in->type().tensor_type().has_shape()) {
      const auto& shape = in->type().tensor_type().shape();
      for (int i = 0; i < shape.dim_size(); ++i) {
        if (shape.dim(i).has_dim_value() && shape.dim(i).dim_value() < 0) {
          return absl::InvalidArgumentError(
              absl::StrCat("graph input '", in->name(), "' declares dim ", i, " as ",
                           shape.dim(i).dim_value(), ": dims must not be negative"));
        }
      }
    }
    names.push_back(in->name());
    if (in->type().has_sequence_type()) sequences.insert(in->name());
  }
  for (const auto& [name, dims] : shapes) {
    // "seq[k]": element k of a sequence input (the importer checks the elements).
    std::optional<std::pair<std::string, int64_t>> element = ParseSequenceElementName(name);
    if (element && sequences.count(element->first)) continue;
    if (sequences.count(name)) {
      return absl::InvalidArgumentError(absl::StrCat("--input-shape ", name, ": '", name,
                                                     "' is a sequence input; give each element's "
                                                     "shape: --input-shape '",
                                                     name, "[0]=D0,D1,...' --input-shape '", name,
                                                     "[1]=...'"));
    }
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      return absl::InvalidArgumentError(absl::StrCat("--input-shape: '", name,
                                                     "' is not a graph input (inputs: ",
                                                     absl::StrJoin(names, ", "), ")"));
    }
  }
  // Bind dim_params from the given shapes, checking ranks and fixed dims.
  std::map<std::string, Binding> params;
  for (const auto* in : inputs) {
    auto given = shapes.find(in->name());
    if (given == shapes.end()) continue;
    const InputSignature sig = SignatureOf(*in);
    const std::vector<int64_t>& dims = given->second;
    const std::string flag = "--input-shape " + FormatInputShapes({{in->name(), dims}});
    if (in->type().has_tensor_type() && in->type().tensor_type().has_shape() &&
        sig.dims.size() != dims.size()) {
      return absl::InvalidArgumentError(absl::StrCat(flag, ": graph input '", in->name(),
                                                     "' has rank ", sig.dims.size(), " ",
                                                     sig.DimsText(), ", the shape gives ",
                                                     dims.size(), " dims"));
    }
    for (size_t i = 0; i < sig.dims.size(); ++i) {
      if (sig.dims[i] >= 0 && sig.dims[i] != dims[i]) {
        return absl::InvalidArgumentError(absl::StrCat(
            flag, ": dim ", i, " of graph input '", in->name(), "' ", sig.DimsText(),
            " is fixed at ", sig.dims[i]));
      }
      const std::string& param = sig.dim_params[i];
      if (sig.dims[i] >= 0 || param.empty()) continue;
      auto [it, inserted] = params.emplace(param, Binding{dims[i], in->name(), static_cast<int>(i)});
      if (!inserted && it->second.value != dims[i]) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--input-shape: dim '", param, "' is ", it->second.value, " in input '",
            it->second.input, "' (dim ", it->second.dim, ") but ", dims[i], " in input '",
            in->name(), "' (dim ", i, "); one dim_param takes one value"));
      }
    }
  }
  // Every other symbolic dim must follow from a bound dim_param.
  std::vector<std::string> unbound;
  for (const auto* in : inputs) {
    if (shapes.count(in->name())) continue;
    const InputSignature sig = SignatureOf(*in);
    if (!in->type().has_tensor_type()) continue;  // the importer reports non-tensor inputs
    if (!in->type().tensor_type().has_shape()) {
      unbound.push_back(absl::StrCat("graph input '", in->name(),
                                     "' has no shape: give it with --input-shape ", in->name(),
                                     "=D0,D1,..."));
      continue;
    }
    for (size_t i = 0; i < sig.dims.size(); ++i) {
      if (sig.dims[i] < 0 && !params.count(sig.dim_params[i])) {
        std::vector<std::string> example(sig.dims.size(), "D");
        for (size_t j = 0; j < sig.dims.size(); ++j) {
          example[j] = sig.dims[j] >= 0 ? absl::StrCat(sig.dims[j]) : absl::StrCat("D", j);
        }
        unbound.push_back(absl::StrCat("graph input '", in->name(), "' has symbolic dims ",
                                       sig.DimsText(), ": give its shape with --input-shape ",
                                       in->name(), "=", absl::StrJoin(example, ",")));
        break;
      }
    }
  }
  if (!unbound.empty()) {
    return absl::InvalidArgumentError(absl::StrJoin(unbound, "; "));
  }
  // Write the values into the inputs, and into outputs and value_info sharing a bound dim_param.
  auto bind = [&](onnx::ValueInfoProto& vi, const std::vector<int64_t>* given) {
    if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
    auto* shape = vi.mutable_type()->mutable_tensor_type()->mutable_shape();
    for (int i = 0; i < shape->dim_size(); ++i) {
      auto* d = shape->mutable_dim(i);
      if (d->has_dim_value()) continue;
      if (given != nullptr) {
        d->set_dim_value((*given)[i]);
      } else if (auto it = params.find(d->dim_param()); it != params.end() && !d->dim_param().empty()) {
        d->set_dim_value(it->second.value);
      }
    }
  };
  std::set<std::string> input_names(names.begin(), names.end());
  for (auto& in : *graph.mutable_input()) {
    if (!input_names.count(in.name())) continue;
    auto given = shapes.find(in.name());
    bind(in, given == shapes.end() ? nullptr : &given->second);
  }
  for (auto& out : *graph.mutable_output()) bind(out, nullptr);
  for (auto& vi : *graph.mutable_value_info()) bind(vi, nullptr);
  return absl::OkStatus();
}

}  // namespace kiln::importer
