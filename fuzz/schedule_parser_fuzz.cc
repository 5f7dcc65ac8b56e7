// libFuzzer target: the schedule text parser and the knob-config parser.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "compiler_core/schedule/knobs.h"
#include "compiler_core/schedule/schedule_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)kiln::schedule::ParseSchedule(text);
  (void)kiln::schedule::ParseKnobConfig(absl::string_view(text.data(), text.size()));
  return 0;
}
