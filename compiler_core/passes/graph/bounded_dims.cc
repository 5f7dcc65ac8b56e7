// BoundDims: dim-length analysis over the graph imported at the bounds, BoundMask insertion
// before reductions along bounded dims, and the check against the probe import.
#include "compiler_core/passes/graph/bounded_dims.h"

#include <cmath>
#include <deque>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/ir/graph/dtype.h"
#include "compiler_core/ir/graph/graph_hash.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/passes/graph/pass.h"
#include "compiler_core/support/sha256.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::passes {
namespace {

using graph::Graph;
using graph::Node;
using graph::OpKind;
using graph::Value;

/// One row-major factor of a dim: `bound` positions, of which the first `symbol * mul / div`
/// are valid (all of them when `symbol` is -1).
struct Factor {
  int64_t bound = 1;
  int symbol = -1;
  int64_t mul = 1;
  int64_t div = 1;
  bool operator==(const Factor&) const = default;
};
/// A dim as factors, canonical: no static factor of bound 1, no two adjacent static factors,
/// no static factor right after a symbolic one (merged: a prefix of length e * S).
using Dim = std::vector<Factor>;
using Extents = std::vector<Dim>;

Factor Reduced(Factor f) {
  const int64_t g = std::gcd(f.mul, f.div);
  if (g > 1) {
    f.mul /= g;
    f.div /= g;
  }
  return f;
}

Dim Canonical(const Dim& in) {
  Dim out;
  for (const Factor& f : in) {
    if (f.symbol < 0 && f.bound == 1) continue;
    if (!out.empty() && f.symbol < 0) {
      Factor& last = out.back();
      if (last.symbol >= 0) last.mul *= f.bound;
      last.bound *= f.bound;
      last = Reduced(last);
      continue;
    }
    out.push_back(Reduced(f));
  }
  return out;
}

bool IsStatic(const Dim& d) { return d.size() <= 1 && (d.empty() || d[0].symbol < 0); }
bool IsPlain(const Dim& d) { return d.size() == 1 && d[0].symbol >= 0; }
bool AllStatic(const Extents& e) {
  return std::all_of(e.begin(), e.end(), [](const Dim& d) { return IsStatic(d); });
}

Extents StaticExtents(const std::vector<int64_t>& shape) {
  Extents e;
  for (int64_t s : shape) e.push_back(s == 1 ? Dim{} : Dim{Factor{s}});
  return e;
}

/// `in` (dims of `from`) for a tensor of `to`: every dim whose size changes is static (Slice and
/// Pad change static dims only).
Extents KeepUnresized(Extents in, const std::vector<int64_t>& from,
                      const std::vector<int64_t>& to) {
  for (size_t d = 0; d < in.size(); ++d) {
    if (to[d] != from[d]) in[d] = to[d] == 1 ? Dim{} : Dim{Factor{to[d]}};
  }
  return in;
}

std::vector<int64_t> AllAxes(int64_t rank) {
  std::vector<int64_t> axes(static_cast<size_t>(rank));
  std::iota(axes.begin(), axes.end(), 0);
  return axes;
}

/// The fill that makes the padding neutral for a reduction `op` of float elements.
float NeutralFill(OpKind op) {
  switch (op) {
    case OpKind::kReduceMax:
    case OpKind::kReduceLogSumExp:
    case OpKind::kArgMax:
    case OpKind::kSoftmax:
    case OpKind::kLogSoftmax:
      return -INFINITY;
    case OpKind::kReduceMin:
    case OpKind::kArgMin:
      return INFINITY;
    case OpKind::kReduceProd:
      return 1.0f;
    default:
      return 0.0f;
  }
}

class Analysis {
 public:
  Analysis(Graph& graph, const std::set<const Value*>& varying)
      : graph_(graph), varying_(varying) {}

  /// After the graph passes: the lengths of every value of the final graph, from the inputs'
  /// lengths in `bounded` (masks are in place already). An op without a rule, or one a pass
  /// introduced, leaves its outputs without lengths (computed in full).
  void Recompute(BoundedDims& bounded) {
    recompute_ = true;
    dims_ = bounded.dims;
    for (size_t s = 0; s < bounded.symbols.size(); ++s) {
      symbols_.push_back(bounded.symbols[s]);
      parent_.push_back(static_cast<int>(s));
    }
    for (size_t i = 0; i < bounded.inputs.size() && i < graph_.inputs().size(); ++i) {
      const Value* in = graph_.inputs()[i];
      if (bounded.inputs[i].empty()) continue;
      Extents e = StaticExtents(in->type().shape);
      for (size_t d = 0; d < e.size() && d < bounded.inputs[i].size(); ++d) {
        const DimLength& l = bounded.inputs[i][d];
        if (l.symbol >= 0) e[d] = Dim{Factor{in->type().shape[d], l.symbol, l.mul, l.div}};
      }
      ext_[in] = std::move(e);
    }
    for (Node* node : graph_.nodes()) {
      if (!Visit(*node).ok()) {
        for (const Value* o : node->outputs()) ext_.erase(o);
      }
    }
    bounded.values.clear();
    for (const auto& [v, raw] : ext_) {
      BoundedDims::ValueLengths& vl = bounded.values[v];
      vl.shape = v->type().shape;
      for (const Dim& d : Get(v)) {
        vl.dims.push_back(IsPlain(d) ? DimLength{Find(d[0].symbol), d[0].mul, d[0].div}
                                     : DimLength{});
      }
    }
  }

