// `kiln check`: compile a model directory's model.onnx, run every test_data_set_* through the
// compiled artifact, and compare each output with the stored reference (check_data.h).
#ifndef KILN_CLIENT_CHECK_H_
#define KILN_CLIENT_CHECK_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/check_data.h"
#include "compiler_core/importer/onnx/input_shapes.h"
#include "compiler_core/ir/graph/tensor.h"
#include "compiler_core/pipeline/compile.h"
#include "compiler_core/runtime/artifact.h"

namespace kiln::client {

struct CheckReport {
  pipeline::CompileResult compile;  // graph hash, target, timings (artifact included); the
                                    // first compile when there are several
  /// The input shapes of each compile, when they were given or taken from the data sets
  /// (FormatInputShapes, then the compile's time and graph hash); several when the data sets
  /// of a symbolic model differ in shape.
  std::vector<std::string> input_shapes;
  /// A model with dynamic input dims checked without --input-shape: "one artifact for all N
  /// data sets, symbols ... (compiled in ...)" when its symbolic compile ran every data set,
  /// or why it could not (then it was compiled once per input shapes); empty otherwise.
  std::string symbolic;
  /// Data sets not run because their input shapes differ from the given --input-shape, each
  /// "test_data_set_N: input shapes ... differ from the compiled ...".
  std::vector<std::string> skipped;
  std::vector<OutputComparison> outputs;
  bool all_pass = false;
};

/// The --json object of a local compile (`kiln compile`, `kiln check`): graph_hash,
/// target_key, compiler_version, options_hash and tuning_digest (the manifest's), kernels (of
/// every shape profile), compile_ms and its stages import_ms, passes_ms, lower_ms, codegen_ms.
google::protobuf::Struct LocalCompileJson(const pipeline::CompileResult& result);

/// `kiln check DIR --json` of a local check: one line, CheckJson's object (model_dir, pass,
/// outputs, skipped) with compile (LocalCompileJson of the first compile) and input_shapes (per
/// compile of a symbolic model, as CheckReport::input_shapes).
std::string CheckReportJson(const CheckReport& report, const std::string& dir);

/// `device` below: where the artifact runs, "cpu" or "cuda:N" (runtime::cuda::LoadRunner).

/// One compile of a check and the data sets (directories) it checks.
struct CheckCompile {
  importer::ShapeProfiles shape_profiles;  // empty: the model's own (static) shapes
  std::vector<std::string> data_sets;
  /// Shapes were given (--input-shape): data sets of other shapes are skipped, not failed.
  bool skip_other_shapes = false;
};

/// The compiles a check of `dir` needs: with `given` shape profiles one (an artifact with a
/// variant per profile), for all data sets; else one
/// per distinct set of input shapes among the data sets for a model with symbolic input dims
/// (importer::DataSetInputShapes), or one for a static model. Errors: kNotFound (no
/// model.onnx, no data set), those of reading the model and the data sets' inputs.
/// Inputs named in `constants` (compiled with --constant-input) take no shape from the data
/// sets.
/// The one compile of every data set of `compiles` (PlanCheckCompiles' result with no given
/// shape profiles) when the model has dynamic input dims, for a compile with symbolic dims;
/// nullopt for a static model or when shapes were given.
std::optional<CheckCompile> SymbolicCheckCompile(const std::vector<CheckCompile>& compiles,
                                                 const importer::ShapeProfiles& given);

absl::StatusOr<std::vector<CheckCompile>> PlanCheckCompiles(
    const std::string& dir, const importer::ShapeProfiles& given,
    const std::map<std::string, std::string>& constants = {});

/// Checks `compile`'s data sets against `artifact` (compiled for it). With skip_other_shapes, a
/// data set whose input shapes match none of the artifact's (its shape profiles' or its own) is
/// appended to `skipped` ("<data set>: input shapes ... differ from the compiled ...") instead
/// of run; kInvalidArgument when every one differs.
absl::StatusOr<std::vector<OutputComparison>> CheckCompiled(const CheckCompile& compile,
                                                            const runtime::Artifact& artifact,
                                                            std::vector<std::string>* skipped,
                                                            const Tolerance& tolerance = {},
                                                            const std::string& device = "cpu");

/// Compiles `dir`/model.onnx with `options` and checks every `dir`/test_data_set_*/ (inputs
/// input_N.pb in graph input order, references output_N.pb in graph output order). A model
/// with dynamic input dims and no `options.shape_profiles` is compiled once with symbolic dims
/// and every data set runs through that one artifact (CheckReport::symbolic says so); when its
/// ops do not all handle symbolic dims yet (kUnimplemented), it is compiled once per distinct
/// set of input shapes among the data sets, each data set checked by its own compile. With
/// `options.shape_profiles` (one artifact, a variant per profile) the data sets of other shapes
/// are skipped (CheckReport::skipped); kInvalidArgument when none has compiled shapes.
/// Errors: compile errors; kNotFound if there is no model.onnx or no data set; kInvalidArgument
/// if a data set's inputs do not match the model.
absl::StatusOr<CheckReport> CheckModelDir(const std::string& dir,
                                          const pipeline::CompileOptions& options,
                                          const Tolerance& tolerance = {},
                                          const std::string& device = "cpu");

}  // namespace kiln::client

#endif  // KILN_CLIENT_CHECK_H_
