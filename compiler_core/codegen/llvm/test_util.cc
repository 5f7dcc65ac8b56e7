// Test helpers: compiling, loading and calling generated kernels.
#include "compiler_core/codegen/llvm/test_util.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "compiler_core/codegen/llvm/codegen.h"

namespace kiln::codegen::testing {

std::atomic<int> parallel_for_calls{0};

absl::StatusOr<std::unique_ptr<LoadedKernels>> LoadedKernels::Load(const std::string& so_bytes) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "kiln-test-XXXXXX.so").string();
  int fd = mkstemps(tmpl.data(), 3);
  if (fd < 0) return absl::InternalError("mkstemps failed");
  close(fd);
  {
    std::ofstream out(tmpl, std::ios::binary);
    out.write(so_bytes.data(), static_cast<std::streamsize>(so_bytes.size()));
  }
  auto loaded = std::unique_ptr<LoadedKernels>(new LoadedKernels());
  loaded->path_ = tmpl;
  loaded->handle_ = dlopen(tmpl.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (loaded->handle_ == nullptr) return absl::InternalError(absl::StrCat("dlopen: ", dlerror()));
  return loaded;
}

LoadedKernels::~LoadedKernels() {
  if (handle_ != nullptr) dlclose(handle_);
  if (!path_.empty()) std::remove(path_.c_str());
}

kiln_kernel_fn LoadedKernels::Get(const std::string& name) const {
  return reinterpret_cast<kiln_kernel_fn>(dlsym(handle_, name.c_str()));
}

const Target& HostTarget() {
  static const Target* target = [] {
    auto t = ResolveTarget("host");
    if (!t.ok()) {
      std::fprintf(stderr, "ResolveTarget(host): %s\n", t.status().ToString().c_str());
      std::abort();
    }
    return new Target(*t);
  }();
  return *target;
}

absl::StatusOr<std::unique_ptr<LoadedKernels>> CompileAndLoad(const std::vector<loop::Func>& funcs,
                                                              const Target& target) {
  auto so = CompileToSharedObject(funcs, target);
  if (!so.ok()) return so.status();
  return LoadedKernels::Load(*so);
}

namespace {

void TwoThreadParallelFor(void* /*pool*/, kiln_task_fn fn, void* closure, int64_t n) {
  parallel_for_calls.fetch_add(1);
  int64_t mid = n / 2;
  std::thread worker([&] {
    if (mid > 0) fn(closure, 0, mid);
  });
  fn(closure, mid, n);
  worker.join();
}

}  // namespace

const kiln_context* TestContext() {
  static const kiln_context ctx = {&TwoThreadParallelFor, nullptr};
  return &ctx;
}

void CallKernel(kiln_kernel_fn fn, const std::vector<void*>& args) {
  fn(TestContext(), args.data());
}

}  // namespace kiln::codegen::testing