  absl::StatusOr<BoundedDims> Run(const std::map<std::string, std::vector<int64_t>>& min_shapes) {
    dims_ = graph_.AddInput("kiln.dims", TensorType{DType::kInt64, {0}});
    std::vector<Value*> user_inputs(graph_.inputs().begin(), graph_.inputs().end() - 1);
    for (const auto& [name, mins] : min_shapes) {
      auto it = std::find_if(user_inputs.begin(), user_inputs.end(),
                             [&](const Value* v) { return v->name() == name; });
      if (it == user_inputs.end()) {
        return absl::InvalidArgumentError(absl::StrCat("--input-shape: bounded dims given for '",
                                                       name, "', which is not a graph input"));
      }
      const std::vector<int64_t>& shape = (*it)->type().shape;
      if (mins.size() != shape.size()) {
        return absl::InvalidArgumentError(absl::StrCat("--input-shape: input '", name,
                                                       "' has rank ", shape.size(), ", given ",
                                                       mins.size(), " dims"));
      }
      Extents e = StaticExtents(shape);
      for (size_t d = 0; d < shape.size(); ++d) {
        if (mins[d] >= shape[d]) continue;
        const int sym = static_cast<int>(symbols_.size());
        symbols_.push_back({absl::StrCat(name, ":", d), mins[d], shape[d]});
        parent_.push_back(sym);
        e[d] = Dim{Factor{shape[d], sym}};
      }
      ext_[*it] = std::move(e);
    }
    for (Node* node : graph_.nodes()) KILN_RETURN_IF_ERROR(Visit(*node));

    // Compact the symbols: one per union-find class, in first-seen order.
    std::vector<int> compact(symbols_.size(), -1);
    BoundedDims out;
    for (size_t s = 0; s < symbols_.size(); ++s) {
      const int root = Find(static_cast<int>(s));
      if (compact[root] < 0) {
        compact[root] = static_cast<int>(out.symbols.size());
        out.symbols.push_back(symbols_[root]);
      }
      BoundSymbol& merged = out.symbols[compact[root]];
      merged.min = std::max(merged.min, symbols_[s].min);
    }
    for (Node* mask : masks_) {
      const int symbol = static_cast<int>(graph::BoundMaskAttrs::Of(*mask).symbol);
      mask->attrs().Set("symbol", static_cast<int64_t>(compact[Find(symbol)]));
    }
    const_cast<Value*>(dims_)->set_type(
        TensorType{DType::kInt64, {static_cast<int64_t>(out.symbols.size())}});
    out.dims = dims_;
    auto lengths = [&](const Value* v,
                       const std::string& what) -> absl::StatusOr<std::vector<DimLength>> {
      std::vector<DimLength> result;
      const Extents e = Get(v);
      if (AllStatic(e)) return result;
      for (size_t d = 0; d < e.size(); ++d) {
        if (IsStatic(e[d])) {
          result.push_back({});
        } else if (IsPlain(e[d])) {
          result.push_back({compact[Find(e[d][0].symbol)], e[d][0].mul, e[d][0].div});
        } else {
          return absl::InvalidArgumentError(absl::StrCat(
              what, " '", v->name(), "' dim ", d, " is ", DimText(e[d]),
              ": it mixes bounded dims (a reshape merged them), so its run-time length is not "
              "one dim's; reshape the output back or give fixed shapes"));
        }
      }
      return result;
    };
    for (const Value* in : user_inputs) {
      KILN_ASSIGN_OR_RETURN(std::vector<DimLength> l, lengths(in, "graph input"));
      out.inputs.push_back(std::move(l));
    }
    for (const Value* o : graph_.outputs()) {
      KILN_ASSIGN_OR_RETURN(std::vector<DimLength> l, lengths(o, "graph output"));
      out.outputs.push_back(std::move(l));
    }
    return out;
  }

 private:
  int Find(int s) {
    while (parent_[s] != s) s = parent_[s] = parent_[parent_[s]];
    return s;
  }

  Extents Get(const Value* v) {
    auto it = ext_.find(v);
    if (it == ext_.end()) return StaticExtents(v->type().shape);
    Extents e = it->second;
    for (Dim& d : e) {
      for (Factor& f : d) {
        if (f.symbol >= 0) f.symbol = Find(f.symbol);
      }
    }
    return e;
  }

  void Set(const Value* v, Extents e) {
    if (!AllStatic(e)) ext_[v] = std::move(e);
  }

  std::string DimText(const Dim& d) {
    if (IsStatic(d)) return "static";
    std::vector<std::string> parts;
    for (const Factor& f : d) {
      if (f.symbol < 0) {
        parts.push_back(absl::StrCat(f.bound));
        continue;
      }
      std::string len = symbols_[Find(f.symbol)].name;
      if (f.mul != 1) len = absl::StrCat(f.mul, "*", len);
      if (f.div != 1) len = absl::StrCat(len, "/", f.div);
      parts.push_back(absl::StrCat(len, " (bound ", f.bound, ")"));
    }
    return absl::StrJoin(parts, " x ");
  }

  /// The shortest run-time length of plain dim `d`.
  int64_t MinLength(const Dim& d) { return symbols_[Find(d[0].symbol)].min * d[0].mul / d[0].div; }

