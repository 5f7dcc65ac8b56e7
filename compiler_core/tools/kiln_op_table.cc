// kiln-op-table: prints docs/operators.md, the table of the ONNX ops Kiln imports, to stdout.
//
// What is generated and what is written by hand:
// - the graph-IR ops, their fusion classes and arities come from ops.def;
// - which ONNX ops are accepted is asked of the importer itself: a one-node model of each op
//   name that ONNX 1.x registers (and of each ops.def name) goes through CheckOpsSupported;
// - the opsets Kiln accepts are asked of CheckOpsets (a model importing each version);
// - each op's versions come from ONNX's schema registry (the library Kiln links), an op counting
//   as accepted at opset v when ONNX registers a non-deprecated schema for it at v (ONNX's
//   checker, which the importer runs, refuses the others);
// - each graph-IR op's attributes, kinds and defaults come from op_attrs.def; the tool fails
//   when an attribute that ONNX declares for the op (opsets 7 up) is missing there or has another
//   kind, or when its default or whether it is required differs from ONNX's at the newest opset;
// - how an op is imported when it is not a node of its own kind, and its known limits, are the
//   two tables below (kImportedAs, kLimits), written from the importer's code and its error
//   messages. The tool fails when one names an op the importer does not accept, or when an
//   accepted op outside ops.def is missing from kImportedAs.
//
//   kiln-op-table > docs/operators.md        (scripts/gen-docs; ctest docs_operators_table)
#include <algorithm>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/importer/onnx/model_checks.h"
#include "compiler_core/importer/onnx/training_builders.h"
#include "compiler_core/ir/graph/op.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "onnx/defs/schema.h"

