// Quantization ops decomposed into exact graph ops at import (ONNX operator spec):
//   QuantizeLinear:        y = saturate(round_half_even(x / scale) + zero_point)
//   DequantizeLinear:      y = (x - zero_point) * scale
//   DynamicQuantizeLinear: uint8 y, scale = (max(x_max, 0) - min(x_min, 0)) / 255,
//                          zero_point = round(saturate(0 - x_min / scale))
//   MatMulInteger:         int32 (A - a_zero_point) @ (B - b_zero_point)
//   QLinearMatMul:         saturate(round(MatMulInteger * (a_scale * b_scale / y_scale)) + y_zp)
// Per-axis scales and zero points (1-D along `axis`) are reshaped to broadcast against x.
#include "compiler_core/importer/onnx/quant_builders.h"

#include "compiler_core/importer/onnx/decomposer.h"

#include "absl/strings/str_cat.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::importer {
namespace {

using graph::AttrMap;
using graph::OpKind;
using graph::Value;
using Ints = std::vector<int64_t>;

// A decomposition with the quantization helpers.
class Builder : public Decomposer {
 public:
  using Decomposer::Decomposer;

  // A 1-D per-axis parameter reshaped to [1,..,C,..,1] (C at `axis` of a rank-`rank` tensor);
  // a scalar or 1-element parameter as it is.
  absl::StatusOr<Value*> AlongAxis(Value* p, int64_t axis, int64_t rank) {
    if (p->type().NumElements() == 1 || p->type().rank() == 0) return p;
    Ints shape(rank, 1);
    shape[axis] = p->type().NumElements();
    AttrMap a;
    a.Set("allowzero", int64_t{0});
    return Op(OpKind::kReshape,
              {p, ctx().ConstI64(absl::StrCat(node().name, "/shape", ++shapes_), shape)}, a);
  }
  // saturate(round_half_even(v) + zero_point) in `qtype`, from float32 `v`.
  absl::StatusOr<Value*> Requantize(Value* v, Value* zero_point_f32, DType qtype) {
    KILN_ASSIGN_OR_RETURN(Value * r, Op(OpKind::kRound, {v}));
    if (zero_point_f32 != nullptr) {
      KILN_ASSIGN_OR_RETURN(r, Op(OpKind::kAdd, {r, zero_point_f32}));
    }
    double lo = qtype == DType::kInt8 ? -128 : 0, hi = qtype == DType::kInt8 ? 127 : 255;
    KILN_ASSIGN_OR_RETURN(
        r, Op(OpKind::kClip, {r, Scalar(DType::kFloat32, lo), Scalar(DType::kFloat32, hi)}));
    return Cast(r, qtype);
  }

