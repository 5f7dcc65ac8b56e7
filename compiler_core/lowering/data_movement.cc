// Data movement ops: Concat (one nest per input), Pad (constant/reflect/edge via clamped
// indices), Transpose, Gather (indices normalized and clamped), Slice, and the reshapes
// (Reshape/Flatten/Squeeze/Unsqueeze) as row-major copies. No load is ever out of bounds.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/lowering/op_lowering.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::lowering {
namespace {

using graph::OpKind;
using graph::PadMode;
using loop::BinaryOp;
using loop::Expr;
using loop::Stmt;

/// A nest over `dims` (i64 expressions; variables `prefix`d0, ...) storing epi(value(idx)) at
/// out[out_index(idx)].
absl::StatusOr<Stmt> CopyNest(
    KernelBuilder& b, const Epilogue& epi, const std::string& prefix,
    const std::vector<Expr>& dims,
    const std::function<std::vector<Expr>(const std::vector<Expr>&)>& out_index,
    const std::function<Expr(const std::vector<Expr>&)>& value) {
  std::vector<loop::Var> vars = b.NewVars(prefix, AxisNames(dims.size()));
  std::vector<Expr> idx = Refs(vars);
  std::vector<Expr> oidx = out_index ? out_index(idx) : idx;
  KILN_ASSIGN_OR_RETURN(Expr v, epi.Apply(value(idx), oidx));
  return NestDims(vars, dims, loop::Store(b.out(), oidx, v));
}

/// CopyNest over a static shape.
absl::StatusOr<Stmt> CopyNest(
    KernelBuilder& b, const Epilogue& epi, const std::string& prefix,
    const std::vector<int64_t>& shape,
    const std::function<std::vector<Expr>(const std::vector<Expr>&)>& out_index,
    const std::function<Expr(const std::vector<Expr>&)>& value) {
  std::vector<Expr> dims;
  for (int64_t d : shape) dims.push_back(Idx(d));
  return CopyNest(b, epi, prefix, dims, out_index, value);
}

std::vector<int64_t> ConstInts(const graph::Value* v) {
  std::vector<int64_t> out;
  if (v == nullptr || !v->is_constant()) return out;
  for (int64_t i = 0; i < v->type().NumElements(); ++i) out.push_back(v->constant()->GetAsInt64(i));
  return out;
}

/// Element `k` of the 1-D integer operand `v` of a node as an i64 expression: an immediate for
/// a constant, a load (cast to i64) for a value that arrives at run time.
Expr OperandElement(KernelBuilder& b, const graph::Value* v, int64_t k) {
  if (v->is_constant()) return Idx(v->constant()->GetAsInt64(k));
  Expr e = loop::Load(b.Input(v), {Idx(k)});
  return e->dtype == DType::kInt64 ? e : loop::Cast(DType::kInt64, e);
}

Expr Sel(Expr c, Expr a, Expr b) { return loop::Select(std::move(c), std::move(a), std::move(b)); }
Expr Lt(Expr a, Expr b) { return Bin(BinaryOp::kLt, std::move(a), std::move(b)); }
Expr Eq(Expr a, Expr b) { return Bin(BinaryOp::kEq, std::move(a), std::move(b)); }
Expr ClampTo(Expr a, int64_t lo, int64_t hi) { return Max(Min(std::move(a), Idx(hi)), Idx(lo)); }

/// The "node 'y' (Slice): " prefix of a shape check's message.
std::string NodeWhat(const graph::Node& node) {
  return absl::StrCat("node '", node.name(), "' (", graph::OpName(node.op()), "): ");
}

/// Slice whose starts, ends, axes or steps arrive at run time (ONNX Slice-13 semantics, read
/// from the operand buffers): per output dim d, the entry k whose axis (negative counts from the
/// end) is d gives the start and step, clamped as the spec says (to [0, n] for positive steps,
/// [0, n-1] for negative ones); a dim no entry names is copied whole. The shape check stores
/// each dim's extent, max(0, ceil((end - start) / step)), or -1 for a step of 0; the load index
/// is clamped, so nothing is read out of bounds whatever the values.
absl::StatusOr<std::vector<Stmt>> LowerRuntimeSlice(KernelBuilder& b, const graph::Node& node,
                                                    const Epilogue& epi) {
  if (!node.input(0)->type().is_static() || !node.output(0)->type().is_static()) {
    return NoLowering(node, "run-time starts, axes or steps over symbolic dims");
  }
  const graph::Value* xv = node.input(0);
  const std::vector<int64_t>& xs = xv->type().shape;
  const int64_t rank = static_cast<int64_t>(xs.size());
  const graph::Value* sv = node.input(1);
  const graph::Value* ev = node.input(2);
  const graph::Value* av = node.input(3);
  const graph::Value* pv = node.input(4);
  if (sv == nullptr || ev == nullptr) return NoLowering(node, "a Slice without starts or ends");
  const int64_t count = sv->type().NumElements();
  for (const graph::Value* v : {ev, av, pv}) {
    if (v != nullptr && v->type().NumElements() != count) {
      return NoLowering(node, "starts, ends, axes and steps of different lengths");
    }
  }
  std::vector<Expr> start(rank), step(rank), extent(rank);
  // An axis outside [-rank, rank) makes every extent invalid (-1): the run is refused.
  Expr bad_axis;
  for (int64_t k = 0; k < count && av != nullptr; ++k) {
    Expr axis = OperandElement(b, av, k);
    Expr out = Bin(BinaryOp::kOr, Lt(axis, Idx(-rank)), Bin(BinaryOp::kGe, axis, Idx(rank)));
    bad_axis = bad_axis ? Bin(BinaryOp::kOr, bad_axis, out) : out;
  }
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t n = xs[d];
    Expr raw_s = Idx(0), raw_e = Idx(n), st = Idx(1);
    for (int64_t k = count - 1; k >= 0; --k) {  // the first entry naming d wins
      Expr axis = av ? OperandElement(b, av, k) : Idx(k);
      axis = Sel(Lt(axis, Idx(0)), IdxAdd(axis, rank), axis);
      Expr hit = Eq(axis, Idx(d));
      raw_s = Sel(hit, OperandElement(b, sv, k), raw_s);
      raw_e = Sel(hit, OperandElement(b, ev, k), raw_e);
      if (pv) st = Sel(hit, OperandElement(b, pv, k), st);
    }
    Expr pos = Lt(Idx(0), st);
    Expr s0 = Sel(Lt(raw_s, Idx(0)), IdxAdd(raw_s, n), raw_s);
    Expr e0 = Sel(Lt(raw_e, Idx(0)), IdxAdd(raw_e, n), raw_e);
    Expr s = Sel(pos, ClampTo(s0, 0, n), ClampTo(s0, 0, n - 1));
    Expr e = Sel(pos, ClampTo(e0, 0, n), ClampTo(e0, -1, n - 1));
    Expr mag = Sel(pos, st, Idx(0) - st);  // |step|, 0 for a step of 0
    Expr safe = Max(mag, Idx(1));
    Expr span = Sel(pos, e - s, s - e);
    Expr ext = Max(Bin(BinaryOp::kFloorDiv, span + safe - Idx(1), safe), Idx(0));
    extent[d] = Sel(Eq(st, Idx(0)), Idx(-1), ext);
    if (bad_axis) extent[d] = Sel(bad_axis, Idx(-1), extent[d]);
    start[d] = s;
    step[d] = st;
  }
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  std::vector<Stmt> nests = {b.ShapeCheck(extent, os, NodeWhat(node) + "starts/ends/axes/steps")};
  loop::BufferRef x = b.Input(xv);
  auto value = [&](const std::vector<Expr>& idx) {
    std::vector<Expr> in_idx;
    for (int64_t d = 0; d < rank; ++d) {
      in_idx.push_back(IdxClamp(IdxAdd(start[d], idx[d] * step[d]), xs[d]));
    }
    return loop::Load(x, in_idx);
  };
  KILN_ASSIGN_OR_RETURN(Stmt nest, CopyNest(b, epi, "", os, nullptr, value));
  nests.push_back(nest);
  return nests;
}

