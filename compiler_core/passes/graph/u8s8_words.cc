// Helpers of the u8s8 passes (see u8s8_words.h).
#include "compiler_core/passes/graph/u8s8_words.h"

#include "compiler_core/passes/graph/rewrite.h"

namespace kiln::passes::u8s8 {

using graph::Node;
using graph::OpKind;
using graph::Value;

namespace {

constexpr int64_t kInt32Code = 6;  // TensorProto.INT32
constexpr int64_t kUInt8Code = 2;  // TensorProto.UINT8

/// The single integer of a scalar-like integer constant, if `v` is one.
std::optional<int64_t> ScalarConstant(const Value* v) {
  if (v == nullptr || !v->is_constant() || IsFloat(v->type().dtype) ||
      v->type().NumElements() != 1) {
    return std::nullopt;
  }
  return v->constant()->GetAsInt64(0);
}

Value* Insert(graph::Graph& graph, Node& before, OpKind op, std::vector<Value*> inputs,
              TensorType type, const graph::AttrMap& attrs) {
  return graph.InsertNodeBefore(&before, op, "", std::move(inputs), {std::move(type)}, attrs)
      ->output(0);
}

}  // namespace

Node* ProducerIs(const Value* v, OpKind op) {
  if (v == nullptr || v->producer() == nullptr || v->producer()->op() != op) return nullptr;
  return v->producer();
}

std::optional<U8Operand> MatchU8Operand(Value* in) {
  U8Operand op;
  if (Node* sub = ProducerIs(in, OpKind::kSub)) {
    Value* zv = sub->input(1);
    // A scalar-like zero point that does not broadcast the operand to a higher rank.
    if (zv == nullptr || zv->type().NumElements() != 1 || zv->type().dtype != DType::kInt32 ||
        sub->input(0) == nullptr || sub->output(0)->type() != sub->input(0)->type()) {
      return std::nullopt;
    }
    if (std::optional<int64_t> zp = ScalarConstant(zv)) {
      op.zero_point = *zp;
    } else {
      op.runtime_zero_point = zv;
    }
    op.chain.push_back(sub);
    in = sub->input(0);
  }
  Node* cast = ProducerIs(in, OpKind::kCast);
  if (cast == nullptr || in->type().dtype != DType::kInt32) return std::nullopt;
  op.chain.push_back(cast);
  op.u = cast->input(0);
  const DType t = op.u->type().dtype;
  if (t != DType::kUInt8 && t != DType::kInt8) return std::nullopt;
  if (t == DType::kInt8) op.zero_point += 128;  // u + 128 is the uint8 value
  return op;
}

std::shared_ptr<Tensor> PackWords(const Tensor& w, int64_t outer, int64_t k, int64_t x,
                                  int64_t rows_per_group, std::vector<int64_t>& sums) {
  const int64_t kw = (k + 3) / 4;
  auto t = Tensor::Zeros(TensorType{DType::kInt32, {outer * kw * x}});
  uint32_t* dst = t->mutable_data<uint32_t>();
  sums.assign((outer / rows_per_group) * x, 0);
  for (int64_t p = 0; p < outer; ++p) {
    for (int64_t i = 0; i < k; ++i) {
      for (int64_t o = 0; o < x; ++o) {
        const int64_t v = w.GetAsInt64((p * k + i) * x + o);
        if (v < -128 || v > 127) return nullptr;
        dst[(p * kw + i / 4) * x + o] |= static_cast<uint32_t>(static_cast<uint8_t>(v))
                                         << (8 * (i % 4));
        sums[(p / rows_per_group) * x + o] += v;
      }
    }
  }
  return t;
}

Value* ToUnsigned(graph::Graph& graph, Node& before, Value* u,
                  std::unordered_map<const Value*, Value*>& converted) {
  if (u->type().dtype != DType::kInt8) return u;
  if (auto it = converted.find(u); it != converted.end()) return it->second;
  graph::AttrMap to_i32, to_u8;
  to_i32.Set("to", kInt32Code);
  to_u8.Set("to", kUInt8Code);
  TensorType wide{DType::kInt32, u->type().shape};
  auto offset = Tensor::Zeros(TensorType{DType::kInt32, {}});
  offset->mutable_data<int32_t>()[0] = 128;
  Value* v = Insert(graph, before, OpKind::kCast, {u}, wide, to_i32);
  v = Insert(graph, before, OpKind::kAdd,
             {v, graph.AddConstant(before.name() + "_u8_offset", std::move(offset))}, wide, {});
  v = Insert(graph, before, OpKind::kCast, {v}, TensorType{DType::kUInt8, u->type().shape}, to_u8);
  converted[u] = v;
  return v;
}

Value* BitcastToWords(graph::Graph& graph, Node& before, Value* u) {
  graph::AttrMap attrs;
  attrs.Set("to", kInt32Code);
  std::vector<int64_t> shape = u->type().shape;
  shape.back() /= 4;
  return Insert(graph, before, OpKind::kBitcast, {u}, TensorType{DType::kInt32, shape}, attrs);
}

void ReplaceContraction(graph::Graph& graph, Node& node, Value* result,
                        const std::vector<Node*>& chain) {
  Rewriter(graph).ReplaceAllUsesWith(node.output(0), result);
  graph.RemoveNode(&node);
  for (Node* n : chain) {
    if (!IsUnused(graph, n->output(0))) break;
    graph.RemoveNode(n);
  }
}

}  // namespace kiln::passes::u8s8