namespace kiln {
namespace {

struct DefOp {
  graph::OpKind kind;
  const char* section;
};

// ops.def, in its order, with the section each entry is in.
const std::vector<DefOp>& DefOps() {
  static const std::vector<DefOp> ops = {
#define KILN_OP(kind, name, fusion, min_in, max_in, n_out, sym) {graph::OpKind::kind, "core"},
#define KILN_TENSOR_OP(kind, name, fusion, min_in, max_in, n_out, sym) {graph::OpKind::kind, "tensor"},
#define KILN_NN_OP(kind, name, fusion, min_in, max_in, n_out, sym) {graph::OpKind::kind, "nn"},
#include "compiler_core/ir/graph/ops.def"
#undef KILN_NN_OP
#undef KILN_TENSOR_OP
#undef KILN_OP
  };
  return ops;
}

// How an ONNX op is imported when the graph does not get a node of the op's own kind
// (importer builders; ops.def comments). Required for every accepted op outside ops.def.
const std::map<std::string, std::string>& ImportedAs() {
  static const std::map<std::string, std::string> m = {
      {"Constant", "a graph constant (no node)"},
      {"Dropout", "`Identity`; the mask output a constant of ones"},
      {"CastLike", "`Cast`"},
      {"Scatter", "`ScatterElements` (composite_builders.cc)"},
      {"MaxUnpool", "`ScatterElements` into zeros (composite_builders.cc)"},
      {"Shrink", "`Where` over comparisons (composite_builders.cc)"},
      {"ReverseSequence", "`GatherElements` with computed indices (composite_builders.cc)"},
      {"HannWindow", "a constant (signal_builders.cc)"},
      {"HammingWindow", "a constant (signal_builders.cc)"},
      {"BlackmanWindow", "a constant (signal_builders.cc)"},
      {"DFT", "`MatMul`s with constant DFT matrices (signal_builders.cc)"},
      {"STFT", "`MatMul`s with constant DFT matrices (signal_builders.cc)"},
      {"MelWeightMatrix", "elementwise ops over its inputs (signal_builders.cc)"},
      {"SoftmaxCrossEntropyLoss", "`LogSoftmax` + `NegativeLogLikelihoodLoss`"},
      {"Resize",
       "per-axis `Gather`s and weighted sums with constant tables; `ResizeTap` when the scales "
       "arrive at run time (resize_builders.cc)"},
      {"Upsample", "as Resize (resize_builders.cc)"},
      {"RNN", "unrolled over the sequence into `MatMul` and elementwise ops (rnn_builders.cc)"},
      {"GRU", "unrolled over the sequence into `MatMul` and elementwise ops (rnn_builders.cc)"},
      {"LSTM", "unrolled over the sequence into `MatMul` and elementwise ops (rnn_builders.cc)"},
      // quant_builders.cc, qdq_fusion.cc
      {"QuantizeLinear", "f32 arithmetic: round half to even, saturate (quant_builders.cc)"},
      {"DequantizeLinear", "f32 arithmetic `(x - zero_point) * scale` (quant_builders.cc)"},
      {"DynamicQuantizeLinear", "reductions and f32 arithmetic, u8 result (quant_builders.cc)"},
      {"MatMulInteger", "an i32 `MatMul` of the zero-point-shifted operands (quant_builders.cc)"},
      {"QLinearMatMul", "MatMulInteger requantized in f32 (quant_builders.cc)"},
      {"ConvInteger", "an i32 `Conv` of the zero-point-shifted operands (quant_builders.cc)"},
      {"QLinearConv",
       "ConvInteger requantized in f32; DequantizeLinear → Conv [→ Relu] → QuantizeLinear "
       "chains are rewritten into it first (qdq_fusion.cc)"},
      // training_builders.cc
      {"Adagrad", "elementwise ops (training_builders.cc)"},
      {"Momentum", "elementwise ops (training_builders.cc)"},
      {"Adam", "elementwise ops (training_builders.cc)"},
      // sequence_builders.cc
      {"SequenceEmpty", "a list of values at import (sequence_builders.cc)"},
      {"SequenceConstruct", "a list of values at import (sequence_builders.cc)"},
      {"SequenceInsert", "a list operation at import (sequence_builders.cc)"},
      {"SequenceAt", "a list operation at import (sequence_builders.cc)"},
      {"SequenceErase", "a list operation at import (sequence_builders.cc)"},
      {"SequenceLength", "a constant (sequence_builders.cc)"},
      {"ConcatFromSequence", "`Concat` of the elements (sequence_builders.cc)"},
      {"SplitToSequence", "`Slice`s (sequence_builders.cc)"},
      {"SequenceMap", "its body imported once per element (sequence_builders.cc)"},
      // control_flow.cc
      {"If",
       "the taken branch when the condition is a compile-time constant; else each branch a "
       "one-iteration `Loop` and a `Where` per output (control_flow.cc)"},
      {"Loop",
       "unrolled when the trip count and condition are compile-time constants and the body "
       "is small (at most 512 nodes unrolled); else the graph op `Loop`, run at run time"},
      {"Scan",
       "unrolled along its scan axes when small (at most 512 nodes); else a graph `Loop` "
       "(control_flow.cc)"},
  };
  return m;
}

// Known limits, from the importer's kUnimplemented messages (file names in
// compiler_core/importer/onnx/). Limits common to every op are in the page's header.
const std::map<std::string, std::string>& Limits() {
  static const std::map<std::string, std::string> m = {
      {"BatchNormalization",
       "`spatial=0` is not supported; the running mean/var outputs only with "
       "`training_mode=1`, which needs an f32 input of rank >= 2 (op_builders.cc)"},
      {"Dropout",
       "training mode only with a constant ratio of 0; a used mask must be bool or f32 "
       "(op_builders.cc)"},
      {"Pad", "`mode` constant, reflect or edge (shape_builders.cc)"},
      {"LayerNormalization",
       "`stash_type` must be 1 (float); the Mean/InvStdDev outputs need an f32 input "
       "(nn_builders.cc)"},
      {"ConvTranspose",
       "an `output_shape` larger than the full transposed convolution at the start is not "
       "supported (nn_builders.cc)"},
      {"Resize",
       "`mode` nearest, linear or cubic; `tf_crop_and_resize` needs a constant roi and "
       "constant scales; run-time scales or sizes need a static output shape; no empty dims "
       "(resize_builders.cc)"},
      {"Upsample", "as Resize (resize_builders.cc)"},
      {"RNN", "activations must be elementwise ops Kiln has (rnn_builders.cc)"},
      {"GRU", "activations must be elementwise ops Kiln has (rnn_builders.cc)"},
      {"LSTM", "activations must be elementwise ops Kiln has (rnn_builders.cc)"},
      {"ReduceSum",
       "run-time `axes`: at most 8 axis sets the static shapes allow (tensor_builders.cc)"},
      {"Shrink",
       "an integer input needs a signed type and integral `lambd` and `bias` "
       "(composite_builders.cc)"},
      {"MaxUnpool",
       "a run-time `output_shape` needs a static output shape (composite_builders.cc)"},
      {"HannWindow", "`output_datatype` must be a float type (signal_builders.cc)"},
      {"HammingWindow", "`output_datatype` must be a float type (signal_builders.cc)"},
      {"BlackmanWindow", "`output_datatype` must be a float type (signal_builders.cc)"},
      {"DFT",
       "`onesided=1` with `inverse=1` is not supported; a run-time `dft_length` needs a "
       "static output shape and `onesided=0` (signal_builders.cc)"},
      {"STFT",
       "run-time `frame_step`/`frame_length` must be determined by the static output shape "
       "(signal_builders.cc)"},
      {"TfIdfVectorizer",
       "integer tokens only (`pool_strings` is not supported); the n-gram pool must not be "
       "empty (text_builders.cc)"},
      {"NonZero",
       "a scalar input is not supported; the output shape must be static or the output an "
       "unread graph output (data_dependent_builders.cc)"},
      {"Compress",
       "a constant condition that selects nothing is not supported; otherwise as NonZero "
       "(data_dependent_builders.cc)"},
      {"Unique", "as NonZero (data_dependent_builders.cc)"},
      {"NonMaxSuppression", "as NonZero (data_dependent_builders.cc)"},
      {"QuantizeLinear",
       "int8 and uint8 only; blocked quantization is not supported (quant_builders.cc)"},
      {"DequantizeLinear",
       "int8, uint8 and int32 inputs; blocked quantization is not supported "
       "(quant_builders.cc)"},
      {"DynamicQuantizeLinear", "f32 input only (quant_builders.cc)"},
      {"MatMulInteger", "int8 and uint8 operands (quant_builders.cc)"},
      {"QLinearMatMul", "int8 and uint8 operands (quant_builders.cc)"},
      {"ConvInteger", "int8 and uint8 operands (quant_builders.cc)"},
      {"QLinearConv", "int8 and uint8 operands (quant_builders.cc)"},
      {"Adagrad", "f32 tensors only (training_builders.cc)"},
      {"Momentum", "f32 tensors only (training_builders.cc)"},
      {"Adam", "f32 tensors only (training_builders.cc)"},
      {"SequenceInsert", "the position must be a compile-time constant (sequence_builders.cc)"},
      {"SequenceAt", "the position must be a compile-time constant (sequence_builders.cc)"},
      {"SequenceErase", "the position must be a compile-time constant (sequence_builders.cc)"},
      {"SplitToSequence", "`split` must be a compile-time constant (sequence_builders.cc)"},
      {"If",
       "with a run-time condition both branches must give each output one type "
       "(control_flow.cc)"},
      {"Loop",
       "a run-time loop's scan outputs need a static length; carried values must keep their "
       "type; zero iterations with scan outputs are not supported (control_flow.cc)"},
      {"Scan",
       "`sequence_lens` (opset 8) must be a constant covering the whole scan axis; states must "
       "keep their type (control_flow.cc)"},
  };
  return m;
}

// "a-b, c" from sorted versions.
std::string Ranges(const std::vector<int>& v) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    parts.push_back(i == j ? absl::StrCat(v[i]) : absl::StrCat(v[i], "–", v[j]));
    i = j + 1;
  }
  return absl::StrJoin(parts, ", ");
}