/// Pad whose pads arrive at run time (ONNX Pad-13: [x1_begin, x2_begin, ..., x1_end, ...],
/// negative values crop): output element i of dim d reads input i - begin_d through the mode's
/// mapping (constant: outside is the fill value; reflect; edge), clamped. The shape check stores
/// n_d + begin_d + end_d per dim.
absl::StatusOr<std::vector<Stmt>> LowerRuntimePad(KernelBuilder& b, const graph::Node& node,
                                                  const Epilogue& epi) {
  const graph::Value* xv = node.input(0);
  const graph::Value* pv = node.input(1);
  const std::vector<int64_t>& xs = xv->type().shape;
  const int64_t rank = static_cast<int64_t>(xs.size());
  if (pv->type().NumElements() != 2 * rank) return NoLowering(node, "pads of this length");
  const graph::PadAttrs a = graph::PadAttrs::Of(node);
  const PadMode mode = a.mode;
  const DType dt = xv->type().dtype;
  std::vector<Expr> begin(rank), dims(rank);
  for (int64_t d = 0; d < rank; ++d) {
    begin[d] = OperandElement(b, pv, d);
    dims[d] = IdxAdd(begin[d] + OperandElement(b, pv, rank + d), xs[d]);
  }
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  std::vector<Stmt> nests;
  if (!pv->is_constant()) nests.push_back(b.ShapeCheck(dims, os, NodeWhat(node) + "pads"));
  Expr fill;
  if (const graph::Value* cv = node.input(2)) {
    fill = cv->is_constant()
               ? Const(cv->constant()->GetAsDouble(0), dt)
               : loop::Load(b.Input(cv), std::vector<Expr>(cv->type().rank(), Idx(0)));
  } else {
    fill = Const(a.value, dt);
  }
  loop::BufferRef x = b.Input(xv);
  auto value = [&](const std::vector<Expr>& idx) {
    std::vector<Expr> in_idx;
    Expr cond;
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t n = xs[d];
      Expr j = idx[d] - begin[d];
      if (mode == PadMode::kConstant) {
        cond = AndCond(cond, Bin(BinaryOp::kGe, j, Idx(0)));
        cond = AndCond(cond, Lt(j, Idx(n)));
      } else if (mode == PadMode::kReflect && n > 1) {
        // Reflection about the edges, period 2(n-1): fold j into [0, 2(n-1)) then mirror.
        Expr m = Bin(BinaryOp::kFloorMod, j, Idx(2 * (n - 1)));
        j = Sel(Lt(m, Idx(n)), m, Idx(2 * (n - 1)) - m);
      }
      in_idx.push_back(IdxClamp(j, n));
    }
    Expr v = loop::Load(x, in_idx);
    return cond ? Sel(cond, v, fill) : v;
  };
  KILN_ASSIGN_OR_RETURN(Stmt nest, CopyNest(b, epi, "", os, nullptr, value));
  nests.push_back(nest);
  return nests;
}

