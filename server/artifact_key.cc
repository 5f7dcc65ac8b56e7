// Key conversions.
#include "server/artifact_key.h"

#include "absl/strings/str_cat.h"

namespace kiln::server {

v1::ArtifactKey KeyToProto(const cache::ArtifactKey& key) {
  v1::ArtifactKey out;
  out.set_graph_hash(key.graph_hash);
  out.set_target_key(key.target_key);
  out.set_compiler_version(key.compiler_version);
  out.set_options_hash(key.options_hash);
  return out;
}

cache::ArtifactKey KeyFromProto(const v1::ArtifactKey& key) {
  return cache::ArtifactKey{key.graph_hash(), key.target_key(), key.compiler_version(),
                            key.options_hash()};
}

std::string KeyString(const cache::ArtifactKey& key) {
  return absl::StrCat(key.graph_hash, "|", key.target_key, "|", key.compiler_version, "|",
                      key.options_hash);
}

}  // namespace kiln::server
