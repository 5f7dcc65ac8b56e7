// ONNX ModelProto → graph IR, through the ONNX library's checker and shape inference.
#ifndef KILN_COMPILER_CORE_IMPORTER_ONNX_IMPORTER_H_
#define KILN_COMPILER_CORE_IMPORTER_ONNX_IMPORTER_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "compiler_core/importer/onnx/input_shapes.h"
#include "compiler_core/ir/graph/graph.h"

namespace kiln::importer {

/// What an import needs beyond the model.
struct ImportOptions {
  /// Shapes for graph inputs with symbolic dims (BindInputShapes in model_checks.h); a model
  /// with a symbolic input dim that these leave unbound is kInvalidArgument naming the flag.
  InputShapes input_shapes;
  /// Graph inputs given as constants (`--constant-input NAME=FILE.pb`): input name →
  /// serialized onnx.TensorProto (BindConstantInputs in model_checks.h). The input becomes an
  /// initializer, so everything it determines folds (e.g. an If condition or a Loop trip count).
  std::map<std::string, std::string> constant_inputs;
  /// The size budget: a tensor (graph input, initializer, constant, or any value the model
  /// computes) whose static size passes this many bytes is kInvalidArgument, as is a negative
  /// dim or a size past int64 (CheckTensorSize). Set from CompileOptions::max_tensor_bytes.
  int64_t max_tensor_bytes = kMaxTensorBytes;
  /// With no `input_shapes`: keep the inputs' dynamic dims symbolic instead of refusing them.
  /// A dim with a `dim_param` becomes the symbol of that name (one symbol for every dim that
  /// names it; a name that is not an identifier has its other characters replaced by '_'), an
  /// unnamed one the symbol "<input>_<dim index>"; each ranges over [0, inf). The graph's
  /// types then hold symbolic dims (TensorType::sym_shape); ops whose shape rules do not
  /// handle them yet are kUnimplemented naming the node.
  bool symbolic_dims = false;
};

/// Imports the model at `path`. External-data tensors are read relative to the model's
/// directory. Accepts default-domain opsets 7..17 and canonicalizes every op to Kiln's form
/// (e.g. Clip min/max, Pad pads, Squeeze axes and Reshape shape as constant inputs; pre-13
/// Softmax axis semantics made explicit). Constant nodes become constants.
/// Errors: kNotFound (unreadable file); kInvalidArgument for a malformed model (bad protobuf,
/// checker failure, a cycle, an undefined input, inconsistent shapes), naming the node;
/// kUnimplemented for an unsupported op or opset, naming the node and op; kInvalidArgument for
/// input shapes that do not fit the model or leave a symbolic dim unbound.
absl::StatusOr<std::unique_ptr<graph::Graph>> ImportOnnxFile(const std::string& path,
                                                             const ImportOptions& options = {});

/// Same, from serialized ModelProto bytes; external data is resolved against `base_dir`.
absl::StatusOr<std::unique_ptr<graph::Graph>> ImportOnnxBytes(std::string_view bytes,
                                                              const std::string& base_dir,
                                                              const ImportOptions& options = {});

}  // namespace kiln::importer

#endif  // KILN_COMPILER_CORE_IMPORTER_ONNX_IMPORTER_H_
