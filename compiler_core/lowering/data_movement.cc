// Data movement ops: Concat (one nest per input), Pad (constant/reflect/edge via clamped
// indices), Transpose, Gather (indices normalized and clamped), Slice, and the reshapes
// (Reshape/Flatten/Squeeze/Unsqueeze) as row-major copies. No load is ever out of bounds.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "compiler_core/lowering/op_lowering.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::lowering {
namespace {

using graph::OpKind;
using loop::BinaryOp;
using loop::Expr;
using loop::Stmt;

/// A nest over `shape` (variables `prefix`d0, ...) storing epi(value(idx)) at out[out_index(idx)].
absl::StatusOr<Stmt> CopyNest(
    KernelBuilder& b, const Epilogue& epi, const std::string& prefix,
    const std::vector<int64_t>& shape,
    const std::function<std::vector<Expr>(const std::vector<Expr>&)>& out_index,
    const std::function<Expr(const std::vector<Expr>&)>& value) {
  std::vector<loop::Var> vars = b.NewVars(prefix, AxisNames(shape.size()));
  std::vector<Expr> idx = Refs(vars);
  std::vector<Expr> oidx = out_index ? out_index(idx) : idx;
  KILN_ASSIGN_OR_RETURN(Expr v, epi.Apply(value(idx), oidx));
  return Nest(vars, shape, loop::Store(b.out(), oidx, v));
}

std::vector<int64_t> ConstInts(const graph::Value* v) {
  std::vector<int64_t> out;
  if (v == nullptr || !v->is_constant()) return out;
  for (int64_t i = 0; i < v->type().NumElements(); ++i) out.push_back(v->constant()->GetAsInt64(i));
  return out;
}

absl::StatusOr<std::vector<Stmt>> LowerConcat(KernelBuilder& b, const graph::Node& node,
                                              const Epilogue& epi) {
  const int64_t rank = node.output(0)->type().rank();
  int64_t axis = node.attrs().GetInt("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return NoLowering(node, "this axis");
  std::vector<Stmt> nests;
  int64_t offset = 0;
  for (int k = 0; k < node.num_inputs(); ++k) {
    const graph::Value* v = node.input(k);
    if (v == nullptr) continue;
    loop::BufferRef in = b.Input(v);
    const int64_t off = offset;
    KILN_ASSIGN_OR_RETURN(
        Stmt nest,
        CopyNest(
            b, epi, absl::StrCat("cat", k, "."), v->type().shape,
            [&](const std::vector<Expr>& idx) {
              std::vector<Expr> o = idx;
              o[axis] = IdxAdd(o[axis], off);
              return o;
            },
            [&](const std::vector<Expr>& idx) { return loop::Load(in, idx); }));
    nests.push_back(nest);
    offset += v->type().shape[axis];
  }
  return nests;
}

absl::StatusOr<std::vector<Stmt>> LowerPad(KernelBuilder& b, const graph::Node& node,
                                           const Epilogue& epi) {
  const graph::Value* xv = node.input(0);
  const std::vector<int64_t>& xs = xv->type().shape;
  const size_t rank = xs.size();
  std::vector<int64_t> pads = node.input(1) ? ConstInts(node.input(1))
                                            : node.attrs().GetInts("pads");
  if (pads.size() != 2 * rank) return NoLowering(node, "non-constant pads");
  const std::string mode = node.attrs().GetString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") {
    return NoLowering(node, absl::StrCat("mode '", mode, "'"));
  }
  const DType dt = xv->type().dtype;
  double fill = node.attrs().GetFloat("value", 0);
  if (const graph::Value* cv = node.input(2)) {
    if (!cv->is_constant()) return NoLowering(node, "a non-constant constant_value");
    fill = cv->constant()->GetAsDouble(0);
  }
  loop::BufferRef x = b.Input(xv);
  auto value = [&](const std::vector<Expr>& idx) {
    std::vector<Expr> in_idx;
    Expr cond;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t n = xs[d];
      Expr j = IdxAdd(idx[d], -pads[d]);
      if (pads[d] == 0 && pads[rank + d] <= 0) {
        in_idx.push_back(j);
        continue;
      }
      if (mode == "constant") {
        cond = AndCond(cond, loop::Binary(BinaryOp::kGe, j, Idx(0)));
        cond = AndCond(cond, loop::Binary(BinaryOp::kLt, j, Idx(n)));
      } else if (mode == "reflect") {
        j = loop::Select(loop::Binary(BinaryOp::kLt, j, Idx(0)), Idx(0) - j, j);
        j = loop::Select(loop::Binary(BinaryOp::kGe, j, Idx(n)), Idx(2 * (n - 1)) - j, j);
      }
      in_idx.push_back(IdxClamp(j, n));
    }
    Expr v = loop::Load(x, in_idx);
    return cond ? loop::Select(cond, v, Const(fill, dt)) : v;
  };
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
  int64_t axis = node.attrs().GetInt("axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(ds.size());
  if (axis < 0 || axis >= static_cast<int64_t>(ds.size())) return NoLowering(node, "this axis");
  loop::BufferRef data = b.Input(dv);
  loop::BufferRef indices = b.Input(iv);
  auto value = [&](const std::vector<Expr>& idx) {
    std::vector<Expr> iidx(idx.begin() + axis, idx.begin() + axis + r);
    Expr i = loop::Load(indices, iidx);
    if (i->dtype != DType::kInt64) i = loop::Cast(DType::kInt64, i);
    const int64_t n = ds[axis];
    i = loop::Select(loop::Binary(BinaryOp::kLt, i, Idx(0)), IdxAdd(i, n), i);
    std::vector<Expr> didx(idx.begin(), idx.begin() + axis);
    didx.push_back(IdxClamp(i, n));
    didx.insert(didx.end(), idx.begin() + axis + r, idx.end());
    return loop::Load(data, didx);
  };
  KILN_ASSIGN_OR_RETURN(Stmt nest, CopyNest(b, epi, "", node.output(0)->type().shape, nullptr,
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
  std::vector<int64_t> start(rank, 0), step(rank, 1);
  for (size_t k = 0; k < starts.size() && k < axes.size(); ++k) {
    int64_t a = axes[k] < 0 ? axes[k] + rank : axes[k];
    if (a < 0 || a >= rank || steps[k] == 0) return NoLowering(node, "these axes/steps");
    const int64_t n = xs[a];
    int64_t s = starts[k] < 0 ? starts[k] + n : starts[k];
    s = steps[k] > 0 ? std::clamp<int64_t>(s, 0, n) : std::clamp<int64_t>(s, 0, n - 1);
    start[a] = s;
    step[a] = steps[k];
  }
  loop::BufferRef x = b.Input(xv);
  auto value = [&](const std::vector<Expr>& idx) {
    std::vector<Expr> in_idx;
    for (int64_t d = 0; d < rank; ++d) {
      in_idx.push_back(IdxAdd(IdxMul(idx[d], step[d]), start[d]));
    }
    return loop::Load(x, in_idx);
  };
  KILN_ASSIGN_OR_RETURN(Stmt nest, CopyNest(b, epi, "", node.output(0)->type().shape, nullptr,
                                            value));
  return std::vector<Stmt>{nest};
}

}  // namespace

absl::StatusOr<std::vector<Stmt>> LowerDataMovement(KernelBuilder& b, const graph::Node& node,
                                                    const Epilogue& epi) {
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  switch (node.op()) {
    case OpKind::kConcat: return LowerConcat(b, node, epi);
    case OpKind::kPad: return LowerPad(b, node, epi);
    case OpKind::kGather: return LowerGather(b, node, epi);
    case OpKind::kSlice: return LowerSlice(b, node, epi);
    case OpKind::kTranspose: {
      const graph::Value* xv = node.input(0);
      std::vector<int64_t> perm = node.attrs().GetInts("perm");
      std::vector<int64_t> sorted = perm;
      std::sort(sorted.begin(), sorted.end());
      for (size_t k = 0; k < sorted.size(); ++k) {
        if (sorted[k] != static_cast<int64_t>(k)) return NoLowering(node, "this perm");
      }
      if (perm.size() != os.size()) return NoLowering(node, "this perm");
      loop::BufferRef x = b.Input(xv);
      KILN_ASSIGN_OR_RETURN(
          Stmt nest, CopyNest(b, epi, "", os, nullptr, [&](const std::vector<Expr>& idx) {
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