  static std::string Where(const Node& node) {
    return absl::StrCat("node '", node.name(), "' (", node.info().name, "): ");
  }

  absl::Status Unsupported(const Node& node, const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(
        Where(node), why,
        "; bounded dims (--input-shape MIN..MAX) cannot pass through it yet: give fixed shapes "
        "or one shape profile per shape"));
  }

  /// Two dims that must have the same run-time length: equal, or plain dims of the same bound
  /// and scale whose symbols are then one.
  absl::StatusOr<Dim> Merge(const Node& node, const Dim& a, const Dim& b, const std::string& what) {
    if (a == b || (IsStatic(a) && IsStatic(b))) return a;
    if (IsPlain(a) && IsPlain(b) && a[0].bound == b[0].bound && a[0].mul == b[0].mul &&
        a[0].div == b[0].div) {
      parent_[Find(b[0].symbol)] = Find(a[0].symbol);
      return a;
    }
    return Unsupported(node, absl::StrCat(what, ": a dim of length ", DimText(a),
                                          " meets one of length ", DimText(b)));
  }

  /// Output extents of a multidirectional broadcast of `operands` to `shape`.
  absl::StatusOr<Extents> Broadcast(const Node& node, const std::vector<const Value*>& operands,
                                    const std::vector<int64_t>& shape) {
    Extents out(shape.size());
    for (size_t d = 0; d < shape.size(); ++d) {
      std::optional<Dim> dim;
      for (const Value* v : operands) {
        const int64_t offset = static_cast<int64_t>(shape.size()) - v->type().rank();
        const int64_t vd = static_cast<int64_t>(d) - offset;
        if (vd < 0 || v->type().shape[vd] != shape[d] || shape[d] == 1) continue;
        Dim got = Get(v)[vd];
        if (!dim) {
          dim = got;
        } else {
          KILN_ASSIGN_OR_RETURN(dim, Merge(node, *dim, got, absl::StrCat("dim ", d)));
        }
      }
      out[d] = dim ? *dim : Dim{};
    }
    return out;
  }

  /// Reshape of `in` to `shape` in the padded layout: the factors regrouped in order. Splitting
  /// a bounded factor is only exact when every run-time length is a multiple of the inner part.
  absl::StatusOr<Extents> Reshape(const Node& node, const Extents& in,
                                  const std::vector<int64_t>& shape) {
    std::deque<Factor> fs;
    for (const Dim& d : in) fs.insert(fs.end(), d.begin(), d.end());
    Extents out;
    for (int64_t size : shape) {
      Dim d;
      int64_t need = size;
      while (need > 1) {
        if (fs.empty()) return absl::InternalError(Where(node) + "reshape factors ran out");
        Factor& f = fs.front();
        if (need % f.bound == 0) {
          d.push_back(f);
          need /= f.bound;
          fs.pop_front();
          continue;
        }
        if (f.bound % need != 0) {
          return Unsupported(node, absl::StrCat("the reshape to [", absl::StrJoin(shape, ","),
                                                "] splits a dim of bound ", f.bound, " by ", need));
        }
        const int64_t inner = f.bound / need;
        if (f.symbol < 0) {
          d.push_back(Factor{need});
          f.bound = inner;
        } else {
          if (f.mul % (f.div * inner) != 0) {
            return Unsupported(node, absl::StrCat("the reshape to [", absl::StrJoin(shape, ","),
                                                  "] splits ", DimText({f}), " into rows of ",
                                                  inner, ", which its lengths need not fill"));
          }
          d.push_back(Factor{need, f.symbol, f.mul / (f.div * inner), 1});
          f = Factor{inner};
        }
        need = 1;
      }
      out.push_back(Canonical(d));
    }
    while (!fs.empty() && fs.front().symbol < 0 && fs.front().bound == 1) fs.pop_front();
    if (!fs.empty()) return absl::InternalError(Where(node) + "reshape factors left over");
    return out;
  }

  /// Inserts a BoundMask of input `i` of `node` along `axis` (a plain bounded dim of it).
  void Mask(Node& node, int i, int64_t axis, const Dim& dim, float fill, bool rescale = false) {
    if (recompute_) return;  // the masks are in place
    Value* x = node.input(i);
    graph::AttrMap attrs;
    attrs.Set("axis", axis);
    attrs.Set("symbol", static_cast<int64_t>(dim[0].symbol));
    attrs.Set("mul", dim[0].mul);
    attrs.Set("div", dim[0].div);
    attrs.Set("fill", fill);
    if (rescale) attrs.Set("rescale", int64_t{1});
    Node* mask =
        graph_.InsertNodeBefore(&node, OpKind::kBoundMask, absl::StrCat(node.name(), "/mask", i),
                                {x, const_cast<Value*>(dims_)}, {x->type()}, std::move(attrs));
    Set(mask->output(0), Get(x));
    node.set_input(i, mask->output(0));
    masks_.push_back(mask);
  }

