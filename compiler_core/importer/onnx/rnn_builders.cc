// RNN, GRU and LSTM, unrolled over the (static) sequence into Gather/Transpose/MatMul,
// elementwise and Slice/Concat nodes: forward, reverse and bidirectional; activations (with
// activation_alpha/beta), clip, GRU's linear_before_reset, LSTM peepholes, initial states,
// layout 0/1. The input projection of the whole sequence is one MatMul per direction; each
// step adds the recurrent MatMul. sequence_lens (constant or arriving at run time) masks the
// steps past each batch entry's length, as ONNX Runtime does.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/importer/onnx/import_context.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::importer {

using graph::AttrMap;
using graph::Node;
using graph::OpKind;
using graph::Value;

namespace {

using Ints = std::vector<int64_t>;

class Unroller {
 public:
  Unroller(ImportContext& ctx, const OnnxNode& node, const graph::RnnAttrs& attrs)
      : ctx_(ctx), node_(node), attrs_(attrs) {}

  absl::StatusOr<Value*> Op(OpKind op, std::vector<Value*> in, AttrMap a = {}) {
    KILN_ASSIGN_OR_RETURN(Node * n, ctx_.Emit(op, Name(OpName(op)), std::move(in), std::move(a)));
    return n->output(0);
  }
  std::string Name(const std::string& what) { return absl::StrCat(node_.name, "/", what, "_", count_++); }
  Value* Index(int64_t i) { return ctx_.ConstScalar(Name("index"), DType::kInt64, static_cast<double>(i)); }
  absl::StatusOr<Value*> Take(Value* x, int64_t i, int64_t axis) {
    AttrMap a;
    a.Set("axis", axis);
    return Op(OpKind::kGather, {x, Index(i)}, a);
  }
  absl::StatusOr<Value*> SliceAxis(Value* x, int64_t axis, int64_t begin, int64_t end) {
    return Op(OpKind::kSlice, {x, ctx_.ConstI64(Name("starts"), {begin}),
                               ctx_.ConstI64(Name("ends"), {end}),
                               ctx_.ConstI64(Name("axes"), {axis}), ctx_.ConstI64(Name("steps"), {1})});
  }
  absl::StatusOr<Value*> Transpose(Value* x, Ints perm) {
    AttrMap a;
    a.Set("perm", perm);
    return Op(OpKind::kTranspose, {x}, a);
  }
  absl::StatusOr<Value*> Unsqueeze(Value* x, int64_t axis) {
    return Op(OpKind::kUnsqueeze, {x, ctx_.ConstI64(Name("axes"), {axis})});
  }
  absl::StatusOr<Value*> Concat(std::vector<Value*> xs, int64_t axis) {
    if (xs.size() == 1) return xs[0];
    AttrMap a;
    a.Set("axis", axis);
    return Op(OpKind::kConcat, std::move(xs), a);
  }
  absl::StatusOr<Value*> Add(Value* a, Value* b) { return Op(OpKind::kAdd, {a, b}); }
  absl::StatusOr<Value*> Mul(Value* a, Value* b) { return Op(OpKind::kMul, {a, b}); }
  /// Activation `k` of the node's list (defaults given), with its alpha/beta.
  absl::StatusOr<Value*> Activate(Value* x, size_t k, const std::string& def) {
    std::vector<std::string> names;
    for (const auto& attr : node_.proto->attribute()) {
      if (attr.name() == "activations") names.assign(attr.strings().begin(), attr.strings().end());
    }
    std::string name = k < names.size() ? names[k] : def;
    std::optional<OpKind> op = graph::OpKindFromName(name);
    if (!op || graph::GetOpInfo(*op).fusion_class != graph::FusionClass::kElementwise) {
      return absl::UnimplementedError(node_.Prefix() + absl::StrCat("activation '", name, "'"));
    }
    AttrMap a;
    const std::vector<float>& alphas = attrs_.activation_alpha;
    const std::vector<float>& betas = attrs_.activation_beta;
    if (*op == OpKind::kLeakyRelu) a.Set("alpha", 0.01f);
    if (*op == OpKind::kHardSigmoid) {
      a.Set("alpha", 0.2f);
      a.Set("beta", 0.5f);
    }
    if (*op == OpKind::kElu || *op == OpKind::kThresholdedRelu) a.Set("alpha", 1.0f);
    if (k < alphas.size()) a.Set("alpha", alphas[k]);
    if (k < betas.size()) a.Set("beta", betas[k]);
    return Op(*op, {x}, a);
  }
  absl::StatusOr<Value*> Clip(Value* x) {
    if (!attrs_.clip) return x;
    double c = *attrs_.clip;
    DType dt = x->type().dtype;
    return Op(OpKind::kClip, {x, ctx_.ConstScalar(Name("lo"), dt, -c), ctx_.ConstScalar(Name("hi"), dt, c)});
  }
  Value* Zeros(const TensorType& t) { return ctx_.graph().AddConstant(Name("zeros"), Tensor::Zeros(t)); }

