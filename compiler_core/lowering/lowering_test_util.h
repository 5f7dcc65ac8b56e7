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

}  // namespace kiln::lowering::testing

#endif  // KILN_COMPILER_CORE_LOWERING_LOWERING_TEST_UTIL_H_