  /// Masks input `i` along every reduced axis that is bounded (composite: an error).
  absl::Status MaskReduced(Node& node, int i, const std::vector<int64_t>& axes, float fill,
                           bool rescale = false) {
    const Extents e = Get(node.input(i));
    for (int64_t a : axes) {
      if (IsStatic(e[a])) continue;
      if (!IsPlain(e[a])) {
        return Unsupported(node, absl::StrCat("it reduces along dim ", a, " of length ",
                                              DimText(e[a]), ", which mixes bounded dims"));
      }
      if (!IsFloat(node.input(i)->type().dtype) && !std::isfinite(fill)) {
        return Unsupported(node, "it reduces a bounded dim of integers by max or min");
      }
      if (rescale && !IsFloat(node.input(i)->type().dtype)) {
        return Unsupported(node, "it averages integers over a bounded dim");
      }
      Mask(node, i, a, e[a], fill, rescale);
    }
    return absl::OkStatus();
  }

  static std::vector<int64_t> NormalizedAxes(std::vector<int64_t> axes, int64_t rank) {
    for (int64_t& a : axes) a = a < 0 ? a + rank : a;
    return axes;
  }

  /// Constant integer operand `i` (or, when absent, `attr`: the legacy attribute's value, empty
  /// when it has none), if any.
  static std::optional<std::vector<int64_t>> Ints(const Node& node, int i,
                                                  const std::vector<int64_t>& attr) {
    const Value* v = node.input(i);
    if (v == nullptr) return attr;
    if (!v->is_constant()) return std::nullopt;
    std::vector<int64_t> out;
    for (int64_t k = 0; k < v->type().NumElements(); ++k)
      out.push_back(v->constant()->GetAsInt64(k));
    return out;
  }

  absl::Status VisitMatMul(Node& node) {
    const Value* av = node.input(0);
    const Value* bv = node.input(1);
    Extents a = Get(av), b = Get(bv);
    const int64_t ra = av->type().rank();
    int64_t rb = bv->type().rank();
    if (node.attrs().Has("b_layout")) {
      // B packed into panels by matmul-pack (a constant): its logical [K, N] is static.
      b = StaticExtents({av->type().shape.back(), node.output(0)->type().shape.back()});
      rb = 2;
    }
    bool ta = false, tb = false;
    if (node.op() == OpKind::kGemm) {
      const graph::GemmAttrs g = graph::GemmAttrs::Of(node);
      ta = g.transA;
      tb = g.transB;
    }
    const int64_t ka = ta ? ra - 2 : ra - 1;
    const int64_t kb = rb == 1 ? 0 : (tb ? rb - 1 : rb - 2);
    if (!IsStatic(a[ka]) || !IsStatic(b[kb])) {
      if (!IsPlain(a[ka]) || !IsPlain(b[kb])) {
        return Unsupported(node, absl::StrCat("its contraction dim is ", DimText(a[ka]),
                                              " in A and ", DimText(b[kb]), " in B"));
      }
      KILN_ASSIGN_OR_RETURN(Dim k, Merge(node, a[ka], b[kb], "the contraction dim"));
      Mask(node, 0, ka, k, 0.0f);
      Mask(node, 1, kb, k, 0.0f);
    }
    const std::vector<int64_t>& shape = node.output(0)->type().shape;
    Extents out;
    if (node.op() == OpKind::kGemm) {
      out = {ta ? a[1] : a[0], tb ? b[0] : b[1]};
      if (const Value* cv = node.input(2); cv != nullptr) {
        const Extents c = Get(cv);
        for (int64_t d = 0; d < 2; ++d) {
          const int64_t vd = d - (2 - cv->type().rank());
          if (vd < 0 || cv->type().shape[vd] != shape[d] || shape[d] == 1) continue;
          KILN_ASSIGN_OR_RETURN(out[d], Merge(node, out[d], c[vd], "Gemm's C"));
        }
      }
    } else {
      // Batch dims broadcast; then M from A and N from B.
      const int64_t batch = static_cast<int64_t>(shape.size()) - (ra >= 2) - (rb >= 2);
      out.assign(shape.size(), Dim{});
      for (int64_t d = 0; d < batch; ++d) {
        std::optional<Dim> dim;
        for (auto [v, e, r] : {std::tuple{av, &a, ra}, std::tuple{bv, &b, rb}}) {
          const int64_t vd = d - (batch - (r - 2));
          if (r < 2 || vd < 0 || v->type().shape[vd] != shape[d] || shape[d] == 1) continue;
          if (!dim) {
            dim = (*e)[vd];
          } else {
            KILN_ASSIGN_OR_RETURN(dim, Merge(node, *dim, (*e)[vd], absl::StrCat("batch dim ", d)));
          }
        }
        out[d] = dim ? *dim : Dim{};
      }
      if (ra >= 2) out[batch] = a[ra - 2];
      if (rb >= 2) out[shape.size() - 1] = b[rb - 1];
    }
    Set(node.output(0), std::move(out));
    return absl::OkStatus();
  }