bool Accepted(const std::string& domain, const std::string& op) {
  onnx::ModelProto model;
  onnx::NodeProto* node = model.mutable_graph()->add_node();
  node->set_op_type(op);
  node->set_domain(domain);
  return importer::CheckOpsSupported(model).ok();
}

std::vector<int> KilnOpsets(std::string* refusal) {
  std::vector<int> v;
  for (int opset = 1; opset <= 64; ++opset) {
    onnx::ModelProto model;
    model.set_ir_version(8);
    onnx::OperatorSetIdProto* imp = model.add_opset_import();
    imp->set_domain("");
    imp->set_version(opset);
    absl::StatusOr<int> got = importer::CheckOpsets(model);
    if (got.ok()) {
      v.push_back(opset);
    } else if (refusal->empty()) {
      *refusal = std::string(got.status().message());
    }
  }
  return v;
}

// Whether the importer accepts attributes of ONNX type `type` (importer.cc's ConvertAttrs, and
// GRAPH for control flow); STRINGS, SPARSE_TENSOR and the rest are refused.
bool ImportedKind(onnx::AttributeProto::AttributeType type) {
  switch (type) {
    case onnx::AttributeProto::INT:
    case onnx::AttributeProto::FLOAT:
    case onnx::AttributeProto::STRING:
    case onnx::AttributeProto::INTS:
    case onnx::AttributeProto::FLOATS:
    case onnx::AttributeProto::TENSOR:
    case onnx::AttributeProto::GRAPH:
      return true;
    default:
      return false;
  }
}

