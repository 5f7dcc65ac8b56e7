// Target canonical key.
#include "compiler_core/support/target.h"

#include "absl/strings/str_cat.h"

namespace kiln {

std::string Target::Key() const {
  return absl::StrCat(kind, ":", cpu, ":", triple, ":v", vector_bits, ":", features);
}

bool Target::HasFeature(std::string_view name) const {
  const std::string want = absl::StrCat("+", std::string(name));
  for (size_t start = 0; start <= features.size();) {
    size_t end = features.find(',', start);
    if (end == std::string::npos) end = features.size();
    if (features.compare(start, end - start, want) == 0) return true;
    start = end + 1;
  }
  return false;
}

bool Target::HasInt8Dot4(int bits) const {
  if (bits >= 512) return HasFeature("avx512vnni");
  return HasFeature("avxvnni") || (HasFeature("avx512vnni") && HasFeature("avx512vl"));
}

}  // namespace kiln
