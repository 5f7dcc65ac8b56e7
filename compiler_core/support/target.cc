// Target canonical key.
#include "compiler_core/support/target.h"

#include "absl/strings/str_cat.h"

namespace kiln {

std::string Target::Key() const {
  return absl::StrCat(kind, ":", cpu, ":", triple, ":v", vector_bits, ":", features);
}

}  // namespace kiln
