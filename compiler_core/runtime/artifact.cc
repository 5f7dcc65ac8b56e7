// Artifact file format: serialization, verified parsing (magic, version, sizes, SHA-256,
// manifest) and atomic file writes (temp file in the same directory, fsync, rename).
#include "compiler_core/runtime/artifact.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "compiler_core/support/file_bytes.h"
#include "compiler_core/support/sha256.h"

namespace kiln::runtime {
namespace {

constexpr size_t kHeaderSize = 72;
constexpr size_t kChecksumOffset = 40;

void PutLe(std::string& out, size_t offset, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out[offset + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

uint64_t GetLe(std::string_view in, size_t offset, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) {
    v |= static_cast<uint64_t>(static_cast<uint8_t>(in[offset + i])) << (8 * i);
  }
  return v;
}

std::array<uint8_t, 32> PayloadDigest(std::string_view payload) {
  Sha256 sha;
  sha.Update(payload);
  return sha.Digest();
}

}  // namespace

std::string SerializeArtifact(const Artifact& artifact) {
  std::string manifest;
  artifact.manifest.SerializeToString(&manifest);
  const uint64_t m = manifest.size();
  const uint64_t c = artifact.code.size();
  const uint64_t w = artifact.weights.size();

  std::string out(kHeaderSize, '\0');
  out.reserve(kHeaderSize + m + c + w);
  std::memcpy(out.data(), kArtifactMagic, sizeof(kArtifactMagic));
  PutLe(out, 8, kArtifactFormatVersion, 4);
  PutLe(out, 12, 0, 4);
  PutLe(out, 16, m, 8);
  PutLe(out, 24, c, 8);
  PutLe(out, 32, w, 8);
  out += manifest;
  out += artifact.code;
  out += artifact.weights;
  std::array<uint8_t, 32> digest = PayloadDigest(std::string_view(out).substr(kHeaderSize));
  std::memcpy(out.data() + kChecksumOffset, digest.data(), digest.size());
  return out;
}

absl::StatusOr<Artifact> ParseArtifact(std::string_view bytes) {
  if (bytes.size() < kHeaderSize) {
    return absl::InvalidArgumentError(absl::StrCat("artifact is too short: ", bytes.size(),
                                                   " bytes, the header alone is ", kHeaderSize));
  }
  if (std::memcmp(bytes.data(), kArtifactMagic, sizeof(kArtifactMagic)) != 0) {
    return absl::InvalidArgumentError("artifact has bad magic: not a kiln artifact file");
  }
  const uint32_t version = static_cast<uint32_t>(GetLe(bytes, 8, 4));
  if (version != kArtifactFormatVersion) {
    return absl::InvalidArgumentError(absl::StrCat("unsupported artifact format version ", version,
                                                   ": this runtime reads version ",
                                                   kArtifactFormatVersion));
  }
  const uint32_t reserved = static_cast<uint32_t>(GetLe(bytes, 12, 4));
  if (reserved != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("artifact header reserved field is ", reserved, ", expected 0"));
  }
  const uint64_t m = GetLe(bytes, 16, 8);
  const uint64_t c = GetLe(bytes, 24, 8);
  const uint64_t w = GetLe(bytes, 32, 8);
  // Sum with overflow checks: a corrupted size must not wrap around to a small total.
  uint64_t total = kHeaderSize;
  for (uint64_t part : {m, c, w}) {
    if (part > UINT64_MAX - total) {
      return absl::InvalidArgumentError(absl::StrCat("artifact section sizes overflow: manifest ",
                                                     m, ", code ", c, ", weights ", w, " bytes"));
    }
    total += part;
  }
  if (total > bytes.size()) {
    return absl::InvalidArgumentError(absl::StrCat("artifact is truncated: header says ", total,
                                                   " bytes, file has ", bytes.size()));
  }
  if (total < bytes.size()) {
    return absl::InvalidArgumentError(absl::StrCat("artifact has ", bytes.size() - total,
                                                   " trailing bytes: header says ", total,
                                                   " bytes, file has ", bytes.size()));
  }
  std::string_view payload = bytes.substr(kHeaderSize);
  std::array<uint8_t, 32> digest = PayloadDigest(payload);
  if (std::memcmp(digest.data(), bytes.data() + kChecksumOffset, digest.size()) != 0) {
    return absl::InvalidArgumentError("artifact checksum mismatch: file is corrupted");
  }
  Artifact artifact;
  if (!artifact.manifest.ParseFromArray(payload.data(), static_cast<int>(m))) {
    return absl::InvalidArgumentError(
        absl::StrCat("artifact manifest (", m, " bytes) does not parse as kiln.v1.Manifest"));
  }
  artifact.code.assign(payload.substr(m, c));
  artifact.weights.assign(payload.substr(m + c, w));
  return artifact;
}

absl::StatusOr<Artifact> ReadArtifactFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(
        absl::StrCat("cannot read artifact file '", path, "': ", std::strerror(errno)));
  }
  std::string bytes;
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return absl::NotFoundError(
          absl::StrCat("cannot read artifact file '", path, "': ", std::strerror(err)));
    }
    if (n == 0) break;
    bytes.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  absl::StatusOr<Artifact> artifact = ParseArtifact(bytes);
  if (!artifact.ok()) {
    return absl::Status(artifact.status().code(),
                        absl::StrCat(artifact.status().message(), " (", path, ")"));
  }
  return artifact;
}

absl::Status WriteArtifactFile(const std::string& path, const Artifact& artifact) {
  return WriteFileAtomically(path, SerializeArtifact(artifact));
}

absl::Status CheckManifestKey(const kiln::v1::Manifest& manifest, const ArtifactKeyFields& key) {
  const std::pair<const char*, std::pair<const std::string*, const std::string*>> fields[] = {
      {"graph_hash", {&manifest.graph_hash(), &key.graph_hash}},
      {"target_key", {&manifest.target_key(), &key.target_key}},
      {"compiler_version", {&manifest.compiler_version(), &key.compiler_version}},
      {"options_hash", {&manifest.options_hash(), &key.options_hash}},
  };
  for (const auto& [name, values] : fields) {
    if (values.second == &key.options_hash && key.options_hash.empty()) continue;
    if (*values.first != *values.second) {
      return absl::FailedPreconditionError(absl::StrCat("the artifact's manifest has ", name, " '",
                                                        *values.first, "' but its key has '",
                                                        *values.second, "'"));
    }
  }
  return absl::OkStatus();
}

}  // namespace kiln::runtime