  absl::Status Visit(Node& node) {
    bool bounded = false;
    for (int i = 0; i < node.num_inputs(); ++i) {
      const Value* v = node.input(i);
      if (v == nullptr) continue;
      if (varying_.count(v) && !(node.op() == OpKind::kReshape && i == 1)) {
        return absl::InvalidArgumentError(absl::StrCat(
            Where(node), "input ", i,
            " is a value computed from a bounded dim's length (it "
            "differs between the bounds and shorter lengths, as a Shape → Gather → Div or a "
            "Range or ConstantOfShape over a dim does); only a Reshape's target shape may be. "
            "Give fixed shapes or one shape profile per shape"));
      }
      bounded = bounded || (v != dims_ && ext_.count(v));
    }
    if (!bounded) return absl::OkStatus();
    const Value* x = node.input(0);
    const std::vector<int64_t>& out_shape = node.output(0)->type().shape;
    const graph::FusionClass fc = node.info().fusion_class;
    switch (node.op()) {
      case OpKind::kBoundMask: {
        // The padding along the masked axis holds the fill: every position is needed.
        Extents e = Get(x);
        const int64_t axis = graph::BoundMaskAttrs::Of(node).axis;
        e[axis] = StaticExtents({x->type().shape[axis]})[0];
        Set(node.output(0), std::move(e));
        return absl::OkStatus();
      }
      case OpKind::kBitcast: {
        // Bytes read as words: every dim but the last keeps its length; the last is static.
        const Extents in = Get(x);
        if (in.empty() || !IsStatic(in.back())) {
          return Unsupported(node, "a bounded last dim (the one its words pack)");
        }
        Extents e = in;
        e.back() = StaticExtents({out_shape.back()})[0];
        Set(node.output(0), std::move(e));
        return absl::OkStatus();
      }
      case OpKind::kLayoutTransform: {
        // NCHW <-> NCHW<x>c: the batch dim stays dim 0; the others must be static.
        const Extents in = Get(x);
        for (size_t d = 1; d < in.size(); ++d) {
          if (!IsStatic(in[d])) return Unsupported(node, "a bounded dim other than the batch");
        }
        Extents e = StaticExtents(out_shape);
        if (!e.empty() && !in.empty()) e[0] = in[0];
        Set(node.output(0), std::move(e));
        return absl::OkStatus();
      }
      case OpKind::kBatchNormalization: {
        for (int i = 1; i < node.num_inputs(); ++i) {
          if (node.input(i) != nullptr && !AllStatic(Get(node.input(i)))) {
            return Unsupported(node, "a bounded parameter");
          }
        }
        Set(node.output(0), Get(x));
        return absl::OkStatus();
      }
      case OpKind::kTranspose: {
        const Extents in = Get(x);
        std::vector<int64_t> perm = graph::TransposePermutation(node);
        Extents out;
        for (int64_t p : perm) out.push_back(in[p]);
        Set(node.output(0), std::move(out));
        return absl::OkStatus();
      }
      case OpKind::kReshape:
      case OpKind::kFlatten:
      case OpKind::kSqueeze:
      case OpKind::kUnsqueeze: {
        KILN_ASSIGN_OR_RETURN(Extents out, Reshape(node, Get(x), out_shape));
        Set(node.output(0), std::move(out));
        return absl::OkStatus();
      }
      case OpKind::kMatMul:
      case OpKind::kGemm:
        return VisitMatMul(node);
      case OpKind::kSoftmax:
      case OpKind::kLogSoftmax: {
        const int64_t rank = x->type().rank();
        int64_t axis = graph::AxisAttrs::Of(node).axis;
        if (axis < 0) axis += rank;
        KILN_RETURN_IF_ERROR(MaskReduced(node, 0, {axis}, NeutralFill(node.op())));
        Set(node.output(0), Get(node.input(0)));
        return absl::OkStatus();
      }
      case OpKind::kReduceSum:
      case OpKind::kReduceMax:
      case OpKind::kReduceMin:
      case OpKind::kReduceProd:
      case OpKind::kReduceL1:
      case OpKind::kReduceL2:
      case OpKind::kReduceLogSum:
      case OpKind::kReduceLogSumExp:
      case OpKind::kReduceSumSquare:
      case OpKind::kReduceMean:
      case OpKind::kArgMax:
      case OpKind::kArgMin: {
        const int64_t rank = x->type().rank();
        std::vector<int64_t> axes;
        bool keep = true;
        if (node.op() == OpKind::kArgMax || node.op() == OpKind::kArgMin) {
          const graph::ArgMaxAttrs a = graph::ArgMaxAttrs::Of(node);
          axes = NormalizedAxes({a.axis}, rank);
          keep = a.keepdims;
          if (a.select_last_index && !IsStatic(Get(x)[axes[0]])) {
            // The fill ties with an infinite element and the last index would be padding.
            return Unsupported(node, absl::StrCat("select_last_index along dim ", axes[0],
                                                  " of length ", DimText(Get(x)[axes[0]])));
          }
        } else {
          const graph::ReduceAttrs a = graph::ReduceAttrs::Of(node);
          axes = node.attrs().Has("axes") ? NormalizedAxes(a.axes, rank) : AllAxes(rank);
          keep = a.keepdims;
        }
        const Extents in = Get(x);
        // A mean over a bounded dim: the padding masked to 0 and the rest scaled by
        // bound / length, so that the mean over the bound is the mean over the length.
        KILN_RETURN_IF_ERROR(MaskReduced(node, 0, axes, NeutralFill(node.op()),
                                         /*rescale=*/node.op() == OpKind::kReduceMean));
        Extents out;
        for (int64_t d = 0; d < rank; ++d) {
          const bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
          if (!reduced) {
            out.push_back(in[d]);
          } else if (keep) {
            out.push_back(Dim{});
          }
        }
        Set(node.output(0), std::move(out));
        return absl::OkStatus();
      }
      case OpKind::kLayerNormalization: {
        const Extents in = Get(x);
        int64_t axis = graph::LayerNormalizationAttrs::Of(node).axis;
        if (axis < 0) axis += x->type().rank();
        for (int64_t d = axis; d < x->type().rank(); ++d) {
          if (!IsStatic(in[d])) {
            return Unsupported(
                node, absl::StrCat("it normalizes over dim ", d, " of length ", DimText(in[d])));
          }
        }
        for (int i = 1; i < node.num_inputs(); ++i) {
          if (node.input(i) != nullptr && !AllStatic(Get(node.input(i)))) {
            return Unsupported(node, "a bounded scale or bias");
          }
        }
        for (const Value* o : node.outputs()) {
          if (o == nullptr) continue;
          Extents e = StaticExtents(o->type().shape);
          for (int64_t d = 0; d < axis && d < o->type().rank(); ++d) e[d] = in[d];
          Set(o, std::move(e));
        }
        return absl::OkStatus();
      }
      case OpKind::kConv:
      case OpKind::kConvTranspose:
      case OpKind::kMaxPool:
      case OpKind::kAveragePool:
      case OpKind::kLpPool:
      case OpKind::kGlobalAveragePool:
      case OpKind::kGlobalMaxPool:
      case OpKind::kGlobalLpPool:
      case OpKind::kLRN:
      case OpKind::kInstanceNormalization: {
        // Batch-wise ops: only the batch dim (0) may be bounded.
        const Extents in = Get(x);
        for (size_t d = 1; d < in.size(); ++d) {
          if (!IsStatic(in[d])) {
            return Unsupported(node, absl::StrCat("dim ", d, " has length ", DimText(in[d]),
                                                  "; only the batch dim (0) may be bounded"));
          }
        }
        for (int i = 1; i < node.num_inputs(); ++i) {
          if (node.input(i) != nullptr && !AllStatic(Get(node.input(i)))) {
            return Unsupported(node, absl::StrCat("input ", i, " is bounded"));
          }
        }
        for (const Value* o : node.outputs()) {
          if (o == nullptr) continue;
          Extents e = StaticExtents(o->type().shape);
          if (!e.empty() && !in.empty()) e[0] = in[0];
          Set(o, std::move(e));
        }
        return absl::OkStatus();
      }
      case OpKind::kConcat:
      case OpKind::kSplit: {
        const int64_t axis = node.op() == OpKind::kSplit ? graph::SplitAttrs::Of(node).axis
                                                         : graph::ConcatAttrs::Of(node).axis;
        std::vector<const Value*> operands;
        for (int i = 0; i < node.num_inputs(); ++i) {
          const Value* v = node.input(i);
          if (v == nullptr || (node.op() == OpKind::kSplit && i > 0)) continue;
          if (!IsStatic(Get(v)[axis])) {
            return Unsupported(node, absl::StrCat("it joins or splits along dim ", axis,
                                                  " of length ", DimText(Get(v)[axis])));
          }
          operands.push_back(v);
        }
        for (const Value* o : node.outputs()) {
          Extents e(o->type().rank());
          for (int64_t d = 0; d < o->type().rank(); ++d) {
            if (d == axis) continue;
            for (size_t k = 0; k < operands.size(); ++k) {
              const Dim dim = Get(operands[k])[d];
              if (k == 0) {
                e[d] = dim;
              } else {
                KILN_ASSIGN_OR_RETURN(e[d], Merge(node, e[d], dim, absl::StrCat("dim ", d)));
              }
            }
          }
          Set(o, std::move(e));
        }
        return absl::OkStatus();
      }
      case OpKind::kSlice: {
        const Extents in = Get(x);
        const graph::SliceAttrs legacy = graph::SliceAttrs::Of(node);  // Slice-1's attributes
        auto starts = Ints(node, 1, legacy.starts), ends = Ints(node, 2, legacy.ends);
        auto axes = Ints(node, 3, legacy.axes), steps = Ints(node, 4, {});
        if (!starts || !ends || !axes || !steps) {
          return Unsupported(node, "its starts, ends, axes or steps arrive at run time");
        }
        if (axes->empty()) *axes = AllAxes(static_cast<int64_t>(starts->size()));
        if (steps->empty()) steps->assign(starts->size(), 1);
        for (size_t i = 0; i < axes->size(); ++i) {
          int64_t a = (*axes)[i] < 0 ? (*axes)[i] + x->type().rank() : (*axes)[i];
          const int64_t bound = x->type().shape[a];
          int64_t start = (*starts)[i] < 0 ? (*starts)[i] + bound : (*starts)[i];
          if (IsStatic(in[a])) continue;
          if (start <= 0 && (*steps)[i] == 1 && (*ends)[i] >= bound) continue;  // all of it
          // A slice [start, end) within the shortest length (x[:, :1]) has a static length.
          const bool within = (*starts)[i] >= 0 && (*ends)[i] >= (*starts)[i] && (*steps)[i] == 1 &&
                              IsPlain(in[a]) && (*ends)[i] <= MinLength(in[a]);
          if (!within) {
            return Unsupported(node,
                               absl::StrCat("it slices dim ", a, " of length ", DimText(in[a]),
                                            " other than whole or within its shortest "
                                            "length (from 0 or more, no negative ends)"));
          }
        }
        Set(node.output(0), KeepUnresized(in, x->type().shape, out_shape));
        return absl::OkStatus();
      }
      case OpKind::kPad: {
        // Padding along a bounded dim would land in the middle of the padded layout.
        const Extents in = Get(x);
        const int64_t rank = x->type().rank();
        auto pads = Ints(node, 1, graph::PadAttrs::Of(node).pads);  // Pad-2's attribute
        auto axes = Ints(node, 3, {});
        if (!pads || !axes) return Unsupported(node, "its pads or axes arrive at run time");
        if (axes->empty()) *axes = AllAxes(rank);
        if (pads->size() != 2 * axes->size()) return Unsupported(node, "pads of another length");
        for (size_t i = 0; i < axes->size(); ++i) {
          const int64_t a = (*axes)[i] < 0 ? (*axes)[i] + rank : (*axes)[i];
          if (!IsStatic(in[a]) && ((*pads)[i] != 0 || (*pads)[i + axes->size()] != 0)) {
            return Unsupported(node,
                               absl::StrCat("it pads dim ", a, " of length ", DimText(in[a])));
          }
        }
        Set(node.output(0), KeepUnresized(in, x->type().shape, out_shape));
        return absl::OkStatus();
      }
      case OpKind::kGather: {
        const Extents in = Get(x);
        int64_t axis = graph::Axis0Attrs::Of(node).axis;
        if (axis < 0) axis += x->type().rank();
        if (!IsStatic(in[axis])) {
          // Constant indices within the shortest length (x[:, 0], the first token) are valid at
          // every length.
          auto indices = Ints(node, 1, {});
          bool within = IsPlain(in[axis]) && indices && node.input(1) != nullptr;
          for (size_t i = 0; within && i < indices->size(); ++i) {
            within = (*indices)[i] >= 0 && (*indices)[i] < MinLength(in[axis]);
          }
          if (!within) {
            return Unsupported(
                node, absl::StrCat("it gathers along dim ", axis, " of length ", DimText(in[axis]),
                                   " at indices that are not constants within "
                                   "its shortest length"));
          }
        }
        const Extents idx = Get(node.input(1));
        Extents out(in.begin(), in.begin() + axis);
        out.insert(out.end(), idx.begin(), idx.end());
        out.insert(out.end(), in.begin() + axis + 1, in.end());
        Set(node.output(0), std::move(out));
        return absl::OkStatus();
      }
      case OpKind::kExpand: {
        KILN_ASSIGN_OR_RETURN(Extents out, Broadcast(node, {x}, out_shape));
        Set(node.output(0), std::move(out));
        return absl::OkStatus();
      }
      default:
        break;
    }
    if (fc == graph::FusionClass::kElementwise || fc == graph::FusionClass::kBroadcast) {
      std::vector<const Value*> operands;
      for (const Value* v : node.inputs()) {
        if (v != nullptr) operands.push_back(v);
      }
      for (const Value* o : node.outputs()) {
        if (o == nullptr) continue;
        KILN_ASSIGN_OR_RETURN(Extents out, Broadcast(node, operands, o->type().shape));
        Set(o, std::move(out));
      }
      return absl::OkStatus();
    }
    for (int i = 0; i < node.num_inputs(); ++i) {
      const Value* v = node.input(i);
      if (v == nullptr || AllStatic(Get(v))) continue;
      std::vector<std::string> dims;
      for (const Dim& d : Get(v)) dims.push_back(DimText(d));
      return Unsupported(node,
                         absl::StrCat("input ", i, " has bounded dims [", absl::StrJoin(dims, ", "),
                                      "] and the op has no rule for them"));
    }
    return absl::OkStatus();
  }

