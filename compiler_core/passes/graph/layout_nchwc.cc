// The layout-nchwc pass: converts conv chains to NCHW<x>c (see layout_nchwc.h).
#include "compiler_core/passes/graph/layout_nchwc.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/layout_rules.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/passes/graph/rewrite.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::passes {
namespace {

using graph::Graph;
using graph::Node;
using graph::OpKind;
using graph::Value;
using Shape = std::vector<int64_t>;
using BlockedMap = std::unordered_map<const Value*, Value*>;  // plain value → blocked value

/// Elementwise ops that run unchanged on blocked tensors: finite on finite inputs, so padded
/// channels never turn into NaN or Inf.
bool IsLayoutAgnostic(OpKind op) {
  switch (op) {
    case OpKind::kRelu: case OpKind::kClip: case OpKind::kAdd: case OpKind::kSub:
    case OpKind::kMul: case OpKind::kMax: case OpKind::kMin: case OpKind::kLeakyRelu:
    case OpKind::kHardSigmoid: case OpKind::kHardSwish: case OpKind::kSigmoid:
    case OpKind::kTanh:
    case OpKind::kCast:
    case OpKind::kRound:
    case OpKind::kDiv:  // only by a scalar-like divisor (ConvertElementwise checks)
      return true;
    default:
      return false;
  }
}

/// Element types of blocked values: float32, int32 (the accumulators of quantized
/// convolutions) and the 8-bit integers of quantized activations between them.
bool IsBlockableType(DType t) {
  return t == DType::kFloat32 || t == DType::kInt32 || t == DType::kUInt8 || t == DType::kInt8;
}

/// Constants the repacking below moves as 4-byte words: conv weights and biases, re-laid-out
/// channel constants.
bool IsWordType(DType t) { return t == DType::kFloat32 || t == DType::kInt32; }

/// An NCHW tensor of a blockable type with a static channel count (N, H and W may be
/// symbolic).
bool IsPlainBlockable(const Value* v) {
  return v != nullptr && IsBlockableType(v->type().dtype) && v->type().rank() == 4 &&
         v->type().shape[1] != kSymbolicDim;
}

bool AllZero(const Shape& s) {
  return std::all_of(s.begin(), s.end(), [](int64_t d) { return d == 0; });
}

bool AllOnes(const Shape& s) {
  return std::all_of(s.begin(), s.end(), [](int64_t d) { return d == 1; });
}

/// OIHW weights → [OCb, ICb, KH, KW, ICI, x], zero-padded. Depthwise ([C, 1, KH, KW]):
/// [Cb, 1, KH, KW, 1, x].
std::shared_ptr<Tensor> PackWeights(const Tensor& w, int64_t x, int64_t ici, bool depthwise) {
  const Shape& s = w.type.shape;
  const int64_t oc = s[0], ic = s[1], kh = s[2], kw = s[3], k = kh * kw;
  const int64_t ocb = (oc + x - 1) / x;
  const int64_t icb = depthwise ? 1 : (ic + ici - 1) / ici;
  if (depthwise) ici = 1;
  auto t = Tensor::Zeros(TensorType{w.type.dtype, {ocb, icb, kh, kw, ici, x}});
  const uint32_t* src = w.data<uint32_t>();
  uint32_t* dst = t->mutable_data<uint32_t>();
  for (int64_t o = 0; o < oc; ++o) {
    for (int64_t i = 0; i < ic; ++i) {
      for (int64_t p = 0; p < k; ++p) {
        const int64_t di = depthwise ? 0 : i;
        dst[(((o / x) * icb + di / ici) * k + p) * ici * x + (di % ici) * x + o % x] =
            src[(o * ic + i) * k + p];
      }
    }
  }
  return t;
}

/// [C] → [ceil(C/x)*x], zero-padded.
std::shared_ptr<Tensor> PadBias(const Tensor& b, int64_t x) {
  const int64_t c = b.type.shape[0];
  auto t = Tensor::Zeros(TensorType{b.type.dtype, {(c + x - 1) / x * x}});
  std::copy(b.data<uint32_t>(), b.data<uint32_t>() + c, t->mutable_data<uint32_t>());
  return t;
}

/// A constant operand broadcast against a plain [N, C, H, W] result, re-laid out to broadcast
/// against the blocked result; null if its shape does not allow it.
std::shared_ptr<Tensor> RelayoutConstant(const Tensor& c, int64_t channels, int64_t x) {
  Shape s = c.type.shape;
  if (s.size() > 4) return nullptr;
  while (s.size() < 4) s.insert(s.begin(), 1);
  if (s[1] == 1) {
    // Nothing varies along C: the same data broadcasts with a trailing 1.
    auto t = std::make_shared<Tensor>(c);
    s.push_back(1);
    t->type.shape = s;
    return t;
  }
  if (s[1] != channels || !IsWordType(c.type.dtype)) return nullptr;
  const int64_t cb = (channels + x - 1) / x, sp = s[2] * s[3];
  auto t = Tensor::Zeros(TensorType{c.type.dtype, {s[0], cb, s[2], s[3], x}});
  const uint32_t* src = c.data<uint32_t>();
  uint32_t* dst = t->mutable_data<uint32_t>();
  for (int64_t a = 0; a < s[0]; ++a) {
    for (int64_t ch = 0; ch < channels; ++ch) {
      for (int64_t p = 0; p < sp; ++p) {
        dst[((a * cb + ch / x) * sp + p) * x + ch % x] = src[(a * channels + ch) * sp + p];
      }
    }
  }
  return t;
}

/// Converts nodes one at a time, inserting each blocked node right before its original.
class Converter {
 public:
  Converter(Graph& graph, int64_t x) : graph_(graph), x_(x) {}