/// True if any of inputs [first, last] of `node` is present and arrives at run time.
bool HasRuntimeOperand(const graph::Node& node, int first, int last) {
  for (int i = first; i <= last; ++i) {
    if (node.input(i) != nullptr && !node.input(i)->is_constant()) return true;
  }
  return false;
}

absl::StatusOr<std::vector<Stmt>> LowerConcat(KernelBuilder& b, const graph::Node& node,
                                              const Epilogue& epi) {
  const int64_t rank = node.output(0)->type().rank();
  int64_t axis = graph::ConcatAttrs::Of(node).axis;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return NoLowering(node, "this axis");
  std::vector<Stmt> nests;
  Expr offset = Idx(0);  // symbolic when an earlier input's axis is
  for (int k = 0; k < node.num_inputs(); ++k) {
    const graph::Value* v = node.input(k);
    if (v == nullptr) continue;
    loop::BufferRef in = b.Input(v);
    const Expr off = offset;
    KILN_ASSIGN_OR_RETURN(
        Stmt nest,
        CopyNest(
            b, epi, absl::StrCat("cat", k, "."), loop::BufferDims(*in),
            [&](const std::vector<Expr>& idx) {
              std::vector<Expr> o = idx;
              o[axis] = IdxAdd(o[axis], off);
              return o;
            },
            [&](const std::vector<Expr>& idx) { return loop::Load(in, idx); }));
    nests.push_back(nest);
    const Expr len = loop::BufferDim(*in, axis);
    offset = offset->kind == loop::ExprKind::kIntImm && len->kind == loop::ExprKind::kIntImm
                 ? Idx(offset->int_value + len->int_value)
                 : IdxAdd(offset, len);
  }
  return nests;
}

