// Kernels and targets shared by the tuning tests (and the worker's tune-step tests).
#ifndef KILN_COMPILER_CORE_TUNING_TUNING_TEST_UTIL_H_
#define KILN_COMPILER_CORE_TUNING_TUNING_TEST_UTIL_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/codegen/llvm/codegen.h"
#include "compiler_core/ir/loop/loop_ir.h"
#include "compiler_core/lowering/lower.h"
#include "compiler_core/lowering/lowering_test_util.h"
#include "gtest/gtest.h"

namespace kiln::tuning::testing {

/// out[i, j] += a[i, k] * b[k, j] over i < m, j < n, k < k_extent (k a reduction), all f32;
/// params a, b, out; loops "i", "j", "k"; unscheduled.
inline loop::Func MatMulFunc(int64_t m, int64_t n, int64_t k_extent) {
  using loop::VarRef;
  loop::BufferRef a = loop::MakeBuffer("a", DType::kFloat32, {m, k_extent});
  loop::BufferRef b = loop::MakeBuffer("b", DType::kFloat32, {k_extent, n});
  loop::BufferRef out = loop::MakeBuffer("out", DType::kFloat32, {m, n});
  loop::Var i = loop::MakeVar("i"), j = loop::MakeVar("j"), k = loop::MakeVar("k");
  std::vector<loop::Expr> o = {VarRef(i), VarRef(j)};
  loop::Expr update = loop::Load(out, o) +
                      loop::Load(a, {VarRef(i), VarRef(k)}) * loop::Load(b, {VarRef(k), VarRef(j)});
  loop::Func f;
  f.name = "mm";
  f.params = {a, b, out};
  f.anchor = graph::OpKind::kMatMul;
  f.body = loop::For(i, m,
                     loop::For(j, n,
                               loop::For(k, k_extent, loop::Store(out, o, update),
                                         loop::ForKind::kSerial, /*is_reduction=*/true)));
  return f;
}

/// The host target (kiln::ResolveTarget("host")); a failure fails the test.
inline Target Host() {
  absl::StatusOr<Target> t = kiln::ResolveTarget("host");
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : Target();
}

/// A graph MatMul [m, k] x [k, n] -> [m, n] (f32) as the lowering makes it: unscheduled, kernel
/// name "k". Link kiln_lowering to use it.
inline loop::Func LoweredMatMul(int64_t m = 24, int64_t n = 40, int64_t k = 64) {
  using lowering::testing::F32;
  graph::Graph g;
  graph::Value* a = g.AddInput("a", F32({m, k}));
  graph::Value* b = g.AddInput("b", F32({k, n}));
  graph::Node* mm = g.AddNode(graph::OpKind::kMatMul, "mm", {a, b}, {F32({m, n})});
  auto lowered = lowering::LowerGroup({mm}, "k");
  EXPECT_TRUE(lowered.ok()) << lowered.status();
  return lowered.ok() ? lowered->func : loop::Func();
}

}  // namespace kiln::tuning::testing

#endif  // KILN_COMPILER_CORE_TUNING_TUNING_TEST_UTIL_H_
