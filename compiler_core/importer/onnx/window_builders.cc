// Builders of windowed ops (Conv, MaxPool, AveragePool, LpPool): every window attribute
// explicit and auto_pad resolved into explicit pads.
#include "absl/strings/str_cat.h"
#include "compiler_core/importer/onnx/import_context.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::importer {

using graph::AttrMap;
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

// Explicit pads for `auto_pad` (NOTSET keeps the pads attribute).
absl::StatusOr<Ints> ResolvePads(const OnnxNode& node, const Ints& in, const Ints& kernel,
                                 const Ints& strides, const Ints& dilations) {
  size_t n = in.size();
  std::string auto_pad = node.attrs.GetString("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    Ints pads = node.attrs.GetInts("pads", Ints(2 * n, 0));
    KILN_RETURN_IF_ERROR(CheckLength(node, "pads", pads, 2 * n));
    return pads;
  }
  Ints pads(2 * n, 0);
  if (auto_pad == "VALID") return pads;
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") {
    return absl::InvalidArgumentError(node.Prefix() +
                                      absl::StrCat("unknown auto_pad '", auto_pad, "'"));
  }
  for (size_t i = 0; i < n; ++i) {
    int64_t out = (in[i] + strides[i] - 1) / strides[i];
    int64_t span = (kernel[i] - 1) * dilations[i] + 1;
    int64_t total = std::max<int64_t>(0, (out - 1) * strides[i] + span - in[i]);
    int64_t small = total / 2, big = total - total / 2;
    pads[i] = auto_pad == "SAME_UPPER" ? small : big;
    pads[i + n] = auto_pad == "SAME_UPPER" ? big : small;
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
  Ints kernel;
  if (node.op == OpKind::kConv) {
    const TensorType& w = node.input(1)->type();
    if (w.rank() != rank) {
      return absl::InvalidArgumentError(
          node.Prefix() + absl::StrCat("input 1 has rank ", w.rank(), ", expected ", rank));
    }
    kernel = node.attrs.GetInts("kernel_shape", Ints(w.shape.begin() + 2, w.shape.end()));
  } else {
    if (!node.attrs.Has("kernel_shape")) {
      return absl::InvalidArgumentError(node.Prefix() + "missing attribute 'kernel_shape'");
    }
    kernel = node.attrs.GetInts("kernel_shape");
  }
  Ints strides = node.attrs.GetInts("strides", Ints(n, 1));
  Ints dilations = node.attrs.GetInts("dilations", Ints(n, 1));
  KILN_RETURN_IF_ERROR(CheckLength(node, "kernel_shape", kernel, n));
  KILN_RETURN_IF_ERROR(CheckLength(node, "strides", strides, n));
  KILN_RETURN_IF_ERROR(CheckLength(node, "dilations", dilations, n));
  for (size_t i = 0; i < n; ++i) {
    if (strides[i] <= 0 || dilations[i] <= 0) {
      return absl::InvalidArgumentError(node.Prefix() +
                                        "strides and dilations must be positive");
    }
  }
  KILN_ASSIGN_OR_RETURN(Ints pads, ResolvePads(node, in, kernel, strides, dilations));
  AttrMap a;
  a.Set("kernel_shape", kernel);
  a.Set("strides", strides);
  a.Set("pads", pads);
  a.Set("dilations", dilations);
  std::vector<Value*> inputs{x};
  int num_outputs = 1;
  if (node.op == OpKind::kConv) {
    a.Set("group", node.attrs.GetInt("group", 1));
    inputs.push_back(node.input(1));
    if (node.input(2) != nullptr) inputs.push_back(node.input(2));
  } else {
    a.Set("ceil_mode", node.attrs.GetInt("ceil_mode", 0));
    if (node.op == OpKind::kAveragePool) {
      a.Set("count_include_pad", node.attrs.GetInt("count_include_pad", 0));
    }
    if (node.op == OpKind::kLpPool) a.Set("p", node.attrs.GetInt("p", 2));
    if (node.proto->output_size() > 1 && !node.proto->output(1).empty() &&
        ctx.IsUsed(node.proto->output(1))) {
      if (node.op != OpKind::kMaxPool) {
        return absl::InvalidArgumentError(node.Prefix() + "has no output 1");
      }
      // MaxPool's Indices: flattened index into the input, row-major (storage_order 0) or
      // column-major over the spatial dims (storage_order 1).
      a.Set("storage_order", node.attrs.GetInt("storage_order", 0));
      num_outputs = 2;
    }
  }
  KILN_ASSIGN_OR_RETURN(Node * out, ctx.Emit(node.op, node.name, inputs, a, num_outputs));
  if (num_outputs == 2) return BuiltOutputs{out->output(0), out->output(1)};
  return BuiltOutputs{out->output(0)};
}

}  // namespace kiln::importer