absl::StatusOr<std::vector<Stmt>> LowerPad(KernelBuilder& b, const graph::Node& node,
                                           const Epilogue& epi) {
  const graph::Value* xv = node.input(0);
  const std::vector<int64_t>& xs = xv->type().shape;
  const size_t rank = xs.size();
  const graph::PadAttrs a = graph::PadAttrs::Of(node);
  std::vector<int64_t> pads = node.input(1) ? ConstInts(node.input(1)) : a.pads;
  if (pads.size() != 2 * rank) return NoLowering(node, "non-constant pads");
  const PadMode mode = a.mode;
  const DType dt = xv->type().dtype;
  double fill = a.value;
  if (const graph::Value* cv = node.input(2)) {
    if (!cv->is_constant()) return NoLowering(node, "a non-constant constant_value");
    fill = cv->constant()->GetAsDouble(0);
  }
  loop::BufferRef x = b.Input(xv);
  // Dims as i64 expressions: symbolic ones are read from the kernel's dims.
  const std::vector<Expr> xd = loop::BufferDims(*x);
  auto value = [&](const std::vector<Expr>& idx) {
    std::vector<Expr> in_idx;
    Expr cond;
    for (size_t d = 0; d < rank; ++d) {
      const Expr& n = xd[d];
      Expr j = IdxAdd(idx[d], -pads[d]);
      if (pads[d] == 0 && pads[rank + d] <= 0) {
        in_idx.push_back(j);
        continue;
      }
      if (mode == PadMode::kConstant) {
        in_idx.push_back(InBounds(j, n, &cond));
        continue;
      }
      if (mode == PadMode::kReflect) {
        j = loop::Select(loop::Binary(BinaryOp::kLt, j, Idx(0)), Idx(0) - j, j);
        j = loop::Select(loop::Binary(BinaryOp::kGe, j, n), IdxAdd(IdxMul(n, 2), -2) - j, j);
      }
      in_idx.push_back(IdxClampDim(j, n));
    }
    Expr v = loop::Load(x, in_idx);
    return cond ? loop::Select(cond, v, Const(fill, dt)) : v;
  };
  if (!node.output(0)->type().is_static()) {
    KILN_ASSIGN_OR_RETURN(Stmt nest, CopyNest(b, epi, "", loop::BufferDims(*b.out()), nullptr,
                                              value));
    return std::vector<Stmt>{nest};
  }
  KILN_ASSIGN_OR_RETURN(Stmt nest, CopyNest(b, epi, "", node.output(0)->type().shape, nullptr,
                                            value));
  return std::vector<Stmt>{nest};
}

absl::StatusOr<std::vector<Stmt>> LowerGather(KernelBuilder& b, const graph::Node& node,
                                              const Epilogue& epi) {
  const graph::Value* dv = node.input(0);
  const graph::Value* iv = node.input(1);
  const std::vector<int64_t>& ds = dv->type().shape;
  const int64_t r = iv->type().rank();
  int64_t axis = graph::Axis0Attrs::Of(node).axis;
  if (axis < 0) axis += static_cast<int64_t>(ds.size());
  if (axis < 0 || axis >= static_cast<int64_t>(ds.size())) return NoLowering(node, "this axis");
  loop::BufferRef data = b.Input(dv);
  loop::BufferRef indices = b.Input(iv);
  auto value = [&](const std::vector<Expr>& idx) {
    std::vector<Expr> iidx(idx.begin() + axis, idx.begin() + axis + r);
    Expr i = loop::Load(indices, iidx);
    if (i->dtype != DType::kInt64) i = loop::Cast(DType::kInt64, i);
    std::vector<Expr> didx(idx.begin(), idx.begin() + axis);
    if (const int64_t n = ds[axis]; n != kSymbolicDim) {
      i = loop::Select(loop::Binary(BinaryOp::kLt, i, Idx(0)), IdxAdd(i, n), i);
      didx.push_back(IdxClamp(i, n));
    } else {
      // A symbolic axis: its length is a run-time value (clamped like a static one).
      const Expr len = loop::BufferDim(*data, static_cast<size_t>(axis));
      i = loop::Select(loop::Binary(BinaryOp::kLt, i, Idx(0)), i + len, i);
      didx.push_back(loop::Max(Idx(0), loop::Min(i, len - Idx(1))));
    }
    didx.insert(didx.end(), idx.begin() + axis + r, idx.end());
    return loop::Load(data, didx);
  };
  KILN_ASSIGN_OR_RETURN(Stmt nest, CopyNest(b, epi, "", loop::BufferDims(*b.out()), nullptr,
                                            value));
  return std::vector<Stmt>{nest};
}

