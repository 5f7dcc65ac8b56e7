// Model-directory checking: compile a model directory's model.onnx, then check the artifact
// against its test data sets (check_data.h).
#include "client/check.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "compiler_core/importer/onnx/input_shapes.h"
#include "compiler_core/runtime/manifest_check.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::client {

namespace fs = std::filesystem;

google::protobuf::Struct LocalCompileJson(const pipeline::CompileResult& result) {
  const kiln::v1::Manifest& m = result.artifact.manifest;
  google::protobuf::Struct json;
  SetString(json, "graph_hash", result.graph_hash);
  SetString(json, "target_key", m.target_key());
  SetString(json, "compiler_version", m.compiler_version());
  SetString(json, "options_hash", m.options_hash());
  SetString(json, "tuning_digest", m.tuning_digest());
  int kernels = m.kernels_size();
  for (const kiln::v1::Manifest& p : m.profiles()) kernels += p.kernels_size();
  SetNumber(json, "kernels", kernels);
  const pipeline::CompileTimings& t = result.timings;
  SetNumber(json, "compile_ms", t.total_ms);
  SetNumber(json, "import_ms", t.import_ms);
  SetNumber(json, "passes_ms", t.passes_ms);
  SetNumber(json, "lower_ms", t.lower_ms);
  SetNumber(json, "codegen_ms", t.codegen_ms);
  return json;
}

std::string CheckReportJson(const CheckReport& report, const std::string& dir) {
  google::protobuf::Struct json = CheckJson(dir, report.outputs, report.skipped, report.all_pass);
  SetObject(json, "compile", LocalCompileJson(report.compile));
  SetStrings(json, "input_shapes", report.input_shapes);
  if (!report.symbolic.empty()) SetString(json, "symbolic", report.symbolic);
  return ToJson(json);
}

absl::StatusOr<std::vector<CheckCompile>> PlanCheckCompiles(
    const std::string& dir, const importer::ShapeProfiles& given,
    const std::map<std::string, std::string>& constants) {
  const fs::path model = fs::path(dir) / "model.onnx";
  std::error_code ec;
  if (!fs::exists(model, ec)) {
    return absl::NotFoundError(absl::StrCat("no model.onnx in '", dir, "'"));
  }
  std::vector<fs::path> data_sets = DataSets(dir);
  if (data_sets.empty()) {
    return absl::NotFoundError(absl::StrCat("no test_data_set_* directory in '", dir, "'"));
  }
  std::map<importer::ShapeProfiles, std::vector<std::string>> groups;
  if (given.empty()) {
    KILN_ASSIGN_OR_RETURN(std::vector<importer::InputSignature> inputs,
                          importer::ReadInputSignaturesFile(model.string()));
    // Empty shapes for a static model: one group.
    for (const fs::path& ds : data_sets) {
      KILN_ASSIGN_OR_RETURN(importer::InputShapes shapes,
                            importer::DataSetInputShapes(inputs, ds.string()));
      for (const auto& [name, tensor] : constants) shapes.erase(name);  // compiled as constants
      groups[shapes.empty() ? importer::ShapeProfiles{} : importer::ShapeProfiles{shapes}]
          .push_back(ds.string());
    }
  } else {
    // Sequence inputs the given shapes leave out take their element shapes from each data set
    // (a single given profile; with several, the elements must be given too).
    KILN_ASSIGN_OR_RETURN(std::vector<importer::InputSignature> inputs,
                          importer::ReadInputSignaturesFile(model.string()));
    std::set<std::string> sequences;
    for (const importer::InputSignature& in : inputs) {
      if (in.sequence && given.size() == 1 &&
          !given[0].count(importer::SequenceElementName(in.name, 0))) {
        sequences.insert(in.name);
      }
    }
    for (const fs::path& ds : data_sets) {
      importer::ShapeProfiles profiles = given;
      if (!sequences.empty()) {
        KILN_ASSIGN_OR_RETURN(importer::InputShapes shapes,
                              importer::DataSetInputShapes(inputs, ds.string()));
        for (const auto& [name, dims] : shapes) {
          auto element = importer::ParseSequenceElementName(name);
          if (element && sequences.count(element->first)) profiles[0][name] = dims;
        }
      }
      groups[profiles].push_back(ds.string());
    }
  }
  std::vector<CheckCompile> compiles;
  for (auto& [shapes, group] : groups) {
    compiles.push_back({shapes, std::move(group), /*skip_other_shapes=*/!given.empty()});
  }
  return compiles;
}