 private:
  ImportContext& ctx_;
  const OnnxNode& node_;
  const graph::RnnAttrs& attrs_;
  int count_ = 0;
};

}  // namespace

absl::StatusOr<BuiltOutputs> BuildRecurrent(ImportContext& ctx, const OnnxNode& node) {
  KILN_ASSIGN_OR_RETURN(const graph::RnnAttrs attrs,
                        graph::RnnAttrs::Parse(node.attrs, node.Prefix()));
  Unroller u(ctx, node, attrs);
  const bool lstm = node.op == OpKind::kLSTM, gru = node.op == OpKind::kGRU;
  const int64_t gates = lstm ? 4 : gru ? 3 : 1;
  Value* x = node.input(0);
  Value* w = node.input(1);
  Value* r = node.input(2);
  Value* bias = node.input(3);
  Value* seq_lens = node.input(4);
  Value* init_h = node.input(5);
  Value* init_c = lstm ? node.input(6) : nullptr;
  Value* peep = lstm ? node.input(7) : nullptr;
  const int64_t layout = attrs.layout;
  if (x->type().rank() != 3 || !IsFloat(x->type().dtype)) {
    return absl::InvalidArgumentError(node.Prefix() + "X must be a rank-3 float tensor");
  }
  if (layout == 1) {
    KILN_ASSIGN_OR_RETURN(x, u.Transpose(x, {1, 0, 2}));
  }
  const DType dt = x->type().dtype;
  const int64_t seq = x->type().shape[0], batch = x->type().shape[1];
  if (r->type().rank() != 3) {
    return absl::InvalidArgumentError(
        node.Prefix() + absl::StrCat("R has type ", r->type().ToString(), "; expected rank 3"));
  }
  const int64_t hidden = attrs.hidden_size.value_or(r->type().shape.back());
  const graph::RnnDirection direction = attrs.direction;
  const int64_t dirs = direction == graph::RnnDirection::kBidirectional ? 2 : 1;
  // The shapes the ONNX spec gives the operands (RNN, GRU, LSTM: "Inputs"); slicing them
  // otherwise would read past their data or quietly compute with the wrong weights.
  auto expect = [&](Value* v, const char* name, std::vector<int64_t> shape) -> absl::Status {
    if (v == nullptr || v->type().shape == shape) return absl::OkStatus();
    return absl::InvalidArgumentError(
        node.Prefix() + absl::StrCat(name, " has type ", v->type().ToString(), "; expected [",
                                     absl::StrJoin(shape, ","), "] (hidden_size ", hidden, ", ",
                                     dirs, " direction", dirs == 1 ? "" : "s", ")"));
  };
  if (hidden <= 0) {
    return absl::InvalidArgumentError(node.Prefix() +
                                      absl::StrCat("hidden_size must be positive, got ", hidden));
  }
  KILN_RETURN_IF_ERROR(expect(w, "W", {dirs, gates * hidden, x->type().shape[2]}));
  KILN_RETURN_IF_ERROR(expect(r, "R", {dirs, gates * hidden, hidden}));
  KILN_RETURN_IF_ERROR(expect(bias, "B", {dirs, 2 * gates * hidden}));
  KILN_RETURN_IF_ERROR(expect(peep, "P", {dirs, 3 * hidden}));
  const std::vector<int64_t> state_shape = layout == 1 ? std::vector<int64_t>{batch, dirs, hidden}
                                                       : std::vector<int64_t>{dirs, batch, hidden};
  KILN_RETURN_IF_ERROR(expect(init_h, "initial_h", state_shape));
  KILN_RETURN_IF_ERROR(expect(init_c, "initial_c", state_shape));
  // sequence_lens absent or the full length everywhere: no masking. Otherwise (shorter
  // constants, or values that arrive at run time) `lens` masks the steps (see the step loop).
  Value* lens = nullptr;
  if (seq_lens != nullptr) {
    if (seq_lens->type().NumElements() != batch || IsFloat(seq_lens->type().dtype)) {
      return absl::InvalidArgumentError(
          node.Prefix() + absl::StrCat("sequence_lens has type ", seq_lens->type().ToString(),
                                       "; expected an integer [", batch, "]"));
    }
    bool full = seq_lens->is_constant();
    for (int64_t b = 0; full && b < batch; ++b) full = seq_lens->constant()->GetAsInt64(b) == seq;
    if (!full) {
      AttrMap c;
      c.Set("to", static_cast<int64_t>(DTypeToOnnx(DType::kInt64)));
      KILN_ASSIGN_OR_RETURN(lens, u.Op(OpKind::kCast, {seq_lens}, c));
      KILN_ASSIGN_OR_RETURN(lens, ctx.EmitReshape(u.Name("lens"), lens, {batch}));
    }
  }
  if (layout == 1) {
    if (init_h) {
      KILN_ASSIGN_OR_RETURN(init_h, u.Transpose(init_h, {1, 0, 2}));
    }
    if (init_c) {
      KILN_ASSIGN_OR_RETURN(init_c, u.Transpose(init_c, {1, 0, 2}));
    }
  }
  const bool linear_before_reset = attrs.linear_before_reset;
  TensorType state_type{dt, {batch, hidden}};

  std::vector<Value*> y_dirs, h_dirs, c_dirs;
  for (int64_t d = 0; d < dirs; ++d) {
    const bool reverse = direction == graph::RnnDirection::kReverse || d == 1;
    // Per-direction weights, transposed for row-vector products.
    KILN_ASSIGN_OR_RETURN(Value* wd, u.Take(w, d, 0));
    KILN_ASSIGN_OR_RETURN(Value* wt, u.Transpose(wd, {1, 0}));
    KILN_ASSIGN_OR_RETURN(Value* rd, u.Take(r, d, 0));
    KILN_ASSIGN_OR_RETURN(Value* rt, u.Transpose(rd, {1, 0}));
    KILN_ASSIGN_OR_RETURN(Value* xw, u.Op(OpKind::kMatMul, {x, wt}));  // [S, B, G*H]
    Value* rb = nullptr;
    if (bias != nullptr) {
      KILN_ASSIGN_OR_RETURN(Value* bd, u.Take(bias, d, 0));
      KILN_ASSIGN_OR_RETURN(Value* wb, u.SliceAxis(bd, 0, 0, gates * hidden));
      KILN_ASSIGN_OR_RETURN(rb, u.SliceAxis(bd, 0, gates * hidden, 2 * gates * hidden));
      KILN_ASSIGN_OR_RETURN(xw, u.Add(xw, wb));
      if (!gru || !linear_before_reset) {
        KILN_ASSIGN_OR_RETURN(xw, u.Add(xw, rb));
      }
    }
    Value* h = u.Zeros(state_type);
    if (init_h != nullptr) {
      KILN_ASSIGN_OR_RETURN(h, u.Take(init_h, d, 0));
    }
    Value* c = u.Zeros(state_type);
    if (init_c != nullptr) {
      KILN_ASSIGN_OR_RETURN(c, u.Take(init_c, d, 0));
    }
    std::vector<Value*> p(3, nullptr);  // LSTM peepholes i, o, f
    if (peep != nullptr) {
      KILN_ASSIGN_OR_RETURN(Value* pd, u.Take(peep, d, 0));
      for (int k = 0; k < 3; ++k) {
        KILN_ASSIGN_OR_RETURN(p[k], u.SliceAxis(pd, 0, k * hidden, (k + 1) * hidden));
      }
    }
    const size_t act = static_cast<size_t>(d) * (lstm ? 3 : gru ? 2 : 1);
    // With sequence lengths (ONNX Runtime's semantics), batch entry b runs lens[b] steps: the
    // reverse direction reads its first lens[b] inputs reversed (and writes Y back in input
    // order); a step past lens[b] keeps b's states and gives zeros in Y.
    if (reverse && lens != nullptr) {
      KILN_ASSIGN_OR_RETURN(xw, ReverseWithinLengths(ctx, u.Name("reversed_x"), xw, lens, 0, 1));
    }
    std::vector<Value*> ys(seq, nullptr);
    for (int64_t step = 0; step < seq; ++step) {
      int64_t t = reverse && lens == nullptr ? seq - 1 - step : step;
      Value* h_prev = h;
      Value* c_prev = c;
      KILN_ASSIGN_OR_RETURN(Value* xt, u.Take(xw, t, 0));  // [B, G*H]
      auto gate = [&](Value* v, int64_t k) { return u.SliceAxis(v, 1, k * hidden, (k + 1) * hidden); };
      if (gru) {
        KILN_ASSIGN_OR_RETURN(Value* hr, u.Op(OpKind::kMatMul, {h, rt}));  // [B, 3H]
        if (bias != nullptr && linear_before_reset) {
          KILN_ASSIGN_OR_RETURN(hr, u.Add(hr, rb));
        }
        KILN_ASSIGN_OR_RETURN(Value* xz, gate(xt, 0));
        KILN_ASSIGN_OR_RETURN(Value* xr, gate(xt, 1));
        KILN_ASSIGN_OR_RETURN(Value* xh, gate(xt, 2));
        KILN_ASSIGN_OR_RETURN(Value* hz, gate(hr, 0));
        KILN_ASSIGN_OR_RETURN(Value* hrr, gate(hr, 1));
        KILN_ASSIGN_OR_RETURN(Value* zs, u.Add(xz, hz));
        KILN_ASSIGN_OR_RETURN(zs, u.Clip(zs));
        KILN_ASSIGN_OR_RETURN(Value* z, u.Activate(zs, act, "Sigmoid"));
        KILN_ASSIGN_OR_RETURN(Value* rs, u.Add(xr, hrr));
        KILN_ASSIGN_OR_RETURN(rs, u.Clip(rs));
        KILN_ASSIGN_OR_RETURN(Value* rg, u.Activate(rs, act, "Sigmoid"));
        Value* hh = nullptr;
        if (linear_before_reset) {
          KILN_ASSIGN_OR_RETURN(Value* hrh, gate(hr, 2));
          KILN_ASSIGN_OR_RETURN(hh, u.Mul(rg, hrh));
        } else {
          KILN_ASSIGN_OR_RETURN(Value* rh, u.Mul(rg, h));
          KILN_ASSIGN_OR_RETURN(Value* rhr, u.Op(OpKind::kMatMul, {rh, rt}));
          KILN_ASSIGN_OR_RETURN(hh, gate(rhr, 2));
        }
        KILN_ASSIGN_OR_RETURN(Value* hs, u.Add(xh, hh));
        KILN_ASSIGN_OR_RETURN(hs, u.Clip(hs));
        KILN_ASSIGN_OR_RETURN(Value* ht, u.Activate(hs, act + 1, "Tanh"));
        // H = (1 - z) * h~ + z * H = h~ + z * (H - h~)
        KILN_ASSIGN_OR_RETURN(Value* diff, u.Op(OpKind::kSub, {h, ht}));
        KILN_ASSIGN_OR_RETURN(Value* zd, u.Mul(z, diff));
        KILN_ASSIGN_OR_RETURN(h, u.Add(ht, zd));
      } else {
        KILN_ASSIGN_OR_RETURN(Value* hr, u.Op(OpKind::kMatMul, {h, rt}));
        KILN_ASSIGN_OR_RETURN(Value* pre, u.Add(xt, hr));
        if (!lstm) {
          KILN_ASSIGN_OR_RETURN(pre, u.Clip(pre));
          KILN_ASSIGN_OR_RETURN(h, u.Activate(pre, act, "Tanh"));
        } else {
          std::vector<Value*> g(4);
          for (int k = 0; k < 4; ++k) {  // i, o, f, c
            KILN_ASSIGN_OR_RETURN(g[k], gate(pre, k));
          }
          auto peephole = [&](Value* v, Value* pk, Value* state) -> absl::StatusOr<Value*> {
            if (pk == nullptr) return v;
            KILN_ASSIGN_OR_RETURN(Value* m, u.Mul(pk, state));
            return u.Add(v, m);
          };
          KILN_ASSIGN_OR_RETURN(Value* is, peephole(g[0], p[0], c));
          KILN_ASSIGN_OR_RETURN(is, u.Clip(is));
          KILN_ASSIGN_OR_RETURN(Value* ig, u.Activate(is, act, "Sigmoid"));
          KILN_ASSIGN_OR_RETURN(Value* fs, peephole(g[2], p[2], c));
          KILN_ASSIGN_OR_RETURN(fs, u.Clip(fs));
          KILN_ASSIGN_OR_RETURN(Value* fg, u.Activate(fs, act, "Sigmoid"));
          KILN_ASSIGN_OR_RETURN(Value* cs, u.Clip(g[3]));
          KILN_ASSIGN_OR_RETURN(Value* cg, u.Activate(cs, act + 1, "Tanh"));
          KILN_ASSIGN_OR_RETURN(Value* fc, u.Mul(fg, c));
          KILN_ASSIGN_OR_RETURN(Value* ic, u.Mul(ig, cg));
          KILN_ASSIGN_OR_RETURN(c, u.Add(fc, ic));
          KILN_ASSIGN_OR_RETURN(Value* os, peephole(g[1], p[1], c));
          KILN_ASSIGN_OR_RETURN(os, u.Clip(os));
          KILN_ASSIGN_OR_RETURN(Value* og, u.Activate(os, act, "Sigmoid"));
          KILN_ASSIGN_OR_RETURN(Value* hc, u.Activate(c, act + 2, "Tanh"));
          KILN_ASSIGN_OR_RETURN(h, u.Mul(og, hc));
        }
      }
      Value* y_step = h;
      if (lens != nullptr) {
        KILN_ASSIGN_OR_RETURN(
            Value * live,
            u.Op(
                OpKind::kLess,
                {ctx.ConstScalar(u.Name("step"), DType::kInt64, static_cast<double>(step)), lens}));
        KILN_ASSIGN_OR_RETURN(live, u.Unsqueeze(live, 1));  // [B, 1]
        KILN_ASSIGN_OR_RETURN(y_step, u.Op(OpKind::kWhere, {live, h, u.Zeros(state_type)}));
        KILN_ASSIGN_OR_RETURN(h, u.Op(OpKind::kWhere, {live, h, h_prev}));
        if (lstm) {
          KILN_ASSIGN_OR_RETURN(c, u.Op(OpKind::kWhere, {live, c, c_prev}));
        }
      }
      KILN_ASSIGN_OR_RETURN(ys[t], u.Unsqueeze(y_step, 0));
    }
    KILN_ASSIGN_OR_RETURN(Value* yd, u.Concat(ys, 0));  // [S, B, H]
    if (reverse && lens != nullptr) {
      KILN_ASSIGN_OR_RETURN(yd, ReverseWithinLengths(ctx, u.Name("reversed_y"), yd, lens, 0, 1));
    }
    KILN_ASSIGN_OR_RETURN(yd, u.Unsqueeze(yd, 1));      // [S, 1, B, H]
    y_dirs.push_back(yd);
    KILN_ASSIGN_OR_RETURN(Value* hd, u.Unsqueeze(h, 0));
    h_dirs.push_back(hd);
    KILN_ASSIGN_OR_RETURN(Value* cd, u.Unsqueeze(c, 0));
    c_dirs.push_back(cd);
  }
  KILN_ASSIGN_OR_RETURN(Value* y, u.Concat(y_dirs, 1));
  KILN_ASSIGN_OR_RETURN(Value* yh, u.Concat(h_dirs, 0));
  KILN_ASSIGN_OR_RETURN(Value* yc, u.Concat(c_dirs, 0));
  if (layout == 1) {
    KILN_ASSIGN_OR_RETURN(y, u.Transpose(y, {2, 0, 1, 3}));
    KILN_ASSIGN_OR_RETURN(yh, u.Transpose(yh, {1, 0, 2}));
    KILN_ASSIGN_OR_RETURN(yc, u.Transpose(yc, {1, 0, 2}));
  }
  BuiltOutputs outs{y, yh};
  if (lstm) outs.push_back(yc);
  if (lens != nullptr && !seq_lens->is_constant()) {
    // As ONNX Runtime: every length must be in [1, seq_length]; each output checks it.
    AttrMap to_i64;
    to_i64.Set("to", static_cast<int64_t>(DTypeToOnnx(DType::kInt64)));
    KILN_ASSIGN_OR_RETURN(
        Value * lo,
        u.Op(OpKind::kGreaterOrEqual, {lens, ctx.ConstScalar(u.Name("one"), DType::kInt64, 1)}));
    KILN_ASSIGN_OR_RETURN(
        Value * hi, u.Op(OpKind::kLessOrEqual, {lens, ctx.ConstScalar(u.Name("seq"), DType::kInt64,
                                                                      static_cast<double>(seq))}));
    KILN_ASSIGN_OR_RETURN(Value * ok, u.Op(OpKind::kAnd, {lo, hi}));
    KILN_ASSIGN_OR_RETURN(ok, u.Op(OpKind::kCast, {ok}, to_i64));
    AttrMap all;
    all.Set("axes", Ints{0});
    all.Set("keepdims", int64_t{0});
    KILN_ASSIGN_OR_RETURN(ok, u.Op(OpKind::kReduceMin, {ok}, all));
    AttrMap check;
    check.Set("expected", Ints{1});
    check.Set("what", node.Prefix() + absl::StrCat("every sequence_lens value must be in [1, ", seq,
                                                   "] (1 = it is)"));
    for (Value*& out : outs) {
      KILN_ASSIGN_OR_RETURN(out, u.Op(OpKind::kRuntimeCheck, {out, ok}, check));
    }
  }
  return outs;
}

}  // namespace kiln::importer
