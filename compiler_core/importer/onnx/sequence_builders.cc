// Sequence ops as list operations at import (ONNX operator spec, Sequence* ops).
#include "compiler_core/importer/onnx/sequence_builders.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "compiler_core/importer/onnx/model_checks.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::importer {
namespace {

using graph::AttrMap;
using graph::OpKind;
using graph::Value;
using Ints = std::vector<int64_t>;
using Elements = std::vector<Value*>;

int64_t IntAttr(const onnx::NodeProto& node, const std::string& name, int64_t def) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name && a.type() == onnx::AttributeProto::INT) return a.i();
  }
  return def;
}

class SequenceImport {
 public:
  SequenceImport(ImportContext& ctx, const onnx::NodeProto& node,
                 std::map<std::string, Value*>& values, const std::string& prefix)
      : ctx_(ctx), node_(node), values_(values), prefix_(prefix) {}

  std::string Prefix() const { return NodePrefix(node_); }
  std::string Name(const std::string& what) {
    return absl::StrCat(prefix_, NodeDisplayName(node_), "/", what, count_++);
  }
  bool Has(int i) const { return i < node_.input_size() && !node_.input(i).empty(); }
  absl::StatusOr<Elements> Sequence(int i) const {
    const Elements* s = Has(i) ? ctx_.Sequence(node_.input(i)) : nullptr;
    if (s == nullptr) {
      return absl::InvalidArgumentError(Prefix() + absl::StrCat("input ", i, " is not a sequence"));
    }
    return *s;
  }
  absl::StatusOr<Value*> Tensor(int i) const {
    auto it = Has(i) ? values_.find(node_.input(i)) : values_.end();
    if (it == values_.end()) {
      return absl::InvalidArgumentError(Prefix() + absl::StrCat("input ", i, " is not a tensor"));
    }
    return it->second;
  }
  // A constant position input, normalized into [0, size] (`insert`) or [0, size).
  absl::StatusOr<int64_t> Position(int i, int64_t size, bool insert, int64_t absent) const {
    if (!Has(i)) return absent;
    KILN_ASSIGN_OR_RETURN(Value * p, Tensor(i));
    if (!p->is_constant() || p->type().NumElements() != 1) {
      return absl::UnimplementedError(Prefix() +
                                      "the position arrives at run time; Kiln "
                                      "compiles sequences of known layout");
    }
    int64_t pos = p->constant()->GetAsInt64(0);
    const int64_t hi = insert ? size : size - 1;
    if (pos < -size || pos > hi) {
      return absl::InvalidArgumentError(Prefix() + absl::StrCat("position ", pos,
                                                                " is outside the sequence of ",
                                                                size, " tensors"));
    }
    return pos < 0 ? pos + size : pos;
  }
  void SetSequence(int out, Elements e) {
    if (out < node_.output_size() && !node_.output(out).empty()) {
      ctx_.SetSequence(node_.output(out), std::move(e));
    }
  }
  // Tensor result `out`: a fresh value named after the output (an Identity when `v` is
  // another value's, so naming it renames nothing).
  absl::Status SetTensor(int out, Value* v, bool fresh) {
    if (out >= node_.output_size() || node_.output(out).empty()) return absl::OkStatus();
    const std::string name = prefix_ + node_.output(out);
    if (!fresh) {
      KILN_ASSIGN_OR_RETURN(v, ctx_.EmitValue(OpKind::kIdentity, name, {v}));
    }
    v->set_name(name);
    values_[node_.output(out)] = v;
    return absl::OkStatus();
  }
  absl::StatusOr<Value*> Op(OpKind op, std::vector<Value*> in, AttrMap a = {}) {
    return ctx_.EmitValue(op, Name(graph::OpName(op)), std::move(in), std::move(a));
  }

  ImportContext& ctx() { return ctx_; }
  const onnx::NodeProto& node() const { return node_; }

 private:
  ImportContext& ctx_;
  const onnx::NodeProto& node_;
  std::map<std::string, Value*>& values_;
  std::string prefix_;
  int count_ = 0;
};