 private:
  int shapes_ = 0;
};

absl::Status CheckQuantType(const OnnxNode& node, DType t, const char* what) {
  if (t == DType::kInt8 || t == DType::kUInt8) return absl::OkStatus();
  return absl::UnimplementedError(node.Prefix() + absl::StrCat(what, " has element type ",
                                                               DTypeName(t),
                                                               "; int8 and uint8 are supported"));
}

// The axis of a per-axis scale (its `axis` attribute, default 1); 0 for a per-tensor scale,
// where the attribute does not matter.
absl::StatusOr<int64_t> QuantAxis(const OnnxNode& node, int64_t rank) {
  if (node.input(1)->type().NumElements() == 1) return 0;
  return NormalizeAxis(node, node.attrs.GetInt("axis", 1), rank);
}

absl::StatusOr<BuiltOutputs> BuildQuantize(ImportContext& ctx, const OnnxNode& node) {
  Builder b(ctx, node);
  Value* x = node.input(0);
  Value* zp = node.input(2);
  DType qtype = zp != nullptr ? zp->type().dtype : DType::kUInt8;
  if (node.attrs.Has("output_dtype") && zp == nullptr) {
    std::optional<DType> t = DTypeFromOnnx(static_cast<int>(node.attrs.GetInt("output_dtype", 0)));
    if (t) qtype = *t;
  }
  KILN_RETURN_IF_ERROR(CheckQuantType(node, qtype, "the output"));
  if (node.attrs.Has("block_size") && node.attrs.GetInt("block_size", 0) != 0) {
    return absl::UnimplementedError(node.Prefix() + "blocked quantization is not supported");
  }
  KILN_ASSIGN_OR_RETURN(int64_t axis, QuantAxis(node, x->type().rank()));
  KILN_ASSIGN_OR_RETURN(Value * xf, b.Cast(x, DType::kFloat32));
  KILN_ASSIGN_OR_RETURN(Value * scale, b.Cast(node.input(1), DType::kFloat32));
  KILN_ASSIGN_OR_RETURN(scale, b.AlongAxis(scale, axis, x->type().rank()));
  KILN_ASSIGN_OR_RETURN(Value * q, b.Op(OpKind::kDiv, {xf, scale}));
  Value* zpf = nullptr;
  if (zp != nullptr) {
    KILN_ASSIGN_OR_RETURN(zpf, b.Cast(zp, DType::kFloat32));
    KILN_ASSIGN_OR_RETURN(zpf, b.AlongAxis(zpf, axis, x->type().rank()));
  }
  KILN_ASSIGN_OR_RETURN(Value * y, b.Requantize(q, zpf, qtype));
  return BuiltOutputs{y};
}

absl::StatusOr<BuiltOutputs> BuildDequantize(ImportContext& ctx, const OnnxNode& node) {
  Builder b(ctx, node);
  Value* x = node.input(0);
  Value* zp = node.input(2);
  if (x->type().dtype != DType::kInt32) {
    KILN_RETURN_IF_ERROR(CheckQuantType(node, x->type().dtype, "the input"));
  }
  if (node.attrs.Has("block_size") && node.attrs.GetInt("block_size", 0) != 0) {
    return absl::UnimplementedError(node.Prefix() + "blocked quantization is not supported");
  }
  const DType out = node.input(1)->type().dtype;
  KILN_ASSIGN_OR_RETURN(int64_t axis, QuantAxis(node, x->type().rank()));
  KILN_ASSIGN_OR_RETURN(Value * y, b.Cast(x, DType::kFloat32));
  if (zp != nullptr) {
    KILN_ASSIGN_OR_RETURN(Value * zpf, b.Cast(zp, DType::kFloat32));
    KILN_ASSIGN_OR_RETURN(zpf, b.AlongAxis(zpf, axis, x->type().rank()));
    KILN_ASSIGN_OR_RETURN(y, b.Op(OpKind::kSub, {y, zpf}));
  }
  KILN_ASSIGN_OR_RETURN(Value * scale, b.Cast(node.input(1), DType::kFloat32));
  KILN_ASSIGN_OR_RETURN(scale, b.AlongAxis(scale, axis, x->type().rank()));
  KILN_ASSIGN_OR_RETURN(y, b.Op(OpKind::kMul, {y, scale}));
  KILN_ASSIGN_OR_RETURN(y, b.Cast(y, out));
  return BuiltOutputs{y};
}

absl::StatusOr<BuiltOutputs> BuildDynamicQuantize(ImportContext& ctx, const OnnxNode& node) {
  Builder b(ctx, node);
  Value* x = node.input(0);
  if (x->type().dtype != DType::kFloat32) {
    return absl::UnimplementedError(node.Prefix() + "only float32 input is supported");
  }
  Ints all;
  for (int64_t d = 0; d < x->type().rank(); ++d) all.push_back(d);
  AttrMap reduce;
  reduce.Set("axes", all);
  reduce.Set("keepdims", int64_t{0});
  Value* zero = b.Scalar(DType::kFloat32, 0);
  KILN_ASSIGN_OR_RETURN(Value * lo, b.Op(OpKind::kReduceMin, {x}, reduce));
  KILN_ASSIGN_OR_RETURN(lo, b.Op(OpKind::kMin, {lo, zero}));
  KILN_ASSIGN_OR_RETURN(Value * hi, b.Op(OpKind::kReduceMax, {x}, reduce));
  KILN_ASSIGN_OR_RETURN(hi, b.Op(OpKind::kMax, {hi, zero}));
  KILN_ASSIGN_OR_RETURN(Value * range, b.Op(OpKind::kSub, {hi, lo}));
  KILN_ASSIGN_OR_RETURN(Value * scale, b.Op(OpKind::kDiv, {range, b.Scalar(DType::kFloat32, 255)}));
  // zero_point = cast(round(saturate(qmin - x_min / scale))), qmin = 0.
  KILN_ASSIGN_OR_RETURN(Value * zp, b.Op(OpKind::kDiv, {lo, scale}));
  KILN_ASSIGN_OR_RETURN(zp, b.Op(OpKind::kSub, {zero, zp}));
  KILN_ASSIGN_OR_RETURN(zp, b.Op(OpKind::kClip, {zp, zero, b.Scalar(DType::kFloat32, 255)}));
  KILN_ASSIGN_OR_RETURN(zp, b.Op(OpKind::kRound, {zp}));
  KILN_ASSIGN_OR_RETURN(Value * zp_u8, b.Cast(zp, DType::kUInt8));
  KILN_ASSIGN_OR_RETURN(Value * q, b.Op(OpKind::kDiv, {x, scale}));
  KILN_ASSIGN_OR_RETURN(Value * y, b.Requantize(q, zp, DType::kUInt8));
  return BuiltOutputs{y, scale, zp_u8};
}

// int32 (a - a_zero_point) @ (b - b_zero_point); a_zero_point per row (1-D over a's rows) or
// scalar, b_zero_point per column or scalar.
absl::StatusOr<Value*> IntegerMatMul(Builder& b, const OnnxNode& node, Value* a, Value* a_zp,
                                     Value* bm, Value* b_zp) {
  KILN_RETURN_IF_ERROR(CheckQuantType(node, a->type().dtype, "A"));
  KILN_RETURN_IF_ERROR(CheckQuantType(node, bm->type().dtype, "B"));
  KILN_ASSIGN_OR_RETURN(Value * ai, b.Cast(a, DType::kInt32));
  if (a_zp != nullptr) {
    KILN_ASSIGN_OR_RETURN(Value * zp, b.Cast(a_zp, DType::kInt32));
    if (zp->type().NumElements() > 1) {  // per row: [M] -> [M, 1]
      KILN_ASSIGN_OR_RETURN(zp, b.AlongAxis(zp, ai->type().rank() - 2, ai->type().rank()));
    }
    KILN_ASSIGN_OR_RETURN(ai, b.Op(OpKind::kSub, {ai, zp}));
  }
  KILN_ASSIGN_OR_RETURN(Value * bi, b.Cast(bm, DType::kInt32));
  if (b_zp != nullptr) {
    KILN_ASSIGN_OR_RETURN(Value * zp, b.Cast(b_zp, DType::kInt32));
    KILN_ASSIGN_OR_RETURN(bi, b.Op(OpKind::kSub, {bi, zp}));  // per column broadcasts as is
  }
  return b.Op(OpKind::kMatMul, {ai, bi});
}

// ConvInteger: int32 Conv((x - x_zero_point), (w - w_zero_point)) with the node's window
// attributes (resolved by the Conv builder); w_zero_point per output channel or scalar.
absl::StatusOr<Value*> IntegerConv(ImportContext& ctx, Builder& b, const OnnxNode& node, Value* x,
                                   Value* x_zp, Value* w, Value* w_zp) {
  KILN_RETURN_IF_ERROR(CheckQuantType(node, x->type().dtype, "x"));
  KILN_RETURN_IF_ERROR(CheckQuantType(node, w->type().dtype, "w"));
  KILN_ASSIGN_OR_RETURN(Value * xi, b.Cast(x, DType::kInt32));
  if (x_zp != nullptr) {
    KILN_ASSIGN_OR_RETURN(Value * zp, b.Cast(x_zp, DType::kInt32));
    KILN_ASSIGN_OR_RETURN(xi, b.Op(OpKind::kSub, {xi, zp}));
  }
  KILN_ASSIGN_OR_RETURN(Value * wi, b.Cast(w, DType::kInt32));
  if (w_zp != nullptr) {
    KILN_ASSIGN_OR_RETURN(Value * zp, b.Cast(w_zp, DType::kInt32));
    KILN_ASSIGN_OR_RETURN(zp, b.AlongAxis(zp, 0, wi->type().rank()));
    KILN_ASSIGN_OR_RETURN(wi, b.Op(OpKind::kSub, {wi, zp}));
  }
  OnnxNode conv = node;
  conv.op = OpKind::kConv;
  conv.inputs = {xi, wi};
  KILN_ASSIGN_OR_RETURN(BuiltOutputs out, BuildNode(ctx, conv));
  return out[0];
}

// QLinearMatMul and QLinearConv, whose inputs are both (a, a_scale, a_zero_point, b,
// b_scale, b_zero_point, y_scale, y_zero_point[, int32 bias]): the int32 accumulator (plus the
// bias), requantized with a_scale * b_scale / y_scale (per output channel when b_scale is).
absl::StatusOr<BuiltOutputs> BuildQLinear(ImportContext& ctx, const OnnxNode& node, bool conv) {
  Builder b(ctx, node);
  Value* y_zp = node.input(7);
  const DType qtype = y_zp != nullptr ? y_zp->type().dtype : DType::kUInt8;
  KILN_RETURN_IF_ERROR(CheckQuantType(node, qtype, "the output"));
  Value* acc = nullptr;
  Value* b_scale = node.input(4);
  if (conv) {
    KILN_ASSIGN_OR_RETURN(
        acc, IntegerConv(ctx, b, node, node.input(0), node.input(2), node.input(3), node.input(5)));
    const int64_t rank = acc->type().rank();
    if (Value* bias = node.input(8)) {
      KILN_ASSIGN_OR_RETURN(Value * bi, b.AlongAxis(bias, 1, rank));
      KILN_ASSIGN_OR_RETURN(acc, b.Op(OpKind::kAdd, {acc, bi}));
    }
    KILN_ASSIGN_OR_RETURN(b_scale, b.AlongAxis(b_scale, 1, rank));
  } else {  // a per-column b_scale broadcasts along the last axis as it is
    KILN_ASSIGN_OR_RETURN(
        acc, IntegerMatMul(b, node, node.input(0), node.input(2), node.input(3), node.input(5)));
  }
  KILN_ASSIGN_OR_RETURN(Value * accf, b.Cast(acc, DType::kFloat32));
  KILN_ASSIGN_OR_RETURN(Value * multiplier, b.Op(OpKind::kMul, {node.input(1), b_scale}));
  KILN_ASSIGN_OR_RETURN(multiplier, b.Op(OpKind::kDiv, {multiplier, node.input(6)}));
  KILN_ASSIGN_OR_RETURN(Value * scaled, b.Op(OpKind::kMul, {accf, multiplier}));
  Value* zpf = nullptr;
  if (y_zp != nullptr) {
    KILN_ASSIGN_OR_RETURN(zpf, b.Cast(y_zp, DType::kFloat32));
  }
  KILN_ASSIGN_OR_RETURN(Value * y, b.Requantize(scaled, zpf, qtype));
  return BuiltOutputs{y};
}

}  // namespace

