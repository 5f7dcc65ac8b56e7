// TfIdfVectorizer over integer tokens: nest "init" zeroes the counts; nest "count" runs, per
// row, over the pool's n-grams "j", the skips "skip" and the start positions "i" (reductions:
// they accumulate into the n-gram's output column, read from the indexes table) and adds 1
// where every token of the n-gram matches; nest "mode" (IDF and TFIDF only) weights the counts.
// Token positions past the row never match and every load index is clamped.
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/lowering/op_lowering.h"

namespace kiln::lowering {

using loop::BinaryOp;
using loop::Expr;
using loop::Stmt;

absl::StatusOr<std::vector<Stmt>> LowerTfIdfVectorizer(KernelBuilder& b, const graph::Node& node,
                                                       const Epilogue& epi) {
  if (!epi.empty()) return NoLowering(node, "fused consumers");
  const graph::Value* xv = node.input(0);
  const std::vector<int64_t>& xs = xv->type().shape;
  const std::vector<int64_t>& ps = node.input(1)->type().shape;
  const int64_t cols = xs.back(), num = ps[0], width = ps[1];
  const int64_t outs = node.input(4)->type().shape[0];
  const bool batched = xs.size() == 2;
  const graph::TfIdfVectorizerAttrs a = graph::TfIdfVectorizerAttrs::Of(node);
  const int64_t min_n = a.min_gram_length;
  const int64_t max_n = a.max_gram_length;
  const int64_t max_skip = a.max_skip_count;
  const graph::TfIdfMode mode = a.mode;
  if (max_skip < 0) return NoLowering(node, "a negative max_skip_count");
  loop::BufferRef x = b.Input(xv);
  loop::BufferRef pool = b.Input(node.input(1));
  loop::BufferRef lengths = b.Input(node.input(2));
  loop::BufferRef indexes = b.Input(node.input(3));
  loop::BufferRef weights = b.Input(node.input(4));
  loop::BufferRef out = b.out();
  const std::vector<int64_t> out_shape = node.output(0)->type().shape;
  const DType f32 = DType::kFloat32;

  auto row_nest = [&](const std::string& prefix,
                      const std::function<Stmt(const std::vector<Expr>&)>& body) {
    std::vector<loop::Var> vars = b.NewVars(prefix, AxisNames(out_shape.size()));
    return Nest(vars, out_shape, body(Refs(vars)));
  };
  std::vector<Stmt> nests;
  nests.push_back(row_nest(
      "init.", [&](const std::vector<Expr>& idx) { return loop::Store(out, idx, Const(0, f32)); }));

  if (num > 0) {
    std::vector<loop::Var> rv =
        batched ? std::vector<loop::Var>{b.NewVar("r")} : std::vector<loop::Var>{};
    loop::Var j = b.NewVar("j"), skip = b.NewVar("skip"), i = b.NewVar("i");
    const Expr J = loop::VarRef(j), S = loop::VarRef(skip), I = loop::VarRef(i);
    const Expr n = loop::Load(lengths, {J});
    const Expr o = loop::Load(indexes, {J});
    Expr cond =
        Bin(BinaryOp::kAnd, Bin(BinaryOp::kGe, n, Idx(min_n)), Bin(BinaryOp::kLe, n, Idx(max_n)));
    cond = Bin(BinaryOp::kAnd, cond,
               Bin(BinaryOp::kOr, Bin(BinaryOp::kGt, n, Idx(1)), Bin(BinaryOp::kEq, S, Idx(0))));
    cond =
        Bin(BinaryOp::kAnd, cond,
            Bin(BinaryOp::kAnd, Bin(BinaryOp::kGe, o, Idx(0)), Bin(BinaryOp::kLt, o, Idx(outs))));
    const Expr stride = IdxAdd(S, 1);
    for (int64_t k = 0; k < width; ++k) {
      Expr pos = IdxAdd(I, IdxMul(stride, k));
      std::vector<Expr> xi;
      if (batched) xi.push_back(loop::VarRef(rv[0]));
      xi.push_back(IdxClamp(pos, cols));
      Expr token = loop::Load(x, xi);
      if (token->dtype != DType::kInt64) token = loop::Cast(DType::kInt64, token);
      Expr hit = Bin(BinaryOp::kAnd, Bin(BinaryOp::kLt, pos, Idx(cols)),
                     Bin(BinaryOp::kEq, token, loop::Load(pool, {J, Idx(k)})));
      cond = Bin(BinaryOp::kAnd, cond, Bin(BinaryOp::kOr, Bin(BinaryOp::kGe, Idx(k), n), hit));
    }
    std::vector<Expr> oi;
    if (batched) oi.push_back(loop::VarRef(rv[0]));
    oi.push_back(IdxClamp(o, outs));
    Stmt add = loop::Store(out, oi,
                           loop::Load(out, oi) + loop::Select(cond, Const(1, f32), Const(0, f32)));
    Stmt count = loop::For(
        j, num,
        loop::For(skip, max_skip + 1, loop::For(i, cols, add, loop::ForKind::kSerial, true),
                  loop::ForKind::kSerial, true),
        loop::ForKind::kSerial, true);
    if (batched) count = loop::For(rv[0], xs[0], count);
    nests.push_back(count);
  }

  if (mode != graph::TfIdfMode::kTF) {
    nests.push_back(row_nest("mode.", [&](const std::vector<Expr>& idx) {
      Expr c = loop::Load(out, idx);
      if (mode == graph::TfIdfMode::kIDF) c = loop::Min(c, Const(1, f32));
      return loop::Store(out, idx, c * loop::Load(weights, {idx.back()}));
    }));
  }
  return nests;
}

}  // namespace kiln::lowering
