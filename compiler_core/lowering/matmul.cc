// Gemm (transA/transB, alpha, beta, optional broadcast C) and MatMul (NumPy semantics: 1-D
// operands, broadcast batch dims) as init / accumulate / epilogue nests over the result. A B
// packed in column panels (b_layout="packed<nr>", ir/graph/matmul_packing.h) is read as
// Bp[j / nr][k][j % nr] with j split into loops jb (panels) and jj (within a panel) plus a tail
// loop jt, so every index stays affine and jj reads B contiguously. A "quant"="u8s8" MatMul
// (passes/graph/matmul_u8s8.h) multiplies words of four 8-bit values with dot4_u8s8.
#include <functional>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/matmul_packing.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/lowering/op_lowering.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::lowering {
namespace {

using loop::Expr;
using loop::Stmt;

/// a * b, or dot4_u8s8(a, b) for a "quant"="u8s8" MatMul (i32 words of four 8-bit values
/// along K: A's uint8, B's int8).
Expr Product(Expr a, Expr b, bool u8s8) {
  return u8s8 ? loop::Binary(loop::BinaryOp::kDot4U8S8, std::move(a), std::move(b))
              : std::move(a) * std::move(b);
}

/// The update nests of out[i, j] += A(i, k) * B[k, j] for an [m, k] × [k, n] product whose B
/// (`bm`) is packed in panels of `nr`: [i, jb, jj, k] over the n / nr full panels and
/// [i, jt, k] over the n % nr tail columns of the last panel (either may be absent).
/// `a_at(i, k)` is A's element and `out_at(i, j)` the output's indices.
std::vector<Stmt> PackedUpdateNests(KernelBuilder& b, Expr m, int64_t n, Expr k_extent,
                                    int64_t nr, loop::BufferRef bm, loop::BufferRef out,
                                    const std::function<Expr(Expr, Expr)>& a_at,
                                    const std::function<std::vector<Expr>(Expr, Expr)>& out_at,
                                    double alpha, DType dt, bool u8s8) {
  std::vector<Stmt> nests;
  auto update = [&](Expr i, Expr j, Expr k, std::vector<Expr> b_idx) {
    Expr prod = Product(a_at(i, k), loop::Load(bm, std::move(b_idx)), u8s8);
    if (alpha != 1) prod = Const(alpha, dt) * prod;
    std::vector<Expr> o = out_at(i, j);
    return loop::Store(out, o, loop::Load(out, o) + prod);
  };
  const int64_t panels = n / nr, tail = n % nr;
  if (panels > 0) {
    std::vector<loop::Var> vars = b.NewVars("", {"i", "jb", "jj", "k"});
    std::vector<Expr> idx = Refs(vars);
    Expr j = IdxAdd(IdxMul(idx[1], nr), idx[2]);
    nests.push_back(NestDims(vars, {m, Idx(panels), Idx(nr), k_extent},
                         update(idx[0], j, idx[3], {idx[1], idx[3], idx[2]}),
                         {false, false, false, true}));
  }
  if (tail > 0) {
    std::vector<loop::Var> vars = b.NewVars("", {"i", "jt", "k"});
    std::vector<Expr> idx = Refs(vars);
    Expr j = IdxAdd(idx[1], loop::IntImm(panels * nr));
    nests.push_back(NestDims(vars, {m, Idx(tail), k_extent},
                         update(idx[0], j, idx[2], {loop::IntImm(panels), idx[2], idx[1]}),
                         {false, false, true}));
  }
  return nests;
}

absl::StatusOr<std::vector<Stmt>> LowerGemm(KernelBuilder& b, const graph::Node& node,
                                            const Epilogue& epi) {
  const graph::Value* av = node.input(0);
  const graph::Value* bv = node.input(1);
  const graph::Value* cv = node.input(2);
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  const DType dt = node.output(0)->type().dtype;
  const int64_t nr = graph::PackedBPanelWidth(node);
  if (av->type().rank() != 2 || bv->type().rank() != (nr > 0 ? 3 : 2) || os.size() != 2) {
    return NoLowering(node, "operands of rank other than 2");
  }
  const graph::GemmAttrs attrs = graph::GemmAttrs::Of(node);
  const bool trans_a = attrs.transA;
  const bool trans_b = attrs.transB;
  const double alpha = attrs.alpha;
  const double beta = attrs.beta;

  loop::BufferRef a = b.Input(av);
  loop::BufferRef bm = b.Input(bv);
  loop::BufferRef c = cv != nullptr ? b.Input(cv) : nullptr;
  loop::BufferRef out = b.out();
  // Dims as i64 expressions (M, N or K may be symbolic).
  const std::vector<Expr> od = loop::BufferDims(*out);
  const Expr k_extent = loop::BufferDim(*a, trans_a ? 0 : 1);
  std::vector<Stmt> nests;
  {
    std::vector<loop::Var> vars = b.NewVars("init.", {"i", "j"});
    std::vector<Expr> idx = Refs(vars);
    Expr value = Const(0, dt);
    if (c && beta != 0) {
      value = loop::Load(c, BroadcastIndices(cv->type().shape, idx));
      if (beta != 1) value = Const(beta, dt) * value;
    }
    nests.push_back(NestDims(vars, od, loop::Store(out, idx, value)));
  }
  if (nr > 0) {
    for (Stmt& s : PackedUpdateNests(
             b, od[0], os[1], k_extent, nr, bm, out,
             [&](Expr i, Expr k) {
               return loop::Load(a, trans_a ? std::vector<Expr>{k, i} : std::vector<Expr>{i, k});
             },
             [](Expr i, Expr j) {
               return std::vector<Expr>{i, j};
             },
             alpha, dt,
             /*u8s8=*/false)) {
      nests.push_back(std::move(s));
    }
  } else {
    std::vector<loop::Var> vars = b.NewVars("", {"i", "j", "k"});
    std::vector<Expr> idx = Refs(vars);
    Expr i = idx[0], j = idx[1], k = idx[2];
    Expr prod = loop::Load(a, trans_a ? std::vector<Expr>{k, i} : std::vector<Expr>{i, k}) *
                loop::Load(bm, trans_b ? std::vector<Expr>{j, k} : std::vector<Expr>{k, j});
    if (alpha != 1) prod = Const(alpha, dt) * prod;
    Expr value = loop::Load(out, {i, j}) + prod;
    nests.push_back(NestDims(vars, {od[0], od[1], k_extent}, loop::Store(out, {i, j}, value),
                             {false, false, true}));
  }
  KILN_ASSIGN_OR_RETURN(Stmt tail, epi.FinalNest(nullptr));
  if (tail) nests.push_back(tail);
  return nests;
}

/// Indices into a MatMul operand of `shape` for batch indices `batch` (broadcast, right-aligned)
/// and the two matrix indices (`row`, `col`); a 1-D operand takes only its vector index.
std::vector<Expr> OperandIndices(const std::vector<int64_t>& shape, const std::vector<Expr>& batch,
                                 Expr row, Expr col, bool is_a) {
  if (shape.size() == 1) return {is_a ? col : row};
  std::vector<int64_t> batch_shape(shape.begin(), shape.end() - 2);
  std::vector<Expr> idx = BroadcastIndices(batch_shape, batch);
  idx.push_back(row);
  idx.push_back(col);
  return idx;
}

/// The update nest of a MatMul whose B is one matrix shared by every batch of a batched A
/// (a Linear layer on [seq, batch, d] activations): the batch rows and A's rows form one i
/// loop of extent batch·M, so the matmul schedule tiles them together instead of running one
/// short product (often a GEMV, M = 1) per batch over the same B.
Stmt SharedWeightUpdateNest(KernelBuilder& b, loop::BufferRef a, loop::BufferRef bm,
                            loop::BufferRef out, const std::vector<Expr>& os, Expr k_extent,
                            bool u8s8) {
  std::vector<loop::Var> vars = b.NewVars("", {"i", "j", "k"});
  std::vector<Expr> idx = Refs(vars);
  const std::vector<Expr> rows(os.begin(), os.end() - 1);
  Expr m = Idx(1);
  for (const Expr& d : rows) m = MulDims(m, d);
  std::vector<Expr> out_idx = Unflatten(rows, idx[0]);
  std::vector<Expr> a_idx = out_idx;
  out_idx.push_back(idx[1]);
  a_idx.push_back(idx[2]);
  Expr value = loop::Load(out, out_idx) +
               Product(loop::Load(a, a_idx), loop::Load(bm, {idx[2], idx[1]}), u8s8);
  return NestDims(vars, {m, os.back(), k_extent}, loop::Store(out, out_idx, value),
                  {false, false, true});
}

absl::StatusOr<std::vector<Stmt>> LowerBatchedMatMul(KernelBuilder& b, const graph::Node& node,
                                                     const Epilogue& epi) {
  const graph::Value* av = node.input(0);
  const graph::Value* bv = node.input(1);
  const std::vector<int64_t>& as = av->type().shape;
  const std::vector<int64_t>& bs = bv->type().shape;
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  const DType dt = node.output(0)->type().dtype;
  if (as.empty() || bs.empty()) return NoLowering(node, "scalar operands");
  const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  const int64_t nbatch = static_cast<int64_t>(os.size()) - (a_vec ? 0 : 1) - (b_vec ? 0 : 1);
  if (nbatch < 0) return NoLowering(node, "this output rank");
  const bool u8s8 = graph::MatMulAttrs::Of(node).quant == graph::Quant::kU8S8;
  if (u8s8 && (dt != DType::kInt32 || as.size() < 2 || bs.size() < 2)) {
    return NoLowering(node, "a quant=\"u8s8\" MatMul that is not on i32 word matrices");
  }

  // bf16 is a storage type: a bf16 MatMul sums exact f32 products of its operands in an f32
  // workspace and rounds once at the end (as cuBLAS's and ONNX Runtime's bf16 GEMMs do).
  const bool bf16 = dt == DType::kBFloat16;
  if (bf16 && graph::PackedBPanelWidth(node) > 0) return NoLowering(node, "a packed bf16 B");
  const bool symbolic = !node.output(0)->type().is_static() || !av->type().is_static() ||
                        !bv->type().is_static();
  if (bf16 && symbolic) return NoLowering(node, "a bf16 MatMul with symbolic dims");
  auto widen = [&](Expr e) { return bf16 ? loop::Cast(DType::kFloat32, std::move(e)) : e; };

  loop::BufferRef a = b.Input(av);
  loop::BufferRef bm = b.Input(bv);
  loop::BufferRef out = b.out();
  loop::BufferRef acc = bf16 ? b.Workspace("acc", DType::kFloat32, os) : out;
  // Dims as i64 expressions (symbolic ones read the kernel's dims param).
  const std::vector<Expr> od = loop::BufferDims(*out);
  const Expr k_extent = loop::BufferDim(*a, as.size() - 1);
  std::vector<std::string> names;
  for (int64_t d = 0; d < nbatch; ++d) names.push_back(absl::StrCat("b", d));
  if (!a_vec) names.push_back("i");
  if (!b_vec) names.push_back("j");
  std::vector<Stmt> nests;
  {
    std::vector<loop::Var> vars = b.NewVars("init.", names);
    nests.push_back(NestDims(vars, od, loop::Store(acc, Refs(vars), Const(0, acc->dtype))));
  }
  if (const int64_t nr = graph::PackedBPanelWidth(node); nr > 0) {
    // A packed B is one matrix shared by every batch: rows of all batches form one i loop.
    if (bs.size() != 3 || as.size() != os.size()) return NoLowering(node, "this packed B");
    const std::vector<Expr> rows(od.begin(), od.end() - 1);
    Expr m = Idx(1);
    for (const Expr& d : rows) m = MulDims(m, d);
    for (Stmt& s : PackedUpdateNests(
             b, m, os.back(), k_extent, nr, bm, out,
             [&](Expr i, Expr k) {
               std::vector<Expr> idx = Unflatten(rows, i);
               idx.push_back(k);
               return loop::Load(a, idx);
             },
             [&](Expr i, Expr j) {
               std::vector<Expr> idx = Unflatten(rows, i);
               idx.push_back(j);
               return idx;
             },
             1.0, dt, u8s8)) {
      nests.push_back(std::move(s));
    }
  } else if (nbatch > 0 && bs.size() == 2 && as.size() == os.size() && !bf16) {
    nests.push_back(SharedWeightUpdateNest(b, a, bm, out, od, k_extent, u8s8));
  } else {
    std::vector<std::string> unames = names;
    unames.push_back("k");
    std::vector<loop::Var> vars = b.NewVars("", unames);
    std::vector<Expr> idx = Refs(vars);
    std::vector<Expr> out_idx(idx.begin(), idx.end() - 1);
    std::vector<Expr> batch(idx.begin(), idx.begin() + nbatch);
    Expr k = idx.back();
    Expr i = a_vec ? nullptr : idx[nbatch];
    Expr j = b_vec ? nullptr : idx[nbatch + (a_vec ? 0 : 1)];
    Expr value =
        loop::Load(acc, out_idx) +
        Product(widen(loop::Load(a, OperandIndices(as, batch, i, k, /*is_a=*/true))),
                widen(loop::Load(bm, OperandIndices(bs, batch, k, j, /*is_a=*/false))), u8s8);
    std::vector<Expr> extents = od;
    extents.push_back(k_extent);
    std::vector<bool> reduction(os.size(), false);
    reduction.push_back(true);
    nests.push_back(NestDims(vars, extents, loop::Store(acc, out_idx, value), reduction));
  }
  KILN_ASSIGN_OR_RETURN(Stmt tail, bf16 ? epi.FinalNest(
                                              [](Expr v, const std::vector<Expr>&) {
                                                return loop::Cast(DType::kBFloat16, v);
                                              },
                                              acc)
                                        : epi.FinalNest(nullptr));
  if (tail) nests.push_back(tail);
  return nests;
}

}  // namespace

absl::StatusOr<std::vector<Stmt>> LowerMatMul(KernelBuilder& b, const graph::Node& node,
                                              const Epilogue& epi) {
  KILN_RETURN_IF_ERROR(epi.CheckSameDType(node));
  if (node.op() == graph::OpKind::kGemm) return LowerGemm(b, node, epi);
  return LowerBatchedMatMul(b, node, epi);
}

}  // namespace kiln::lowering
