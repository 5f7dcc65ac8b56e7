// Algebraic simplification: small pattern rewrites driven by the shared rewrite driver.
//
// What, pattern by pattern (each rooted at the last node of what it matches):
//   identity removal   Identity(x), Dropout(x) (mask unused), Pad with all-zero pads,
//                      Transpose with the identity perm, Cast to x's dtype, Slice covering x
//                      (positive steps, same type), Expand / Reshape / Flatten / Squeeze /
//                      Unsqueeze whose output type is x's type, Concat of one input  →  x
//   transposes         Transpose(Transpose(x, p1), p2)  →  x if p1∘p2 is the identity, else
//                      Transpose(x, p) with p[i] = p1[p2[i]]
//   reshape chains     R2(R1(x)) for R1, R2 in {Reshape, Flatten, Squeeze, Unsqueeze}
//                      →  Reshape(x, const shape of R2's output)
//   Gelu               0.5 · x · (1 + Erf(x / √2)) (or x · 0.7071…)  →  Gelu(x) approximate="none"
//                      0.5 · x · (1 + Tanh(√(2/π) · (x + 0.044715 · x³)))  →  approximate="tanh"
//                      in any association/order of the three-factor product (or the product of
//                      x and the sum divided by 2), x³ as Pow(x, 3) or x · x · x; constants are
//                      scalars matched by value within 1e-6.
// Requires: no fusion groups assigned yet; static types on every value.
// Guarantees: the graph computes the same function up to float rounding. Gelu is formed only
//   when every intermediate has one user and is not a graph output, and the result has x's
//   type. A graph output keeps its name: a no-op node whose output is a graph output and whose
//   input is a graph input, graph output or constant is left in place.
//
//   before: %2 = Transpose(%0) {perm=[1,0]} : f32[3,2]
//           %3 = Transpose(%2) {perm=[1,0]} : f32[2,3]
//   after:  (uses of %3 read %0)
#include "compiler_core/passes/graph/simplify.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/passes/graph/rewrite.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::passes {
namespace {

using graph::Graph;
using graph::Node;
using graph::OpKind;
using graph::Value;

constexpr double kTolerance = 1e-6;

// ---- Shared helpers ----

/// Makes every use of `node`'s first output read `to` instead and erases `node`. Returns false
/// (and changes nothing) when that would rename a graph interface value: `node`'s output is a
/// graph output and `to` is a graph input, graph output or constant.
bool ForwardTo(Node& node, Value* to, Rewriter& rewriter) {
  Graph& graph = rewriter.graph();
  Value* from = node.output(0);
  if (to == nullptr || to == from) return false;
  if (graph.IsGraphOutput(from) &&
      (graph.IsGraphInput(to) || graph.IsGraphOutput(to) || to->is_constant())) {
    return false;
  }
  for (size_t i = 1; i < node.outputs().size(); ++i) {
    if (!IsUnused(graph, node.output(static_cast<int>(i)))) return false;
  }
  rewriter.ReplaceAllUsesWith(from, to);
  rewriter.EraseNode(&node);
  return true;
}

/// Reads integer parameter `input_index` (a constant input) or, when that input is omitted,
/// `attr` (the legacy attribute's value, nullopt when absent). Returns nullopt if the input is
/// not constant or neither is present.
std::optional<std::vector<int64_t>> ConstInts(const Node& node, int input_index,
                                              const std::optional<std::vector<int64_t>>& attr) {
  const Value* v = node.input(input_index);
  if (v != nullptr) {
    if (!v->is_constant()) return std::nullopt;
    const Tensor& t = *v->constant();
    std::vector<int64_t> out(t.type.NumElements());
    for (int64_t i = 0; i < t.type.NumElements(); ++i) out[i] = t.GetAsInt64(i);
    return out;
  }
  return attr;
}

bool IsIdentityPermutation(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

/// True if every Slice step is a known positive constant (omitted steps are 1; Slice-1 has no
/// steps attribute).
bool HasPositiveSteps(const Node& slice) {
  if (slice.input(4) == nullptr) return true;
  std::optional<std::vector<int64_t>> steps = ConstInts(slice, 4, std::nullopt);
  if (!steps) return false;
  return std::all_of(steps->begin(), steps->end(), [](int64_t s) { return s > 0; });
}

/// True if `node` computes its first input unchanged.
bool IsNoOp(const Graph& graph, const Node& node) {
  const Value* x = node.input(0);
  if (x == nullptr || node.outputs().empty() || node.output(0)->type() != x->type()) {
    return false;
  }
  switch (node.op()) {
    case OpKind::kIdentity:
    case OpKind::kCast:
    case OpKind::kExpand:
    case OpKind::kReshape:
    case OpKind::kFlatten:
    case OpKind::kSqueeze:
    case OpKind::kUnsqueeze:
      return true;
    case OpKind::kDropout:
      return node.outputs().size() == 1 || IsUnused(graph, node.output(1));
    case OpKind::kConcat:
      return node.num_inputs() == 1;
    case OpKind::kTranspose:
      return IsIdentityPermutation(graph::TransposePermutation(node));
    case OpKind::kPad: {
      std::optional<std::vector<int64_t>> legacy;  // Pad-2's attribute
      if (node.attrs().Has("pads")) legacy = graph::PadAttrs::Of(node).pads;
      std::optional<std::vector<int64_t>> pads = ConstInts(node, 1, legacy);
      return pads && std::all_of(pads->begin(), pads->end(), [](int64_t p) { return p == 0; });
    }
    case OpKind::kSlice:
      // With positive steps, an output as large as the input can only start at 0 and take
      // every element.
      return HasPositiveSteps(node);
    default:
      return false;
  }
}

bool IsReshapeLike(OpKind op) {
  return op == OpKind::kReshape || op == OpKind::kFlatten || op == OpKind::kSqueeze ||
         op == OpKind::kUnsqueeze;
}

/// Erases `node` if none of its outputs is used any more.
void EraseIfUnused(Node* node, Rewriter& rewriter) {
  for (const Value* out : node->outputs()) {
    if (!IsUnused(rewriter.graph(), out)) return;
  }
  rewriter.EraseNode(node);
}

// ---- Identity removal, transposes, reshape chains ----

absl::StatusOr<bool> RemoveNoOp(Node& node, Rewriter& rewriter) {
  if (!IsNoOp(rewriter.graph(), node)) return false;
  return ForwardTo(node, node.input(0), rewriter);
}

absl::StatusOr<bool> MergeTransposes(Node& outer, Rewriter& rewriter) {
  if (outer.op() != OpKind::kTranspose) return false;
  Node* inner = outer.input(0)->producer();
  if (inner == nullptr || inner->op() != OpKind::kTranspose) return false;
  std::vector<int64_t> p1 = graph::TransposePermutation(*inner),
                       p2 = graph::TransposePermutation(outer);
  if (p1.size() != p2.size()) return false;
  std::vector<int64_t> composed(p2.size());
  for (size_t i = 0; i < p2.size(); ++i) composed[i] = p1[p2[i]];
  Value* x = inner->input(0);
  if (IsIdentityPermutation(composed)) {
    if (!ForwardTo(outer, x, rewriter)) return false;
  } else {
    graph::AttrMap attrs;
    attrs.Set("perm", composed);
    Node* merged = rewriter.graph().InsertNodeBefore(&outer, OpKind::kTranspose, outer.name(),
                                                     {x}, {outer.output(0)->type()}, attrs);
    merged->output(0)->set_name(outer.output(0)->name());
    rewriter.ReplaceAllUsesWith(outer.output(0), merged->output(0));
    rewriter.EraseNode(&outer);
  }
  EraseIfUnused(inner, rewriter);
  return true;
}

absl::StatusOr<bool> MergeReshapes(Node& outer, Rewriter& rewriter) {
  if (!IsReshapeLike(outer.op())) return false;
  Node* inner = outer.input(0)->producer();
  if (inner == nullptr || !IsReshapeLike(inner->op())) return false;
  const TensorType& type = outer.output(0)->type();
  // A 0 in a Reshape target means "copy the input dim"; leave empty results alone.
  if (std::any_of(type.shape.begin(), type.shape.end(), [](int64_t d) { return d <= 0; })) {
    return false;
  }
  Graph& graph = rewriter.graph();
  auto shape = Tensor::Zeros(TensorType{DType::kInt64, {type.rank()}});
  std::copy(type.shape.begin(), type.shape.end(), shape->mutable_data<int64_t>());
  Value* shape_value = graph.AddConstant(absl::StrCat(outer.name(), "_shape"), std::move(shape));
  Node* merged = graph.InsertNodeBefore(&outer, OpKind::kReshape, outer.name(),
                                        {inner->input(0), shape_value}, {type});
  merged->output(0)->set_name(outer.output(0)->name());
  rewriter.ReplaceAllUsesWith(outer.output(0), merged->output(0));
  rewriter.EraseNode(&outer);
  EraseIfUnused(inner, rewriter);
  return true;
}

// ---- Gelu formation ----

/// True if `value` is a one-element constant within kTolerance of `want`.
bool IsScalarNear(const Value* value, double want) {
  if (value == nullptr || !value->is_constant()) return false;
  const Tensor& t = *value->constant();
  return t.type.NumElements() == 1 && std::abs(t.GetAsDouble(0) - want) < kTolerance;
}

/// Collects the nodes of one candidate Gelu subgraph, each checked to have a single user and
/// not be a graph output.
class GeluMatcher {
 public:
  explicit GeluMatcher(const Graph& graph) : graph_(graph) {}

  /// The producer of `value` if it has op `op`, one user and is not a graph output; it is
  /// recorded for erasure. nullptr otherwise.
  Node* Inner(const Value* value, OpKind op) {
    if (value == nullptr || value->producer() == nullptr) return nullptr;
    Node* node = value->producer();
    if (node->op() != op || graph_.IsGraphOutput(value) || graph_.Users(value).size() != 1) {
      return nullptr;
    }
    nodes_.push_back(node);
    return node;
  }

  /// For a commutative binary `node`: the operand other than a scalar constant near `want`.
  static Value* OtherThanScalar(const Node& node, double want) {
    if (IsScalarNear(node.input(1), want)) return node.input(0);
    if (IsScalarNear(node.input(0), want)) return node.input(1);
    return nullptr;
  }

  /// Matches `sum` = 1 + Erf(x/√2) or 1 + Tanh(√(2/π)(x + 0.044715 x³)); returns the
  /// approximation ("none" or "tanh").
  std::optional<std::string> MatchSum(const Value* sum, const Value* x) {
    Node* add = Inner(sum, OpKind::kAdd);
    if (add == nullptr) return std::nullopt;
    Value* e = OtherThanScalar(*add, 1.0);
    if (e == nullptr || e->producer() == nullptr) return std::nullopt;
    if (Node* erf = Inner(e, OpKind::kErf)) {
      return MatchErfArg(erf->input(0), x) ? std::optional<std::string>("none") : std::nullopt;
    }
    if (Node* tanh = Inner(e, OpKind::kTanh)) {
      return MatchTanhArg(tanh->input(0), x) ? std::optional<std::string>("tanh")
                                             : std::nullopt;
    }
    return std::nullopt;
  }

  const std::vector<Node*>& nodes() const { return nodes_; }
  void Truncate(size_t size) { nodes_.resize(size); }

 private:
  /// x / √2 or x · (1/√2).
  bool MatchErfArg(const Value* arg, const Value* x) {
    if (arg == nullptr || arg->producer() == nullptr) return false;
    if (arg->producer()->op() == OpKind::kDiv) {
      Node* div = Inner(arg, OpKind::kDiv);
      return div != nullptr && div->input(0) == x && IsScalarNear(div->input(1), M_SQRT2);
    }
    Node* mul = Inner(arg, OpKind::kMul);
    return mul != nullptr && OtherThanScalar(*mul, M_SQRT1_2) == x;
  }

  /// √(2/π) · (x + 0.044715 · x³).
  bool MatchTanhArg(const Value* arg, const Value* x) {
    Node* scale = Inner(arg, OpKind::kMul);
    if (scale == nullptr) return false;
    Node* poly = Inner(OtherThanScalar(*scale, std::sqrt(2 / M_PI)), OpKind::kAdd);
    if (poly == nullptr) return false;
    Value* cubic_term = poly->input(0) == x ? poly->input(1) : poly->input(0);
    if (poly->input(0) != x && poly->input(1) != x) return false;
    Node* scaled_cube = Inner(cubic_term, OpKind::kMul);
    if (scaled_cube == nullptr) return false;
    return MatchCube(OtherThanScalar(*scaled_cube, 0.044715), x);
  }

  /// Pow(x, 3), x · (x · x) or (x · x) · x.
  bool MatchCube(const Value* cube, const Value* x) {
    if (cube == nullptr || cube->producer() == nullptr) return false;
    if (cube->producer()->op() == OpKind::kPow) {
      Node* pow = Inner(cube, OpKind::kPow);
      return pow != nullptr && pow->input(0) == x && IsScalarNear(pow->input(1), 3.0);
    }
    Node* mul = Inner(cube, OpKind::kMul);
    if (mul == nullptr) return false;
    for (int side = 0; side < 2; ++side) {
      if (mul->input(side) != x) continue;
      Node* square = Inner(mul->input(1 - side), OpKind::kMul);
      if (square != nullptr && square->input(0) == x && square->input(1) == x) return true;
      if (square != nullptr) nodes_.pop_back();
    }
    return false;
  }

  const Graph& graph_;
  std::vector<Node*> nodes_;
};

/// One way to read the root as a product: `factors` times `half` (0.5 when the root divides
/// by 2 or a factor is 0.5), with `inner` the Mul node that groups two of the factors.
struct Product {
  std::vector<Value*> factors;
  Node* inner = nullptr;
};

/// The candidate factorizations of `root` into {0.5, x, 1 + f(x)}: Mul(a, Mul(b, c)) in either
/// operand order, or Div(Mul(a, b), 2) (where 0.5 is implicit and factors has two entries).
std::vector<Product> Factorizations(const Graph& graph, const Node& root) {
  std::vector<Product> out;
  auto single_use_mul = [&](const Value* v) -> Node* {
    if (v == nullptr || v->producer() == nullptr || v->producer()->op() != OpKind::kMul) {
      return nullptr;
    }
    if (graph.IsGraphOutput(v) || graph.Users(v).size() != 1) return nullptr;
    return v->producer();
  };
  if (root.op() == OpKind::kMul) {
    for (int side = 0; side < 2; ++side) {
      Node* inner = single_use_mul(root.input(side));
      if (inner == nullptr) continue;
      out.push_back({{root.input(1 - side), inner->input(0), inner->input(1)}, inner});
    }
  } else if (root.op() == OpKind::kDiv && IsScalarNear(root.input(1), 2.0)) {
    if (Node* inner = single_use_mul(root.input(0))) {
      out.push_back({{inner->input(0), inner->input(1)}, inner});
    }
  }
  return out;
}

/// Tries to match `product` as 0.5 · x · sum; on success returns the approximation and leaves
/// the matched interior nodes in `matcher`, x in `*x`.
std::optional<std::string> MatchProduct(const Product& product, GeluMatcher& matcher,
                                        Value** x) {
  std::vector<Value*> rest = product.factors;
  if (rest.size() == 3) {
    auto half = std::find_if(rest.begin(), rest.end(),
                             [](const Value* v) { return IsScalarNear(v, 0.5); });
    if (half == rest.end()) return std::nullopt;
    rest.erase(half);
  }
  for (int i = 0; i < 2; ++i) {
    size_t mark = matcher.nodes().size();
    std::optional<std::string> approx = matcher.MatchSum(rest[1 - i], rest[i]);
    if (approx) {
      *x = rest[i];
      return approx;
    }
    matcher.Truncate(mark);
  }
  return std::nullopt;
}

absl::StatusOr<bool> FormGelu(Node& root, Rewriter& rewriter) {
  if (root.op() != OpKind::kMul && root.op() != OpKind::kDiv) return false;
  Graph& graph = rewriter.graph();
  for (const Product& product : Factorizations(graph, root)) {
    GeluMatcher matcher(graph);
    Value* x = nullptr;
    std::optional<std::string> approx = MatchProduct(product, matcher, &x);
    if (!approx || x->type() != root.output(0)->type() || !IsFloat(x->type().dtype)) continue;
    graph::AttrMap attrs;
    attrs.Set("approximate", *approx);
    Node* gelu = graph.InsertNodeBefore(&root, OpKind::kGelu, root.name(), {x},
                                        {root.output(0)->type()}, attrs);
    gelu->output(0)->set_name(root.output(0)->name());
    rewriter.ReplaceAllUsesWith(root.output(0), gelu->output(0));
    // Consumers before producers, so each erased node's outputs are already unused.
    rewriter.EraseNode(&root);
    rewriter.EraseNode(product.inner);
    for (Node* node : matcher.nodes()) rewriter.EraseNode(node);
    return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<bool> Simplify::Run(Graph& graph) {
  KILN_RETURN_IF_ERROR(CheckRunsBeforeFusion(graph, name()));
  return ApplyPatterns(graph, {RemoveNoOp, MergeTransposes, MergeReshapes, FormGelu});
}

}  // namespace kiln::passes
