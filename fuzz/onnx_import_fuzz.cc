// libFuzzer target: the ONNX importer on untrusted bytes, as kiln-graph-hash and the workers
// run it (no directory: external data refused), and the CLI's external-data inlining.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "compiler_core/importer/onnx/importer.h"
#include "compiler_core/importer/onnx/model_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  (void)kiln::importer::ImportOnnxBytes(bytes, /*base_dir=*/"");
  (void)kiln::importer::InlineExternalDataOfModel(bytes, "");
  return 0;
}
