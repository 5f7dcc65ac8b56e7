// Generated code in memory: an ELF shared object (an artifact's code section, or a tuning
// batch of candidate kernels) loaded with the dynamic loader from a sealed memfd (or, where
// memfd or /proc is missing, an unlinked temp file), and its kernel symbols resolved. No LLVM.
#ifndef KILN_COMPILER_CORE_RUNTIME_CODE_MODULE_H_
#define KILN_COMPILER_CORE_RUNTIME_CODE_MODULE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "compiler_core/runtime/abi.h"

namespace kiln::runtime {

/// A loaded shared object; unloaded on destruction. Not copyable.
class CodeModule {
 public:
  /// Loads `so_bytes` (an ELF shared object for this machine).
  /// Errors: kInternal when the loader refuses it (with dlerror's text), kUnavailable when no
  /// way to hand it to the loader works.
  static absl::StatusOr<std::unique_ptr<CodeModule>> Load(const std::string& so_bytes);
  ~CodeModule();
  CodeModule(const CodeModule&) = delete;
  CodeModule& operator=(const CodeModule&) = delete;

  /// The exported kernel `symbol` (runtime/abi.h signature).
  /// Errors: kNotFound when the object does not export it.
  absl::StatusOr<kiln_kernel_fn> Kernel(const std::string& symbol) const;

 private:
  CodeModule() = default;
  void* handle_ = nullptr;
  int fd_ = -1;
  std::string path_;
};

}  // namespace kiln::runtime

#endif  // KILN_COMPILER_CORE_RUNTIME_CODE_MODULE_H_
