// The decoders, the validator and the schema table of op_attrs.def.
#include "compiler_core/ir/graph/op_attrs.h"

#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/ir/graph/graph.h"

namespace kiln::graph {

// ---- Enums: spellings and names.
#define KILN_ATTR_ENUM(E)                                \
  const AttrEnumInfo& AttrEnumTraits<E>::Info() {        \
    static const AttrEnumInfo* info = new AttrEnumInfo { \
#E, {
#define KILN_ATTR_ENUM_VALUE(E, enumerator, spelling) spelling,
#define KILN_ATTR_ENUM_END(E)                                               \
  }                                                                         \
  }                                                                         \
  ;                                                                         \
  return *info;                                                             \
  }                                                                         \
  std::string_view AttrEnumName(E value) {                                  \
    return AttrEnumTraits<E>::Info().spellings[static_cast<size_t>(value)]; \
  }
#include "compiler_core/ir/graph/op_attrs.def"

namespace attr_internal {
namespace {

template <typename T>
const T* Find(const AttrMap& attrs, const char* name) {
  auto it = attrs.items().find(name);
  if (it == attrs.items().end()) return nullptr;
  return std::get_if<T>(&it->second);
}

}  // namespace

void Read(const AttrMap& attrs, const char* name, int64_t* out) {
  if (const auto* v = Find<int64_t>(attrs, name)) *out = *v;
}
void Read(const AttrMap& attrs, const char* name, bool* out) {
  if (const auto* v = Find<int64_t>(attrs, name)) *out = *v != 0;
}
void Read(const AttrMap& attrs, const char* name, float* out) {
  if (const auto* v = Find<float>(attrs, name)) *out = *v;
  if (const auto* v = Find<int64_t>(attrs, name)) *out = static_cast<float>(*v);
}
void Read(const AttrMap& attrs, const char* name, std::string* out) {
  if (const auto* v = Find<std::string>(attrs, name)) *out = *v;
}
void Read(const AttrMap& attrs, const char* name, std::vector<int64_t>* out) {
  if (const auto* v = Find<std::vector<int64_t>>(attrs, name)) *out = *v;
}
void Read(const AttrMap& attrs, const char* name, std::vector<float>* out) {
  if (const auto* v = Find<std::vector<float>>(attrs, name)) *out = *v;
}
void Read(const AttrMap& attrs, const char* name, std::shared_ptr<const Tensor>* out) {
  if (const auto* v = Find<std::shared_ptr<const Tensor>>(attrs, name)) *out = *v;
}
void Read(const AttrMap& attrs, const char* name, std::shared_ptr<Graph>* out) {
  if (const auto* v = Find<std::shared_ptr<Graph>>(attrs, name)) *out = *v;
}
void Read(const AttrMap& attrs, const char* name, std::optional<int64_t>* out) {
  if (const auto* v = Find<int64_t>(attrs, name)) *out = *v;
}
void Read(const AttrMap& attrs, const char* name, std::optional<float>* out) {
  if (const auto* v = Find<float>(attrs, name)) *out = *v;
  if (const auto* v = Find<int64_t>(attrs, name)) *out = static_cast<float>(*v);
}

int ReadEnum(const AttrMap& attrs, const char* name, const AttrEnumInfo& info) {
  const auto* v = Find<std::string>(attrs, name);
  if (v == nullptr) return -1;
  for (size_t i = 0; i < info.spellings.size(); ++i) {
    if (info.spellings[i] == *v) return static_cast<int>(i);
  }
  return -1;
}

std::optional<AttrValue> DefaultValue(int64_t v) { return AttrValue(v); }
std::optional<AttrValue> DefaultValue(bool v) { return AttrValue(int64_t{v ? 1 : 0}); }
std::optional<AttrValue> DefaultValue(float v) { return AttrValue(v); }
std::optional<AttrValue> DefaultValue(const std::string& v) { return AttrValue(v); }
std::optional<AttrValue> DefaultValue(const std::vector<int64_t>& v) { return AttrValue(v); }
std::optional<AttrValue> DefaultValue(const std::vector<float>& v) { return AttrValue(v); }
std::optional<AttrValue> DefaultValue(const std::shared_ptr<const Tensor>& v) {
  if (v == nullptr) return std::nullopt;
  return AttrValue(v);
}
std::optional<AttrValue> DefaultValue(const std::shared_ptr<Graph>& v) {
  if (v == nullptr) return std::nullopt;
  return AttrValue(v);
}
std::optional<AttrValue> DefaultValue(const std::optional<int64_t>& v) {
  if (!v) return std::nullopt;
  return AttrValue(*v);
}
std::optional<AttrValue> DefaultValue(const std::optional<float>& v) {
  if (!v) return std::nullopt;
  return AttrValue(*v);
}

std::string NodeWhere(const Node& node) {
  return absl::StrCat("node '", node.name(), "' (", OpName(node.op()), "): ");
}

const AttrMap& NodeAttrs(const Node& node) { return node.attrs(); }

void CheckAttrSet(const Node& node, const char* set) {
  if (std::string_view(set) == "Common") return;
  const AttrSetSpec* own = AttrSetOf(node.op());
  if (own != nullptr && std::string_view(own->name) == set) return;
  std::fprintf(stderr, "op_attrs: %sattributes read as %sAttrs; its op's set is %s\n",
               NodeWhere(node).c_str(), set, own == nullptr ? "none" : own->name);
  std::abort();
}

}  // namespace attr_internal

