// The artifact cache key's pieces that kilnd computes itself (the options hash) and their
// conversions between storage and wire form.
#ifndef KILN_SERVER_ARTIFACT_KEY_H_
#define KILN_SERVER_ARTIFACT_KEY_H_

#include <string>

#include "kiln/v1/service.pb.h"
#include "server/cache/storage.h"

namespace kiln::server {

/// `options` in canonical form (workers::CanonicalOptions): disabled_passes sorted and
/// deduplicated, input_shapes sorted by name.
v1::CompileOptions CanonicalOptions(const v1::CompileOptions& options);

/// SHA-256 hex of the deterministic serialization of CanonicalOptions(options); the same
/// function kiln-worker uses (workers/protocol.h).
std::string OptionsHash(const v1::CompileOptions& options);

v1::ArtifactKey KeyToProto(const cache::ArtifactKey& key);
cache::ArtifactKey KeyFromProto(const v1::ArtifactKey& key);

/// One string naming the whole key (for single-flight maps and logs).
std::string KeyString(const cache::ArtifactKey& key);

}  // namespace kiln::server

#endif  // KILN_SERVER_ARTIFACT_KEY_H_
