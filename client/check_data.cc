// Checking an artifact against a model directory's test data sets (no compiler: see
// check_data.h).
#include "client/check_data.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "compiler_core/importer/onnx/input_shapes.h"
#include "compiler_core/importer/onnx/tensor_file.h"
#include "compiler_core/runtime/cuda/load_runner.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::client {

namespace fs = std::filesystem;

Tolerance ToleranceFor(const std::string& precision) {
  if (precision == "tf32" || precision == "fp16") return Tolerance{1e-2, 1e-2};
  if (precision == "bf16") return Tolerance{5e-2, 5e-2};
  return Tolerance{};
}

std::string ToleranceNote(const std::string& precision) {
  if (precision != "tf32" && precision != "fp16" && precision != "bf16") return "";
  const Tolerance t = ToleranceFor(precision);
  return absl::StrFormat("precision %s: outputs pass when |got - expected| <= %g + %g |expected|\n",
                         precision, t.atol, t.rtol);
}

std::string FormatComparison(const OutputComparison& c) {
  return absl::StrFormat("%s %s/%s: max_abs_err=%.3g max_rel_err=%.3g%s", c.pass ? "PASS" : "FAIL",
                         c.data_set, c.name, c.max_abs_error, c.max_rel_error,
                         c.error.empty() ? "" : " (" + c.error + ")");
}

google::protobuf::Struct ComparisonJson(const OutputComparison& c) {
  google::protobuf::Struct json;
  SetString(json, "data_set", c.data_set);
  SetString(json, "name", c.name);
  SetBool(json, "pass", c.pass);
  SetNumber(json, "max_abs_error", c.max_abs_error);
  SetNumber(json, "max_rel_error", c.max_rel_error);
  SetString(json, "error", c.error);
  return json;
}

google::protobuf::Struct CheckJson(const std::string& dir,
                                   const std::vector<OutputComparison>& outputs,
                                   const std::vector<std::string>& skipped, bool pass) {
  google::protobuf::Struct json;
  SetString(json, "model_dir", dir);
  SetBool(json, "pass", pass);
  std::vector<google::protobuf::Struct> compared;
  for (const OutputComparison& c : outputs) compared.push_back(ComparisonJson(c));
  SetList(json, "outputs", std::move(compared));
  SetStrings(json, "skipped", skipped);
  return json;
}

OutputComparison CompareTensors(const Tensor& got, const Tensor& expected,
                                const Tolerance& tolerance) {
  OutputComparison c;
  if (got.type.dtype != expected.type.dtype) {
    c.error = absl::StrCat("dtype mismatch: got ", DTypeName(got.type.dtype), ", expected ",
                           DTypeName(expected.type.dtype));
    return c;
  }
  if (got.type.shape != expected.type.shape) {
    c.error = absl::StrCat("shape mismatch: got ", got.type.ToString(), ", expected ",
                           expected.type.ToString());
    return c;
  }
  bool exact = !IsFloat(got.type.dtype);
  int64_t bad = 0, first_bad = -1;
  for (int64_t i = 0; i < got.type.NumElements(); ++i) {
    double a = got.GetAsDouble(i), b = expected.GetAsDouble(i);
    if (exact) {
      a = static_cast<double>(got.GetAsInt64(i));
      b = static_cast<double>(expected.GetAsInt64(i));
    }
    if (std::isnan(a) && std::isnan(b)) continue;
    double diff = std::abs(a - b);
    if (std::isinf(a) && std::isinf(b) && (a > 0) == (b > 0)) diff = 0;
    if (std::isnan(diff)) diff = INFINITY;
    c.max_abs_error = std::max(c.max_abs_error, diff);
    if (b != 0) c.max_rel_error = std::max(c.max_rel_error, diff / std::abs(b));
    bool ok = exact ? diff == 0 : diff <= tolerance.atol + tolerance.rtol * std::abs(b);
    if (!ok) {
      if (first_bad < 0) first_bad = i;
      ++bad;
    }
  }
  c.pass = bad == 0;
  if (!c.pass) {
    c.error =
        absl::StrCat(bad, " of ", got.type.NumElements(),
                     " elements outside tolerance; first at flat index ", first_bad, ": got ",
                     got.GetAsDouble(first_bad), ", expected ", expected.GetAsDouble(first_bad));
  }
  return c;
}