// ---- Decoders: SetAttrs::From.
#define KILN_ATTR_SET(S, ...)                     \
  S##Attrs S##Attrs::From(const AttrMap& attrs) { \
    S##Attrs r;
#define KILN_ATTR(S, name, Kind, ...) attr_internal::Read(attrs, #name, &r.name);
#define KILN_ENUM_ATTR(S, name, E, value)                                                 \
  if (int i = attr_internal::ReadEnum(attrs, #name, AttrEnumTraits<E>::Info()); i >= 0) { \
    r.name = static_cast<E>(i);                                                           \
  }
#define KILN_REQUIRED_ATTR(S, name, Kind) KILN_ATTR(S, name, Kind, {})
#define KILN_REQUIRED_ENUM_ATTR(S, name, E) KILN_ENUM_ATTR(S, name, E, unused)
#define KILN_ATTR_SET_END(S) \
  return r;                  \
  }
#include "compiler_core/ir/graph/op_attrs.def"

// ---- The schema table.
const std::vector<AttrSetSpec>& AttrSchema() {
  static const std::vector<AttrSetSpec>* schema = [] {
    using enum OpKind;
    auto* sets = new std::vector<AttrSetSpec>;
#define KILN_ATTR_SET(S, ...) sets->push_back(AttrSetSpec{#S, {__VA_ARGS__}, {}});
#define KILN_ATTR(S, name, Kind, ...)                                                          \
  sets->back().attrs.push_back(                                                                \
      AttrSpec{#name, AttrKind::k##Kind, nullptr, #__VA_ARGS__, [] {                           \
                 const typename attr_internal::Field<AttrKind::k##Kind>::type v = __VA_ARGS__; \
                 return attr_internal::DefaultValue(v);                                        \
               }()});
#define KILN_ENUM_ATTR(S, name, E, value)                                                   \
  sets->back().attrs.push_back(AttrSpec{#name, AttrKind::kEnum, &AttrEnumTraits<E>::Info(), \
                                        #value, AttrValue(std::string(AttrEnumName(E::value)))});
#define KILN_REQUIRED_ATTR(S, name, Kind) \
  sets->back().attrs.push_back(           \
      AttrSpec{#name, AttrKind::k##Kind, nullptr, "", std::nullopt, /*required=*/true});
#define KILN_REQUIRED_ENUM_ATTR(S, name, E)                                                     \
  sets->back().attrs.push_back(AttrSpec{#name, AttrKind::kEnum, &AttrEnumTraits<E>::Info(), "", \
                                        std::nullopt, /*required=*/true});
#include "compiler_core/ir/graph/op_attrs.def"
    return sets;
  }();
  return *schema;
}

const AttrSetSpec* AttrSetOf(OpKind op) {
  static const std::vector<const AttrSetSpec*>* table = [] {
    auto* t = new std::vector<const AttrSetSpec*>;
    for (const AttrSetSpec& set : AttrSchema()) {
      for (OpKind k : set.ops) {
        const size_t i = static_cast<size_t>(k);
        if (t->size() <= i) t->resize(i + 1, nullptr);
        (*t)[i] = &set;
      }
    }
    return t;
  }();
  const size_t i = static_cast<size_t>(op);
  return i < table->size() ? (*table)[i] : nullptr;
}

std::string AttrKindName(const AttrSpec& spec) {
  switch (spec.kind) {
    case AttrKind::kInt:
      return "int";
    case AttrKind::kBool:
      return "bool";
    case AttrKind::kFloat:
      return "float";
    case AttrKind::kString:
      return "string";
    case AttrKind::kInts:
      return "ints";
    case AttrKind::kFloats:
      return "floats";
    case AttrKind::kTensor:
      return "tensor";
    case AttrKind::kGraph:
      return "graph";
    case AttrKind::kOptInt:
      return "int";
    case AttrKind::kOptFloat:
      return "float";
    case AttrKind::kEnum:
      return spec.enum_info->name;
  }
  return "?";
}

namespace {

const AttrSetSpec* SetNamed(std::string_view name) {
  for (const AttrSetSpec& set : AttrSchema()) {
    if (name == set.name) return &set;
  }
  return nullptr;
}

const AttrSpec* SpecIn(const AttrSetSpec* set, const std::string& name) {
  if (set == nullptr) return nullptr;
  for (const AttrSpec& a : set->attrs) {
    if (name == a.name) return &a;
  }
  return nullptr;
}

// The ONNX attribute kind a value holds, as the schema names kinds.
const char* ValueKindName(const AttrValue& v) {
  switch (v.index()) {
    case 0:
      return "int";
    case 1:
      return "float";
    case 2:
      return "string";
    case 3:
      return "ints";
    case 4:
      return "floats";
    case 5:
      return "tensor";
    default:
      return "graph";
  }
}

bool KindMatches(const AttrSpec& spec, const AttrValue& v) {
  switch (spec.kind) {
    case AttrKind::kInt:
    case AttrKind::kBool:
    case AttrKind::kOptInt:
      return std::holds_alternative<int64_t>(v);
    case AttrKind::kFloat:
    case AttrKind::kOptFloat:
      return std::holds_alternative<float>(v) || std::holds_alternative<int64_t>(v);
    case AttrKind::kString:
    case AttrKind::kEnum:
      return std::holds_alternative<std::string>(v);
    case AttrKind::kInts:
      return std::holds_alternative<std::vector<int64_t>>(v);
    case AttrKind::kFloats:
      return std::holds_alternative<std::vector<float>>(v);
    case AttrKind::kTensor:
      return std::holds_alternative<std::shared_ptr<const Tensor>>(v);
    case AttrKind::kGraph:
      return std::holds_alternative<std::shared_ptr<Graph>>(v);
  }
  return false;
}

// Checks one present attribute against its spec. The error's message lacks the node prefix,
// which callers add (Prefixed) only when there is an error.
absl::Status CheckValue(const AttrSpec& spec, const std::string& name, const AttrValue& v) {
  if (!KindMatches(spec, v)) {
    return absl::InvalidArgumentError(absl::StrCat("attribute '", name, "' is ", ValueKindName(v),
                                                   "; expected ", AttrKindName(spec)));
  }
  if (spec.kind == AttrKind::kEnum) {
    const std::string& s = std::get<std::string>(v);
    for (std::string_view sp : spec.enum_info->spellings) {
      if (sp == s) return absl::OkStatus();
    }
    std::vector<std::string> quoted;
    for (std::string_view sp : spec.enum_info->spellings) {
      quoted.push_back(sp.empty() ? "\"\"" : std::string(sp));
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "attribute '", name, "' is \"", s, "\"; expected one of ", absl::StrJoin(quoted, ", ")));
  }
  if (spec.kind == AttrKind::kBool) {
    const int64_t b = std::get<int64_t>(v);
    if (b != 0 && b != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute '", name, "' is ", b, "; expected 0 or 1"));
    }
  }
  return absl::OkStatus();
}

// kInvalidArgument "missing attribute 'x'" (no prefix) for the first required attribute of
// `set` that `attrs` lacks.
absl::Status CheckRequired(const AttrSetSpec* set, const AttrMap& attrs) {
  if (set == nullptr) return absl::OkStatus();
  for (const AttrSpec& a : set->attrs) {
    if (a.required && !attrs.Has(a.name)) {
      return absl::InvalidArgumentError(absl::StrCat("missing attribute '", a.name, "'"));
    }
  }
  return absl::OkStatus();
}

// `status` (an error of CheckValue or CheckRequired) with `where` before its message.
absl::Status Prefixed(const absl::Status& status, absl::string_view where) {
  return absl::Status(status.code(), absl::StrCat(where, status.message()));
}

}  // namespace

namespace attr_internal {

absl::Status Check(const AttrMap& attrs, const char* set, absl::string_view where) {
  const AttrSetSpec* s = SetNamed(set);
  for (const auto& [name, v] : attrs.items()) {
    const AttrSpec* spec = SpecIn(s, name);
    if (spec == nullptr) continue;  // another set's (Common) or undeclared: VerifyAttrs
    absl::Status st = CheckValue(*spec, name, v);
    if (!st.ok()) return Prefixed(st, where);
  }
  absl::Status st = CheckRequired(s, attrs);
  return st.ok() ? st : Prefixed(st, where);
}

}  // namespace attr_internal

absl::Status VerifyAttrs(const Node& node) {
  const AttrSetSpec* set = AttrSetOf(node.op());
  const AttrSetSpec* common = &AttrSchema().front();
  for (const auto& [name, v] : node.attrs().items()) {
    const AttrSpec* spec = SpecIn(set, name);
    if (spec == nullptr) spec = SpecIn(common, name);
    if (spec == nullptr) {
      std::vector<std::string> declared;
      if (set != nullptr) {
        for (const AttrSpec& a : set->attrs) declared.push_back(a.name);
      }
      return absl::InvalidArgumentError(absl::StrCat(
          attr_internal::NodeWhere(node), "attribute '", name, "' is not an attribute of ",
          OpName(node.op()),
          declared.empty() ? " (it has none)"
                           : absl::StrCat(" (it has ", absl::StrJoin(declared, ", "), ")")));
    }
    absl::Status st = CheckValue(*spec, name, v);
    if (!st.ok()) return Prefixed(st, attr_internal::NodeWhere(node));
  }
  absl::Status st = CheckRequired(set, node.attrs());
  return st.ok() ? st : Prefixed(st, attr_internal::NodeWhere(node));
}

std::vector<int64_t> OrFill(const std::vector<int64_t>& v, size_t n, int64_t fill) {
  if (!v.empty()) return v;
  return std::vector<int64_t>(n, fill);
}

SlidingWindowAttrs SlidingWindowAttrs::From(const ConvAttrs& a) {
  return SlidingWindowAttrs{a.auto_pad, a.kernel_shape, a.pads, a.strides, a.dilations};
}

SlidingWindowAttrs SlidingWindowAttrs::From(const PoolAttrs& a) {
  return SlidingWindowAttrs{a.auto_pad, a.kernel_shape, a.pads, a.strides, a.dilations};
}

std::vector<int64_t> TransposePermutation(const Node& node) {
  std::vector<int64_t> perm = TransposeAttrs::Of(node).perm;
  if (!perm.empty() || node.input(0) == nullptr) return perm;
  const int64_t rank = node.input(0)->type().rank();
  for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  return perm;
}

}  // namespace kiln::graph