  Graph& graph_;
  const std::set<const Value*>& varying_;
  const Value* dims_ = nullptr;
  std::vector<BoundSymbol> symbols_;
  std::vector<int> parent_;  // union-find over symbols_
  std::unordered_map<const Value*, Extents> ext_;
  std::vector<Node*> masks_;
  bool recompute_ = false;
};

/// The constants of `graph` that differ from their counterparts in `probe` (the same model at
/// shorter lengths). Errors: the two graphs differ in structure or attributes.
absl::StatusOr<std::set<const Value*>> VaryingConstants(const Graph& graph, const Graph& probe) {
  std::unordered_map<const Value*, std::string> key;
  auto keys = [&](const Graph& g) {
    for (size_t i = 0; i < g.inputs().size(); ++i) key[g.inputs()[i]] = absl::StrCat("in", i);
    for (size_t i = 0; i < g.constants().size(); ++i) key[g.constants()[i]] = absl::StrCat("c", i);
    std::vector<Node*> nodes = g.nodes();
    for (size_t n = 0; n < nodes.size(); ++n) {
      for (size_t o = 0; o < nodes[n]->outputs().size(); ++o) {
        if (nodes[n]->output(o) != nullptr) key[nodes[n]->output(o)] = absl::StrCat("n", n, ".", o);
      }
    }
  };
  keys(graph);
  keys(probe);
  const std::vector<Node*> a = graph.nodes(), b = probe.nodes();
  auto differ = [](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bounded dims: the graph differs between the bounds and shorter lengths (", what,
        "): its structure depends on the lengths; give fixed shapes or one shape profile per "
        "shape"));
  };
  if (a.size() != b.size() || graph.constants().size() != probe.constants().size()) {
    return differ(absl::StrCat(a.size(), " vs ", b.size(), " nodes"));
  }
  std::set<const Value*> varying;
  for (size_t n = 0; n < a.size(); ++n) {
    const Node& x = *a[n];
    const Node& y = *b[n];
    if (x.op() != y.op() || x.num_inputs() != y.num_inputs() || !(x.attrs() == y.attrs())) {
      return differ(absl::StrCat("node '", x.name(), "' (", x.info().name, ")"));
    }
    for (int i = 0; i < x.num_inputs(); ++i) {
      const Value* u = x.input(i);
      const Value* v = y.input(i);
      if ((u == nullptr) != (v == nullptr) || (u != nullptr && key[u] != key[v])) {
        return differ(absl::StrCat("node '", x.name(), "' input ", i));
      }
      if (u != nullptr && u->is_constant() &&
          (u->type() != v->type() || u->constant()->bytes != v->constant()->bytes)) {
        varying.insert(u);
      }
    }
  }
  if (graph.outputs().size() != probe.outputs().size()) return differ("graph outputs");
  for (size_t o = 0; o < graph.outputs().size(); ++o) {
    const Value* u = graph.outputs()[o];
    const Value* v = probe.outputs()[o];
    if (key[u] != key[v]) return differ(absl::StrCat("graph output ", o));
    if (u->is_constant() &&
        (u->type() != v->type() || u->constant()->bytes != v->constant()->bytes)) {
      varying.insert(u);
    }
  }
  return varying;
}

}  // namespace

