// Loop-IR kernels shared by the tuning tests.
#ifndef KILN_COMPILER_CORE_TUNING_TUNING_TEST_UTIL_H_
#define KILN_COMPILER_CORE_TUNING_TUNING_TEST_UTIL_H_

#include <cstdint>
#include <vector>

#include "compiler_core/ir/loop/loop_ir.h"

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

}  // namespace kiln::tuning::testing

#endif  // KILN_COMPILER_CORE_TUNING_TUNING_TEST_UTIL_H_
