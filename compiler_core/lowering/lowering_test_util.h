// Test helpers for lowering: building tensors, running a lowered kernel through the loop IR
// interpreter, and evaluating a fusion group with the reference evaluator.
#ifndef KILN_COMPILER_CORE_LOWERING_LOWERING_TEST_UTIL_H_
#define KILN_COMPILER_CORE_LOWERING_LOWERING_TEST_UTIL_H_

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/ir/graph/graph.h"
#include "compiler_core/ir/loop/interpreter.h"
#include "compiler_core/lowering/lower.h"

namespace kiln::lowering::testing {

using TensorPtr = std::shared_ptr<const Tensor>;
using ValueMap = std::map<const graph::Value*, TensorPtr>;

inline TensorType F32(std::vector<int64_t> shape) { return {DType::kFloat32, std::move(shape)}; }

inline std::shared_ptr<Tensor> FromFloats(const TensorType& type, const std::vector<float>& v) {
  auto t = Tensor::Zeros(type);
  std::memcpy(t->bytes.data(), v.data(), v.size() * sizeof(float));
  return t;
}

inline std::shared_ptr<Tensor> FromInts(const TensorType& type, const std::vector<int64_t>& v) {
  auto t = Tensor::Zeros(type);
  std::memcpy(t->bytes.data(), v.data(), v.size() * sizeof(int64_t));
  return t;
}

/// Deterministic pseudo-random f32 tensor with values in [-1, 1].
inline std::shared_ptr<Tensor> Random(const TensorType& type, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(type.NumElements());
  for (float& x : v) x = dist(gen);
  return FromFloats(type, v);
}

inline std::vector<float> Floats(const Tensor& t) {
  std::vector<float> v(t.type.NumElements());
  std::memcpy(v.data(), t.bytes.data(), v.size() * sizeof(float));
  return v;
}

/// Runs `func` (the kernel's func, possibly scheduled) binding params from `inputs` (constants
/// bind their data) and returns every result, in kernel.results order. Results and workspaces
/// start as 0xFF bytes (NaN) so a kernel that reads them before writing shows up.
inline absl::StatusOr<std::vector<TensorPtr>> RunFuncAll(const LoweredKernel& kernel,
                                                         const loop::Func& func,
                                                         const ValueMap& inputs) {
  std::vector<std::vector<uint8_t>> storage;
  std::vector<void*> args;
  auto is_result = [&](const graph::Value* v) {
    return std::find(kernel.results.begin(), kernel.results.end(), v) != kernel.results.end();
  };
  for (size_t i = 0; i < func.params.size(); ++i) {
    const graph::Value* v = kernel.param_values[i];
    if (is_result(v)) {
      storage.emplace_back(func.params[i]->NumBytes(), 0xFF);
    } else {
      TensorPtr t = v->is_constant() ? v->constant() : inputs.at(v);
      storage.emplace_back(t->bytes);
    }
  }
  for (const loop::BufferRef& w : func.workspaces) storage.emplace_back(w->NumBytes(), 0xFF);
  for (auto& s : storage) args.push_back(s.data());
  absl::Status status = loop::InterpretFunc(func, args);
  if (!status.ok()) return status;
  std::vector<TensorPtr> results;
  for (const graph::Value* r : kernel.results) {
    for (size_t i = 0; i < func.params.size(); ++i) {
      if (kernel.param_values[i] != r) continue;
      auto out = Tensor::Zeros(r->type());
      out->bytes = storage[i];
      results.push_back(out);
      break;
    }
  }
  if (results.empty()) return absl::InternalError("kernel has no result param");
  return results;
}

/// RunFuncAll's first result.
inline absl::StatusOr<TensorPtr> RunFunc(const LoweredKernel& kernel, const loop::Func& func,
                                         const ValueMap& inputs) {
  absl::StatusOr<std::vector<TensorPtr>> all = RunFuncAll(kernel, func, inputs);
  if (!all.ok()) return all.status();
  return all->front();
}

inline absl::StatusOr<TensorPtr> RunKernel(const LoweredKernel& kernel, const ValueMap& inputs) {
  return RunFunc(kernel, kernel.func, inputs);
}

/// A blocked conv as layout-nchwc leaves it (layout "NCHW8c", blocked input, group 1, bias)
/// with a fused Relu: x [n, 2, hw, hw, 8], w [3, 2, 3, 3, 8, 8], out [n, 3, o, o, 8] with
/// o = (hw + 2 pad - 3) / stride + 1. `nodes` is the fusion group to lower.
struct BlockedConvGraph {
  graph::Graph g;
  graph::Value* x = nullptr;
  std::vector<const graph::Node*> nodes;
  BlockedConvGraph(int64_t n, int64_t hw, int64_t pad, int64_t stride) {
    const int64_t o = (hw + 2 * pad - 3) / stride + 1;
    x = g.AddInput("x", F32({n, 2, hw, hw, 8}));
    graph::Value* w = g.AddConstant("w", Random(F32({3, 2, 3, 3, 8, 8}), 1));
    graph::Value* b = g.AddConstant("b", Random(F32({24}), 2));
    graph::AttrMap a;
    a.Set("kernel_shape", std::vector<int64_t>{3, 3});
    a.Set("strides", std::vector<int64_t>{stride, stride});
    a.Set("pads", std::vector<int64_t>{pad, pad, pad, pad});
    a.Set("dilations", std::vector<int64_t>{1, 1});
    a.Set("group", int64_t{1});
    a.Set("layout", std::string("NCHW8c"));
    graph::Node* conv =
        g.AddNode(graph::OpKind::kConv, "conv", {x, w, b}, {F32({n, 3, o, o, 8})}, a);
    graph::Node* relu =
        g.AddNode(graph::OpKind::kRelu, "relu", {conv->output(0)}, {F32({n, 3, o, o, 8})});
    nodes = {conv, relu};
  }
};

}  // namespace kiln::lowering::testing

#endif  // KILN_COMPILER_CORE_LOWERING_LOWERING_TEST_UTIL_H_
