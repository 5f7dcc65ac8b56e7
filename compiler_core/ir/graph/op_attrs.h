// Typed attributes of the graph IR, generated from op_attrs.def: one struct per attribute set
// (`ConvAttrs`, `PoolAttrs`, ...) whose fields are named as the ONNX attributes and start at
// their defaults, enums for string attributes with a closed set of values, and the schema table
// the verifier checks nodes against. A node still stores its attributes in an AttrMap (printing,
// parsing and hashing stay generic); code reads them through these structs, so an attribute's
// kind and default are stated once, in op_attrs.def.
//
//   KILN_ASSIGN_OR_RETURN(ConvAttrs a, ConvAttrs::Parse(node));  // checks kinds and values
//   const PoolAttrs a = PoolAttrs::Of(node);   // on a verified node (VerifyGraph)
#ifndef KILN_COMPILER_CORE_IR_GRAPH_OP_ATTRS_H_
#define KILN_COMPILER_CORE_IR_GRAPH_OP_ATTRS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler_core/ir/graph/attributes.h"
#include "compiler_core/ir/graph/op.h"

namespace kiln::graph {

class Node;

/// The kind of a schema attribute: the C++ type of its field.
enum class AttrKind : uint8_t {
  kInt,       // int64_t
  kBool,      // bool, stored as an INT 0/1
  kFloat,     // float (an INT value is accepted, as ONNX exporters sometimes write one)
  kString,    // std::string
  kInts,      // std::vector<int64_t>
  kFloats,    // std::vector<float>
  kTensor,    // std::shared_ptr<const Tensor>
  kGraph,     // std::shared_ptr<Graph>
  kOptInt,    // std::optional<int64_t>: ONNX declares no default
  kOptFloat,  // std::optional<float>
  kEnum,      // an enum of op_attrs.def, stored as its STRING spelling
};

/// The spellings of one attribute enum, in enumerator order.
struct AttrEnumInfo {
  const char* name;  // "AutoPad"
  std::vector<std::string_view> spellings;
};

template <typename E>
struct AttrEnumTraits;

#define KILN_ATTR_ENUM(E) enum class E : uint8_t {
#define KILN_ATTR_ENUM_VALUE(E, enumerator, spelling) enumerator,
#define KILN_ATTR_ENUM_END(E)          \
  }                                    \
  ;                                    \
  template <>                          \
  struct AttrEnumTraits<E> {           \
    static const AttrEnumInfo& Info(); \
  };                                   \
  std::string_view AttrEnumName(E value);
#include "compiler_core/ir/graph/op_attrs.def"

namespace attr_internal {
template <AttrKind K>
struct Field;
template <>
struct Field<AttrKind::kInt> {
  using type = int64_t;
};
template <>
struct Field<AttrKind::kBool> {
  using type = bool;
};
template <>
struct Field<AttrKind::kFloat> {
  using type = float;
};
template <>
struct Field<AttrKind::kString> {
  using type = std::string;
};
template <>
struct Field<AttrKind::kInts> {
  using type = std::vector<int64_t>;
};
template <>
struct Field<AttrKind::kFloats> {
  using type = std::vector<float>;
};
template <>
struct Field<AttrKind::kTensor> {
  using type = std::shared_ptr<const Tensor>;
};
template <>
struct Field<AttrKind::kGraph> {
  using type = std::shared_ptr<Graph>;
};
template <>
struct Field<AttrKind::kOptInt> {
  using type = std::optional<int64_t>;
};
template <>
struct Field<AttrKind::kOptFloat> {
  using type = std::optional<float>;
};

/// Reads attribute `name` of `attrs` into `*out` when present with the right kind; otherwise
/// leaves the default. Kind mismatches are the validator's to report.
void Read(const AttrMap& attrs, const char* name, int64_t* out);
void Read(const AttrMap& attrs, const char* name, bool* out);
void Read(const AttrMap& attrs, const char* name, float* out);
void Read(const AttrMap& attrs, const char* name, std::string* out);
void Read(const AttrMap& attrs, const char* name, std::vector<int64_t>* out);
void Read(const AttrMap& attrs, const char* name, std::vector<float>* out);
void Read(const AttrMap& attrs, const char* name, std::shared_ptr<const Tensor>* out);
void Read(const AttrMap& attrs, const char* name, std::shared_ptr<Graph>* out);
void Read(const AttrMap& attrs, const char* name, std::optional<int64_t>* out);
void Read(const AttrMap& attrs, const char* name, std::optional<float>* out);
/// The enumerator index of a STRING attribute's spelling, or -1 (absent, not a string, or not
/// a spelling of `info`).
int ReadEnum(const AttrMap& attrs, const char* name, const AttrEnumInfo& info);
/// Checks the attributes of set `set` present in `attrs` and that its required ones are there:
/// kInvalidArgument "`where`attribute 'mode' is ..." or "`where`missing attribute 'axis'".
absl::Status Check(const AttrMap& attrs, const char* set, absl::string_view where);
std::string NodeWhere(const Node& node);
/// A field's default as a stored attribute value (AttrSpec::default_value).
std::optional<AttrValue> DefaultValue(int64_t v);
std::optional<AttrValue> DefaultValue(bool v);
std::optional<AttrValue> DefaultValue(float v);
std::optional<AttrValue> DefaultValue(const std::string& v);
std::optional<AttrValue> DefaultValue(const std::vector<int64_t>& v);
std::optional<AttrValue> DefaultValue(const std::vector<float>& v);
std::optional<AttrValue> DefaultValue(const std::shared_ptr<const Tensor>& v);
std::optional<AttrValue> DefaultValue(const std::shared_ptr<Graph>& v);
std::optional<AttrValue> DefaultValue(const std::optional<int64_t>& v);
std::optional<AttrValue> DefaultValue(const std::optional<float>& v);
const AttrMap& NodeAttrs(const Node& node);
/// Aborts, naming the node and both sets, when `node`'s op is not in set `set` (and `set` is
/// not "Common"): a programming error. Only sanitizer builds call it (KILN_SANITIZE defines
/// KILN_CHECK_ATTR_SETS).
void CheckAttrSet(const Node& node, const char* set);
}  // namespace attr_internal