  /// The blocked result of `node`, inserted before it, or null if it stays plain.
  Value* Convert(Node& node) {
    if (node.outputs().empty() || !IsPlainBlockable(node.output(0))) return nullptr;
    for (size_t i = 1; i < node.outputs().size(); ++i) {
      if (!IsUnused(graph_, node.output(static_cast<int>(i)))) return nullptr;
    }
    switch (node.op()) {
      case OpKind::kConv:
        return ConvertConv(node);
      case OpKind::kMaxPool: case OpKind::kAveragePool: case OpKind::kGlobalAveragePool:
      case OpKind::kGlobalMaxPool:
        return ConvertPool(node);
      case OpKind::kConcat:
        return ConvertConcat(node);
      default:
        return IsLayoutAgnostic(node.op()) ? ConvertElementwise(node) : nullptr;
    }
  }

  BlockedMap& blocked() { return blocked_; }

  /// A LayoutTransform of `blocked` back to `plain`'s type, before `before`.
  Value* Unblock(Node* before, Value* blocked, const Value* plain) {
    graph::AttrMap attrs;
    attrs.Set("src_layout", graph::BlockedLayoutName(x_));
    attrs.Set("dst_layout", std::string("NCHW"));
    attrs.Set("channels", plain->type().shape[1]);
    return graph_
        .InsertNodeBefore(before, OpKind::kLayoutTransform, "", {blocked}, {plain->type()},
                          attrs)
        ->output(0);
  }

 private:
  bool Blocked(const Value* v) const { return v != nullptr && blocked_.count(v) != 0; }

  /// The blocked form of plain `v` (a LayoutTransform before `before` if none exists yet).
  Value* BlockOf(Node& before, Value* v) {
    auto it = blocked_.find(v);
    if (it != blocked_.end()) return it->second;
    graph::AttrMap attrs;
    attrs.Set("src_layout", std::string("NCHW"));
    attrs.Set("dst_layout", graph::BlockedLayoutName(x_));
    Value* b = graph_
                   .InsertNodeBefore(&before, OpKind::kLayoutTransform, "", {v},
                                     {graph::BlockedType(v->type(), x_)}, attrs)
                   ->output(0);
    blocked_[v] = b;
    return b;
  }

