// SHA-256 over OpenSSL EVP.
#include "compiler_core/support/sha256.h"

#include <openssl/evp.h>

#include <cassert>

namespace kiln {

struct Sha256::State {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : state_(std::make_unique<State>()) {
  state_->ctx = EVP_MD_CTX_new();
  int ok = EVP_DigestInit_ex(state_->ctx, EVP_sha256(), nullptr);
  assert(ok == 1);
  (void)ok;
}

Sha256::~Sha256() { EVP_MD_CTX_free(state_->ctx); }

void Sha256::Update(const void* data, size_t size) {
  if (size == 0) return;
  EVP_DigestUpdate(state_->ctx, data, size);
}

void Sha256::UpdateU64(uint64_t v) {
  uint8_t bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<uint8_t>(v >> (8 * i));
  Update(bytes, 8);
}

void Sha256::UpdateString(std::string_view s) {
  UpdateU64(s.size());
  Update(s);
}

std::array<uint8_t, 32> Sha256::Digest() {
  std::array<uint8_t, 32> out{};
  unsigned int len = 0;
  EVP_DigestFinal_ex(state_->ctx, out.data(), &len);
  assert(len == 32);
  return out;
}

std::string Sha256::HexDigest() {
  static constexpr char kHex[] = "0123456789abcdef";
  std::array<uint8_t, 32> d = Digest();
  std::string s(64, '0');
  for (int i = 0; i < 32; ++i) {
    s[2 * i] = kHex[d[i] >> 4];
    s[2 * i + 1] = kHex[d[i] & 15];
  }
  return s;
}

std::string Sha256Hex(std::string_view bytes) {
  Sha256 h;
  h.Update(bytes);
  return h.HexDigest();
}

}  // namespace kiln
