#include "compiler_core/support/file_bytes.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace kiln {

absl::StatusOr<std::string> ReadFileBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return absl::NotFoundError(absl::StrCat("cannot read '", path, "'"));
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace kiln
