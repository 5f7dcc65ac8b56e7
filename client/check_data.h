// Checking an artifact against a model directory's test data sets: test_data_set_*/input_N.pb
// in, output_N.pb references compared within a tolerance. No compiler (no LLVM): the device
// runner (kiln-device) links this alone.
#ifndef KILN_CLIENT_CHECK_DATA_H_
#define KILN_CLIENT_CHECK_DATA_H_

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/json.h"
#include "compiler_core/importer/onnx/tensor_file.h"
#include "compiler_core/ir/graph/tensor.h"
#include "compiler_core/runtime/artifact.h"

namespace kiln::client {

/// Tolerance of the comparison: floating point elements pass when
/// |got - expected| <= atol + rtol * |expected| (NaN matches NaN); integers and bools exactly.
struct Tolerance {
  double atol = 1e-4;
  double rtol = 1e-3;
};

/// The tolerance `kiln check` uses for a --precision: fp32 the default above; tf32 and fp16
/// (10 mantissa bits per input) 1e-2 + 1e-2 |expected|; bf16 (7 bits) 5e-2 + 5e-2 |expected|.
Tolerance ToleranceFor(const std::string& precision);

/// The line `kiln check` prints for a tensor-core precision ("precision fp16: outputs pass when
/// |got - expected| <= 0.01 + 0.01 |expected|\n"); empty for fp32 and anything else.
std::string ToleranceNote(const std::string& precision);

/// Result of comparing one output tensor.
struct OutputComparison {
  std::string data_set;  // e.g. "test_data_set_0"
  std::string name;      // output name
  bool pass = false;
  double max_abs_error = 0;
  double max_rel_error = 0;  // max over elements of |got - expected| / |expected| (|expected|>0)
  std::string error;         // why it failed beyond tolerance (shape or dtype mismatch, ...)
};

/// One line for a report: "PASS|FAIL <data set>/<output>: max_abs_err=... max_rel_err=...".
std::string FormatComparison(const OutputComparison& c);

/// The --json form of one comparison: data_set, name, pass, max_abs_error, max_rel_error,
/// error ("" when it is within tolerance or only beyond it).
google::protobuf::Struct ComparisonJson(const OutputComparison& c);

/// The --json object of a check of the model directory `dir` (`kiln check`, here or through
/// kilnd): model_dir, pass (`pass`, the check's verdict), outputs (ComparisonJson of each) and
/// skipped (the data sets not run, each "<data set>: why").
google::protobuf::Struct CheckJson(const std::string& dir,
                                   const std::vector<OutputComparison>& outputs,
                                   const std::vector<std::string>& skipped, bool pass);

/// Compares `got` with `expected`: shapes and dtypes must be equal exactly.
OutputComparison CompareTensors(const Tensor& got, const Tensor& expected,
                                const Tolerance& tolerance);

/// `device` below: where the artifact runs, "cpu" or "cuda:N" (runtime::cuda::LoadRunner).

/// Runs every `dir`/test_data_set_*/ through `artifact` and compares each output with its
/// reference (see CheckModelDir for the layout). Errors: kNotFound if there is no data set;
/// kInvalidArgument if a data set's inputs do not match the artifact; load/run errors.
absl::StatusOr<std::vector<OutputComparison>> CheckArtifact(const std::string& dir,
                                                            const runtime::Artifact& artifact,
                                                            const Tolerance& tolerance = {},
                                                            const std::string& device = "cpu");

/// The test_data_set_* directories under `root`, sorted.
std::vector<std::filesystem::path> DataSets(const std::filesystem::path& root);

/// The input files of data set `ds` for `m`: with sequence inputs laid out as `m` has them,
/// else every input_N.pb (FeedsOf matches them to the inputs). Errors: unreadable files.
absl::StatusOr<std::vector<importer::NamedTensor>> ReadDataSetInputs(
    const std::filesystem::path& ds, const kiln::v1::Manifest& m);

/// The file tensor that feeds each of `m`'s inputs: by position when there is one file per
/// input, else by tensor name; null where no file has the name.
std::vector<importer::NamedTensor*> FeedsOf(const kiln::v1::Manifest& m,
                                            std::vector<importer::NamedTensor>& files);

/// Runs `data_sets` through `artifact` on `device` and compares every output with its
/// reference. Errors: as CheckArtifact's.
absl::StatusOr<std::vector<OutputComparison>> CheckDataSets(
    const std::vector<std::filesystem::path>& data_sets, const runtime::Artifact& artifact,
    const Tolerance& tolerance, const std::string& device);

}  // namespace kiln::client

#endif  // KILN_CLIENT_CHECK_DATA_H_
