// Linking with lld as a library: ELF objects → one shared object. lld keeps global state, so
// calls are serialized by a process-wide mutex; inputs and outputs go through a temp directory.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "compiler_core/codegen/llvm/internal.h"
#include "lld/Common/Driver.h"
#include "llvm/Support/raw_ostream.h"

LLD_HAS_DRIVER(elf)

namespace kiln::codegen {
namespace {

std::mutex& LldMutex() {
  static std::mutex mu;
  return mu;
}

bool lld_unusable = false;  // guarded by LldMutex(): lld reported it cannot run again

absl::Status WriteFile(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path.string()));
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InternalError(absl::StrCat("cannot read ", path.string()));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A temp directory removed on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kiln-link-XXXXXX").string();
    if (mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace

absl::StatusOr<std::string> LinkSharedObject(const std::vector<std::string>& objects) {
  TempDir dir;
  if (dir.path().empty()) return absl::InternalError("cannot create a temp directory");
  std::string so_path = (dir.path() / "kernels.so").string();
  std::vector<std::string> obj_paths;
  for (size_t i = 0; i < objects.size(); ++i) {
    obj_paths.push_back((dir.path() / absl::StrCat("kernels", i, ".o")).string());
    if (absl::Status s = WriteFile(obj_paths.back(), objects[i]); !s.ok()) return s;
  }

  // Undefined symbols (libm, memset) are allowed in a shared object and bind at dlopen.
  std::vector<const char*> args = {"ld.lld",   "-shared", "--hash-style=gnu", "-z", "noexecstack",
                                   "-z",       "relro",   "-z",               "now", "-o",
                                   so_path.c_str()};
  for (const std::string& path : obj_paths) args.push_back(path.c_str());
  std::string out_text, err_text;
  llvm::raw_string_ostream out(out_text), err(err_text);
  {
    std::lock_guard<std::mutex> lock(LldMutex());
    if (lld_unusable) return absl::InternalError("lld failed earlier and cannot run again");
    lld::Result r = lld::lldMain(args, out, err, {{lld::Gnu, &lld::elf::link}});
    if (!r.canRunAgain) lld_unusable = true;
    if (r.retCode != 0) {
      out.flush();
      err.flush();
      return absl::InternalError(absl::StrCat("lld failed: ", err_text, out_text));
    }
  }
  return ReadFile(so_path);
}

}  // namespace kiln::codegen
