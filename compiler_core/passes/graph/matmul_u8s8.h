// Rewrites the int32 matrix products of quantized models (MatMulInteger, QLinearMatMul and
// DynamicQuantizeLinear → MatMulInteger chains, as the importer decomposes them) into u8s8
// products on packed words, which codegen maps to VPDPBUSD.
#ifndef KILN_COMPILER_CORE_PASSES_GRAPH_MATMUL_U8S8_H_
#define KILN_COMPILER_CORE_PASSES_GRAPH_MATMUL_U8S8_H_

#include <string_view>

#include "compiler_core/passes/graph/pass.h"

namespace kiln::passes {

/// Options of the matmul-u8s8 pass.
struct MatMulU8S8Options {
  /// The target's f32 SIMD lanes: B is packed in panels of 2 × f32_lanes columns (matmul-pack's
  /// micro-kernel width).
  int f32_lanes = 16;
  /// The target has a 4-way u8 x s8 dot product (Target::HasInt8Dot4); without one the pass
  /// does nothing.
  bool int8_dot4 = false;
};

/// What: a MatMul A [.., M, K] × B [K, N] → i32 whose A is [Sub(·, za) of] Cast to i32 of an
/// 8-bit tensor u (za a scalar, constant or computed at run time), whose B is a constant with
/// every value in [-128, 127], and K % 4 == 0, becomes
///   MatMul{quant="u8s8"}(Bitcast(uint8 u) [.., M, K/4], B words) [+ corr]
/// where word j of a row holds its elements 4j..4j+3 (little-endian bytes) and B's words hold
/// B[4j..4j+3, n] as int8 bytes, packed in panels [ceil(N/nr), K/4, nr] (b_layout="packed<nr>",
/// b_cols=N; nr = 2 × f32_lanes) when N >= nr, else [K/4, N]. The zero point is folded into a
/// constant added after the product: corr[n] = -za · sum_k B[k, n] (omitted when za = 0), as
///   sum_k (u - za) · B = sum_k u · B - za · sum_k B;
/// a zero point computed at run time (DynamicQuantizeLinear's) adds za · (-sum_k B[k, n])
/// computed at run time instead. An int8 u is first made uint8 by adding 128 (with za + 128).
/// Products that do not match are left as they are (exact, in int32).
/// Requires: a verified graph after matmul-pack, before fusion. Guarantees: a verified graph
///   computing the same outputs bit for bit; deterministic.
///
///   before: %4 = Cast(%u) {to=6} : i32[8,64]
///           %5 = Sub(%4, %zp) : i32[8,64]
///           %6 = MatMul(%5, %b) : i32[8,48]
///   after:  %7 = Bitcast(%u) {to=6} : i32[8,16]
///           %8 = MatMul(%7, %b_u8s8) {b_cols=48, b_layout="packed32", quant="u8s8"} : i32[8,48]
///           %9 = Add(%8, %corr) : i32[8,48]
class MatMulU8S8 final : public GraphPass {
 public:
  explicit MatMulU8S8(MatMulU8S8Options options = {}) : options_(options) {}
  std::string_view name() const override { return "matmul-u8s8"; }
  absl::StatusOr<bool> Run(graph::Graph& graph) override;

 private:
  MatMulU8S8Options options_;
};

}  // namespace kiln::passes

#endif  // KILN_COMPILER_CORE_PASSES_GRAPH_MATMUL_U8S8_H_
