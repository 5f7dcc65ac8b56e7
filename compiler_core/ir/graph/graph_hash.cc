// Merkle-style canonical graph hash.
#include "compiler_core/ir/graph/graph_hash.h"

#include <unordered_map>

#include "compiler_core/support/sha256.h"

namespace kiln::graph {
namespace {

void HashType(Sha256& h, const TensorType& type) {
  h.UpdateU64(static_cast<uint64_t>(type.dtype));
  h.UpdateU64(type.shape.size());
  for (int64_t d : type.shape) h.UpdateU64(static_cast<uint64_t>(d));
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

  std::string ValueHash(const Value* v) {
    if (v == nullptr) return "none";
    auto it = memo_.find(v);
    if (it != memo_.end()) return it->second;
    std::string digest;
    if (v->is_constant()) {
      digest = TensorDigest(*v->constant());
    } else if (v->producer() != nullptr) {
      const Node* node = v->producer();
      Sha256 h;
      h.UpdateString("node");
      h.UpdateString(node->info().name);
      h.UpdateU64(node->attrs().items().size());
      for (const auto& [name, value] : node->attrs().items()) {
        h.UpdateString(name);
        HashAttr(h, value);
      }
      h.UpdateU64(node->inputs().size());
      // Graphs are acyclic (verified), so this recursion terminates; its depth is the graph's
      // depth, which is small for real models.
      for (const Value* in : node->inputs()) h.UpdateString(ValueHash(in));
      h.UpdateU64(static_cast<uint64_t>(v->output_index()));
      HashType(h, v->type());
      digest = h.HexDigest();
    } else {
      digest = "undefined";
    }
    memo_[v] = digest;
    return digest;
  }

 private:
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