namespace {

// input_N.pb / output_N.pb files of one data set, ordered by N.
std::vector<fs::path> NumberedFiles(const fs::path& dir, const std::string& prefix) {
  std::vector<std::pair<int, fs::path>> found;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || entry.path().extension() != ".pb") continue;
    std::string number = name.substr(prefix.size(), name.size() - prefix.size() - 3);
    if (number.empty() || number.find_first_not_of("0123456789") != std::string::npos) continue;
    found.push_back({std::stoi(number), entry.path()});
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> paths;
  for (auto& [n, p] : found) paths.push_back(p);
  return paths;
}

}  // namespace

std::vector<fs::path> DataSets(const fs::path& root) {
  std::vector<fs::path> data_sets;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0) {
      data_sets.push_back(entry.path());
    }
  }
  std::sort(data_sets.begin(), data_sets.end());
  return data_sets;
}

namespace {

// ONNX's test data stores bfloat16 tensors as uint16 bit patterns (numpy has no bfloat16): such
// a tensor is the bf16 tensor that `spec` declares.
void AdoptBFloat16(const kiln::v1::TensorSpec& spec, Tensor& t) {
  if (spec.dtype() == DTypeName(DType::kBFloat16) && t.type.dtype == DType::kUInt16) {
    t.type.dtype = DType::kBFloat16;
  }
}

// Every input_N.pb of data set `ds`, in N order.
absl::StatusOr<std::vector<importer::NamedTensor>> ReadInputFiles(const fs::path& ds) {
  std::vector<importer::NamedTensor> tensors;
  for (const fs::path& f : NumberedFiles(ds, "input_")) {
    KILN_ASSIGN_OR_RETURN(importer::NamedTensor t, importer::ReadTensorFile(f.string()));
    tensors.push_back(std::move(t));
  }
  return tensors;
}

// Whether `spec` is element k of a sequence graph input or output ("name[k]"): its k, or -1.
int64_t SequenceElement(const kiln::v1::TensorSpec& spec) {
  std::optional<std::pair<std::string, int64_t>> e =
      importer::ParseSequenceElementName(spec.name());
  return e ? e->second : -1;
}

bool HasSequences(const google::protobuf::RepeatedPtrField<kiln::v1::TensorSpec>& specs) {
  for (const kiln::v1::TensorSpec& spec : specs) {
    if (SequenceElement(spec) >= 0) return true;
  }
  return false;
}

// The data set's files read as `specs` (the manifest's inputs or outputs) lay them out: one
// file per graph input or output, a SequenceProto for a sequence (specs "name[0]".."name[L-1]"),
// a TensorProto otherwise; one tensor per spec, in spec order. Errors: a file that is missing
// or unreadable, or a sequence of another length than compiled.
absl::StatusOr<std::vector<importer::NamedTensor>> ReadFilesAs(
    const std::vector<fs::path>& files,
    const google::protobuf::RepeatedPtrField<kiln::v1::TensorSpec>& specs) {
  std::vector<importer::NamedTensor> out;
  size_t f = 0;
  for (int i = 0; i < specs.size(); ++i) {
    const int64_t k = SequenceElement(specs[i]);
    if (k > 0) continue;  // read with element 0
    if (f >= files.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("no data set file for '", specs[i].name(), "' (", files.size(), " files)"));
    }
    if (k < 0) {
      KILN_ASSIGN_OR_RETURN(importer::NamedTensor t, importer::ReadTensorFile(files[f++].string()));
      out.push_back(std::move(t));
      continue;
    }
    int64_t length = 1;
    while (i + length < specs.size() && SequenceElement(specs[i + length]) == length) ++length;
    KILN_ASSIGN_OR_RETURN(std::vector<importer::NamedTensor> elements,
                          importer::ReadSequenceFile(files[f].string()));
    if (static_cast<int64_t>(elements.size()) != length) {
      return absl::InvalidArgumentError(absl::StrCat(files[f].string(), ": a sequence of ",
                                                     elements.size(), " tensors, compiled for ",
                                                     length, " ('", specs[i].name(), "'...)"));
    }
    ++f;
    for (auto& e : elements) out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

// The input files of data set `ds` for `m`: with sequence inputs laid out as `m` has them
// (ReadFilesAs), else every input_N.pb (FeedsOf matches them to the inputs).
absl::StatusOr<std::vector<importer::NamedTensor>> ReadDataSetInputs(const fs::path& ds,
                                                                     const kiln::v1::Manifest& m) {
  if (HasSequences(m.inputs())) return ReadFilesAs(NumberedFiles(ds, "input_"), m.inputs());
  return ReadInputFiles(ds);
}

// The file tensor that feeds each of `m`'s inputs: by position when there is one file per
// input, else (inputs compiled as constants leave extra files) by tensor name; null where no
// file has the name.
std::vector<importer::NamedTensor*> FeedsOf(const kiln::v1::Manifest& m,
                                            std::vector<importer::NamedTensor>& files) {
  std::vector<importer::NamedTensor*> feeds;
  const bool by_name = static_cast<int>(files.size()) != m.inputs_size();
  for (int i = 0; i < m.inputs_size(); ++i) {
    if (!by_name) {
      feeds.push_back(&files[i]);
      continue;
    }
    auto it = std::find_if(files.begin(), files.end(), [&](const importer::NamedTensor& t) {
      return t.name == m.inputs(i).name();
    });
    feeds.push_back(it == files.end() ? nullptr : &*it);
  }
  return feeds;
}

namespace {

// The tensors of data set `ds` (read into `inputs`) that feed `m`'s inputs, in order.
absl::StatusOr<std::vector<const Tensor*>> FeedPointers(
    const fs::path& ds, const kiln::v1::Manifest& m, std::vector<importer::NamedTensor>& inputs) {
  std::vector<importer::NamedTensor*> feeds = FeedsOf(m, inputs);
  std::vector<const Tensor*> input_ptrs;
  for (int i = 0; i < m.inputs_size(); ++i) {
    const kiln::v1::TensorSpec& in = m.inputs(i);
    if (feeds[i] == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(ds.string(), ": no input file holds input '", in.name(), "' (",
                       inputs.size(), " input files for ", m.inputs_size(),
                       " inputs: the others were compiled as "
                       "constants, so the files are matched by tensor name)"));
    }
    AdoptBFloat16(in, feeds[i]->tensor);
    input_ptrs.push_back(&feeds[i]->tensor);
  }
  return input_ptrs;
}

}  // namespace

absl::StatusOr<std::vector<OutputComparison>> CheckDataSets(const std::vector<fs::path>& data_sets,
                                                            const runtime::Artifact& artifact,
                                                            const Tolerance& tolerance,
                                                            const std::string& device) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<runtime::ModelRunner> exe,
                        runtime::cuda::LoadRunner(artifact, device));
  const kiln::v1::Manifest& m = exe->manifest();
  std::vector<OutputComparison> comparisons;
  for (const fs::path& ds : data_sets) {
    KILN_ASSIGN_OR_RETURN(std::vector<importer::NamedTensor> inputs, ReadDataSetInputs(ds, m));
    std::vector<fs::path> output_files = NumberedFiles(ds, "output_");
    if (!HasSequences(m.inputs()) && static_cast<int>(inputs.size()) < m.inputs_size()) {
      return absl::InvalidArgumentError(absl::StrCat(ds.string(), ": has ", inputs.size(),
                                                     " input files, the model has ",
                                                     m.inputs_size(), " inputs"));
    }
    if (!HasSequences(m.outputs()) && static_cast<int>(output_files.size()) != m.outputs_size()) {
      return absl::InvalidArgumentError(absl::StrCat(ds.string(), ": has ", output_files.size(),
                                                     " output files, the model has ",
                                                     m.outputs_size(), " outputs"));
    }
    KILN_ASSIGN_OR_RETURN(std::vector<importer::NamedTensor> expected,
                          ReadFilesAs(output_files, m.outputs()));
    KILN_ASSIGN_OR_RETURN(std::vector<const Tensor*> input_ptrs, FeedPointers(ds, m, inputs));
    KILN_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, exe->Run(input_ptrs));
    for (int i = 0; i < m.outputs_size(); ++i) {
      AdoptBFloat16(m.outputs(i), expected[i].tensor);
      OutputComparison c = CompareTensors(outputs[i], expected[i].tensor, tolerance);
      c.data_set = ds.filename().string();
      c.name = m.outputs(i).name();
      comparisons.push_back(std::move(c));
    }
  }
  return comparisons;
}

absl::StatusOr<std::vector<OutputComparison>> CheckArtifact(const std::string& dir,
                                                            const runtime::Artifact& artifact,
                                                            const Tolerance& tolerance,
                                                            const std::string& device) {
  std::vector<fs::path> data_sets = DataSets(dir);
  if (data_sets.empty()) {
    return absl::NotFoundError(absl::StrCat("no test_data_set_* directory in '", dir, "'"));
  }
  return CheckDataSets(data_sets, artifact, tolerance, device);
}

}  // namespace kiln::client
