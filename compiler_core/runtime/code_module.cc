// Loading shared objects from memory.
#include "compiler_core/runtime/code_module.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "compiler_core/support/file_bytes.h"

namespace kiln::runtime {
namespace {

// The dynamic loader identifies objects by path name, so the file descriptor behind the path
// stays open while the object is loaded: reusing the number for a second object while the
// first is still mapped would hand back the first one.
struct Loaded {
  void* handle = nullptr;
  int fd = -1;
  std::string path;
};

absl::Status DlopenError(const std::string& what) {
  const char* err = ::dlerror();
  return absl::InternalError(absl::StrCat(what, ": ", err != nullptr ? err : "unknown error"));
}

// Tries to dlopen `path`, first making sure that no loaded object already has that name.
absl::StatusOr<void*> DlopenFresh(const std::string& path) {
  if (void* existing = ::dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
    ::dlclose(existing);
    return absl::AlreadyExistsError(absl::StrCat("an object named ", path, " is already loaded"));
  }
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return DlopenError("cannot load the artifact's shared object");
  return handle;
}

absl::Status LoadFromMemfd(const std::string& code, Loaded& out) {
  int fd = ::memfd_create("kiln-artifact", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("memfd_create: ", std::strerror(errno)));
  }
  if (!WriteAll(fd, code.data(), code.size())) {
    int err = errno;
    ::close(fd);
    return absl::InternalError(absl::StrCat("cannot write code to memfd: ", std::strerror(err)));
  }
  // The code is final: seal it so that nothing can change it under the loader (best effort).
  ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  std::string path = absl::StrCat("/proc/self/fd/", fd);
  if (::access(path.c_str(), R_OK) != 0) {
    ::close(fd);
    return absl::UnavailableError(absl::StrCat(path, " is not accessible (no /proc?)"));
  }
  absl::StatusOr<void*> handle = DlopenFresh(path);
  if (!handle.ok()) {
    ::close(fd);
    return handle.status();
  }
  out.handle = *handle;
  out.fd = fd;
  out.path = std::move(path);
  return absl::OkStatus();
}

// Fallback where memfd or /proc is unavailable: an unlinked temp file, its fd kept open.
absl::Status LoadFromTempFile(const std::string& code, Loaded& out) {
  const char* tmpdir = std::getenv("TMPDIR");
  std::string path_template =
      absl::StrCat(tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp", "/kiln-code-XXXXXX");
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::string path = path_template;
    int fd = ::mkostemp(path.data(), O_CLOEXEC);
    if (fd < 0) {
      return absl::InternalError(
          absl::StrCat("cannot create temp file for code: ", std::strerror(errno)));
    }
    if (!WriteAll(fd, code.data(), code.size())) {
      int err = errno;
      ::close(fd);
      ::unlink(path.c_str());
      return absl::InternalError(absl::StrCat("cannot write code: ", std::strerror(err)));
    }
    absl::StatusOr<void*> handle = DlopenFresh(path);
    ::unlink(path.c_str());
    if (handle.ok()) {
      out.handle = *handle;
      out.fd = fd;
      out.path = std::move(path);
      return absl::OkStatus();
    }
    ::close(fd);
    if (!absl::IsAlreadyExists(handle.status())) return handle.status();
  }
  return absl::InternalError("cannot find an unused name to load the artifact's code");
}

}  // namespace

absl::StatusOr<std::unique_ptr<CodeModule>> CodeModule::Load(const std::string& so_bytes) {
  Loaded loaded;
  absl::Status st = LoadFromMemfd(so_bytes, loaded);
  if (!st.ok() && !absl::IsInternal(st)) {
    // memfd or /proc unavailable, or the name is taken: fall back to a temp file.
    st = LoadFromTempFile(so_bytes, loaded);
  }
  if (!st.ok()) return st;
  std::unique_ptr<CodeModule> module(new CodeModule());
  module->handle_ = loaded.handle;
  module->fd_ = loaded.fd;
  module->path_ = std::move(loaded.path);
  return module;
}

CodeModule::~CodeModule() {
  if (handle_ != nullptr) {
    ::dlclose(handle_);
    // If something pinned the object (NODELETE), keep the name (our fd) reserved forever.
    void* still = ::dlopen(path_.c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (still != nullptr) {
      ::dlclose(still);
      return;
    }
  }
  if (fd_ >= 0) ::close(fd_);
}

absl::StatusOr<kiln_kernel_fn> CodeModule::Kernel(const std::string& symbol) const {
  ::dlerror();
  void* sym = ::dlsym(handle_, symbol.c_str());
  if (sym == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("symbol '", symbol, "' is not exported by the artifact's code"));
  }
  return reinterpret_cast<kiln_kernel_fn>(sym);
}

}  // namespace kiln::runtime
