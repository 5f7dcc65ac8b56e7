// SHA-256 digests (FIPS 180-4) through OpenSSL's EVP interface, as lowercase hex or raw bytes.
#ifndef KILN_COMPILER_CORE_SUPPORT_SHA256_H_
#define KILN_COMPILER_CORE_SUPPORT_SHA256_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace kiln {

/// Incremental SHA-256. Feed bytes with Update, then call HexDigest or Digest once.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(const void* data, size_t size);
  void Update(std::string_view bytes) { Update(bytes.data(), bytes.size()); }
  /// Appends a fixed-width little-endian integer, so that field boundaries are unambiguous.
  void UpdateU64(uint64_t v);
  /// Appends a length-prefixed string.
  void UpdateString(std::string_view s);

  std::array<uint8_t, 32> Digest();
  std::string HexDigest();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// SHA-256 of `bytes` as 64 lowercase hex characters.
std::string Sha256Hex(std::string_view bytes);

}  // namespace kiln

#endif  // KILN_COMPILER_CORE_SUPPORT_SHA256_H_
