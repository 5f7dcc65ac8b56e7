// Content digests as the wire carries them: a v1::Digest is the SHA-256 of the bytes as 64
// lowercase hex characters plus their size in bytes.
#ifndef KILN_WIRE_DIGEST_H_
#define KILN_WIRE_DIGEST_H_

#include <string_view>

#include "absl/status/status.h"
#include "kiln/v1/service.pb.h"

namespace kiln::wire {

/// True if `hash` is 64 lowercase hex characters (a SHA-256 as the blob store names it).
bool IsValidDigest(std::string_view hash);

/// OK if IsValidDigest(hash); else kInvalidArgument `<what> '<hash>' is not a lowercase hex
/// SHA-256`.
absl::Status CheckDigest(std::string_view hash, std::string_view what = "digest");

/// The Digest message of `bytes`: their SHA-256 (lowercase hex) and size in bytes.
v1::Digest DigestOf(std::string_view bytes);

}  // namespace kiln::wire

#endif  // KILN_WIRE_DIGEST_H_
