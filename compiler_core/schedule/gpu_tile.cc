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
// a * b, folded where a is an immediate or b is 1.
Expr Times(Expr a, int64_t b) {
  if (a->kind == loop::ExprKind::kIntImm) return I(a->int_value * b);
  return b == 1 ? a : a * I(b);
}
// a + b, folded where a is the immediate 0.
Expr Plus(Expr a, Expr b) {
  return a->kind == loop::ExprKind::kIntImm && a->int_value == 0 ? b : a + b;
}

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

// Whether an operand walks K fastest in memory: the last index of one of its loads reads a
// reduction loop but not the group's innermost loop (A[i, k] for M; B[j, k] for N).
bool KFirst(const Expr& operand, const Group& g, const Group& k) {
  bool k_first = false;
  loop::VisitExprs(operand, [&](const Expr& ld) {
    if (ld->kind != loop::ExprKind::kLoad || ld->operands.empty() || k_first) return;
    std::set<const loop::VarNode*> last = VarsOf(ld->operands.back());
    bool reads_k = false;
    for (const Stmt& r : k.loops) reads_k = reads_k || last.count(r->loop_var.get()) != 0;
    k_first = reads_k && last.count(g.loops.back()->loop_var.get()) == 0;
  });
  return k_first;
}

// The elements one asynchronous copy of `operand` into a `tile_type` tile can move along the
// group `along` (the tile's contiguous dim, `tile_extent` long), or 0 if it cannot be copied
// asynchronously (cp.async copies bytes: the operand must be a plain load of a param or
// workspace of the tile's type). 16 bytes' worth where the load's last index is the group's
// innermost variable alone, and that loop's extent, the buffer's last dim and the tile's extent
// are multiples of it (so a run starting at a multiple is contiguous, aligned, and inside or
// outside the bounds as a whole); else 1 for 4-byte elements; else 0.
int64_t AsyncLanes(const Expr& operand, DType tile_type, const Group& along, int64_t tile_extent) {
  if (operand->kind != loop::ExprKind::kLoad || operand->dtype != tile_type ||
      operand->buffer->scope != loop::Buffer::Scope::kGlobal || operand->operands.empty()) {
    return 0;
  }
  const int64_t elem = static_cast<int64_t>(DTypeSize(tile_type));
  const Stmt& inner = along.loops.back();
  const loop::VarNode* v = inner->loop_var.get();
  bool contiguous = operand->operands.back()->kind == loop::ExprKind::kVar &&
                    operand->operands.back()->var.get() == v;
  for (size_t d = 0; d + 1 < operand->operands.size(); ++d) {
    contiguous = contiguous && VarsOf(operand->operands[d]).count(v) == 0;
  }
  for (int64_t bytes : {16, 8, 4}) {
    const int64_t lanes = bytes / elem;
    if (lanes == 1) return 1;
    if (lanes < 1 || !contiguous) continue;
    if (inner->extent % lanes == 0 && operand->buffer->shape.back() % lanes == 0 &&
        tile_extent % lanes == 0) {
      return lanes;
    }
  }
  return 0;
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
    const bool k_first = KFirst(operand, g, k);
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

absl::Status GpuTileMma(loop::Func& func, const std::string& nest, loop::MmaShape shape,
                        int64_t block, int64_t stages) {
  if (shape == loop::MmaShape::kNone) {
    return absl::FailedPreconditionError("gpu_tile_mma needs an mma shape");
  }
  if (block != 64 && block != 128) {
    return absl::FailedPreconditionError("gpu_tile_mma's block tile is 64 or 128");
  }
  if (stages != 1 && stages != 2) {
    return absl::FailedPreconditionError("gpu_tile_mma's stages are 1 or 2");
  }
  absl::StatusOr<Contraction> classified = Classify(func, nest);
  if (!classified.ok()) return classified.status();
  Contraction& ct = *classified;
  const Group &m = ct.m, &n = ct.n, &batch = ct.batch, &k = ct.k;
  const loop::BufferRef c = ct.store->buffer;
  const std::string cn = c->name;
  const int64_t mk = loop::MmaK(shape);
  const DType tile_type = loop::MmaInputType(shape);
  const int64_t elem = static_cast<int64_t>(DTypeSize(tile_type));
  // Warps as 2 x (block / 32), each a (block / 2) x 32 tile of C as mi x 4 MMAs of 16 x 8.
  const int64_t warps_n = block / 32, warp_m = block / 2, kWarpN = 32;
  const int64_t mi = warp_m / 16, nj = kWarpN / 8, threads = 64 * warps_n;
  // K tiles of 32, 16 for f32 at block 128 (two stages of it stay within 48 KB of shared).
  const int64_t bk = elem == 4 && block == 128 ? 16 : 32;
  // An operand widened from the tile's type (a bf16 MatMul sums f32 products of bf16 loads) is
  // staged as stored: widening is exact, and the MMA takes the tile's type anyway.
  for (Expr* operand : {&ct.x, &ct.y}) {
    const Expr& e = *operand;
    if (e->kind == loop::ExprKind::kCast && e->dtype == DType::kFloat32 &&
        e->operands[0]->dtype == tile_type && tile_type != DType::kFloat32) {
      *operand = e->operands[0];
    }
  }
  // Each tile stored with its rows along the operand's contiguous dim.
  const bool a_mk = KFirst(ct.x, m, k), b_nk = KFirst(ct.y, n, k);
  int64_t la = AsyncLanes(ct.x, tile_type, a_mk ? k : m, a_mk ? bk : block);
  int64_t lb = AsyncLanes(ct.y, tile_type, b_nk ? k : n, b_nk ? bk : block);
  const bool pipelined = stages == 2 && la > 0 && lb > 0;
  if (!pipelined) la = lb = 1;
  const int64_t ns = pipelined ? 2 : 1;
  // Rows of K padded by 16 bytes, rows of M or N by 8 elements: fragment reads and copies
  // avoid bank conflicts, and every row starts 16-byte aligned (async copies of 16 bytes).
  auto tile_shape = [&](bool r_major) {
    return r_major ? std::vector<int64_t>{ns, block, bk + 16 / elem}
                   : std::vector<int64_t>{ns, bk, block + 8};
  };
  const loop::BufferRef xs =
      loop::MakeBuffer(cn + "_xs", tile_type, tile_shape(a_mk), loop::Buffer::Scope::kShared);
  const loop::BufferRef ys =
      loop::MakeBuffer(cn + "_ys", tile_type, tile_shape(b_nk), loop::Buffer::Scope::kShared);
  if (xs->NumBytes() + ys->NumBytes() > 48 * 1024) {
    return absl::FailedPreconditionError("gpu_tile_mma's tiles exceed 48 KB of shared memory");
  }
  const loop::BufferRef acc = loop::MakeBuffer(cn + "_acc", DType::kFloat32, {threads, mi, nj, 4},
                                               loop::Buffer::Scope::kLocal);
  const Var gb = loop::MakeVar(cn + ".b"), gm = loop::MakeVar(cn + ".bm"),
            gn = loop::MakeVar(cn + ".bn"), ko = loop::MakeVar(cn + ".ko");
  int fresh = 0;
  auto thread = [&]() { return loop::MakeVar(absl::StrCat(cn, ".t", ++fresh)); };
  auto in_threads = [&](const Var& t, Stmt body) {
    return loop::For(t, threads, std::move(body), ForKind::kThreadIdxX);
  };
  auto unrolled = [](const Var& v, int64_t n, Stmt body) {
    return loop::For(v, n, std::move(body), ForKind::kUnrolled);
  };
  auto batched = [&](Expr e) { return batch.Apply(std::move(e), V(gb)); };

  // acc = 0.
  const Var t0 = thread(), i0 = loop::MakeVar(cn + ".i0"), j0 = loop::MakeVar(cn + ".j0"),
            e0 = loop::MakeVar(cn + ".e0");
  Stmt zero = in_threads(
      t0,
      unrolled(
          i0, mi,
          unrolled(
              j0, nj,
              unrolled(e0, 4, loop::Store(acc, {V(t0), V(i0), V(j0), V(e0)}, loop::FloatImm(0))))));
  // Thread t's part of copying K tile `kt` of an operand into `stage` of its tile: tile
  // element [stage, row, col] (row along M/N and col along K when `r_major`, else the
  // reverse) = operand at (block * B + M/N index, kt * bk + K index), 0 past the edges;
  // consecutive threads take consecutive runs of `lanes` along the rows (coalesced reads).
  auto copy = [&](const loop::BufferRef& tile, bool r_major, const Expr& operand, const Group& g,
                  const Var& blk, int64_t lanes, const Expr& stage, const Expr& kt, const Var& t) {
    const int64_t rows = r_major ? block : bk, cols = r_major ? bk : block;
    const int64_t per_row = cols / lanes, total = rows * per_row;
    const Var l =
        loop::MakeVar(absl::StrCat(cn, ".", tile->name == xs->name ? "x" : "y", "l", ++fresh));
    Expr e = V(l) * I(threads) + V(t);
    Expr row = Div(e, per_row), col = Times(Mod(e, per_row), lanes);
    Expr i = r_major ? row : col, kk = r_major ? col : row;
    Expr grow = V(blk) * I(block) + i, kidx = Plus(Times(kt, bk), kk);
    Expr value = batched(k.Apply(g.Apply(operand, grow), kidx));
    Expr inside = And(Lt(grow, g.extent), Lt(kidx, k.extent));
    std::vector<Expr> at = {stage, row, col};
    Stmt fill;
    if (pipelined) {
      fill = loop::AsyncCopy(tile, at, value, lanes, inside);
    } else {
      if (value->dtype != tile_type) value = loop::Cast(tile_type, value);
      fill = loop::IfThenElse(inside, loop::Store(tile, at, value),
                              loop::Store(tile, at, loop::FloatImm(0, tile_type)));
    }
    if (total % threads != 0) fill = loop::IfThenElse(Lt(e, total), fill);
    return loop::For(l, (total + threads - 1) / threads, fill, ForKind::kUnrolled);
  };
  auto copy_both = [&](const Expr& stage, const Expr& kt, const Var& t) {
    return loop::Block({copy(xs, a_mk, ct.x, m, gm, la, stage, kt, t),
                        copy(ys, b_nk, ct.y, n, gn, lb, stage, kt, t)});
  };
  const int64_t k_tiles = (k.extent + bk - 1) / bk;
  std::vector<Stmt> body = {zero};
  Stmt fetch;
  const Var t1 = thread();
  if (pipelined) {
    // Two stages: K tile ko + 1 is copied asynchronously while the warps multiply tile ko.
    const Var tp = thread();
    body.push_back(in_threads(tp, loop::Block({copy_both(I(0), I(0), tp), loop::AsyncWait(1)})));
    Expr next = V(ko) + I(1);
    fetch =
        in_threads(t1, loop::Block({loop::IfThenElse(loop::Binary(BinaryOp::kLt, next, I(k_tiles)),
                                                     copy_both(Mod(next, 2), next, t1)),
                                    loop::AsyncWait(1)}));
  } else {
    fetch = in_threads(t1, copy_both(I(0), V(ko), t1));
  }
  // The warp's MMAs over the K tile.
  Expr stage = pipelined ? Mod(V(ko), 2) : I(0);
  const Var t2 = thread(), ks = loop::MakeVar(cn + ".ks"), i2 = loop::MakeVar(cn + ".i2"),
            j2 = loop::MakeVar(cn + ".j2");
  Expr warp2 = Div(V(t2), 32);
  Expr a_r = Div(warp2, warps_n) * I(warp_m) + V(i2) * I(16),
       b_c = Mod(warp2, warps_n) * I(kWarpN) + V(j2) * I(8);
  Expr kk = V(ks) * I(mk);
  Expr a_tile =
      loop::Load(xs, a_mk ? std::vector<Expr>{stage, a_r, kk} : std::vector<Expr>{stage, kk, a_r});
  Expr b_tile =
      loop::Load(ys, b_nk ? std::vector<Expr>{stage, b_c, kk} : std::vector<Expr>{stage, kk, b_c});
  const uint8_t layout =
      static_cast<uint8_t>((a_mk ? loop::kMmaAMajorM : 0) | (b_nk ? loop::kMmaBMajorN : 0));
  Stmt mma = in_threads(
      t2, loop::For(ks, bk / mk,
                    unrolled(i2, mi,
                             unrolled(j2, nj,
                                      loop::Mma(shape, acc, {V(t2), V(i2), V(j2), I(0)}, a_tile,
                                                b_tile, Mod(V(t2), 32), layout))),
                    ForKind::kSerial, /*is_reduction=*/true));
  body.push_back(loop::For(ko, k_tiles, loop::Block({fetch, mma}), ForKind::kSerial,
                           /*is_reduction=*/true));
  // C += acc at the lane's fragment positions (PTX's C layout: row g + 8 (e / 2), column
  // 2 (lane % 4) + e % 2 of each 16 x 8 tile).
  const Var t3 = thread(), i3 = loop::MakeVar(cn + ".i3"), j3 = loop::MakeVar(cn + ".j3"),
            e3 = loop::MakeVar(cn + ".e3");
  Expr lane = Mod(V(t3), 32), warp3 = Div(V(t3), 32);
  Expr row = V(gm) * I(block) + Div(warp3, warps_n) * I(warp_m) + V(i3) * I(16) + Div(lane, 4) +
             I(8) * Div(V(e3), 2);
  Expr col = V(gn) * I(block) + Mod(warp3, warps_n) * I(kWarpN) + V(j3) * I(8) +
             I(2) * Mod(lane, 4) + Mod(V(e3), 2);
  std::vector<Expr> c_at = batch.Apply(n.Apply(m.Apply(ct.store->indices, row), col), V(gb));
  Expr sum = loop::Load(acc, {V(t3), V(i3), V(j3), V(e3)});
  if (c->dtype != DType::kFloat32) sum = loop::Cast(c->dtype, sum);
  body.push_back(in_threads(
      t3, unrolled(i3, mi,
                   unrolled(j3, nj,
                            unrolled(e3, 4,
                                     loop::IfThenElse(
                                         And(Lt(row, m.extent), Lt(col, n.extent)),
                                         loop::Store(c, c_at, loop::Load(c, c_at) + sum)))))));
  Install(func, ct, {xs, ys, acc}, loop::Block(body), gb, gm, gn, block, block);
  return absl::OkStatus();
}

}  // namespace kiln::schedule
