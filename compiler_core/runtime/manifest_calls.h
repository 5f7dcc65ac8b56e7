// Walks every kernel call of a manifest: its own, those of its shape profiles, and those of the
// Loop bodies among them (KernelCall.loop), depth first in call order.
#ifndef KILN_COMPILER_CORE_RUNTIME_MANIFEST_CALLS_H_
#define KILN_COMPILER_CORE_RUNTIME_MANIFEST_CALLS_H_

#include <functional>

#include "kiln/v1/artifact.pb.h"

namespace kiln::runtime {

/// Calls `fn` on each kernel call of `m` in call order, and on the calls of a Loop body where
/// the Loop's call stands (after `fn` on the Loop call itself); then on each shape profile's.
void ForEachKernelCall(const kiln::v1::Manifest& m,
                       const std::function<void(const kiln::v1::KernelCall&)>& fn);
/// The same, with mutable calls (renaming symbols, moving weight offsets).
void ForEachKernelCall(kiln::v1::Manifest& m, const std::function<void(kiln::v1::KernelCall&)>& fn);

}  // namespace kiln::runtime

#endif  // KILN_COMPILER_CORE_RUNTIME_MANIFEST_CALLS_H_
