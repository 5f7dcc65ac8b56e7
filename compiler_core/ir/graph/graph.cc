// Graph construction and mutation.
#include "compiler_core/ir/graph/graph.h"

#include <algorithm>
#include <cassert>
#include <functional>
#include <queue>
#include <map>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::graph {

namespace {

/// Distance between the order keys of consecutive nodes after Renumber. An insertion takes the
/// middle of its gap, so about 20 insertions fit at one spot before an O(nodes) renumbering;
/// int64 keys leave room for 2^42 nodes.
constexpr int64_t kOrderGap = int64_t{1} << 20;

}  // namespace

void Node::AddUse(int i) {
  Value* v = inputs_[i];
  if (v == nullptr) {
    use_index_[i] = -1;
    return;
  }
  use_index_[i] = static_cast<int>(v->uses_.size());
  v->uses_.push_back(Use{this, i});
}

void Node::DropUse(int i) {
  Value* v = inputs_[i];
  if (v == nullptr) return;
  // Swap-remove: the last use takes this one's slot and learns its new index.
  const int slot = use_index_[i];
  assert(slot >= 0 && v->uses_[slot].user == this && v->uses_[slot].operand == i);
  const Use last = v->uses_.back();
  v->uses_[slot] = last;
  last.user->use_index_[last.operand] = slot;
  v->uses_.pop_back();
  use_index_[i] = -1;
}

void Node::set_input(int i, Value* v) {
  if (inputs_[i] == v) return;
  DropUse(i);
  inputs_[i] = v;
  AddUse(i);
}

Value* Graph::NewValue() {
  values_.push_back(std::make_unique<Value>());
  Value* v = values_.back().get();
  v->id_ = static_cast<int>(values_.size()) - 1;
  v->graph_ = this;
  return v;
}

Value* Graph::AddInput(std::string name, TensorType type) {
  Value* v = NewValue();
  v->name_ = std::move(name);
  v->type_ = std::move(type);
  v->is_input_ = true;
  inputs_.push_back(v);
  return v;
}

Value* Graph::AddConstant(std::string name, std::shared_ptr<const Tensor> data) {
  assert(data != nullptr);
  Value* v = NewValue();
  v->name_ = std::move(name);
  v->type_ = data->type;
  v->constant_ = std::move(data);
  constants_.push_back(v);
  return v;
}

std::unique_ptr<Node> Graph::MakeNode(OpKind op, std::string name, std::vector<Value*> inputs,
                                      std::vector<TensorType> output_types, AttrMap attrs) {
  auto node = std::make_unique<Node>();
  node->op_ = op;
  node->name_ = std::move(name);
  node->graph_ = this;
  node->inputs_ = std::move(inputs);
  node->use_index_.assign(node->inputs_.size(), -1);
  for (int i = 0; i < node->num_inputs(); ++i) node->AddUse(i);
  node->attrs_ = std::move(attrs);
  for (size_t i = 0; i < output_types.size(); ++i) {
    Value* v = NewValue();
    v->type_ = std::move(output_types[i]);
    v->producer_ = node.get();
    v->output_index_ = static_cast<int>(i);
    node->outputs_.push_back(v);
  }
  return node;
}

Node* Graph::AddNode(OpKind op, std::string name, std::vector<Value*> inputs,
                     std::vector<TensorType> output_types, AttrMap attrs) {
  const int64_t order = nodes_.empty() ? 0 : nodes_.back()->order_ + kOrderGap;
  nodes_.push_back(
      MakeNode(op, std::move(name), std::move(inputs), std::move(output_types), std::move(attrs)));
  Node* node = nodes_.back().get();
  node->order_ = order;
  node->position_ = std::prev(nodes_.end());
  return node;
}

Node* Graph::InsertNodeBefore(Node* before, OpKind op, std::string name,
                              std::vector<Value*> inputs, std::vector<TensorType> output_types,
                              AttrMap attrs) {
  assert(before != nullptr && before->graph_ == this);
  auto order_between = [&]() -> int64_t {
    const int64_t hi = before->order_;
    const int64_t lo = before->position_ == nodes_.begin()
                           ? hi - 2 * kOrderGap
                           : (*std::prev(before->position_))->order_;
    return hi - lo >= 2 ? lo + (hi - lo) / 2 : hi;
  };
  int64_t order = order_between();
  if (order == before->order_) {  // no gap left here
    Renumber();
    order = order_between();
  }
  auto it = nodes_.insert(before->position_, MakeNode(op, std::move(name), std::move(inputs),
                                                      std::move(output_types), std::move(attrs)));
  Node* node = it->get();
  node->order_ = order;
  node->position_ = it;
  return node;
}

void Graph::RemoveNode(Node* node) {
  assert(node != nullptr && node->graph_ == this);
  for (Value* out : node->outputs_) {
    assert(!HasUsers(out) && !IsGraphOutput(out));
    out->producer_ = nullptr;  // the Value object stays owned by the graph but is unreachable
  }
  for (int i = 0; i < node->num_inputs(); ++i) node->DropUse(i);
  nodes_.erase(node->position_);
}

