// Locating ../shared test data from the repo root. A clone without ../shared skips these tests
// with the reason; with KILN_REQUIRE_SHARED=1 (CI) a missing directory fails instead.
#ifndef KILN_TESTS_E2E_SHARED_DATA_H_
#define KILN_TESTS_E2E_SHARED_DATA_H_

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

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

}  // namespace kiln::testing

#endif  // KILN_TESTS_E2E_SHARED_DATA_H_
