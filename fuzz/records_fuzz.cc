// libFuzzer target: the tuning-records import (JSON lines, `kiln records import`).
#include <cstddef>
#include <cstdint>

#include "compiler_core/tuning/records.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)kiln::tuning::ParseRecordLines(
      absl::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
