// Concrete shapes for graph inputs with symbolic dims (`--input-shape NAME=D0,D1,...`), as
// tvmc's --input-shapes, trtexec's --shapes and ONNX Runtime's free-dimension overrides give
// them: parsing, printing, the model's input signatures, and binding them into a ModelProto.
#ifndef KILN_COMPILER_CORE_IMPORTER_ONNX_INPUT_SHAPES_H_
#define KILN_COMPILER_CORE_IMPORTER_ONNX_INPUT_SHAPES_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kiln::importer {

/// Shapes of graph inputs by input name; every dim >= 1.
using InputShapes = std::map<std::string, std::vector<int64_t>>;

/// Parses one `--input-shape` value, "NAME=D0,D1,..." (a scalar input: "NAME="), into
/// `shapes`. Errors (kInvalidArgument, quoting `spec`): no '=', an empty name, a dim that is
/// not an integer >= 1; kUnimplemented for a second shape of the same input (several shape
/// profiles in one artifact are not built yet).
absl::Status ParseInputShape(std::string_view spec, InputShapes& shapes);

/// "a=1,3,224,224 b=2" (inputs in name order), the text of error messages and reports.
std::string FormatInputShapes(const InputShapes& shapes);

/// One graph input as the model declares it: a dim is its value, or -1 with its `dim_param`
/// name (empty when the dim is unknown).
struct InputSignature {
  std::string name;
  std::vector<int64_t> dims;
  std::vector<std::string> dim_params;  // per dim; empty string for a fixed or unknown dim
  bool symbolic() const;
  /// "[batch,seq,256]" ("?" for an unknown dim).
  std::string DimsText() const;
};

/// The graph inputs (initializers excluded) of the serialized ModelProto `bytes`, in order.
/// Errors: kInvalidArgument when `bytes` is not a ModelProto with a graph.
absl::StatusOr<std::vector<InputSignature>> ReadInputSignatures(std::string_view bytes);

/// The same for the model file at `path`. Errors: kNotFound (unreadable), as above.
absl::StatusOr<std::vector<InputSignature>> ReadInputSignaturesFile(const std::string& path);

/// The shapes of the symbolic inputs among `inputs`, read from the ONNX test data set
/// `data_set_dir` (input_N.pb in graph input order): what `kiln check` and the benches compile
/// a symbolic model at. Empty when no input is symbolic. Errors: kNotFound or
/// kInvalidArgument for a missing or unreadable input_N.pb.
absl::StatusOr<InputShapes> DataSetInputShapes(const std::vector<InputSignature>& inputs,
                                               const std::string& data_set_dir);

}  // namespace kiln::importer

#endif  // KILN_COMPILER_CORE_IMPORTER_ONNX_INPUT_SHAPES_H_
