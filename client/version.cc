// --version's text. The release, the LLVM version and the git commit arrive as compile
// definitions of this file alone (client/CMakeLists.txt), so a new commit rebuilds only it.
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "client/command_line.h"
#include "compiler_core/pipeline/compiler_version.h"

#ifndef KILN_RELEASE
#error "KILN_RELEASE, KILN_LLVM_VERSION and KILN_GIT_COMMIT come from client/CMakeLists.txt"
#endif

namespace kiln::client {

std::string VersionText(std::string_view program) {
  return absl::StrCat(std::string(program), " ", KILN_RELEASE, "\n",           //
                      "compiler version: ", pipeline::kCompilerVersion, "\n",  //
                      "LLVM version: ", KILN_LLVM_VERSION, "\n",               //
                      "git commit: ", KILN_GIT_COMMIT, "\n");
}

}  // namespace kiln::client
