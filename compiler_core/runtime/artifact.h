// The artifact file: one versioned, checksummed file holding a compiled model's code (an ELF
// shared object), weights and manifest (proto/kiln/v1/artifact.proto).
//
// Layout (little-endian):
//   0   8  magic "KILNART\0"
//   8   4  format version (kArtifactFormatVersion)
//   12  4  reserved (0)
//   16  8  manifest size M
//   24  8  code size C
//   32  8  weights size W
//   40 32  SHA-256 of bytes [72, 72 + M + C + W)
//   72     manifest (serialized kiln.v1.Manifest), then code, then weights
#ifndef KILN_COMPILER_CORE_RUNTIME_ARTIFACT_H_
#define KILN_COMPILER_CORE_RUNTIME_ARTIFACT_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "kiln/v1/artifact.pb.h"

namespace kiln::runtime {

inline constexpr uint32_t kArtifactFormatVersion = 1;
/// The first 8 bytes of every artifact file.
inline constexpr char kArtifactMagic[8] = {'K', 'I', 'L', 'N', 'A', 'R', 'T', '\0'};

struct Artifact {
  kiln::v1::Manifest manifest;
  std::string code;     // ELF shared object
  std::string weights;  // constants, at the offsets the manifest's WEIGHT bindings give
};

/// Serializes `artifact` to the file format above.
std::string SerializeArtifact(const Artifact& artifact);
/// Parses and verifies an artifact. Errors (kInvalidArgument, naming what is wrong): too short,
/// bad magic, unsupported format version, sizes past the end, checksum mismatch, bad manifest.
absl::StatusOr<Artifact> ParseArtifact(std::string_view bytes);
/// The cache key an artifact is filed and fetched under (server/cache ArtifactKey's fields).
struct ArtifactKeyFields {
  std::string graph_hash;
  std::string target_key;
  std::string compiler_version;
  std::string options_hash;
};

/// Checks that `manifest` names exactly `key`; an empty key.options_hash is not compared (a
/// client: kilnd files one artifact under several keys that differ only in tuning records that
/// do not apply to it). Errors: kFailedPrecondition naming the first field that differs, with
/// both values.
absl::Status CheckManifestKey(const kiln::v1::Manifest& manifest, const ArtifactKeyFields& key);

/// Reads and parses the file at `path` (kNotFound if it cannot be read).
absl::StatusOr<Artifact> ReadArtifactFile(const std::string& path);
/// Writes atomically: a temp file in the same directory, fsync, rename.
absl::Status WriteArtifactFile(const std::string& path, const Artifact& artifact);

}  // namespace kiln::runtime

#endif  // KILN_COMPILER_CORE_RUNTIME_ARTIFACT_H_
