// Test helpers for server/cache: a self-deleting temp directory, storage opened in one, and a
// recursive file listing.
#ifndef KILN_SERVER_CACHE_TEST_UTIL_H_
#define KILN_SERVER_CACHE_TEST_UTIL_H_

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "server/cache/storage.h"

namespace kiln::cache::testing {

/// A fresh directory under the system temp dir, removed with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kiln-cache-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// SQLite storage with default options in `dir` (errors: those of OpenSqliteStorage).
inline absl::StatusOr<std::unique_ptr<Storage>> OpenStorageIn(const TempDir& dir) {
  StorageOptions options;
  options.data_dir = dir.path();
  return OpenSqliteStorage(options);
}

/// Regular files under `root`, as sorted paths relative to it.
inline std::vector<std::string> ListFiles(const std::string& root) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) {
      files.push_back(std::filesystem::relative(e.path(), root).string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

/// Flips the bits of the byte at `offset` in the file at `path`.
inline void FlipByte(const std::string& path, size_t offset) {
  std::string bytes = ReadFile(path);
  bytes[offset] = static_cast<char>(~bytes[offset]);
  WriteFile(path, bytes);
}

}  // namespace kiln::cache::testing

#endif  // KILN_SERVER_CACHE_TEST_UTIL_H_
