// Builders of windowed ops (Conv, MaxPool, AveragePool, LpPool): every window attribute
// explicit and auto_pad resolved into explicit pads.
#include "absl/strings/str_cat.h"
#include "compiler_core/importer/onnx/import_context.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::importer {

using graph::AttrMap;
using graph::AutoPad;
using graph::Node;
using graph::OpKind;
using graph::Value;

namespace {

using Ints = std::vector<int64_t>;

absl::Status CheckLength(const OnnxNode& node, const char* attr, const Ints& v, size_t n) {
  if (v.size() != n) {
    return absl::InvalidArgumentError(node.Prefix() + absl::StrCat("attribute '", attr, "' has ",
                                                                   v.size(), " values, expected ",
                                                                   n));
  }
  return absl::OkStatus();
}

// Explicit pads for `win.auto_pad` (NOTSET keeps the pads attribute).
absl::StatusOr<Ints> ResolvePads(const OnnxNode& node, const graph::SlidingWindowAttrs& win,
                                 const Ints& in, const Ints& kernel, const Ints& strides,
                                 const Ints& dilations) {
  size_t n = in.size();
  const AutoPad auto_pad = win.auto_pad;
  if (auto_pad == AutoPad::kNotSet) {
    Ints pads = graph::OrFill(win.pads, 2 * n, 0);
    KILN_RETURN_IF_ERROR(CheckLength(node, "pads", pads, 2 * n));
    return pads;
  }
  Ints pads(2 * n, 0);
  if (auto_pad == AutoPad::kValid) return pads;
  for (size_t i = 0; i < n; ++i) {
    if (in[i] == kSymbolicDim) {
      // SAME pads depend on the input size: per run, where the dim is symbolic.
      return absl::UnimplementedError(
          node.Prefix() + absl::StrCat("auto_pad SAME over the symbolic spatial dim ", i));
    }
    int64_t out = (in[i] + strides[i] - 1) / strides[i];
    int64_t span = (kernel[i] - 1) * dilations[i] + 1;
    int64_t total = std::max<int64_t>(0, (out - 1) * strides[i] + span - in[i]);
    int64_t small = total / 2, big = total - total / 2;
    pads[i] = auto_pad == AutoPad::kSameUpper ? small : big;
    pads[i + n] = auto_pad == AutoPad::kSameUpper ? big : small;
  }
  return pads;
}

}  // namespace

absl::StatusOr<BuiltOutputs> BuildWindowOp(ImportContext& ctx, const OnnxNode& node) {
  Value* x = node.input(0);
  int64_t rank = x->type().rank();
  if (rank < 3) {
    return absl::InvalidArgumentError(
        node.Prefix() + absl::StrCat("input 0 has rank ", rank, ", expected at least 3"));
  }
  size_t n = static_cast<size_t>(rank - 2);
  Ints in(x->type().shape.begin() + 2, x->type().shape.end());
  const bool conv = node.op == OpKind::kConv;
  graph::ConvAttrs conv_attrs;
  graph::PoolAttrs pool_attrs;
  if (conv) {
    KILN_ASSIGN_OR_RETURN(conv_attrs, graph::ConvAttrs::Parse(node.attrs, node.Prefix()));
  } else {
    KILN_ASSIGN_OR_RETURN(pool_attrs, graph::PoolAttrs::Parse(node.attrs, node.Prefix()));
  }
  const graph::SlidingWindowAttrs win = conv ? graph::SlidingWindowAttrs::From(conv_attrs)
                                             : graph::SlidingWindowAttrs::From(pool_attrs);
  Ints kernel;
  if (conv) {
    const TensorType& w = node.input(1)->type();
    if (w.rank() != rank) {
      return absl::InvalidArgumentError(
          node.Prefix() + absl::StrCat("input 1 has rank ", w.rank(), ", expected ", rank));
    }
    kernel = win.kernel_shape.empty() ? Ints(w.shape.begin() + 2, w.shape.end()) : win.kernel_shape;
  } else {
    kernel = win.kernel_shape;  // required: PoolAttrs::Parse checked it is there
  }
  Ints strides = graph::OrFill(win.strides, n, 1);
  Ints dilations = graph::OrFill(win.dilations, n, 1);
  KILN_RETURN_IF_ERROR(CheckLength(node, "kernel_shape", kernel, n));
  KILN_RETURN_IF_ERROR(CheckLength(node, "strides", strides, n));
  KILN_RETURN_IF_ERROR(CheckLength(node, "dilations", dilations, n));
  for (size_t i = 0; i < n; ++i) {
    if (strides[i] <= 0 || dilations[i] <= 0) {
      return absl::InvalidArgumentError(node.Prefix() +
                                        "strides and dilations must be positive");
    }
  }
  KILN_ASSIGN_OR_RETURN(Ints pads, ResolvePads(node, win, in, kernel, strides, dilations));
  AttrMap a;
  a.Set("kernel_shape", kernel);
  a.Set("strides", strides);
  a.Set("pads", pads);
  a.Set("dilations", dilations);
  std::vector<Value*> inputs{x};
  int num_outputs = 1;
  if (conv) {
    a.Set("group", conv_attrs.group);
    inputs.push_back(node.input(1));
    if (node.input(2) != nullptr) inputs.push_back(node.input(2));
  } else {
    a.Set("ceil_mode", int64_t{pool_attrs.ceil_mode});
    if (node.op == OpKind::kAveragePool) {
      a.Set("count_include_pad", int64_t{pool_attrs.count_include_pad});
    }
    if (node.op == OpKind::kLpPool) a.Set("p", pool_attrs.p);
    if (node.proto->output_size() > 1 && !node.proto->output(1).empty() &&
        ctx.IsUsed(node.proto->output(1))) {
      if (node.op != OpKind::kMaxPool) {
        return absl::InvalidArgumentError(node.Prefix() + "has no output 1");
      }
      // MaxPool's Indices: flattened index into the input, row-major (storage_order 0) or
      // column-major over the spatial dims (storage_order 1).
      a.Set("storage_order", pool_attrs.storage_order);
      num_outputs = 2;
    }
  }
  KILN_ASSIGN_OR_RETURN(Node * out, ctx.Emit(node.op, node.name, inputs, a, num_outputs));
  if (num_outputs == 2) return BuiltOutputs{out->output(0), out->output(1)};
  return BuiltOutputs{out->output(0)};
}

}  // namespace kiln::importer
