// Merkle-style canonical graph hash.
#include "compiler_core/ir/graph/graph_hash.h"

#include <unordered_map>
#include <vector>

#include "compiler_core/support/sha256.h"

namespace kiln::graph {
namespace {

void HashType(Sha256& h, const TensorType& type) {
  h.UpdateU64(static_cast<uint64_t>(type.dtype));
  h.UpdateU64(type.shape.size());
  for (int64_t d : type.shape) h.UpdateU64(static_cast<uint64_t>(d));
  if (type.is_static()) return;  // a static type hashes as it always has
  // Symbolic dims: each dim's canonical form, and the range of every symbol it reads (two
  // ranges are two graphs).
  h.UpdateString("sym");
  for (const sym::Expr& d : type.sym_shape) {
    h.UpdateString(d.ToString());
    for (const sym::Symbol& s : d.Symbols()) {
      h.UpdateU64(static_cast<uint64_t>(s.min));
      h.UpdateU64(static_cast<uint64_t>(s.max));
    }
  }
}

std::string TensorDigest(const Tensor& t) {
  Sha256 h;
  h.UpdateString("const");
  HashType(h, t.type);
  h.Update(t.bytes.data(), t.bytes.size());
  return h.HexDigest();
}

void HashAttr(Sha256& h, const AttrValue& value) {
  h.UpdateU64(value.index());
  if (auto* t = std::get_if<std::shared_ptr<const Tensor>>(&value)) {
    h.UpdateString(*t ? TensorDigest(**t) : "null");
    return;
  }
  if (auto* g = std::get_if<std::shared_ptr<Graph>>(&value)) {
    h.UpdateString(*g ? GraphHash(**g) : "null");
    return;
  }
  // Every other kind prints exactly (floats round-trip), so its printed form identifies it.
  h.UpdateString(FormatAttrValue(value));
}

class Hasher {
 public:
  explicit Hasher(const Graph& graph) {
    for (size_t i = 0; i < graph.inputs().size(); ++i) {
      Sha256 h;
      h.UpdateString("input");
      h.UpdateU64(i);
      HashType(h, graph.inputs()[i]->type());
      memo_[graph.inputs()[i]] = h.HexDigest();
    }
  }

  /// The digest of `root`, computing those of the values it depends on first. Iterative (an
  /// explicit stack), so a 100k-node chain does not recurse 100k deep.
  std::string ValueHash(const Value* root) {
    std::vector<const Value*> stack{root};
    while (!stack.empty()) {
      const Value* v = stack.back();
      if (v == nullptr || memo_.count(v) != 0) {
        stack.pop_back();
        continue;
      }
      if (!v->is_constant() && v->producer() != nullptr) {
        // Graphs are acyclic (verified), so this terminates.
        bool ready = true;
        for (const Value* in : v->producer()->inputs()) {
          if (in == nullptr || memo_.count(in) != 0) continue;
          stack.push_back(in);
          ready = false;
        }
        if (!ready) continue;
      }
      memo_[v] = Digest(*v);
      stack.pop_back();
    }
    return Lookup(root);
  }

 private:
  std::string Lookup(const Value* v) const { return v == nullptr ? "none" : memo_.at(v); }

  /// The digest of `v`, whose producer's inputs all have theirs.
  std::string Digest(const Value& v) const {
    if (v.is_constant()) return TensorDigest(*v.constant());
    const Node* node = v.producer();
    if (node == nullptr) return "undefined";
    Sha256 h;
    h.UpdateString("node");
    h.UpdateString(node->info().name);
    h.UpdateU64(node->attrs().items().size());
    for (const auto& [name, value] : node->attrs().items()) {
      h.UpdateString(name);
      HashAttr(h, value);
    }
    h.UpdateU64(node->inputs().size());
    for (const Value* in : node->inputs()) h.UpdateString(Lookup(in));
    h.UpdateU64(static_cast<uint64_t>(v.output_index()));
    HashType(h, v.type());
    return h.HexDigest();
  }

  std::unordered_map<const Value*, std::string> memo_;
};

}  // namespace

std::string GraphHash(const Graph& graph) {
  Hasher hasher(graph);
  Sha256 h;
  h.UpdateString("graph");
  h.UpdateU64(graph.inputs().size());
  for (const Value* in : graph.inputs()) {
    HashType(h, in->type());
    h.UpdateString(in->name());
  }
  h.UpdateU64(graph.outputs().size());
  for (const Value* out : graph.outputs()) {
    h.UpdateString(hasher.ValueHash(out));
    h.UpdateString(out->name());
  }
  return h.HexDigest();
}

std::string ProfilesGraphHash(const std::vector<std::string>& profile_hashes) {
  Sha256 h;
  h.UpdateString("profiles");
  h.UpdateU64(profile_hashes.size());
  for (const std::string& hash : profile_hashes) h.UpdateString(hash);
  return h.HexDigest();
}

}  // namespace kiln::graph
