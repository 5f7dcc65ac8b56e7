// Digest validation and construction.
#include "wire/digest.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "compiler_core/support/sha256.h"

namespace kiln::wire {

bool IsValidDigest(std::string_view hash) {
  if (hash.size() != 64) return false;
  return std::all_of(hash.begin(), hash.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

absl::Status CheckDigest(std::string_view hash, std::string_view what) {
  if (IsValidDigest(hash)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(what), " '", std::string(hash), "' is not a lowercase hex SHA-256"));
}

v1::Digest DigestOf(std::string_view bytes) {
  v1::Digest d;
  d.set_hash(Sha256Hex(bytes));
  d.set_size_bytes(static_cast<int64_t>(bytes.size()));
  return d;
}

}  // namespace kiln::wire