absl::StatusOr<std::vector<Probe>> ProbeShapes(
    const std::map<std::string, std::vector<int64_t>>& max_shapes,
    const std::map<std::string, std::vector<int64_t>>& min_shapes) {
  std::map<std::string, std::vector<int64_t>> below = max_shapes, lowest = max_shapes;
  std::vector<Probe> singles;
  bool lower = false;
  for (const auto& [name, mins] : min_shapes) {
    auto it = max_shapes.find(name);
    if (it == max_shapes.end() || it->second.size() != mins.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("bounded dims of input '", name, "' without a shape of the same rank"));
    }
    for (size_t d = 0; d < mins.size(); ++d) {
      if (mins[d] >= it->second[d]) continue;
      --below[name][d];
      lowest[name][d] = mins[d];
      lower = lower || mins[d] < it->second[d] - 1;
      // This dim alone one below its maximum: a value of two lengths that moves with one of them
      // (seq - batch) differs even where they move together. Dims the model ties to others
      // (two inputs' batch) cannot move alone; such a probe is skipped when it does not import.
      Probe single{max_shapes, /*required=*/false};
      --single.shapes[name][d];
      singles.push_back(std::move(single));
    }
  }
  std::vector<Probe> probes = {{below, true}};
  if (lower) probes.push_back({lowest, true});
  if (singles.size() > 1) probes.insert(probes.end(), singles.begin(), singles.end());
  return probes;
}

