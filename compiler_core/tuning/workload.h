// Workloads: a fused kernel as the tuner sees it. A workload is a lowered (unscheduled) loop IR
// Func with concrete shapes, dtypes and layouts, normalized so that the model it came from does
// not matter: the kernel's symbol and its buffer names (which carry the model's value names) are
// replaced by positional names. Loop variable names are kept: the lowering derives them from
// the op's axes (n, oc, oh, ...), never from the model. The workload key is the SHA-256 of the
// canonical text, so the same conv in two models has one key, and any change of shape, dtype,
// layout, fused epilogue, stride, anchor op or of which params are constants (weights, printed
// "const": a schedule may precompute from them at load time) gives another.
#ifndef KILN_COMPILER_CORE_TUNING_WORKLOAD_H_
#define KILN_COMPILER_CORE_TUNING_WORKLOAD_H_

#include <string>

#include "compiler_core/ir/loop/loop_ir.h"

namespace kiln::tuning {

/// `lowered` with its symbol renamed to "workload" and its buffers renamed positionally: params
/// p0, p1, ..., workspaces w0, ..., local (Allocate) buffers l0, ... in order of first
/// appearance. Structure, shapes, dtypes, loops and the anchor are unchanged.
loop::Func CanonicalizeWorkload(const loop::Func& lowered);

/// The printed loop IR of CanonicalizeWorkload(lowered): the text the workload key hashes.
std::string CanonicalWorkloadText(const loop::Func& lowered);

/// SHA-256 (64 lowercase hex digits) of CanonicalWorkloadText(lowered). `lowered` must be the
/// kernel as the lowering produced it, before any schedule.
std::string WorkloadKey(const loop::Func& lowered);

/// Multiply-adds and other arithmetic of one run of `func`, counted as floating-point
/// operations: every float binary and unary op executed by a store, weighted by the trip counts
/// of the loops around it (a multiply-add counts 2). Selects (padding) and integer index
/// arithmetic are not counted. Used to turn a measured time into FLOP/s.
int64_t CountFlops(const loop::Func& func);

}  // namespace kiln::tuning

#endif  // KILN_COMPILER_CORE_TUNING_WORKLOAD_H_
