// Digest validation (length, case, alphabet) and the Digest of some bytes.
#include "wire/digest.h"

#include <string>

#include "gtest/gtest.h"

namespace kiln::wire {
namespace {

// SHA-256("abc") (FIPS 180-2, appendix B.1).
constexpr char kAbc[] = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

TEST(DigestTest, ValidIs64LowercaseHex) {
  EXPECT_TRUE(IsValidDigest(kAbc));
  EXPECT_TRUE(IsValidDigest(std::string(64, '0')));
  EXPECT_FALSE(IsValidDigest(""));
  EXPECT_FALSE(IsValidDigest(std::string(kAbc).substr(0, 63)));
  EXPECT_FALSE(IsValidDigest(std::string(kAbc) + "0"));
  std::string upper = kAbc;
  upper[0] = 'B';
  EXPECT_FALSE(IsValidDigest(upper));
  std::string not_hex = kAbc;
  not_hex[5] = 'g';
  EXPECT_FALSE(IsValidDigest(not_hex));
  EXPECT_FALSE(IsValidDigest("../" + std::string(61, 'a')));
}

TEST(DigestTest, CheckDigestNamesWhatIsWrong) {
  EXPECT_TRUE(CheckDigest(kAbc).ok());
  EXPECT_EQ(CheckDigest("XYZ"),
            absl::InvalidArgumentError("digest 'XYZ' is not a lowercase hex SHA-256"));
  EXPECT_EQ(CheckDigest("", "model digest"),
            absl::InvalidArgumentError("model digest '' is not a lowercase hex SHA-256"));
}

TEST(DigestTest, DigestOfBytes) {
  v1::Digest d = DigestOf("abc");
  EXPECT_EQ(d.hash(), kAbc);
  EXPECT_EQ(d.size_bytes(), 3);
  v1::Digest empty = DigestOf("");
  EXPECT_EQ(empty.hash(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(empty.size_bytes(), 0);
}

}  // namespace
}  // namespace kiln::wire
