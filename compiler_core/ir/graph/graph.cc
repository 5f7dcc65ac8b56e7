// Graph construction and mutation.
#include "compiler_core/ir/graph/graph.h"

#include <algorithm>
#include <cassert>
#include <unordered_map>

#include "absl/strings/str_cat.h"

namespace kiln::graph {

Value* Graph::NewValue() {
  values_.push_back(std::make_unique<Value>());
  Value* v = values_.back().get();
  v->id_ = static_cast<int>(values_.size()) - 1;
  return v;
}

Value* Graph::AddInput(std::string name, TensorType type) {
  Value* v = NewValue();
  v->name_ = std::move(name);
  v->type_ = std::move(type);
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
  node->inputs_ = std::move(inputs);
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
  nodes_.push_back(
      MakeNode(op, std::move(name), std::move(inputs), std::move(output_types), std::move(attrs)));
  return nodes_.back().get();
}

Node* Graph::InsertNodeBefore(Node* before, OpKind op, std::string name,
                              std::vector<Value*> inputs, std::vector<TensorType> output_types,
                              AttrMap attrs) {
  auto it = std::find_if(nodes_.begin(), nodes_.end(),
                         [&](const std::unique_ptr<Node>& n) { return n.get() == before; });
  assert(it != nodes_.end());
  it = nodes_.insert(it, MakeNode(op, std::move(name), std::move(inputs), std::move(output_types),
                                  std::move(attrs)));
  return it->get();
}

void Graph::RemoveNode(Node* node) {
  auto it = std::find_if(nodes_.begin(), nodes_.end(),
                         [&](const std::unique_ptr<Node>& n) { return n.get() == node; });
  assert(it != nodes_.end());
  for (Value* out : node->outputs_) {
    assert(Users(out).empty() && !IsGraphOutput(out));
    out->producer_ = nullptr;  // the Value object stays owned by the graph but is unreachable
  }
  nodes_.erase(it);
}

void Graph::ReplaceAllUsesWith(Value* from, Value* to) {
  for (auto& node : nodes_) {
    for (Value*& in : node->inputs_) {
      if (in == from) in = to;
    }
  }
  for (Value*& out : outputs_) {
    if (out == from) out = to;
  }
}

std::vector<Node*> Graph::Users(const Value* value) const {
  std::vector<Node*> users;
  for (const auto& node : nodes_) {
    if (std::find(node->inputs_.begin(), node->inputs_.end(), value) != node->inputs_.end()) {
      users.push_back(node.get());
    }
  }
  return users;
}

bool Graph::IsGraphOutput(const Value* value) const {
  return std::find(outputs_.begin(), outputs_.end(), value) != outputs_.end();
}

std::vector<Value*> Graph::LiveConstants() const {
  std::vector<Value*> live;
  for (Value* c : constants_) {
    if (IsGraphOutput(c) || !Users(c).empty()) live.push_back(c);
  }
  return live;
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_) out.push_back(n.get());
  return out;
}

absl::Status Graph::SortTopologically() {
  // Kahn's algorithm, always taking the earliest ready node in the current order (stable).
  std::unordered_map<const Node*, int> position;
  for (size_t i = 0; i < nodes_.size(); ++i) position[nodes_[i].get()] = static_cast<int>(i);
  std::vector<int> pending(nodes_.size(), 0);
  std::vector<std::vector<int>> users(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    for (Value* in : nodes_[i]->inputs_) {
      if (in == nullptr || in->producer_ == nullptr) continue;
      auto it = position.find(in->producer_);
      if (it == position.end()) continue;
      ++pending[i];
      users[it->second].push_back(static_cast<int>(i));
    }
  }
  std::vector<int> ready;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (pending[i] == 0) ready.push_back(static_cast<int>(i));
  }
  std::vector<std::unique_ptr<Node>> sorted;
  sorted.reserve(nodes_.size());
  while (!ready.empty()) {
    auto min_it = std::min_element(ready.begin(), ready.end());
    int i = *min_it;
    ready.erase(min_it);
    sorted.push_back(std::move(nodes_[i]));
    for (int u : users[i]) {
      if (--pending[u] == 0) ready.push_back(u);
    }
  }
  if (sorted.size() != nodes_.size()) {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (nodes_[i] != nullptr) {
        std::string name = nodes_[i]->name_;
        std::string op(nodes_[i]->info().name);
        // Put the nodes back so the graph stays intact for the caller's error reporting.
        size_t k = 0;
        for (auto& n : nodes_) {
          if (n == nullptr) n = std::move(sorted[k++]);
        }
        return absl::InvalidArgumentError(
            absl::StrCat("graph has a cycle through node '", name, "' (", op, ")"));
      }
    }
  }
  nodes_ = std::move(sorted);
  return absl::OkStatus();
}

}  // namespace kiln::graph