// Whether a schema attribute of `spec`'s kind can hold an ONNX attribute of type `type`.
bool KindHolds(const graph::AttrSpec& spec, onnx::AttributeProto::AttributeType type) {
  using K = graph::AttrKind;
  switch (type) {
    case onnx::AttributeProto::INT:
      return spec.kind == K::kInt || spec.kind == K::kBool || spec.kind == K::kOptInt;
    case onnx::AttributeProto::FLOAT:
      return spec.kind == K::kFloat || spec.kind == K::kOptFloat;
    case onnx::AttributeProto::STRING:
      return spec.kind == K::kString || spec.kind == K::kEnum;
    case onnx::AttributeProto::INTS:
      return spec.kind == K::kInts;
    case onnx::AttributeProto::FLOATS:
      return spec.kind == K::kFloats;
    case onnx::AttributeProto::TENSOR:
      return spec.kind == K::kTensor;
    case onnx::AttributeProto::GRAPH:
      return spec.kind == K::kGraph;
    default:
      return false;
  }
}

// ONNX's default of an attribute as a stored value, or none.
std::optional<graph::AttrValue> OnnxDefault(const onnx::AttributeProto& d) {
  switch (d.type()) {
    case onnx::AttributeProto::INT:
      return graph::AttrValue(static_cast<int64_t>(d.i()));
    case onnx::AttributeProto::FLOAT:
      return graph::AttrValue(d.f());
    case onnx::AttributeProto::STRING:
      return graph::AttrValue(d.s());
    case onnx::AttributeProto::INTS:
      return graph::AttrValue(std::vector<int64_t>(d.ints().begin(), d.ints().end()));
    case onnx::AttributeProto::FLOATS:
      return graph::AttrValue(std::vector<float>(d.floats().begin(), d.floats().end()));
    default:
      return std::nullopt;
  }
}