  Value* Constant(const std::string& name, std::shared_ptr<const Tensor> t) {
    return graph_.AddConstant(name, std::move(t));
  }

  Value* Emit(Node& node, std::vector<Value*> inputs, graph::AttrMap attrs) {
    attrs.Set("layout", graph::BlockedLayoutName(x_));
    return Finish(node, std::move(inputs), std::move(attrs));
  }

  Value* Finish(Node& node, std::vector<Value*> inputs, graph::AttrMap attrs) {
    Node* n = graph_.InsertNodeBefore(&node, node.op(), node.name(), std::move(inputs),
                                      {graph::BlockedType(node.output(0)->type(), x_)}, attrs);
    return n->output(0);
  }

  Value* ConvertConv(Node& node) {
    Value* in = node.input(0);
    const Value* w = node.input(1);
    const Value* b = node.input(2);
    const graph::ConvAttrs a = graph::ConvAttrs::Of(node);
    if (!IsPlainBlockable(in) || !IsWordType(in->type().dtype) || w == nullptr ||
        !w->is_constant() || w->type().rank() != 4 || w->type().dtype != in->type().dtype ||
        (b != nullptr && !b->is_constant()) || a.auto_pad != graph::AutoPad::kNotSet) {
      return nullptr;
    }
    const int64_t group = a.group;
    const int64_t ic = in->type().shape[1], oc = w->type().shape[0];
    const bool depthwise = group > 1 && group == ic && oc == ic && w->type().shape[1] == 1;
    if (group != 1 && !depthwise) return nullptr;
    // Fewer output channels than half a block would waste most lanes on padding.
    if (2 * oc < x_) return nullptr;
    // A plain input with fewer channels than a block (the RGB stem) is read in place.
    const bool plain_input = !Blocked(in) && !depthwise && ic < x_;
    Value* xin = plain_input ? in : BlockOf(node, in);
    const int64_t ici = plain_input ? ic : x_;
    graph::AttrMap attrs = node.attrs();
    const std::vector<int64_t> pads = graph::OrFill(a.pads, 4, 0);
    if (!in->type().is_static() && !AllZero(pads)) {
      // Symbolic spatial dims: the padded input is a tensor of its own (a Pad node), since a
      // kernel's padded workspace has a static size and a select in the update nest costs the
      // register block two vector ops per FMA.
      xin = PadSpatial(node, xin, pads);
      attrs.Set("pads", std::vector<int64_t>(4, 0));
    }
    std::vector<Value*> inputs = {
        xin, Constant(w->name() + "_packed", PackWeights(*w->constant(), x_, ici, depthwise))};
    if (b != nullptr) inputs.push_back(Constant(b->name() + "_padded", PadBias(*b->constant(), x_)));
    return Emit(node, std::move(inputs), std::move(attrs));
  }

  /// A Pad node before `node` that zero-pads the spatial dims (2 and 3) of `v` ([N, C, H, W]
  /// or blocked [N, Cb, H, W, x]) by `pads` (top, left, bottom, right).
  Value* PadSpatial(Node& node, Value* v, const std::vector<int64_t>& pads) {
    const int64_t rank = v->type().rank();
    auto t = Tensor::Zeros(TensorType{DType::kInt64, {2 * rank}});
    int64_t* p = t->mutable_data<int64_t>();
    p[2] = pads[0];
    p[3] = pads[1];
    p[rank + 2] = pads[2];
    p[rank + 3] = pads[3];
    std::vector<sym::Expr> dims = v->type().dims();
    dims[2] = dims[2] + sym::Expr(pads[0] + pads[2]);
    dims[3] = dims[3] + sym::Expr(pads[1] + pads[3]);
    graph::AttrMap attrs;
    attrs.Set("mode", std::string("constant"));
    return graph_
        .InsertNodeBefore(&node, OpKind::kPad, node.name() + "/pad",
                          {v, Constant(node.name() + "/pads", std::move(t)), nullptr},
                          {TensorType::WithDims(v->type().dtype, dims)}, attrs)
        ->output(0);
  }

