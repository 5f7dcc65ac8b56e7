// Test helpers for codegen tests: compile loop::Funcs for the host, dlopen the resulting shared
// object, and call kernels with a kiln_context whose parallel_for splits work over 2 threads.
#ifndef KILN_COMPILER_CORE_CODEGEN_LLVM_TEST_UTIL_H_
#define KILN_COMPILER_CORE_CODEGEN_LLVM_TEST_UTIL_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/ir/loop/loop_ir.h"
#include "compiler_core/runtime/abi.h"
#include "compiler_core/support/target.h"

namespace kiln::codegen::testing {

/// A dlopen'ed kernel library; unloads and deletes its file on destruction.
class LoadedKernels {
 public:
  /// Writes `so_bytes` to a temp file and dlopens it.
  static absl::StatusOr<std::unique_ptr<LoadedKernels>> Load(const std::string& so_bytes);
  ~LoadedKernels();

  /// The kernel symbol `name`, or nullptr.
  kiln_kernel_fn Get(const std::string& name) const;

 private:
  void* handle_ = nullptr;
  std::string path_;
};

/// The host target (ResolveTarget("host")); aborts the test binary if it fails.
const Target& HostTarget();

/// Compiles `funcs` for `target` and loads the result.
absl::StatusOr<std::unique_ptr<LoadedKernels>> CompileAndLoad(const std::vector<loop::Func>& funcs,
                                                              const Target& target = HostTarget());

/// Number of parallel_for calls made through TestContext() (for checking outlining happened).
extern std::atomic<int> parallel_for_calls;

/// A context whose parallel_for runs [0, n/2) on a second std::thread and the rest inline.
const kiln_context* TestContext();

/// Calls `fn` with TestContext() and the given buffer pointers.
void CallKernel(kiln_kernel_fn fn, const std::vector<void*>& args);

}  // namespace kiln::codegen::testing

#endif  // KILN_COMPILER_CORE_CODEGEN_LLVM_TEST_UTIL_H_