// Checks op_attrs.def against ONNX's schemas for every op of ops.def that ONNX defines (opsets
// 7..max_opset): each attribute declared with a kind that holds it, and ONNX's default at the
// newest opset equal to op_attrs.def's. Prints each disagreement; returns their count.
int CheckAttrSchema(int max_opset) {
  std::set<std::string> errors;
  for (const DefOp& d : DefOps()) {
    const char* name = graph::OpName(d.kind);
    const graph::AttrSetSpec* set = graph::AttrSetOf(d.kind);
    auto spec_of = [&](const std::string& attr) -> const graph::AttrSpec* {
      if (set == nullptr) return nullptr;
      for (const graph::AttrSpec& a : set->attrs) {
        if (attr == a.name) return &a;
      }
      return nullptr;
    };
    const onnx::OpSchema* newest = onnx::OpSchemaRegistry::Schema(name, max_opset, "");
    for (int v = 7; v <= max_opset; ++v) {
      const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema(name, v, "");
      if (s == nullptr) continue;
      for (const auto& [attr, a] : s->attributes()) {
        const graph::AttrSpec* spec = spec_of(attr);
        if (spec == nullptr) {
          if (!ImportedKind(a.type)) continue;  // the importer refuses a model that sets it
          errors.insert(absl::StrCat("op_attrs.def lacks ", name, ".", attr,
                                     ", an attribute in "
                                     "ONNX's schema"));
          continue;
        }
        if (!KindHolds(*spec, a.type)) {
          errors.insert(absl::StrCat("op_attrs.def's ", name, ".", attr, " is ",
                                     graph::AttrKindName(*spec), ", which cannot hold ONNX's"));
        }
        if (s != newest) continue;
        // ONNX-required attributes the importer moves into inputs of the graph op.
        static const std::set<std::string>* moved = new std::set<std::string>{
            "TfIdfVectorizer.ngram_counts", "TfIdfVectorizer.ngram_indexes"};
        if (a.required != spec->required && !moved->count(absl::StrCat(name, ".", attr))) {
          errors.insert(absl::StrCat("op_attrs.def's ", name, ".", attr, " is ",
                                     spec->required ? "" : "not ", "required; ONNX's (opset ",
                                     s->SinceVersion(), ") is ", a.required ? "" : "not ",
                                     "required"));
        }
        if (!a.default_value.has_type()) continue;
        std::optional<graph::AttrValue> onnx_default = OnnxDefault(a.default_value);
        if (onnx_default && spec->default_value &&
            graph::FormatAttrValue(*onnx_default) != graph::FormatAttrValue(*spec->default_value)) {
          errors.insert(absl::StrCat("op_attrs.def's default of ", name, ".", attr, " is ",
                                     graph::FormatAttrValue(*spec->default_value),
                                     ", ONNX's (opset ", s->SinceVersion(), ") ",
                                     graph::FormatAttrValue(*onnx_default)));
        }
      }
    }
  }
  for (const std::string& e : errors) std::cerr << "kiln-op-table: " << e << "\n";
  return static_cast<int>(errors.size());
}

// "## Graph-IR attributes": every attribute set of op_attrs.def.
void PrintAttrSchema() {
  std::cout << "\n## Graph-IR attributes\n\n"
               "The attributes each graph-IR op carries, from `compiler_core/ir/graph/"
               "op_attrs.def` (one kind and one default per attribute, checked against ONNX's "
               "schemas when this page is generated). A node is refused when it carries an "
               "attribute its op does not declare, one of another kind, an enum value outside "
               "the listed spellings or a flag other than 0/1, or lacks a required one. `Common` "
               "applies to every op.\n\n"
               "| Ops | Attribute | Kind | Default |\n|---|---|---|---|\n";
  for (const graph::AttrSetSpec& set : graph::AttrSchema()) {
    std::vector<std::string> ops;
    for (graph::OpKind k : set.ops) ops.push_back(absl::StrCat("`", graph::OpName(k), "`"));
    const std::string who = ops.empty() ? std::string("every op") : absl::StrJoin(ops, ", ");
    bool first = true;
    for (const graph::AttrSpec& a : set.attrs) {
      std::string kind = graph::AttrKindName(a);
      if (a.kind == graph::AttrKind::kEnum) {
        std::vector<std::string> spellings;
        for (std::string_view sp : a.enum_info->spellings) {
          spellings.push_back(sp.empty() ? "\"\"" : std::string(sp));
        }
        kind = absl::StrCat("string: ", absl::StrJoin(spellings, ", "));
      }
      std::string def = a.required        ? "required"
                        : a.default_value ? graph::FormatAttrValue(*a.default_value)
                                          : "none";
      std::cout << "| " << (first ? who : "") << " | `" << a.name << "` | " << kind << " | " << def
                << " |\n";
      first = false;
    }
  }
}

std::string Arity(const graph::OpInfo& info) {
  std::string in = info.min_inputs == info.max_inputs
                       ? absl::StrCat(info.min_inputs)
                       : absl::StrCat(info.min_inputs, "–", info.max_inputs);
  return absl::StrCat(in, " / ", info.num_outputs);
}