absl::Status ConcatFromSequence(SequenceImport& s) {
  KILN_ASSIGN_OR_RETURN(Elements e, s.Sequence(0));
  if (e.empty()) return absl::InvalidArgumentError(s.Prefix() + "the sequence is empty");
  const bool new_axis = IntAttr(s.node(), "new_axis", 0) != 0;
  const int64_t rank = e[0]->type().rank() + (new_axis ? 1 : 0);
  int64_t axis = IntAttr(s.node(), "axis", 0);
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(s.Prefix() +
                                      absl::StrCat("axis ", axis, " is outside rank ", rank));
  }
  if (axis < 0) axis += rank;
  if (new_axis) {
    for (Value*& v : e) {
      KILN_ASSIGN_OR_RETURN(
          v, s.Op(OpKind::kUnsqueeze, {v, s.ctx().ConstI64(s.Name("axes"), {axis})}));
    }
  }
  AttrMap a;
  a.Set("axis", axis);
  KILN_ASSIGN_OR_RETURN(Value * out, s.Op(OpKind::kConcat, e, a));
  return s.SetTensor(0, out, /*fresh=*/true);
}

absl::Status SplitToSequence(SequenceImport& s) {
  KILN_ASSIGN_OR_RETURN(Value * x, s.Tensor(0));
  const int64_t rank = x->type().rank();
  int64_t axis = IntAttr(s.node(), "axis", 0);
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(s.Prefix() +
                                      absl::StrCat("axis ", axis, " is outside rank ", rank));
  }
  if (axis < 0) axis += rank;
  const int64_t n = x->type().shape[axis];
  Ints sizes;
  bool squeeze = false;
  if (!s.Has(1)) {
    sizes.assign(static_cast<size_t>(n), 1);
    squeeze = IntAttr(s.node(), "keepdims", 1) == 0;
  } else {
    KILN_ASSIGN_OR_RETURN(Value * split, s.Tensor(1));
    if (!split->is_constant()) {
      return absl::UnimplementedError(s.Prefix() + "split arrives at run time");
    }
    if (split->type().rank() == 0) {
      const int64_t chunk = split->constant()->GetAsInt64(0);
      if (chunk <= 0) return absl::InvalidArgumentError(s.Prefix() + "split must be positive");
      for (int64_t at = 0; at < n; at += chunk) sizes.push_back(std::min(chunk, n - at));
    } else {
      int64_t total = 0;
      for (int64_t i = 0; i < split->type().NumElements(); ++i) {
        sizes.push_back(split->constant()->GetAsInt64(i));
        total += sizes.back();
      }
      if (total != n) {
        return absl::InvalidArgumentError(
            s.Prefix() + absl::StrCat("split sums to ", total, ", the axis has ", n));
      }
    }
  }
  Elements out;
  int64_t at = 0;
  for (int64_t size : sizes) {
    KILN_ASSIGN_OR_RETURN(Value * part,
                          s.Op(OpKind::kSlice, {x, s.ctx().ConstI64(s.Name("starts"), {at}),
                                                s.ctx().ConstI64(s.Name("ends"), {at + size}),
                                                s.ctx().ConstI64(s.Name("axes"), {axis}),
                                                s.ctx().ConstI64(s.Name("steps"), {1})}));
    if (squeeze) {
      KILN_ASSIGN_OR_RETURN(
          part, s.Op(OpKind::kSqueeze, {part, s.ctx().ConstI64(s.Name("axes"), {axis})}));
    }
    out.push_back(part);
    at += size;
  }
  s.SetSequence(0, std::move(out));
  return absl::OkStatus();
}