absl::StatusOr<std::vector<Stmt>> LowerSlice(KernelBuilder& b, const graph::Node& node,
                                             const Epilogue& epi) {
  const graph::Value* xv = node.input(0);
  const std::vector<int64_t>& xs = xv->type().shape;
  const int64_t rank = static_cast<int64_t>(xs.size());
  std::vector<int64_t> starts = ConstInts(node.input(1));
  std::vector<int64_t> axes = ConstInts(node.input(3));
  std::vector<int64_t> steps = ConstInts(node.input(4));
  if (node.input(1) == nullptr || !node.input(1)->is_constant() ||
      (node.input(3) && !node.input(3)->is_constant()) ||
      (node.input(4) && !node.input(4)->is_constant())) {
    return NoLowering(node, "non-constant starts/axes/steps");
  }
  if (axes.empty()) {
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  loop::BufferRef x = b.Input(xv);
  std::vector<Expr> start(rank, Idx(0));
  std::vector<int64_t> step(rank, 1);
  for (size_t k = 0; k < starts.size() && k < axes.size(); ++k) {
    int64_t a = axes[k] < 0 ? axes[k] + rank : axes[k];
    if (a < 0 || a >= rank || steps[k] == 0) return NoLowering(node, "these axes/steps");
    step[a] = steps[k];
    if (const int64_t n = xs[a]; n != kSymbolicDim) {
      int64_t s = starts[k] < 0 ? starts[k] + n : starts[k];
      s = steps[k] > 0 ? std::clamp<int64_t>(s, 0, n) : std::clamp<int64_t>(s, 0, n - 1);
      start[a] = Idx(s);
      continue;
    }
    // A symbolic axis: ONNX's clamping of the start at run time.
    const Expr len = loop::BufferDim(*x, static_cast<size_t>(a));
    Expr s = starts[k] < 0 ? len + Idx(starts[k]) : Idx(starts[k]);
    start[a] = loop::Max(Idx(0), loop::Min(s, steps[k] > 0 ? len : len - Idx(1)));
  }
  auto value = [&](const std::vector<Expr>& idx) {
    std::vector<Expr> in_idx;
    for (int64_t d = 0; d < rank; ++d) {
      in_idx.push_back(IdxAdd(IdxMul(idx[d], step[d]), start[d]));
    }
    return loop::Load(x, in_idx);
  };
  KILN_ASSIGN_OR_RETURN(Stmt nest, CopyNest(b, epi, "", loop::BufferDims(*b.out()), nullptr,
                                            value));
  return std::vector<Stmt>{nest};
}

}  // namespace

absl::StatusOr<std::vector<Stmt>> LowerDataMovement(KernelBuilder& b, const graph::Node& node,
                                                    const Epilogue& epi) {
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  switch (node.op()) {
    case OpKind::kConcat: return LowerConcat(b, node, epi);
    case OpKind::kPad:
      if (HasRuntimeOperand(node, 1, 2) && !node.input(0)->type().is_static()) {
        return NoLowering(node, "pads computed at run time over symbolic dims");
      }
      return HasRuntimeOperand(node, 1, 2) ? LowerRuntimePad(b, node, epi) : LowerPad(b, node, epi);
    case OpKind::kGather: return LowerGather(b, node, epi);
    case OpKind::kSlice:
    {
      // Ends known as expressions of the symbols (a shape value) gave the output's type:
      // LowerSlice reads only the starts, axes and steps.
      const graph::Value* ends = node.input(2);
      const bool runtime_ends = ends != nullptr && !ends->is_constant() && !ends->sym_value();
      return HasRuntimeOperand(node, 1, 1) || runtime_ends || HasRuntimeOperand(node, 3, 4)
                 ? LowerRuntimeSlice(b, node, epi)
                 : LowerSlice(b, node, epi);
    }
    case OpKind::kTranspose: {
      const graph::Value* xv = node.input(0);
      std::vector<int64_t> perm = graph::TransposePermutation(node);
      std::vector<int64_t> sorted = perm;
      std::sort(sorted.begin(), sorted.end());
      for (size_t k = 0; k < sorted.size(); ++k) {
        if (sorted[k] != static_cast<int64_t>(k)) return NoLowering(node, "this perm");
      }
      if (perm.size() != os.size()) return NoLowering(node, "this perm");
      loop::BufferRef x = b.Input(xv);
      KILN_ASSIGN_OR_RETURN(
          Stmt nest, CopyNest(b, epi, "", loop::BufferDims(*b.out()), nullptr,
                              [&](const std::vector<Expr>& idx) {
            std::vector<Expr> in_idx(idx.size());
            for (size_t k = 0; k < perm.size(); ++k) in_idx[perm[k]] = idx[k];
            return loop::Load(x, in_idx);
          }));
      return std::vector<Stmt>{nest};
    }
    case OpKind::kReshape: case OpKind::kFlatten: case OpKind::kSqueeze:
    case OpKind::kUnsqueeze: {
      const graph::Value* xv = node.input(0);
      if (xv->type().NumElements() != node.output(0)->type().NumElements()) {
        return NoLowering(node, "a reshape that changes the element count");
      }
      loop::BufferRef x = b.Input(xv);
      KILN_ASSIGN_OR_RETURN(
          Stmt nest, CopyNest(b, epi, "", os, nullptr, [&](const std::vector<Expr>& idx) {
            return loop::Load(x, ReshapeIndices(xv->type().shape, os, idx));
          }));
      return std::vector<Stmt>{nest};
    }
    default:
      return NoLowering(node, "this data movement op");
  }
}

}  // namespace kiln::lowering
