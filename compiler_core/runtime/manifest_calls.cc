// ForEachKernelCall over a manifest tree (profiles, Loop bodies).
#include "compiler_core/runtime/manifest_calls.h"

namespace kiln::runtime {

void ForEachKernelCall(const kiln::v1::Manifest& m,
                       const std::function<void(const kiln::v1::KernelCall&)>& fn) {
  for (const kiln::v1::KernelCall& call : m.kernels()) {
    fn(call);
    if (call.has_loop()) ForEachKernelCall(call.loop().body(), fn);
  }
  for (const kiln::v1::Manifest& p : m.profiles()) ForEachKernelCall(p, fn);
}

void ForEachKernelCall(kiln::v1::Manifest& m,
                       const std::function<void(kiln::v1::KernelCall&)>& fn) {
  for (kiln::v1::KernelCall& call : *m.mutable_kernels()) {
    fn(call);
    if (call.has_loop()) ForEachKernelCall(*call.mutable_loop()->mutable_body(), fn);
  }
  for (kiln::v1::Manifest& p : *m.mutable_profiles()) ForEachKernelCall(p, fn);
}

}  // namespace kiln::runtime