bool IsQuantOp(const std::string& op_type) {
  return op_type == "QuantizeLinear" || op_type == "DequantizeLinear" ||
         op_type == "DynamicQuantizeLinear" || op_type == "MatMulInteger" ||
         op_type == "QLinearMatMul" || op_type == "ConvInteger" || op_type == "QLinearConv";
}

absl::StatusOr<BuiltOutputs> BuildQuantOp(ImportContext& ctx, const OnnxNode& node) {
  const std::string& op = node.proto->op_type();
  if (op == "QuantizeLinear") return BuildQuantize(ctx, node);
  if (op == "DequantizeLinear") return BuildDequantize(ctx, node);
  if (op == "DynamicQuantizeLinear") return BuildDynamicQuantize(ctx, node);
  if (op == "MatMulInteger") {
    Builder b(ctx, node);
    KILN_ASSIGN_OR_RETURN(Value * y, IntegerMatMul(b, node, node.input(0), node.input(2),
                                                   node.input(1), node.input(3)));
    return BuiltOutputs{y};
  }
  if (op == "ConvInteger") {
    Builder b(ctx, node);
    KILN_ASSIGN_OR_RETURN(Value * y, IntegerConv(ctx, b, node, node.input(0), node.input(2),
                                                 node.input(1), node.input(3)));
    return BuiltOutputs{y};
  }
  return BuildQLinear(ctx, node, /*conv=*/op == "QLinearConv");
}

}  // namespace kiln::importer