absl::StatusOr<BoundedDims> BoundDims(graph::Graph& graph,
                                      const std::map<std::string, std::vector<int64_t>>& max_shapes,
                                      const std::map<std::string, std::vector<int64_t>>& min_shapes,
                                      const ShapesImporter& import) {
  // Fold first: a length enters values through Shape, and what folds from it is compared.
  KILN_RETURN_IF_ERROR(RunPasses(graph, {"constant-folding"}));
  KILN_ASSIGN_OR_RETURN(auto probes, ProbeShapes(max_shapes, min_shapes));
  std::set<const Value*> varying;
  for (const Probe& p : probes) {
    const auto& shapes = p.shapes;
    absl::StatusOr<std::unique_ptr<graph::Graph>> probe = import(shapes);
    if (!probe.ok() && !p.required) continue;
    if (!probe.ok()) {
      std::vector<std::string> text;
      for (const auto& [name, dims] : shapes) {
        text.push_back(absl::StrCat(name, "=", absl::StrJoin(dims, ",")));
      }
      return absl::InvalidArgumentError(absl::StrCat(
          "bounded dims: the model does not import at ", absl::StrJoin(text, " "),
          " (lengths within the ranges given), so it cannot take those ranges (a dim the model "
          "fixes cannot be a range): ",
          probe.status().message()));
    }
    KILN_RETURN_IF_ERROR(RunPasses(**probe, {"constant-folding"}));
    KILN_ASSIGN_OR_RETURN(std::set<const Value*> differing, VaryingConstants(graph, **probe));
    varying.insert(differing.begin(), differing.end());
  }
  for (const Value* out : graph.outputs()) {
    if (varying.count(out)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "graph output '", out->name(),
          "' is a value computed from a bounded dim's length (it "
          "differs between the bounds and shorter lengths); give fixed shapes or one shape "
          "profile per shape"));
    }
  }
  return Analysis(graph, varying).Run(min_shapes);
}

void RecomputeValueLengths(graph::Graph& graph, BoundedDims& bounded) {
  Analysis(graph, {}).Recompute(bounded);
}

std::string BoundedGraphHash(const graph::Graph& graph, const BoundedDims& bounded) {
  return Sha256Hex(
      absl::StrCat(graph::GraphHash(graph), "\nbounded ", FormatBoundSymbols(bounded.symbols)));
}

std::string FormatBoundSymbols(const std::vector<BoundSymbol>& symbols) {
  std::vector<std::string> parts;
  for (const BoundSymbol& s : symbols)
    parts.push_back(absl::StrCat(s.name, "=", s.min, "..", s.max));
  return absl::StrJoin(parts, " ");
}

}  // namespace kiln::passes
