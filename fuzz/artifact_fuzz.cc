// libFuzzer target: the artifact loader's checks on untrusted bytes (format, checksums,
// manifest validation), everything a runtime does before it maps code.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "compiler_core/runtime/artifact.h"
#include "compiler_core/runtime/manifest_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<kiln::runtime::Artifact> artifact = kiln::runtime::ParseArtifact(bytes);
  if (!artifact.ok()) return 0;
  const int64_t weights = static_cast<int64_t>(artifact->weights.size());
  if (artifact->manifest.profiles_size() > 0) {
    (void)kiln::runtime::ValidateProfiles(artifact->manifest, weights);
  } else {
    (void)kiln::runtime::ValidateManifest(artifact->manifest, weights);
  }
  (void)kiln::runtime::CheckManifestKey(artifact->manifest, {"g", "t", "c", "o"});
  return 0;
}