#ifdef KILN_CHECK_ATTR_SETS
#define KILN_CHECK_ATTR_SET(node, set) attr_internal::CheckAttrSet(node, set)
#else
#define KILN_CHECK_ATTR_SET(node, set) static_cast<void>(0)
#endif

// One struct per attribute set. `From` decodes (attributes of the wrong kind or value read as
// their default), `Parse` checks first: kInvalidArgument naming `where` (e.g. "node 'c1' (Conv):
// ") and the attribute, its kind or value, and what the schema allows.
#define KILN_ATTR_SET(S, ...) struct S##Attrs {
#define KILN_ATTR(S, name, Kind, ...) \
  typename attr_internal::Field<AttrKind::k##Kind>::type name = __VA_ARGS__;
#define KILN_ENUM_ATTR(S, name, E, value) E name = E::value;
#define KILN_REQUIRED_ATTR(S, name, Kind) \
  typename attr_internal::Field<AttrKind::k##Kind>::type name{};
#define KILN_REQUIRED_ENUM_ATTR(S, name, E) E name{};
#define KILN_ATTR_SET_END(S)                                                             \
  static S##Attrs From(const AttrMap& attrs);                                            \
  static S##Attrs Of(const Node& node) {                                                 \
    KILN_CHECK_ATTR_SET(node, #S);                                                       \
    return From(attr_internal::NodeAttrs(node));                                         \
  }                                                                                      \
  static absl::StatusOr<S##Attrs> Parse(const AttrMap& attrs, absl::string_view where) { \
    absl::Status s = attr_internal::Check(attrs, #S, where);                             \
    if (!s.ok()) return s;                                                               \
    return From(attrs);                                                                  \
  }                                                                                      \
  static absl::StatusOr<S##Attrs> Parse(const Node& node) {                              \
    return Parse(attr_internal::NodeAttrs(node), attr_internal::NodeWhere(node));        \
  }                                                                                      \
  }                                                                                      \
  ;
#include "compiler_core/ir/graph/op_attrs.def"

/// One attribute of the schema.
struct AttrSpec {
  const char* name;
  AttrKind kind;
  const AttrEnumInfo* enum_info;  // kEnum only
  const char* default_text;       // the default as op_attrs.def states it, e.g. "1", "{}"
  /// The default as a stored value (a bool as INT 0/1, an enum as its spelling); none for
  /// OptInt/OptFloat, null tensors and graphs, and required attributes.
  std::optional<AttrValue> default_value;
  /// Every node of the op carries it (KILN_REQUIRED_ATTR); a node without it is refused.
  bool required = false;
};

/// One attribute set of op_attrs.def and the ops that use it.
struct AttrSetSpec {
  const char* name;  // "Conv"
  std::vector<OpKind> ops;
  std::vector<AttrSpec> attrs;
};

/// Every attribute set, in op_attrs.def's order; the first is "Common" (attributes any op may
/// carry).
const std::vector<AttrSetSpec>& AttrSchema();
/// The set of `op`, or null when it has only the common attributes.
const AttrSetSpec* AttrSetOf(OpKind op);
/// "int", "bool", "float", "string", "ints", "floats", "tensor", "graph", or the enum's name.
std::string AttrKindName(const AttrSpec& spec);

/// Checks every attribute of `node` against the schema of its op: each must be declared (in the
/// op's set or the common set) and have the declared kind, an enum's value must be one of its
/// spellings, and the required attributes must be present ("missing attribute 'axis'").
/// kInvalidArgument, e.g. "node 'p' (Pad): attribute 'mode' is \"wrap\"; expected one of constant,
/// reflect, edge".
absl::Status VerifyAttrs(const Node& node);

/// `v`, or `n` copies of `fill` when `v` is empty: ONNX's rank-dependent defaults (strides and
/// dilations 1, pads 0, per spatial axis).
std::vector<int64_t> OrFill(const std::vector<int64_t>& v, size_t n, int64_t fill);

/// The sliding-window attributes that Conv/ConvTranspose (ConvAttrs) and the pools (PoolAttrs)
/// share, for code that handles both: strides and dilations (1 per spatial axis when empty), pads
/// ([begins..., ends...], 0 when empty), kernel_shape (a pool's, or a Conv's when given).
struct SlidingWindowAttrs {
  AutoPad auto_pad = AutoPad::kNotSet;
  std::vector<int64_t> kernel_shape, pads, strides, dilations;

  static SlidingWindowAttrs From(const ConvAttrs& a);
  static SlidingWindowAttrs From(const PoolAttrs& a);
};

/// The permutation of a Transpose node: its `perm`, or, when it has none, the axes of input 0
/// reversed (ONNX's default).
std::vector<int64_t> TransposePermutation(const Node& node);

}  // namespace kiln::graph

#endif  // KILN_COMPILER_CORE_IR_GRAPH_OP_ATTRS_H_
