// Det: per matrix of the batch, a serial Gaussian elimination with partial pivoting in f64
// workspaces: "lu" (the matrix being reduced), "det" (the running product of pivots and row-swap
// signs), "piv" (the pivot row of the current column), "tmp" (a row-swap temporary) and "fac"
// (the current row's elimination factor). A zero pivot makes every later factor 0, so a
// singular matrix gives 0 without dividing by zero.
#include "absl/strings/str_cat.h"
#include "compiler_core/lowering/op_lowering.h"

namespace kiln::lowering {
namespace {

using loop::BinaryOp;
using loop::Expr;
using loop::Stmt;

// A serial loop that carries state through the workspaces.
Stmt Serial(const loop::Var& v, int64_t extent, Stmt body) {
  return loop::For(v, extent, std::move(body), loop::ForKind::kSerial, /*is_reduction=*/true);
}

}  // namespace

absl::StatusOr<std::vector<Stmt>> LowerDet(KernelBuilder& b, const graph::Node& node,
                                           const Epilogue& epi) {
  if (!epi.empty()) return NoLowering(node, "fused consumers");
  const graph::Value* xv = node.input(0);
  const std::vector<int64_t>& xs = xv->type().shape;
  const int64_t m = xs.back();
  const std::vector<int64_t> batch(xs.begin(), xs.end() - 2);
  const DType f64 = DType::kFloat64;
  std::vector<int64_t> mat = batch;
  mat.push_back(m);
  mat.push_back(m);

  loop::BufferRef x = b.Input(xv);
  loop::BufferRef out = b.out();
  loop::BufferRef lu = b.Workspace("lu", f64, mat);
  loop::BufferRef det = b.Workspace("det", f64, batch);
  loop::BufferRef piv = b.Workspace("piv", DType::kInt64, batch);
  loop::BufferRef tmp = b.Workspace("tmp", f64, batch);
  loop::BufferRef fac = b.Workspace("fac", f64, batch);

  std::vector<loop::Var> bv = b.NewVars("", AxisNames(batch.size()));
  const std::vector<Expr> bi = Refs(bv);
  auto at = [&](Expr row, Expr col) {
    std::vector<Expr> idx = bi;
    idx.push_back(std::move(row));
    idx.push_back(std::move(col));
    return idx;
  };
  auto A = [&](Expr row, Expr col) { return loop::Load(lu, at(std::move(row), std::move(col))); };
  loop::Var ci = b.NewVar("copy.i"), cj = b.NewVar("copy.j");
  loop::Var k = b.NewVar("k"), pi = b.NewVar("pivot.i"), sj = b.NewVar("swap.j");
  loop::Var ei = b.NewVar("elim.i"), ej = b.NewVar("elim.j");
  const Expr K = loop::VarRef(k), P = loop::Load(piv, bi);
  const Expr one = Const(1, f64), zero = Const(0, f64);

  const Expr CI = loop::VarRef(ci), CJ = loop::VarRef(cj);
  Stmt copy = Serial(
      ci, m,
      Serial(cj, m, loop::Store(lu, at(CI, CJ), loop::Cast(f64, loop::Load(x, at(CI, CJ))))));
  const Expr I = loop::VarRef(pi);
  Expr larger = Bin(BinaryOp::kGt, loop::Unary(loop::UnaryOp::kAbs, A(I, K)),
                    loop::Unary(loop::UnaryOp::kAbs, A(P, K)));
  Stmt find = Serial(
      pi, m,
      loop::Store(piv, bi,
                  loop::Select(Bin(BinaryOp::kAnd, Bin(BinaryOp::kGt, I, K), larger), I, P)));
  const Expr J = loop::VarRef(sj);
  Stmt swap = Serial(sj, m,
                     loop::Block({
                         loop::Store(tmp, bi, A(K, J)),
                         loop::Store(lu, at(K, J), A(P, J)),
                         loop::Store(lu, at(P, J), loop::Load(tmp, bi)),
                     }));
  // The sign flip is decided before the swap (piv is unchanged by it).
  Expr sign = loop::Select(Bin(BinaryOp::kNe, P, K), Const(-1, f64), one);
  const Expr EI = loop::VarRef(ei), EJ = loop::VarRef(ej);
  Expr pivot = A(K, K);
  Expr use = Bin(BinaryOp::kAnd, Bin(BinaryOp::kGt, EI, K), Bin(BinaryOp::kNe, pivot, zero));
  Stmt eliminate = Serial(
      ei, m,
      loop::Block({
          loop::Store(fac, bi, loop::Select(use, Bin(BinaryOp::kDiv, A(EI, K), pivot), zero)),
          Serial(ej, m, loop::Store(lu, at(EI, EJ), A(EI, EJ) - loop::Load(fac, bi) * A(K, EJ))),
      }));
  Stmt column = loop::Block({
      loop::Store(piv, bi, K),
      find,
      loop::Store(det, bi, loop::Load(det, bi) * sign),
      swap,
      loop::Store(det, bi, loop::Load(det, bi) * pivot),
      eliminate,
  });
  DType od = node.output(0)->type().dtype;
  Stmt body = loop::Block({
      copy,
      loop::Store(det, bi, one),
      Serial(k, m, column),
      loop::Store(out, bi, loop::Cast(od, loop::Load(det, bi))),
  });
  return std::vector<Stmt>{Nest(bv, batch, body, std::vector<bool>(batch.size(), true))};
}

}  // namespace kiln::lowering
