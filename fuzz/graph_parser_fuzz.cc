// libFuzzer target: the graph-IR text parser (and the printer on what it accepts).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "compiler_core/ir/graph/parser.h"
#include "compiler_core/ir/graph/printer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto graph = kiln::graph::ParseGraph(text);
  if (graph.ok()) (void)kiln::graph::PrintGraph(**graph);
  return 0;
}
