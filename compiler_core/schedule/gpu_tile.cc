// gpu_tile: contraction nest → shared-memory tiled implicit GEMM (gpu_tile.h).
#include "compiler_core/schedule/gpu_tile.h"

#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/ir/loop/visitor.h"
#include "compiler_core/schedule/loop_utils.h"

namespace kiln::schedule {
namespace {

using loop::BinaryOp;
using loop::Expr;
using loop::ForKind;
using loop::Stmt;
using loop::Var;

Expr I(int64_t v) { return loop::IntImm(v); }
Expr V(const Var& v) { return loop::VarRef(v); }
Expr Div(Expr a, int64_t b) { return loop::Binary(BinaryOp::kFloorDiv, std::move(a), I(b)); }
Expr Mod(Expr a, int64_t b) { return loop::Binary(BinaryOp::kFloorMod, std::move(a), I(b)); }
Expr Lt(Expr a, int64_t b) { return loop::Binary(BinaryOp::kLt, std::move(a), I(b)); }
Expr And(Expr a, Expr b) { return loop::Binary(BinaryOp::kAnd, std::move(a), std::move(b)); }

std::set<const loop::VarNode*> VarsOf(const Expr& e) {
  std::set<const loop::VarNode*> vars;
  loop::VisitExprs(e, [&](const Expr& x) {
    if (x->kind == loop::ExprKind::kVar) vars.insert(x->var.get());
  });
  return vars;
}

// A group of loops flattened row-major into one index.
struct Group {
  std::vector<Stmt> loops;
  int64_t extent = 1;
  // Substitutes each loop's variable by its part of `flat`.
  // Where used, `flat` < extent (the tile copies and the write-back are guarded), so the
  // outermost loop's part needs no modulo.
  Expr Apply(Expr e, const Expr& flat) const {
    int64_t stride = extent;
    for (size_t i = 0; i < loops.size(); ++i) {
      stride /= loops[i]->extent;
      Expr part = stride == 1 ? flat : Div(flat, stride);
      if (i > 0) part = Mod(part, loops[i]->extent);
      e = Substitute(e, loops[i]->loop_var.get(), part);
    }
    return e;
  }
  std::vector<Expr> Apply(std::vector<Expr> es, const Expr& flat) const {
    for (Expr& e : es) e = Apply(e, flat);
    return es;
  }
};

Stmt ThreadLoops(const Var& ty, const Var& tx, Stmt body) {
  return loop::For(ty, kGpuTileThreads,
                   loop::For(tx, kGpuTileThreads, std::move(body), ForKind::kThreadIdxX),
                   ForKind::kThreadIdxY);
}

// The nest `nest` of `func` as a contraction (GpuTileContraction's form).
struct Contraction {
  std::vector<Stmt> top;  // the func's top-level statements
  size_t at = 0;          // the nest's index among them
  Stmt store;
  Expr x, y;
  Group m, n, batch, k;
};

absl::StatusOr<Contraction> Classify(const loop::Func& func, const std::string& nest) {
  Contraction ct;
  std::vector<Stmt>& top = ct.top;
  Stmt body = Unwrap(func.body);
  if (body && body->kind == loop::StmtKind::kBlock) {
    top = body->stmts;
  } else if (body) {
    top = {body};
  }
  size_t at = top.size();
  for (size_t i = 0; i < top.size(); ++i) {
    if (top[i]->kind == loop::StmtKind::kFor && top[i]->loop_var->name == nest) at = i;
  }
  if (at == top.size()) {
    return absl::FailedPreconditionError(absl::StrCat("no top-level nest '", nest, "'"));
  }
  ct.at = at;
  std::vector<Stmt> chain = PerfectChain(top[at]);
  Stmt store = Unwrap(chain.back()->body);
  if (!store || store->kind != loop::StmtKind::kStore) {
    return absl::FailedPreconditionError("the nest does not end in one store");
  }
  ct.store = store;
  // C[idx] = C[idx] + X * Y (either order of the sum).
  const loop::BufferRef c = store->buffer;
  const Expr& v = store->value;
  auto is_c_load = [&](const Expr& e) {
    if (e->kind != loop::ExprKind::kLoad || e->buffer != c) return false;
    if (e->operands.size() != store->indices.size()) return false;
    for (size_t d = 0; d < e->operands.size(); ++d) {
      if (loop::PrintExpr(e->operands[d]) != loop::PrintExpr(store->indices[d])) return false;
    }
    return true;
  };
  if (v->kind != loop::ExprKind::kBinary || v->binary_op != BinaryOp::kAdd) {
    return absl::FailedPreconditionError("the store is not an accumulation C = C + X * Y");
  }
  Expr product = is_c_load(v->operands[0])   ? v->operands[1]
                 : is_c_load(v->operands[1]) ? v->operands[0]
                                             : nullptr;
  if (!product || product->kind != loop::ExprKind::kBinary ||
      product->binary_op != BinaryOp::kMul || !IsFloat(c->dtype)) {
    return absl::FailedPreconditionError("the store is not an accumulation C = C + X * Y");
  }
  ct.x = product->operands[0];
  ct.y = product->operands[1];
  const std::set<const loop::VarNode*> xv = VarsOf(ct.x), yv = VarsOf(ct.y);
  bool in_reductions = false;
  for (const Stmt& l : chain) {
    if (l->for_kind != ForKind::kSerial || l->limit != nullptr) {
      return absl::FailedPreconditionError("the nest's loops must be serial with no limit");
    }
    if (l->is_reduction) {
      in_reductions = true;
      ct.k.loops.push_back(l);
      ct.k.extent *= l->extent;
      continue;
    }
    if (in_reductions) {
      return absl::FailedPreconditionError("a spatial loop is inside a reduction");
    }
    const bool in_x = xv.count(l->loop_var.get()) != 0, in_y = yv.count(l->loop_var.get()) != 0;
    Group& g = in_x && !in_y ? ct.m : in_y && !in_x ? ct.n : ct.batch;
    g.loops.push_back(l);
    g.extent *= l->extent;
  }
  if (ct.m.loops.empty() || ct.n.loops.empty() || ct.k.loops.empty()) {
    return absl::FailedPreconditionError(
        "not a GEMM: no spatial loop read by only one operand, or no reduction");
  }
  if (ct.batch.extent > 65535) {
    return absl::FailedPreconditionError("the batch exceeds CUDA's grid z limit");
  }
  return ct;
}

// Replaces the contraction nest of `ct` in `func` by `body` (the block's work) inside allocs of
// `buffers` (outermost first) and the grid: blockIdx.x over N tiles of `bn`, .y over M tiles of
// `bm`, .z over the batch (or the batch variable `gb` 0 when there is none).
void Install(loop::Func& func, Contraction& ct, const std::vector<loop::BufferRef>& buffers,
             Stmt body, const Var& gb, const Var& gm, const Var& gn, int64_t bm, int64_t bn) {
  for (auto it = buffers.rbegin(); it != buffers.rend(); ++it) body = loop::Allocate(*it, body);
  body = loop::For(gn, (ct.n.extent + bn - 1) / bn, body, ForKind::kBlockIdxX);
  body = loop::For(gm, (ct.m.extent + bm - 1) / bm, body, ForKind::kBlockIdxY);
  if (ct.batch.extent > 1) {
    body = loop::For(gb, ct.batch.extent, body, ForKind::kBlockIdxZ);
  } else {
    body = Substitute(body, gb.get(), I(0));
  }
  ct.top[ct.at] = body;
  func.body = ct.top.size() == 1 ? ct.top[0] : loop::Block(ct.top);
}

}  // namespace

absl::StatusOr<GemmShape> AnalyzeContraction(const loop::Func& func, const std::string& nest) {
  absl::StatusOr<Contraction> ct = Classify(func, nest);
  if (!ct.ok()) return ct.status();
  return GemmShape{ct->m.extent, ct->n.extent, ct->k.extent, ct->batch.extent};
}

absl::Status GpuTileContraction(loop::Func& func, const std::string& nest, int64_t tm, int64_t tn,
                                int64_t bk) {
  if (tm <= 0 || tn <= 0 || bk <= 0) {
    return absl::FailedPreconditionError("gpu_tile factors must be positive");
  }
  absl::StatusOr<Contraction> classified = Classify(func, nest);
  if (!classified.ok()) return classified.status();
  Contraction& ct = *classified;
  const Stmt& store = ct.store;
  const Expr& x = ct.x;
  const Expr& y = ct.y;
  const Group &m = ct.m, &n = ct.n, &batch = ct.batch, &k = ct.k;
  const loop::BufferRef c = store->buffer;
  const int64_t bm = kGpuTileThreads * tm, bn = kGpuTileThreads * tn;
  const int64_t threads = kGpuTileThreads * kGpuTileThreads;
  const std::string cn = c->name;
  auto buf = [&](const std::string& suffix, std::vector<int64_t> shape, loop::Buffer::Scope s) {
    return loop::MakeBuffer(cn + suffix, c->dtype, std::move(shape), s);
  };
  // Rows padded by one element: a copy that walks K across threads stores with an odd stride,
  // free of bank conflicts.
  const loop::BufferRef xs = buf("_xs", {bk, bm + 1}, loop::Buffer::Scope::kShared);
  const loop::BufferRef ys = buf("_ys", {bk, bn + 1}, loop::Buffer::Scope::kShared);
  const loop::BufferRef acc =
      buf("_acc", {kGpuTileThreads, kGpuTileThreads, tm, tn}, loop::Buffer::Scope::kLocal);
  const Var gb = loop::MakeVar(cn + ".b"), gm = loop::MakeVar(cn + ".bm"),
            gn = loop::MakeVar(cn + ".bn"), ko = loop::MakeVar(cn + ".ko");
  int fresh = 0;
  auto thread_vars = [&]() {
    ++fresh;
    return std::make_pair(loop::MakeVar(absl::StrCat(cn, ".ty", fresh)),
                          loop::MakeVar(absl::StrCat(cn, ".tx", fresh)));
  };
  auto batched = [&](Expr e) { return batch.Apply(std::move(e), V(gb)); };

  // acc = 0.
  auto [ty0, tx0] = thread_vars();
  const Var a0 = loop::MakeVar(cn + ".a0"), c0 = loop::MakeVar(cn + ".c0");
  Stmt zero = ThreadLoops(ty0, tx0,
                          loop::For(a0, tm,
                                    loop::For(c0, tn,
                                              loop::Store(acc, {V(ty0), V(tx0), V(a0), V(c0)},
                                                          loop::FloatImm(0, c->dtype)),
                                              ForKind::kUnrolled),
                                    ForKind::kUnrolled));

  // One operand's tile: tile[kk, i] = operand at (row/col base + i, ko*bk + kk), 0 outside.
  auto copy_tile = [&](const loop::BufferRef& tile, const Expr& operand, const Group& g,
                       const Var& block, int64_t width, const std::string& tag) {
    auto [ty, tx] = thread_vars();
    const Var l = loop::MakeVar(absl::StrCat(cn, ".", tag, "l"));
    const int64_t total = bk * width;
    const int64_t rounds = (total + threads - 1) / threads;
    Expr e = V(l) * I(threads) + V(ty) * I(kGpuTileThreads) + V(tx);
    // Consecutive threads walk the operand's contiguous dim: K when its first load's last
    // index reads a reduction but not the group's innermost loop (A[i, k]), else the rows.
    bool k_first = false;
    loop::VisitExprs(operand, [&](const Expr& ld) {
      if (ld->kind != loop::ExprKind::kLoad || ld->operands.empty() || k_first) return;
      std::set<const loop::VarNode*> last = VarsOf(ld->operands.back());
      bool reads_k = false;
      for (const Stmt& r : k.loops) reads_k = reads_k || last.count(r->loop_var.get()) != 0;
      k_first = reads_k && last.count(g.loops.back()->loop_var.get()) == 0;
    });
    Expr kk = k_first ? Mod(e, bk) : Div(e, width);
    Expr i = k_first ? Div(e, bk) : Mod(e, width);
    Expr row = V(block) * I(width) + i, kidx = V(ko) * I(bk) + kk;
    Expr value = batched(k.Apply(g.Apply(operand, row), kidx));
    Expr inside = And(Lt(row, g.extent), Lt(kidx, k.extent));
    Stmt fill = loop::IfThenElse(inside, loop::Store(tile, {kk, i}, value),
                                 loop::Store(tile, {kk, i}, loop::FloatImm(0, c->dtype)));
    if (total % threads != 0) fill = loop::IfThenElse(Lt(e, total), fill);
    return ThreadLoops(ty, tx, loop::For(l, rounds, fill, ForKind::kUnrolled));
  };
  Stmt load_x = copy_tile(xs, x, m, gm, bm, "x");
  Stmt load_y = copy_tile(ys, y, n, gn, bn, "y");

  // acc += xs * ys over the K tile.
  auto [ty2, tx2] = thread_vars();
  const Var kk = loop::MakeVar(cn + ".kk"), a2 = loop::MakeVar(cn + ".a2"),
            c2 = loop::MakeVar(cn + ".c2");
  std::vector<Expr> acc_at = {V(ty2), V(tx2), V(a2), V(c2)};
  Stmt mac = ThreadLoops(
      ty2, tx2,
      loop::For(
          kk, bk,
          loop::For(
              a2, tm,
              loop::For(
                  c2, tn,
                  loop::Store(acc, acc_at,
                              loop::Load(acc, acc_at) +
                                  loop::Load(xs, {V(kk), V(a2) * I(kGpuTileThreads) + V(ty2)}) *
                                      loop::Load(ys, {V(kk), V(c2) * I(kGpuTileThreads) + V(tx2)})),
                  ForKind::kUnrolled),
              ForKind::kUnrolled),
          ForKind::kSerial, /*is_reduction=*/true));
  Stmt k_tiles = loop::For(ko, (k.extent + bk - 1) / bk, loop::Block({load_x, load_y, mac}),
                           ForKind::kSerial, /*is_reduction=*/true);

  // C += acc where inside C.
  auto [ty3, tx3] = thread_vars();
  const Var a3 = loop::MakeVar(cn + ".a3"), c3 = loop::MakeVar(cn + ".c3");
  Expr row = V(gm) * I(bm) + V(a3) * I(kGpuTileThreads) + V(ty3);
  Expr col = V(gn) * I(bn) + V(c3) * I(kGpuTileThreads) + V(tx3);
  std::vector<Expr> c_at = batch.Apply(n.Apply(m.Apply(store->indices, row), col), V(gb));
  Stmt write = ThreadLoops(
      ty3, tx3,
      loop::For(a3, tm,
                loop::For(c3, tn,
                          loop::IfThenElse(
                              And(Lt(row, m.extent), Lt(col, n.extent)),
                              loop::Store(c, c_at,
                                          loop::Load(c, c_at) +
                                              loop::Load(acc, {V(ty3), V(tx3), V(a3), V(c3)}))),
                          ForKind::kUnrolled),
                ForKind::kUnrolled));

  Install(func, ct, {xs, ys, acc}, loop::Block({zero, k_tiles, write}), gb, gm, gn, bm, bn);
  return absl::OkStatus();
}

loop::MmaShape MmaShapeOfPrecision(const std::string& precision) {
  if (precision == "tf32") return loop::MmaShape::kM16N8K8Tf32;
  if (precision == "fp16" || precision == "f16") return loop::MmaShape::kM16N8K16F16;
  if (precision == "bf16") return loop::MmaShape::kM16N8K16Bf16;
  return loop::MmaShape::kNone;
}

absl::Status GpuTileMma(loop::Func& func, const std::string& nest, loop::MmaShape shape) {
  if (shape == loop::MmaShape::kNone) {
    return absl::FailedPreconditionError("gpu_tile_mma needs an mma shape");
  }
  absl::StatusOr<Contraction> classified = Classify(func, nest);
  if (!classified.ok()) return classified.status();
  Contraction& ct = *classified;
  const Group &m = ct.m, &n = ct.n, &batch = ct.batch, &k = ct.k;
  const loop::BufferRef c = ct.store->buffer;
  const std::string cn = c->name;
  // A block: 4 warps as 2 x 2, each a 32 x 32 tile of C as 2 x 4 MMAs of 16 x 8.
  constexpr int64_t kBlock = 64, kWarpM = 32, kWarpN = 32, kThreads = 128, kBk = 32, kPad = 8;
  const int64_t mk = loop::MmaK(shape);
  const DType tile_type = shape == loop::MmaShape::kM16N8K16F16    ? DType::kFloat16
                          : shape == loop::MmaShape::kM16N8K16Bf16 ? DType::kBFloat16
                                                                   : DType::kFloat32;
  const loop::BufferRef xs =
      loop::MakeBuffer(cn + "_xs", tile_type, {kBk, kBlock + kPad}, loop::Buffer::Scope::kShared);
  const loop::BufferRef ys =
      loop::MakeBuffer(cn + "_ys", tile_type, {kBk, kBlock + kPad}, loop::Buffer::Scope::kShared);
  const loop::BufferRef acc = loop::MakeBuffer(cn + "_acc", DType::kFloat32, {kThreads, 2, 4, 4},
                                               loop::Buffer::Scope::kLocal);
  const Var gb = loop::MakeVar(cn + ".b"), gm = loop::MakeVar(cn + ".bm"),
            gn = loop::MakeVar(cn + ".bn"), ko = loop::MakeVar(cn + ".ko");
  int fresh = 0;
  auto thread = [&]() { return loop::MakeVar(absl::StrCat(cn, ".t", ++fresh)); };
  auto threads = [&](const Var& t, Stmt body) {
    return loop::For(t, kThreads, std::move(body), ForKind::kThreadIdxX);
  };
  auto unrolled = [](const Var& v, int64_t n, Stmt body) {
    return loop::For(v, n, std::move(body), ForKind::kUnrolled);
  };
  auto batched = [&](Expr e) { return batch.Apply(std::move(e), V(gb)); };

  // acc = 0.
  const Var t0 = thread(), i0 = loop::MakeVar(cn + ".i0"), j0 = loop::MakeVar(cn + ".j0"),
            e0 = loop::MakeVar(cn + ".e0");
  Stmt zero = threads(t0, unrolled(i0, 2,
                                   unrolled(j0, 4,
                                            unrolled(e0, 4,
                                                     loop::Store(acc, {V(t0), V(i0), V(j0), V(e0)},
                                                                 loop::FloatImm(0))))));
  // tile[kk, i] = operand at (block * 64 + i, ko * bk + kk) as the tile's type, 0 outside;
  // consecutive threads walk the rows (a coalesced read for a row-contiguous operand).
  auto copy_tile = [&](const loop::BufferRef& tile, const Expr& operand, const Group& g,
                       const Var& block, const std::string& tag) {
    const Var t = thread(), l = loop::MakeVar(absl::StrCat(cn, ".", tag, "l"));
    Expr e = V(l) * I(kThreads) + V(t);
    Expr kk = Div(e, kBlock), i = Mod(e, kBlock);
    Expr row = V(block) * I(kBlock) + i, kidx = V(ko) * I(kBk) + kk;
    Expr value = batched(k.Apply(g.Apply(operand, row), kidx));
    if (value->dtype != tile_type) value = loop::Cast(tile_type, value);
    Stmt fill = loop::IfThenElse(And(Lt(row, g.extent), Lt(kidx, k.extent)),
                                 loop::Store(tile, {kk, i}, value),
                                 loop::Store(tile, {kk, i}, loop::FloatImm(0, tile_type)));
    return threads(t, loop::For(l, kBk * kBlock / kThreads, fill, ForKind::kUnrolled));
  };
  Stmt load_x = copy_tile(xs, ct.x, m, gm, "x");
  Stmt load_y = copy_tile(ys, ct.y, n, gn, "y");
  // The warp's MMAs over the K tile.
  const Var t2 = thread(), ks = loop::MakeVar(cn + ".ks"), i2 = loop::MakeVar(cn + ".i2"),
            j2 = loop::MakeVar(cn + ".j2");
  Expr warp2 = Div(V(t2), 32);
  Stmt mma = threads(
      t2, loop::For(
              ks, kBk / mk,
              unrolled(i2, 2,
                       unrolled(j2, 4,
                                loop::Mma(shape, acc, {V(t2), V(i2), V(j2), I(0)},
                                          loop::Load(xs, {V(ks) * I(mk), Div(warp2, 2) * I(kWarpM) +
                                                                             V(i2) * I(16)}),
                                          loop::Load(ys, {V(ks) * I(mk), Mod(warp2, 2) * I(kWarpN) +
                                                                             V(j2) * I(8)}),
                                          Mod(V(t2), 32)))),
              ForKind::kSerial, /*is_reduction=*/true));
  Stmt k_tiles = loop::For(ko, (k.extent + kBk - 1) / kBk, loop::Block({load_x, load_y, mma}),
                           ForKind::kSerial, /*is_reduction=*/true);
  // C += acc at the lane's fragment positions (PTX's C layout: row g + 8 (e / 2), column
  // 2 (lane % 4) + e % 2 of each 16 x 8 tile).
  const Var t3 = thread(), i3 = loop::MakeVar(cn + ".i3"), j3 = loop::MakeVar(cn + ".j3"),
            e3 = loop::MakeVar(cn + ".e3");
  Expr lane = Mod(V(t3), 32), warp3 = Div(V(t3), 32);
  Expr row = V(gm) * I(kBlock) + Div(warp3, 2) * I(kWarpM) + V(i3) * I(16) + Div(lane, 4) +
             I(8) * Div(V(e3), 2);
  Expr col = V(gn) * I(kBlock) + Mod(warp3, 2) * I(kWarpN) + V(j3) * I(8) + I(2) * Mod(lane, 4) +
             Mod(V(e3), 2);
  std::vector<Expr> c_at = batch.Apply(n.Apply(m.Apply(ct.store->indices, row), col), V(gb));
  Expr sum = loop::Load(acc, {V(t3), V(i3), V(j3), V(e3)});
  if (c->dtype != DType::kFloat32) sum = loop::Cast(c->dtype, sum);
  Stmt write = threads(
      t3,
      unrolled(
          i3, 2,
          unrolled(j3, 4,
                   unrolled(e3, 4,
                            loop::IfThenElse(And(Lt(row, m.extent), Lt(col, n.extent)),
                                             loop::Store(c, c_at, loop::Load(c, c_at) + sum))))));
  Install(func, ct, {xs, ys, acc}, loop::Block({zero, k_tiles, write}), gb, gm, gn, kBlock, kBlock);
  return absl::OkStatus();
}

}  // namespace kiln::schedule