void Graph::ReplaceAllUsesWith(Value* from, Value* to) {
  if (from == nullptr || from == to) return;
  // A copy: set_input edits from->uses_ while we walk it.
  const std::vector<Use> uses = from->uses_;
  for (const Use& use : uses) {
    if (use.user->graph_ == this) use.user->set_input(use.operand, to);
  }
  if (!IsGraphOutput(from)) return;
  for (Value*& out : outputs_) {
    if (out != from) continue;
    out = to;
    if (from->graph_ == this) --from->output_slots_;
    if (to != nullptr && to->graph_ == this) ++to->output_slots_;
  }
}

std::vector<Node*> Graph::Users(const Value* value) const {
  std::vector<Node*> users;
  if (value == nullptr) return users;
  for (const Use& use : value->uses_) {
    if (use.user->graph_ == this) users.push_back(use.user);
  }
  std::sort(users.begin(), users.end(),
            [](const Node* a, const Node* b) { return a->order_ < b->order_; });
  users.erase(std::unique(users.begin(), users.end()), users.end());
  return users;
}

bool Graph::HasUsers(const Value* value) const {
  if (value == nullptr) return false;
  for (const Use& use : value->uses_) {
    if (use.user->graph_ == this) return true;
  }
  return false;
}

bool Graph::IsGraphOutput(const Value* value) const {
  if (value != nullptr && value->graph_ == this) return value->output_slots_ > 0;
  // A value of another graph (or null): only a scan can tell.
  return std::find(outputs_.begin(), outputs_.end(), value) != outputs_.end();
}

bool Graph::IsGraphInput(const Value* value) const {
  if (value != nullptr && value->graph_ == this) return value->is_input_;
  return std::find(inputs_.begin(), inputs_.end(), value) != inputs_.end();
}

void Graph::SetOutputs(std::vector<Value*> outputs) {
  for (Value* v : outputs_) {
    if (v != nullptr && v->graph_ == this) --v->output_slots_;
  }
  outputs_ = std::move(outputs);
  for (Value* v : outputs_) {
    if (v != nullptr && v->graph_ == this) ++v->output_slots_;
  }
}

std::vector<Value*> Graph::LiveConstants() const {
  std::vector<Value*> live;
  for (Value* c : constants_) {
    if (IsGraphOutput(c) || HasUsers(c)) live.push_back(c);
  }
  return live;
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_) out.push_back(n.get());
  return out;
}

void Graph::Renumber() {
  int64_t order = 0;
  for (const auto& n : nodes_) {
    n->order_ = order;
    order += kOrderGap;
  }
}

absl::Status Graph::SortTopologically() {
  // Kahn's algorithm, always taking the earliest ready node in the current order (stable), with
  // a min-heap of positions so a wide graph sorts in O(n log n).
  std::vector<Node*> order = nodes();
  std::unordered_map<const Node*, int> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int>(i);
  std::vector<int> pending(order.size(), 0);
  std::vector<std::vector<int>> users(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    for (Value* in : order[i]->inputs_) {
      if (in == nullptr || in->producer_ == nullptr) continue;
      auto it = position.find(in->producer_);
      if (it == position.end()) continue;
      ++pending[i];
      users[it->second].push_back(static_cast<int>(i));
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (size_t i = 0; i < order.size(); ++i) {
    if (pending[i] == 0) ready.push(static_cast<int>(i));
  }
  std::vector<int> sorted;
  sorted.reserve(order.size());
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    sorted.push_back(i);
    for (int u : users[i]) {
      if (--pending[u] == 0) ready.push(u);
    }
  }
  if (sorted.size() != order.size()) {
    // The graph stays as it was, for the caller's error reporting.
    for (size_t i = 0; i < order.size(); ++i) {
      if (pending[i] == 0) continue;
      return absl::InvalidArgumentError(absl::StrCat(
          "graph has a cycle through node '", order[i]->name_, "' (", order[i]->info().name, ")"));
    }
  }
  // Splicing keeps every node's list iterator valid.
  for (int i : sorted) nodes_.splice(nodes_.end(), nodes_, order[i]->position_);
  Renumber();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<sym::Symbol>> GraphSymbols(const Graph& graph) {
  std::map<std::string, sym::Symbol> found;
  auto add = [&](const Value* v) -> absl::Status {
    if (v == nullptr || v->type().is_static()) return absl::OkStatus();
    for (const sym::Expr& d : v->type().sym_shape) {
      for (const sym::Symbol& s : d.Symbols()) {
        auto [it, inserted] = found.emplace(s.name, s);
        if (!inserted && (it->second.min != s.min || it->second.max != s.max)) {
          return absl::InvalidArgumentError(absl::StrCat(
              "symbol '", s.name, "' has range ", sym::RangeText(it->second),
              " in one type and ", sym::RangeText(s), " in another"));
        }
      }
    }
    return absl::OkStatus();
  };
  for (const Value* v : graph.inputs()) KILN_RETURN_IF_ERROR(add(v));
  for (const Node* node : graph.nodes()) {
    for (const Value* v : node->outputs()) KILN_RETURN_IF_ERROR(add(v));
  }
  std::vector<sym::Symbol> out;
  for (auto& [name, s] : found) out.push_back(s);
  return out;
}

}  // namespace kiln::graph
