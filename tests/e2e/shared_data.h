// Locating ../shared test data from the repo root. A clone without ../shared skips these tests
// with the reason; with KILN_REQUIRE_SHARED=1 (CI) a missing directory fails instead.
#ifndef KILN_TESTS_E2E_SHARED_DATA_H_
#define KILN_TESTS_E2E_SHARED_DATA_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"

namespace kiln::testing {

inline bool SharedDataRequired() {
  const char* v = std::getenv("KILN_REQUIRE_SHARED");
  return v != nullptr && std::string(v) == "1";
}

/// Expands to a skip (or, when KILN_REQUIRE_SHARED=1, a failure) if `path` does not exist.
#define KILN_REQUIRE_PATH_OR_SKIP(path)                                                        \
  do {                                                                                         \
    if (!std::filesystem::exists(path)) {                                                      \
      if (::kiln::testing::SharedDataRequired()) {                                             \
        FAIL() << "required test data missing: " << (path);                                   \
      }                                                                                        \
      GTEST_SKIP() << "test data not found at " << (path)                                      \
                   << " (run from the repo root with ../shared beside it)";                    \
    }                                                                                          \
  } while (0)

/// Directory holding the kiln binaries (set by ctest), or build/bin.
inline std::string BinDir() {
  const char* v = std::getenv("KILN_BIN_DIR");
  return v != nullptr ? std::string(v) : std::string("build/bin");
}

/// Every row of ../shared/models/MANIFEST.tsv whose status is `included` (static shapes) or
/// `symbolic` (symbolic input dims: kiln check takes the shapes from each test data set), so a
/// model added there is tested. Read at test discovery, from the repo root.
inline std::vector<std::string> ManifestModels() {
  std::ifstream in("../shared/models/MANIFEST.tsv");
  std::vector<std::string> names;
  std::string line;
  int status_column = -1;
  while (std::getline(in, line)) {
    std::vector<std::string> cells = absl::StrSplit(line, '\t');
    if (status_column < 0) {
      auto it = std::find(cells.begin(), cells.end(), "status");
      if (it == cells.end()) break;
      status_column = static_cast<int>(it - cells.begin());
      continue;
    }
    if (static_cast<int>(cells.size()) <= status_column) continue;
    const std::string& status = cells[status_column];
    if (status == "included" || status == "symbolic") names.push_back(cells[0]);
  }
  if (names.empty()) names.push_back("MANIFEST_tsv_missing");  // skips (or fails in CI) below
  return names;
}

/// A gtest parameter name for a model name (non-alphanumerics become '_').
inline std::string ParamName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

}  // namespace kiln::testing

#endif  // KILN_TESTS_E2E_SHARED_DATA_H_
