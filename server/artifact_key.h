// The artifact cache key: its conversions between storage and wire form (the options hash is
// wire/options.h).
#ifndef KILN_SERVER_ARTIFACT_KEY_H_
#define KILN_SERVER_ARTIFACT_KEY_H_

#include <string>

#include "kiln/v1/service.pb.h"
#include "server/cache/storage.h"

namespace kiln::server {

v1::ArtifactKey KeyToProto(const cache::ArtifactKey& key);
cache::ArtifactKey KeyFromProto(const v1::ArtifactKey& key);

/// One string naming the whole key (for single-flight maps and logs).
std::string KeyString(const cache::ArtifactKey& key);

}  // namespace kiln::server

#endif  // KILN_SERVER_ARTIFACT_KEY_H_