absl::StatusOr<std::vector<OutputComparison>> CheckCompiled(const CheckCompile& compile,
                                                            const runtime::Artifact& artifact,
                                                            std::vector<std::string>* skipped,
                                                            const Tolerance& tolerance,
                                                            const std::string& device) {
  std::vector<fs::path> matching;
  // An artifact with bounded dims runs every data set; one outside the bounds fails with the
  // runtime's error.
  if (!compile.skip_other_shapes || artifact.manifest.bound_symbols_size() > 0) {
    matching.assign(compile.data_sets.begin(), compile.data_sets.end());
    return CheckDataSets(matching, artifact, tolerance, device);
  }
  const kiln::v1::Manifest& m = artifact.manifest;
  // The input shapes of each compiled variant: "x=1,3 y=2" per profile (or for the model).
  std::vector<std::string> compiled_shapes;
  auto shapes_of = [](const kiln::v1::Manifest& variant) {
    std::vector<std::string> shapes;
    for (const auto& in : variant.inputs()) {
      shapes.push_back(absl::StrCat(in.name(), "=", absl::StrJoin(in.shape(), ",")));
    }
    return absl::StrJoin(shapes, " ");
  };
  if (m.profiles_size() == 0) compiled_shapes.push_back(shapes_of(m));
  for (const kiln::v1::Manifest& profile : m.profiles()) {
    compiled_shapes.push_back(shapes_of(profile));
  }
  std::vector<std::string> others;
  for (const std::string& dir : compile.data_sets) {
    const fs::path ds(dir);
    std::vector<std::string> shapes;
    KILN_ASSIGN_OR_RETURN(std::vector<importer::NamedTensor> tensors, ReadDataSetInputs(ds, m));
    // The files as CheckDataSets feeds them.
    std::vector<importer::NamedTensor*> feeds = FeedsOf(m, tensors);
    for (int i = 0; i < m.inputs_size(); ++i) {
      if (feeds[i] == nullptr) continue;
      // As the runtime takes the file's shape: a one-element tensor for a scalar is the scalar.
      const std::vector<int64_t> declared(m.inputs(i).shape().begin(), m.inputs(i).shape().end());
      shapes.push_back(absl::StrCat(
          m.inputs(i).name(), "=",
          absl::StrJoin(runtime::FedShape(feeds[i]->tensor.type.shape, declared), ",")));
    }
    const std::string text = absl::StrJoin(shapes, " ");
    if (std::find(compiled_shapes.begin(), compiled_shapes.end(), text) !=
        compiled_shapes.end()) {
      matching.push_back(ds);
    } else {
      others.push_back(absl::StrCat(ds.filename().string(), ": input shapes ", text,
                                    " differ from the compiled ",
                                    absl::StrJoin(compiled_shapes, " | ")));
    }
  }
  if (matching.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("no test data set has the input shapes compiled (",
                     absl::StrJoin(compiled_shapes, " | "), "); ", absl::StrJoin(others, "; ")));
  }
  if (skipped != nullptr) skipped->insert(skipped->end(), others.begin(), others.end());
  return CheckDataSets(matching, artifact, tolerance, device);
}

std::optional<CheckCompile> SymbolicCheckCompile(const std::vector<CheckCompile>& compiles,
                                                 const importer::ShapeProfiles& given) {
  if (!given.empty() || compiles.empty() ||
      (compiles.size() == 1 && compiles.front().shape_profiles.empty())) {
    return std::nullopt;
  }
  CheckCompile all;
  for (const CheckCompile& c : compiles) {
    all.data_sets.insert(all.data_sets.end(), c.data_sets.begin(), c.data_sets.end());
  }
  return all;
}

absl::StatusOr<CheckReport> CheckModelDir(const std::string& dir,
                                          const pipeline::CompileOptions& options,
                                          const Tolerance& tolerance, const std::string& device) {
  KILN_ASSIGN_OR_RETURN(std::vector<CheckCompile> compiles,
                        PlanCheckCompiles(dir, options.shape_profiles, options.constant_inputs));
  const std::string model = (fs::path(dir) / "model.onnx").string();
  CheckReport report;
  if (std::optional<CheckCompile> all = SymbolicCheckCompile(compiles, options.shape_profiles)) {
    // Symbolic dims: one compile, every data set through that one artifact. A model whose ops
    // do not all handle symbolic dims yet is compiled once per input shapes instead, saying why.
    absl::StatusOr<pipeline::CompileResult> compiled = pipeline::CompileModelFile(model, options);
    if (compiled.ok()) {
      std::vector<std::string> symbols;
      for (const kiln::v1::SymbolSpec& s : compiled->artifact.manifest.symbols()) {
        symbols.push_back(runtime::SymbolText(s));
      }
      KILN_ASSIGN_OR_RETURN(report.outputs, CheckCompiled(*all, compiled->artifact,
                                                          &report.skipped, tolerance, device));
      report.symbolic = absl::StrFormat(
          "one artifact for all %d data sets, symbols %s (compiled in %.0f ms, graph %s)",
          static_cast<int>(all->data_sets.size()), absl::StrJoin(symbols, ", "),
          compiled->timings.total_ms, compiled->graph_hash.substr(0, 16));
      report.compile = std::move(*compiled);
      report.all_pass = true;
      for (const OutputComparison& c : report.outputs) report.all_pass = report.all_pass && c.pass;
      return report;
    }
    if (compiled.status().code() != absl::StatusCode::kUnimplemented) return compiled.status();
    report.symbolic = absl::StrCat("symbolic dims not supported yet (",
                                   compiled.status().message(),
                                   "): one compile per input shapes");
  }
  for (const CheckCompile& compile : compiles) {
    pipeline::CompileOptions compile_options = options;
    compile_options.shape_profiles = compile.shape_profiles;
    KILN_ASSIGN_OR_RETURN(pipeline::CompileResult compiled,
                          pipeline::CompileModelFile(model, compile_options));
    KILN_ASSIGN_OR_RETURN(std::vector<OutputComparison> outputs,
                          CheckCompiled(compile, compiled.artifact, &report.skipped, tolerance,
                                        device));
    report.outputs.insert(report.outputs.end(), outputs.begin(), outputs.end());
    if (!compile.shape_profiles.empty()) {
      report.input_shapes.push_back(absl::StrFormat(
          "%s (compiled in %.0f ms, graph %s)",
          importer::FormatProfiles(compile.shape_profiles, options.bounded_min_shapes),
          compiled.timings.total_ms, compiled.graph_hash.substr(0, 16)));
    }
    if (&compile == &compiles.front()) report.compile = std::move(compiled);
  }
  report.all_pass = true;
  for (const OutputComparison& c : report.outputs) report.all_pass = report.all_pass && c.pass;
  return report;
}

}  // namespace kiln::client