// SequenceMap: the body once per element; body input 0 reads input 0's element k, the others
// their tensor or their sequence's element k; body output j gives output sequence j.
absl::Status SequenceMap(SequenceImport& s, const SubgraphImporter& import,
                         const std::string& prefix) {
  const onnx::GraphProto* body = nullptr;
  for (const auto& a : s.node().attribute()) {
    if (a.name() == "body" && a.type() == onnx::AttributeProto::GRAPH) body = &a.g();
  }
  if (body == nullptr || body->input_size() != s.node().input_size() ||
      body->output_size() != s.node().output_size()) {
    return absl::InvalidArgumentError(s.Prefix() +
                                      "the body's inputs and outputs do not match "
                                      "the node's");
  }
  KILN_ASSIGN_OR_RETURN(Elements first, s.Sequence(0));
  const size_t length = first.size();
  std::vector<const Elements*> sequences(body->input_size(), nullptr);
  for (int i = 0; i < body->input_size(); ++i) {
    sequences[i] = s.ctx().Sequence(s.node().input(i));
    if (sequences[i] != nullptr && sequences[i]->size() != length) {
      return absl::InvalidArgumentError(s.Prefix() + absl::StrCat("input ", i, " is a sequence of ",
                                                                  sequences[i]->size(),
                                                                  " tensors, input 0 of ", length));
    }
  }
  std::vector<Elements> outs(body->output_size());
  for (size_t k = 0; k < length; ++k) {
    std::map<std::string, Value*> bound;
    for (int i = 0; i < body->input_size(); ++i) {
      if (sequences[i] != nullptr) {
        bound[body->input(i).name()] = (*sequences[i])[k];
      } else {
        KILN_ASSIGN_OR_RETURN(bound[body->input(i).name()], s.Tensor(i));
      }
    }
    KILN_ASSIGN_OR_RETURN(
        Elements result,
        import(*body, bound, absl::StrCat(prefix, NodeDisplayName(s.node()), "/elem", k, "/")));
    KILN_RETURN_IF_ERROR(RequireTensorOutputs(result, *body));
    for (size_t j = 0; j < result.size(); ++j) outs[j].push_back(result[j]);
  }
  for (int j = 0; j < body->output_size(); ++j) s.SetSequence(j, std::move(outs[j]));
  return absl::OkStatus();
}

}  // namespace

bool IsSequenceOp(const std::string& op_type) {
  return op_type == "SequenceEmpty" || op_type == "SequenceConstruct" ||
         op_type == "SequenceInsert" || op_type == "SequenceAt" || op_type == "SequenceErase" ||
         op_type == "SequenceLength" || op_type == "ConcatFromSequence" ||
         op_type == "SplitToSequence" || op_type == "SequenceMap";
}

absl::Status BuildSequenceOp(ImportContext& ctx, const onnx::NodeProto& node,
                             std::map<std::string, Value*>& values, const SubgraphImporter& import,
                             const std::string& prefix) {
  SequenceImport s(ctx, node, values, prefix);
  const std::string& op = node.op_type();
  if (op == "SequenceEmpty") {
    s.SetSequence(0, {});
    return absl::OkStatus();
  }
  if (op == "SequenceConstruct") {
    Elements e;
    for (int i = 0; i < node.input_size(); ++i) {
      KILN_ASSIGN_OR_RETURN(Value * v, s.Tensor(i));
      e.push_back(v);
    }
    s.SetSequence(0, std::move(e));
    return absl::OkStatus();
  }
  if (op == "SequenceInsert") {
    KILN_ASSIGN_OR_RETURN(Elements e, s.Sequence(0));
    KILN_ASSIGN_OR_RETURN(Value * v, s.Tensor(1));
    const int64_t size = static_cast<int64_t>(e.size());
    KILN_ASSIGN_OR_RETURN(int64_t pos, s.Position(2, size, /*insert=*/true, size));
    e.insert(e.begin() + pos, v);
    s.SetSequence(0, std::move(e));
    return absl::OkStatus();
  }
  if (op == "SequenceErase") {
    KILN_ASSIGN_OR_RETURN(Elements e, s.Sequence(0));
    const int64_t size = static_cast<int64_t>(e.size());
    KILN_ASSIGN_OR_RETURN(int64_t pos, s.Position(1, size, /*insert=*/false, size - 1));
    if (size == 0) return absl::InvalidArgumentError(s.Prefix() + "the sequence is empty");
    e.erase(e.begin() + pos);
    s.SetSequence(0, std::move(e));
    return absl::OkStatus();
  }
  if (op == "SequenceAt") {
    KILN_ASSIGN_OR_RETURN(Elements e, s.Sequence(0));
    const int64_t size = static_cast<int64_t>(e.size());
    KILN_ASSIGN_OR_RETURN(int64_t pos, s.Position(1, size, /*insert=*/false, 0));
    return s.SetTensor(0, e[pos], /*fresh=*/false);
  }
  if (op == "SequenceLength") {
    KILN_ASSIGN_OR_RETURN(Elements e, s.Sequence(0));
    Value* n = ctx.ConstScalar(s.Name("length"), DType::kInt64, static_cast<double>(e.size()));
    return s.SetTensor(0, n, /*fresh=*/true);
  }
  if (op == "ConcatFromSequence") return ConcatFromSequence(s);
  if (op == "SplitToSequence") return SplitToSequence(s);
  if (op == "SequenceMap") return SequenceMap(s, import, prefix);
  return absl::InternalError(s.Prefix() + "not a sequence op");
}

}  // namespace kiln::importer
