// The conv-u8s8 pass: int32 convolutions of 8-bit activations and weights as u8s8 convolutions
// on packed words (see conv_u8s8.h).
#include "compiler_core/passes/graph/conv_u8s8.h"

#include <algorithm>
#include <limits>

#include "compiler_core/ir/graph/layout_rules.h"
#include "compiler_core/passes/graph/rewrite.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::passes {
namespace {

using graph::Graph;
using graph::Node;
using graph::OpKind;
using graph::Value;
using Shape = std::vector<int64_t>;

constexpr int64_t kInt32Code = 6;  // TensorProto.INT32
constexpr int64_t kUInt8Code = 2;  // TensorProto.UINT8

/// The node producing `v` if it is `op`, else null.
Node* ProducerIs(const Value* v, OpKind op) {
  if (v == nullptr || v->producer() == nullptr || v->producer()->op() != op) return nullptr;
  return v->producer();
}

/// The single integer of a scalar-like integer constant, if `v` is one.
std::optional<int64_t> ScalarConstant(const Value* v) {
  if (v == nullptr || !v->is_constant() || IsFloat(v->type().dtype) ||
      v->type().NumElements() != 1) {
    return std::nullopt;
  }
  return v->constant()->GetAsInt64(0);
}

std::shared_ptr<Tensor> ScalarI32(int32_t value) {
  auto t = Tensor::Zeros(TensorType{DType::kInt32, {}});
  t->mutable_data<int32_t>()[0] = value;
  return t;
}

/// What a matched convolution reads: the 8-bit tensor, its zero point, and the nodes between
/// them and the conv (removed when nothing else reads them).
struct Operand {
  Value* u = nullptr;  // u8 or i8, plain [N, C, H, W] or blocked [N, Cb, H, W, B]
  int64_t zero_point = 0;
  std::vector<Node*> chain;  // conv input's producers, nearest first
};

/// Matches [LayoutTransform(] [Sub(] Cast<i32>(u) [, zp)] [)] at the conv's input.
std::optional<Operand> MatchOperand(Value* in, int64_t block) {
  Operand op;
  if (Node* lt = ProducerIs(in, OpKind::kLayoutTransform)) {
    if (graph::LayoutBlock(lt->attrs().GetString("dst_layout", "")) != block) return std::nullopt;
    op.chain.push_back(lt);
    in = lt->input(0);
  }
  if (Node* sub = ProducerIs(in, OpKind::kSub)) {
    std::optional<int64_t> zp = ScalarConstant(sub->input(1));
    if (!zp) return std::nullopt;
    op.zero_point = *zp;
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
  if (op.zero_point < 0 || op.zero_point > 255) return std::nullopt;
  return op;
}

/// Packed i32 weights [OCb, ICb, KH, KW, ICI, x] as words [OCb, ICb, KH, KW, ceil(ICI/4), x]
/// (byte k of word j: input channel 4j + k), with each output channel's weight sum; null if
/// a weight is outside [-128, 127].
std::shared_ptr<Tensor> PackWords(const Tensor& w, std::vector<int64_t>& sums) {
  const Shape& s = w.type.shape;
  const int64_t outer = s[0] * s[1] * s[2] * s[3], ici = s[4], x = s[5];
  const int64_t icw = (ici + 3) / 4;
  auto t = Tensor::Zeros(TensorType{DType::kInt32, {s[0], s[1], s[2], s[3], icw, x}});
  const int32_t* src = w.data<int32_t>();
  uint32_t* dst = t->mutable_data<uint32_t>();
  sums.assign(s[0] * x, 0);
  const int64_t per_ocb = s[1] * s[2] * s[3];
  for (int64_t p = 0; p < outer; ++p) {
    for (int64_t i = 0; i < ici; ++i) {
      for (int64_t o = 0; o < x; ++o) {
        const int32_t v = src[(p * ici + i) * x + o];
        if (v < -128 || v > 127) return nullptr;
        dst[(p * icw + i / 4) * x + o] |= static_cast<uint32_t>(static_cast<uint8_t>(v))
                                          << (8 * (i % 4));
        sums[(p / per_ocb) * x + o] += v;
      }
    }
  }
  return t;
}

class U8S8Rewriter {
 public:
  explicit U8S8Rewriter(Graph& graph) : graph_(graph) {}

  bool Rewrite(Node& conv) {
    if (conv.op() != OpKind::kConv || conv.attrs().Has("quant") ||
        conv.attrs().GetInt("group", 1) != 1 || conv.output(0)->type().dtype != DType::kInt32) {
      return false;
    }
    const int64_t x = graph::LayoutBlock(conv.attrs().GetString("layout", ""));
    const Value* w = conv.input(1);
    const Value* bias = conv.input(2);
    if (x <= 0 || w == nullptr || !w->is_constant() || w->type().rank() != 6 ||
        (bias != nullptr && !bias->is_constant())) {
      return false;
    }
    std::optional<Operand> op = MatchOperand(conv.input(0), x);
    if (!op) return false;
    const Shape& ws = w->type().shape;
    const int64_t ici = ws[4], icw = (ici + 3) / 4, block = 4 * icw;
    const TensorType& ut = op->u->type();
    if (ut.rank() == 5 ? ut.shape[4] != block || ici != block || ut.shape[1] != ws[1]
                       : ut.rank() != 4 || (ut.shape[1] + block - 1) / block != ws[1]) {
      return false;
    }
    std::vector<int64_t> sums;
    std::shared_ptr<Tensor> words = PackWords(*w->constant(), sums);
    if (words == nullptr) return false;
    auto new_bias = Tensor::Zeros(TensorType{DType::kInt32, {ws[0] * x}});
    for (int64_t c = 0; c < ws[0] * x; ++c) {
      const int64_t b =
          (bias != nullptr ? bias->constant()->GetAsInt64(c) : 0) - op->zero_point * sums[c];
      if (b < std::numeric_limits<int32_t>::min() || b > std::numeric_limits<int32_t>::max()) {
        return false;
      }
      new_bias->mutable_data<int32_t>()[c] = static_cast<int32_t>(b);
    }

    Value* u = op->u;
    if (u->type().dtype == DType::kInt8) {  // uint8(u + 128), as the words hold unsigned bytes
      graph::AttrMap to_i32, to_u8;
      to_i32.Set("to", kInt32Code);
      to_u8.Set("to", kUInt8Code);
      TensorType wide{DType::kInt32, u->type().shape};
      Value* v = Insert(conv, OpKind::kCast, {u}, wide, to_i32);
      v = Insert(conv, OpKind::kAdd,
                 {v, graph_.AddConstant(conv.name() + "_u8_offset", ScalarI32(128))}, wide, {});
      u = Insert(conv, OpKind::kCast, {v}, TensorType{DType::kUInt8, u->type().shape}, to_u8);
    }
    if (u->type().rank() == 4) {
      graph::AttrMap attrs;
      attrs.Set("src_layout", std::string("NCHW"));
      attrs.Set("dst_layout", graph::BlockedLayoutName(block));
      u = Insert(conv, OpKind::kLayoutTransform, {u}, graph::BlockedType(u->type(), block), attrs);
    }
    graph::AttrMap bitcast;
    bitcast.Set("to", kInt32Code);
    Shape word_shape = u->type().shape;
    word_shape.back() /= 4;
    Value* in_words =
        Insert(conv, OpKind::kBitcast, {u}, TensorType{DType::kInt32, word_shape}, bitcast);
    graph::AttrMap attrs = conv.attrs();
    attrs.Set("quant", std::string("u8s8"));
    attrs.Set("pad_value", static_cast<int64_t>(static_cast<int32_t>(
                               static_cast<uint32_t>(op->zero_point) * 0x01010101u)));
    Value* wv = graph_.AddConstant(w->name() + "_u8s8", std::move(words));
    Value* bv = graph_.AddConstant(conv.name() + "_bias_u8s8", std::move(new_bias));
    Node* q = graph_.InsertNodeBefore(&conv, OpKind::kConv, conv.name(), {in_words, wv, bv},
                                      {conv.output(0)->type()}, attrs);
    graph_.ReplaceAllUsesWith(conv.output(0), q->output(0));
    graph_.RemoveNode(&conv);
    for (Node* n : op->chain) {
      if (!IsUnused(graph_, n->output(0))) break;
      graph_.RemoveNode(n);
    }
    return true;
  }

 private:
  Value* Insert(Node& before, OpKind op, std::vector<Value*> inputs, TensorType type,
                graph::AttrMap attrs) {
    return graph_.InsertNodeBefore(&before, op, "", std::move(inputs), {std::move(type)}, attrs)
        ->output(0);
  }

  Graph& graph_;
};

}  // namespace

absl::StatusOr<bool> ConvU8S8::Run(Graph& graph) {
  KILN_RETURN_IF_ERROR(CheckRunsBeforeFusion(graph, name()));
  if (!options_.int8_dot4) return false;
  U8S8Rewriter rewriter(graph);
  bool changed = false;
  for (Node* node : graph.nodes()) changed |= rewriter.Rewrite(*node);
  return changed;
}

}  // namespace kiln::passes