int Main() {
  std::string refusal;
  const std::vector<int> opsets = KilnOpsets(&refusal);
  if (opsets.empty()) {
    std::cerr << "kiln-op-table: CheckOpsets accepts no opset\n";
    return 1;
  }
  const int max_opset = opsets.back();
  std::map<std::string, const DefOp*> def_by_name;
  for (const DefOp& d : DefOps()) def_by_name[graph::OpName(d.kind)] = &d;

  // (domain, name) of every ONNX schema; the default domain as "".
  std::map<std::pair<std::string, std::string>, std::vector<int>> schemas;
  for (const onnx::OpSchema& s : onnx::OpSchemaRegistry::get_all_schemas_with_history()) {
    std::string domain = s.domain() == "ai.onnx" ? "" : s.domain();
    if (domain != "" && domain != importer::kTrainingDomain) continue;
    schemas[{domain, s.Name()}].push_back(s.SinceVersion());
  }
  struct Row {
    std::string domain, name;
    std::vector<int> versions;  // schema since-versions <= max_opset
    std::vector<int> opsets;    // the accepted opsets at which the schema is not deprecated
  };
  std::vector<Row> rows;
  std::vector<std::string> refused;  // ONNX ops (<= max_opset) the importer does not accept
  for (auto& [key, since] : schemas) {
    const auto& [domain, name] = key;
    Row row{domain, name, {}, {}};
    std::sort(since.begin(), since.end());
    for (int v : since) {
      if (domain != "" || v <= max_opset) row.versions.push_back(v);
    }
    if (domain == "") {
      for (int v : opsets) {
        const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema(name, v, "");
        if (s != nullptr && !s->Deprecated()) row.opsets.push_back(v);
      }
    } else {
      row.opsets = row.versions;
    }
    if (row.opsets.empty()) continue;  // newer than Kiln's opsets, or deprecated in them
    if (!Accepted(domain, name)) {
      refused.push_back(domain.empty() ? name : absl::StrCat(domain, ".", name));
      continue;
    }
    rows.push_back(std::move(row));
  }
  std::set<std::string> accepted_names;
  for (const Row& r : rows) accepted_names.insert(r.name);
  int errors = 0;
  for (const auto* table : {&ImportedAs(), &Limits()}) {
    for (const auto& [name, text] : *table) {
      if (!accepted_names.count(name)) {
        std::cerr << "kiln-op-table: the table names '" << name
                  << "', which is no ONNX op the importer accepts\n";
        ++errors;
      }
    }
  }
  for (const Row& r : rows) {
    if (!def_by_name.count(r.name) && !ImportedAs().count(r.name)) {
      std::cerr << "kiln-op-table: accepted op '" << r.name
                << "' is not in ops.def and has no kImportedAs entry\n";
      ++errors;
    }
  }
  errors += CheckAttrSchema(max_opset);
  if (errors > 0) return 1;

  std::cout
      << "<!-- Generated by kiln-op-table (compiler_core/tools/kiln_op_table.cc) from\n"
         "     compiler_core/ir/graph/ops.def and the ONNX importer. Do not edit: run\n"
         "     scripts/gen-docs. ctest docs_operators_table checks it is up to date. -->\n"
         "# Operators\n\n"
         "The ONNX operators Kiln's importer accepts, with the graph-IR op each becomes.\n\n"
         "- **Opsets.** A model's default-domain (`ai.onnx`) opset must be one of "
      << Ranges(opsets)
      << "; opsets 1–6 are first upgraded to 7 with the ONNX version converter. Others are "
         "refused: `"
      << refusal
      << "`. Nodes of other domains are refused, except the optimizers of "
         "`ai.onnx.preview.training`.\n"
         "- **Opsets column.** The accepted opsets in which ONNX 1.12 (the library Kiln "
         "links) defines the op and does not mark it deprecated; ONNX's checker, which the "
         "importer runs, refuses the op elsewhere. **Versions**: the op's schema versions "
         "(since-versions) up to opset "
      << max_opset
      << ".\n"
         "- **Graph-IR op, fusion class, in / out.** The op of `ops.def` of the same name, its "
         "fusion class (TVM's op patterns: elementwise, broadcast, injective, reduction, "
         "out-ewise-fusable = conv/matmul/pool, whose elementwise consumers fuse into their "
         "epilogue, opaque = never fused) and its input count and most outputs. Ops imported as "
         "other ops say so.\n"
         "- **Limits for every op.** Graph inputs need static shapes (symbolic dims bound with "
         "`--input-shape`); bf16 values are accepted by Cast, CastLike, Identity and MatMul only; "
         "an operand that decides an output's shape (Reshape's shape, Slice's starts, Pad's pads, "
         "Tile's repeats, Expand's shape, ...) may arrive at run time only when ONNX shape "
         "inference or the declared graph output gives the output a static shape; attributes "
         "named `axis`/`axes` must be in [-64, 64); the only graph attributes are those of If, "
         "Loop, Scan and SequenceMap. A refused model fails with `UNIMPLEMENTED` naming the "
         "node.\n\n";

  auto print_rows = [&](const std::string& domain) {
    std::cout << "| ONNX op | Opsets | Versions | Graph-IR op | Fusion class | In / out | "
                 "Limits |\n"
                 "|---|---|---|---|---|---|---|\n";
    for (const Row& r : rows) {
      if (r.domain != domain) continue;
      std::string ir = "—", fusion = "—", arity = "—";
      auto def = def_by_name.find(r.name);
      if (def != def_by_name.end()) {
        const graph::OpInfo& info = graph::GetOpInfo(def->second->kind);
        ir = absl::StrCat("`", info.name, "`");
        fusion = graph::FusionClassName(info.fusion_class);
        arity = Arity(info);
      }
      auto as = ImportedAs().find(r.name);
      if (as != ImportedAs().end()) ir = as->second;
      auto limit = Limits().find(r.name);
      std::string limits = limit == Limits().end() ? "" : limit->second;
      std::cout << "| " << r.name << " | " << Ranges(r.opsets) << " | "
                << absl::StrJoin(r.versions, ", ") << " | " << ir << " | " << fusion << " | "
                << arity << " | " << limits << " |\n";
    }
  };
  size_t n_default = 0;
  for (const Row& r : rows) n_default += r.domain.empty();
  std::cout << "## Domain ai.onnx (" << n_default << " ops)\n\n";
  print_rows("");
  std::cout << "\n## Domain " << importer::kTrainingDomain << " (" << rows.size() - n_default
            << " ops)\n\nOpsets and versions are of that domain.\n\n";
  print_rows(importer::kTrainingDomain);

  std::cout << "\n## Kiln's own graph-IR ops\n\n"
               "Ops of `ops.def` that are no ONNX op up to opset "
            << max_opset
            << " in ONNX 1.12 (Mish and Gelu are ONNX ops of opsets 18 and 20; the pass "
               "`simplify` forms Gelu from the Erf and Tanh subgraphs exporters emit). Passes and "
               "the importer insert them; in a model they are unsupported ops "
               "(`UNIMPLEMENTED: node 'n' (BoundMask): unsupported op 'BoundMask' (domain "
               "ai.onnx)`).\n\n"
               "| Graph-IR op | Fusion class | In / out |\n|---|---|---|\n";
  for (const DefOp& d : DefOps()) {
    const graph::OpInfo& info = graph::GetOpInfo(d.kind);
    bool onnx = false;
    for (const Row& r : rows) onnx |= r.domain.empty() && r.name == info.name;
    if (onnx) continue;
    std::cout << "| `" << info.name << "` | " << graph::FusionClassName(info.fusion_class) << " | "
              << Arity(info) << " |\n";
  }
  std::cout << "\n## ONNX ops Kiln does not import\n\n"
               "Defined by ONNX 1.12 in an accepted opset (of `ai.onnx`, or of "
               "`ai.onnx.preview.training` with that prefix) and refused by the importer "
               "(`unsupported op`): "
            << refused.size() << " ops.\n\n"
            << absl::StrJoin(refused, ", ") << "\n";
  PrintAttrSchema();
  return 0;
}

}  // namespace
}  // namespace kiln

int main() { return kiln::Main(); }