  Value* ConvertPool(Node& node) {
    // MaxPool and AveragePool with explicit pads; the global pools have none.
    const bool global =
        node.op() == OpKind::kGlobalAveragePool || node.op() == OpKind::kGlobalMaxPool;
    if (!Blocked(node.input(0)) ||
        (!global && graph::PoolAttrs::Of(node).auto_pad != graph::AutoPad::kNotSet)) {
      return nullptr;
    }
    return Emit(node, {blocked_[node.input(0)]}, node.attrs());
  }

  Value* ConvertConcat(Node& node) {
    const int64_t axis = graph::ConcatAttrs::Of(node).axis;
    if (axis != 1 && axis != -3) return nullptr;
    std::vector<Value*> inputs;
    for (int i = 0; i < node.num_inputs(); ++i) {
      Value* v = node.input(i);
      if (!Blocked(v)) return nullptr;
      if (i + 1 < node.num_inputs() && v->type().shape[1] % x_ != 0) return nullptr;
      inputs.push_back(blocked_[v]);
    }
    graph::AttrMap attrs = node.attrs();
    attrs.Set("axis", int64_t{1});
    return Finish(node, std::move(inputs), attrs);
  }

  Value* ConvertElementwise(Node& node) {
    const TensorType& out = node.output(0)->type();
    bool any_blocked = false;
    for (const Value* v : node.inputs()) any_blocked |= Blocked(v);
    if (!any_blocked) return nullptr;
    // A channel-varying divisor would divide the padded channels by zero.
    if (node.op() == OpKind::kDiv && !AllOnes(node.input(1)->type().shape)) return nullptr;
    std::vector<Value*> inputs;
    for (Value* v : node.inputs()) {
      if (v == nullptr || AllOnes(v->type().shape)) {
        inputs.push_back(v);  // omitted, scalar-like or size-1 operands broadcast as they are
      } else if (Blocked(v) && v->type().rank() == 4 && v->type().shape[1] == out.shape[1]) {
        // Blocked operands keep their channel dim, so they broadcast as before.
        inputs.push_back(blocked_[v]);
      } else if (v->is_constant()) {
        auto t = RelayoutConstant(*v->constant(), out.shape[1], x_);
        if (t == nullptr) return nullptr;
        inputs.push_back(Constant(v->name() + "_blocked", std::move(t)));
      } else if (v->type() == out) {
        inputs.push_back(BlockOf(node, v));
      } else {
        return nullptr;
      }
    }
    return Finish(node, std::move(inputs), node.attrs());
  }

  Graph& graph_;
  const int64_t x_;
  BlockedMap blocked_;
};

}  // namespace

absl::StatusOr<bool> LayoutNchwc::Run(Graph& graph) {
  KILN_RETURN_IF_ERROR(CheckRunsBeforeFusion(graph, name()));
  if (options_.f32_lanes < 4) return false;
  Converter converter(graph, options_.f32_lanes);
  std::vector<Node*> converted;
  for (Node* node : graph.nodes()) {
    Value* b = converter.Convert(*node);
    if (b == nullptr) continue;
    converter.blocked()[node->output(0)] = b;
    converted.push_back(node);
  }
  if (converted.empty()) return false;
  // Edges: a converted value that a plain node reads or the graph returns is unblocked once.
  const std::unordered_set<const Node*> is_converted(converted.begin(), converted.end());
  Rewriter rewriter(graph);
  for (Node* node : converted) {
    Value* v = node->output(0);
    bool plain_use = graph.IsGraphOutput(v);
    for (const Node* user : graph.Users(v)) plain_use |= is_converted.count(user) == 0;
    if (!plain_use) continue;
    rewriter.ReplaceAllUsesWith(v, converter.Unblock(node, converter.blocked()[v], v));
  }
  // The originals are now unused; erase them last to first so each has no users left.
  for (auto it = converted.rbegin(); it != converted.rend(); ++it) {
    graph.RemoveNode(*it);
  }
  return true;
}

}  // namespace kiln::passes
