// Importing models with symbolic dims (ImportOptions::symbolic_dims): every "symbolic" row of
// ../shared/models/MANIFEST.tsv imports once, with its outputs' dims as expressions over the
// inputs' dim_params, matching the manifest's declared output shapes; at each of its data
// sets, the symbols bound from the inputs' shapes give exactly the reference outputs' shapes.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "compiler_core/importer/onnx/importer.h"
#include "compiler_core/importer/onnx/tensor_file.h"
#include "compiler_core/ir/sym/bind.h"
#include "compiler_core/ir/graph/printer.h"
#include "gtest/gtest.h"

namespace kiln::importer {
namespace {

constexpr char kModels[] = "../shared/models";

// The symbolic models whose graphs still reach an op without a symbolic shape rule, and the
// op they stop at; each must fail with kUnimplemented naming it (and is expected to leave this
// list as rules are added).
const std::map<std::string, std::string> kPending = {};

struct ManifestRow {
  std::string name;
  std::string outputs;  // "logits:float32[1,seq,1024] present_key_0:float32[1,2,total,32]"
};

std::vector<ManifestRow> SymbolicRows() {
  std::vector<ManifestRow> rows;
  std::ifstream in(std::string(kModels) + "/MANIFEST.tsv");
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> cols = absl::StrSplit(line, '\t');
    if (cols.size() > 7 && cols[7] == "symbolic") rows.push_back({cols[0], cols[4]});
  }
  return rows;
}

// name -> declared dims ("1", "seq", ...), from the manifest's output_shapes column.
std::map<std::string, std::vector<std::string>> DeclaredOutputs(const std::string& text) {
  std::map<std::string, std::vector<std::string>> out;
  for (absl::string_view entry : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    std::vector<std::string> parts = absl::StrSplit(entry, absl::MaxSplits(':', 1));
    if (parts.size() != 2) continue;
    absl::string_view type = parts[1];
    size_t open = type.find('[');
    absl::string_view dims = type.substr(open + 1);
    absl::ConsumeSuffix(&dims, "]");
    out[parts[0]] = absl::StrSplit(dims, ',', absl::SkipEmpty());
  }
  return out;
}

// Every test_data_set_K of `model_dir`: the graph's input dims bound to the shapes of
// input_N.pb, each output's dims evaluated, equal to output_N.pb's shape.
void CheckDataSets(const graph::Graph& g, const std::string& model_dir) {
  std::vector<sym::DeclaredInput> declared;
  for (const graph::Value* in : g.inputs()) declared.push_back({in->name(), in->type().dims()});
  int sets = 0;
  for (int k = 0;; ++k) {
    const std::string dir = absl::StrCat(model_dir, "/test_data_set_", k);
    if (!std::filesystem::exists(dir)) break;
    SCOPED_TRACE(dir);
    ++sets;
    std::vector<std::vector<int64_t>> fed;
    for (size_t i = 0; i < declared.size(); ++i) {
      absl::StatusOr<NamedTensor> t = ReadTensorFile(absl::StrCat(dir, "/input_", i, ".pb"));
      ASSERT_TRUE(t.ok()) << t.status();
      fed.push_back(t->tensor.type.shape);
    }
    absl::StatusOr<std::map<std::string, int64_t>> values = sym::BindSymbols(declared, fed);
    ASSERT_TRUE(values.ok()) << values.status();
    for (size_t o = 0; o < g.outputs().size(); ++o) {
      absl::StatusOr<NamedTensor> ref = ReadTensorFile(absl::StrCat(dir, "/output_", o, ".pb"));
      ASSERT_TRUE(ref.ok()) << ref.status();
      const TensorType& type = g.outputs()[o]->type();
      std::vector<int64_t> shape;
      for (const sym::Expr& d : type.dims()) {
        absl::StatusOr<int64_t> v = sym::Evaluate(d, sym::ValuesOf(*values));
        ASSERT_TRUE(v.ok()) << v.status();
        shape.push_back(*v);
      }
      EXPECT_EQ(shape, ref->tensor.type.shape) << "output " << o << " " << type.ToString();
    }
  }
  EXPECT_GT(sets, 0);
}

TEST(SymbolicImportTest, EverySymbolicModelImportsOnceWithItsOutputShapes) {
  if (!std::filesystem::exists(std::string(kModels) + "/MANIFEST.tsv")) {
    if (std::getenv("KILN_REQUIRE_SHARED") != nullptr) FAIL() << kModels << " is required";
    GTEST_SKIP() << kModels << " is not available";
  }
  std::vector<ManifestRow> rows = SymbolicRows();
  ASSERT_FALSE(rows.empty());
  for (const ManifestRow& row : rows) {
    SCOPED_TRACE(row.name);
    ImportOptions options;
    options.symbolic_dims = true;
    absl::StatusOr<std::unique_ptr<graph::Graph>> g =
        ImportOnnxFile(absl::StrCat(kModels, "/", row.name, "/model.onnx"), options);
    if (auto pending = kPending.find(row.name); pending != kPending.end()) {
      ASSERT_FALSE(g.ok()) << row.name << " imports now: take it off kPending";
      EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented) << g.status();
      EXPECT_NE(g.status().message().find(absl::StrCat("(", pending->second, ")")),
                std::string::npos)
          << g.status();
      continue;
    }
    ASSERT_TRUE(g.ok()) << g.status();
    std::set<std::string> input_symbols;
    for (const graph::Value* in : (*g)->inputs()) {
      for (const sym::Expr& d : in->type().dims()) {
        for (const sym::Symbol& s : d.Symbols()) input_symbols.insert(s.name);
      }
    }
    EXPECT_FALSE(input_symbols.empty());
    std::map<std::string, std::vector<std::string>> declared = DeclaredOutputs(row.outputs);
    ASSERT_EQ(declared.size(), (*g)->outputs().size());
    CheckDataSets(**g, absl::StrCat(kModels, "/", row.name));
    for (const graph::Value* out : (*g)->outputs()) {
      SCOPED_TRACE(out->name() + " " + out->type().ToString());
      auto it = declared.find(out->name());
      ASSERT_NE(it, declared.end());
      const std::vector<std::string>& dims = it->second;
      ASSERT_EQ(static_cast<int64_t>(dims.size()), out->type().rank());
      for (size_t i = 0; i < dims.size(); ++i) {
        const sym::Expr d = out->type().dim(static_cast<int64_t>(i));
        int64_t value = 0;
        if (absl::SimpleAtoi(dims[i], &value)) {
          EXPECT_EQ(d, sym::Expr(value)) << "dim " << i;
        } else if (input_symbols.count(dims[i])) {
          // A dim the inputs name is that symbol itself.
          EXPECT_EQ(d.ToString(), dims[i]) << "dim " << i;
        } else {
          // An output-only name ("total" = past + seq) is an expression over the inputs'.
          EXPECT_FALSE(d.is_constant()) << "dim " << i;
          for (const sym::Symbol& s : d.Symbols()) EXPECT_TRUE(input_symbols.count(s.name));
        }
      }
    }
  }
}

}  // namespace
}  // namespace kiln::importer
