// The model's input signatures and the shapes of its symbolic inputs read from test data sets;
// the `--input-shape` values themselves are in shape_profiles.h (no ONNX there).
#ifndef KILN_COMPILER_CORE_IMPORTER_ONNX_INPUT_SHAPES_H_
#define KILN_COMPILER_CORE_IMPORTER_ONNX_INPUT_SHAPES_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler_core/importer/onnx/shape_profiles.h"

namespace kiln::importer {

/// One graph input as the model declares it: a dim is its value, or -1 with its `dim_param`
/// name (empty when the dim is unknown).
struct InputSignature {
  std::string name;
  std::vector<int64_t> dims;
  std::vector<std::string> dim_params;  // per dim; empty string for a fixed or unknown dim
  /// A sequence of tensors: its length and element shapes are input shapes "name[k]" (one per
  /// element; the importer makes each element a graph input of that name).
  bool sequence = false;
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
/// a symbolic model at; a sequence input gives one shape per element, "name[k]". Empty when no
/// input is symbolic or a sequence. Errors: kNotFound or
/// kInvalidArgument for a missing or unreadable input_N.pb.
absl::StatusOr<InputShapes> DataSetInputShapes(const std::vector<InputSignature>& inputs,
                                               const std::string& data_set_dir);

}  // namespace kiln::importer

#endif  // KILN_COMPILER_CORE_IMPORTER_ONNX_INPUT_SHAPES_H_
