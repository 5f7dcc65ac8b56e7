// Tests for the artifact file format: exact header bytes, round trips, and each verification
// error of ParseArtifact (truncation, magic, version, checksum over every payload byte, manifest).
#include "compiler_core/runtime/artifact.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "compiler_core/support/sha256.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::runtime {
namespace {

using ::testing::HasSubstr;

Artifact SampleArtifact() {
  Artifact a;
  a.manifest.set_abi_version(1);
  a.manifest.set_model_name("tiny");
  a.manifest.set_graph_hash("abc123");
  kiln::v1::TensorSpec* in = a.manifest.add_inputs();
  in->set_name("x");
  in->set_dtype("f32");
  in->add_shape(2);
  in->add_shape(3);
  kiln::v1::KernelCall* call = a.manifest.add_kernels();
  call->set_symbol("kiln_k0");
  kiln::v1::Binding* b = call->add_args();
  b->set_kind(kiln::v1::Binding::WEIGHT);
  b->set_offset(0);
  b->set_size_bytes(8);
  a.manifest.set_arena_bytes(128);
  a.code = std::string(
      "\x7f"
      "ELF fake code",
      13);
  a.weights = std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8);
  return a;
}

uint64_t ReadLe(const std::string& s, size_t offset, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{static_cast<uint8_t>(s[offset + i])} << (8 * i);
  return v;
}

void WriteLe(std::string& s, size_t offset, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s[offset + i] = static_cast<char>(v >> (8 * i));
}

TEST(ArtifactTest, SerializesExactLayout) {
  Artifact a = SampleArtifact();
  const std::string manifest = a.manifest.SerializeAsString();
  const std::string bytes = SerializeArtifact(a);

  ASSERT_EQ(bytes.size(), 72 + manifest.size() + 13 + 8);
  EXPECT_EQ(bytes.substr(0, 8), std::string("KILNART\0", 8));
  EXPECT_EQ(ReadLe(bytes, 8, 4), 1u);
  EXPECT_EQ(ReadLe(bytes, 12, 4), 0u);
  EXPECT_EQ(ReadLe(bytes, 16, 8), manifest.size());
  EXPECT_EQ(ReadLe(bytes, 24, 8), 13u);
  EXPECT_EQ(ReadLe(bytes, 32, 8), 8u);
  Sha256 sha;
  sha.Update(std::string_view(bytes).substr(72));
  std::array<uint8_t, 32> digest = sha.Digest();
  EXPECT_EQ(bytes.substr(40, 32), std::string(reinterpret_cast<const char*>(digest.data()), 32));
  EXPECT_EQ(bytes.substr(72, manifest.size()), manifest);
  EXPECT_EQ(bytes.substr(72 + manifest.size(), 13), a.code);
  EXPECT_EQ(bytes.substr(72 + manifest.size() + 13), a.weights);
}

TEST(ArtifactTest, EmptyArtifactHasKnownChecksum) {
  // Empty manifest, code and weights: the checksum is SHA-256 of the empty string.
  const std::string bytes = SerializeArtifact(Artifact{});
  ASSERT_EQ(bytes.size(), 72u);
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  std::string expected_digest;
  const char* hex = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
  for (int i = 0; i < 32; ++i) {
    expected_digest.push_back(
        static_cast<char>(std::stoi(std::string(hex + 2 * i, 2), nullptr, 16)));
  }
  EXPECT_EQ(bytes.substr(40), expected_digest);
  absl::StatusOr<Artifact> parsed = ParseArtifact(bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->code.empty());
  EXPECT_TRUE(parsed->weights.empty());
}

TEST(ArtifactTest, RoundTripIsByteExact) {
  Artifact a = SampleArtifact();
  const std::string bytes = SerializeArtifact(a);
  absl::StatusOr<Artifact> parsed = ParseArtifact(bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->code, a.code);
  EXPECT_EQ(parsed->weights, a.weights);
  EXPECT_EQ(parsed->manifest.SerializeAsString(), a.manifest.SerializeAsString());
  EXPECT_EQ(parsed->manifest.inputs(0).shape(1), 3);
  EXPECT_EQ(parsed->manifest.kernels(0).symbol(), "kiln_k0");
  EXPECT_EQ(SerializeArtifact(*parsed), bytes);
}

TEST(ArtifactTest, EveryFlippedPayloadByteIsAChecksumError) {
  const std::string bytes = SerializeArtifact(SampleArtifact());
  for (size_t i = 72; i < bytes.size(); ++i) {
    for (uint8_t mask : {0x01, 0x80}) {
      std::string corrupt = bytes;
      corrupt[i] = static_cast<char>(corrupt[i] ^ mask);
      absl::StatusOr<Artifact> parsed = ParseArtifact(corrupt);
      ASSERT_FALSE(parsed.ok()) << "byte " << i;
      EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_EQ(parsed.status().message(), "artifact checksum mismatch: file is corrupted")
          << "byte " << i;
    }
  }
}

TEST(ArtifactTest, FlippedChecksumByteIsAChecksumError) {
  const std::string bytes = SerializeArtifact(SampleArtifact());
  for (size_t i = 40; i < 72; ++i) {
    std::string corrupt = bytes;
    corrupt[i] = static_cast<char>(corrupt[i] ^ 0x10);
    EXPECT_EQ(ParseArtifact(corrupt).status().message(),
              "artifact checksum mismatch: file is corrupted");
  }
}

TEST(ArtifactTest, Truncated) {
  const std::string bytes = SerializeArtifact(SampleArtifact());
  const size_t n = bytes.size();
  absl::StatusOr<Artifact> parsed = ParseArtifact(std::string_view(bytes).substr(0, n - 1));
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(), "artifact is truncated: header says " + std::to_string(n) +
                                           " bytes, file has " + std::to_string(n - 1));
  parsed = ParseArtifact(std::string_view(bytes).substr(0, 72));
  EXPECT_EQ(parsed.status().message(),
            "artifact is truncated: header says " + std::to_string(n) + " bytes, file has 72");
}

TEST(ArtifactTest, TooShortForHeader) {
  const std::string bytes = SerializeArtifact(SampleArtifact());
  for (size_t len : {size_t{0}, size_t{8}, size_t{71}}) {
    absl::StatusOr<Artifact> parsed = ParseArtifact(std::string_view(bytes).substr(0, len));
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(parsed.status().message(),
              "artifact is too short: " + std::to_string(len) + " bytes, the header alone is 72");
  }
}

TEST(ArtifactTest, TrailingBytes) {
  const std::string bytes = SerializeArtifact(SampleArtifact()) + "xy";
  EXPECT_EQ(ParseArtifact(bytes).status().message(),
            "artifact has 2 trailing bytes: header says " + std::to_string(bytes.size() - 2) +
                " bytes, file has " + std::to_string(bytes.size()));
}

TEST(ArtifactTest, WrongMagic) {
  std::string bytes = SerializeArtifact(SampleArtifact());
  bytes[3] = 'X';
  EXPECT_EQ(ParseArtifact(bytes).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseArtifact(bytes).status().message(),
            "artifact has bad magic: not a kiln artifact file");
  std::string elf = SerializeArtifact(SampleArtifact());
  elf.replace(0, 4,
              "\x7f"
              "ELF");
  EXPECT_EQ(ParseArtifact(elf).status().message(),
            "artifact has bad magic: not a kiln artifact file");
}

TEST(ArtifactTest, FutureVersion) {
  std::string bytes = SerializeArtifact(SampleArtifact());
  WriteLe(bytes, 8, 2, 4);
  absl::Status status = ParseArtifact(bytes).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "unsupported artifact format version 2: this runtime reads version 1");
  WriteLe(bytes, 8, 0, 4);
  EXPECT_EQ(ParseArtifact(bytes).status().message(),
            "unsupported artifact format version 0: this runtime reads version 1");
}

TEST(ArtifactTest, NonZeroReserved) {
  std::string bytes = SerializeArtifact(SampleArtifact());
  WriteLe(bytes, 12, 7, 4);
  EXPECT_EQ(ParseArtifact(bytes).status().message(),
            "artifact header reserved field is 7, expected 0");
}

TEST(ArtifactTest, SizesThatOverflow) {
  std::string bytes = SerializeArtifact(SampleArtifact());
  WriteLe(bytes, 24, ~uint64_t{0} - 10, 8);
  absl::Status status = ParseArtifact(bytes).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("artifact section sizes overflow"));
}

TEST(ArtifactTest, BadManifest) {
  // A valid header and checksum around bytes that are not a Manifest (field 1 with wire type 7).
  Artifact a;
  std::string bytes = SerializeArtifact(a);
  const std::string garbage = "\x0f\xff\xff";
  bytes += garbage;
  WriteLe(bytes, 16, garbage.size(), 8);
  Sha256 sha;
  sha.Update(std::string_view(bytes).substr(72));
  std::array<uint8_t, 32> digest = sha.Digest();
  std::memcpy(bytes.data() + 40, digest.data(), 32);
  absl::Status status = ParseArtifact(bytes).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "artifact manifest (3 bytes) does not parse as kiln.v1.Manifest");
}

class ArtifactFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("kiln_artifact_test_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(ArtifactFileTest, WriteThenReadRoundTrips) {
  const std::string path = (dir_ / "model.kiln").string();
  Artifact a = SampleArtifact();
  ASSERT_TRUE(WriteArtifactFile(path, a).ok());
  absl::StatusOr<Artifact> read = ReadArtifactFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(SerializeArtifact(*read), SerializeArtifact(a));
  // The file holds exactly the serialized bytes, and no temp file is left behind.
  EXPECT_EQ(std::filesystem::file_size(path), SerializeArtifact(a).size());
  int entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    (void)entry;
    ++entries;
  }
  EXPECT_EQ(entries, 1);

  // Overwrite in place: the new content replaces the old atomically.
  a.weights = "new weights";
  ASSERT_TRUE(WriteArtifactFile(path, a).ok());
  read = ReadArtifactFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->weights, "new weights");
}

TEST_F(ArtifactFileTest, MissingFileIsNotFound) {
  absl::StatusOr<Artifact> read = ReadArtifactFile((dir_ / "absent.kiln").string());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(read.status().message(), HasSubstr("cannot read artifact file"));
  EXPECT_THAT(read.status().message(), HasSubstr("absent.kiln"));
}

TEST_F(ArtifactFileTest, CorruptFileReportsChecksum) {
  const std::string path = (dir_ / "bad.kiln").string();
  ASSERT_TRUE(WriteArtifactFile(path, SampleArtifact()).ok());
  {
    FILE* f = std::fopen(path.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    std::fseek(f, 80, SEEK_SET);
    int c = std::fgetc(f);
    std::fseek(f, 80, SEEK_SET);
    std::fputc(c ^ 1, f);
    std::fclose(f);
  }
  absl::StatusOr<Artifact> read = ReadArtifactFile(path);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(read.status().message(),
            "artifact checksum mismatch: file is corrupted (" + path + ")");
}

TEST_F(ArtifactFileTest, WriteIntoMissingDirectoryFails) {
  absl::Status status =
      WriteArtifactFile((dir_ / "no_such_dir" / "m.kiln").string(), SampleArtifact());
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("cannot create temp file"));
}

TEST_F(ArtifactFileTest, ADeviceIsWrittenInPlaceNotReplaced) {
  // Renaming a temp file over /dev/null would make it a regular file for everyone (as root).
  ASSERT_TRUE(WriteArtifactFile("/dev/null", SampleArtifact()).ok());
  struct stat st;
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  for (const auto& entry : std::filesystem::directory_iterator("/dev")) {
    EXPECT_EQ(entry.path().string().find("/dev/null.tmp"), std::string::npos) << entry.path();
  }
}

TEST_F(ArtifactFileTest, ADirectoryIsNotReplaced) {
  absl::Status status = WriteArtifactFile(dir_.string(), SampleArtifact());
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(status.message(), HasSubstr("Is a directory"));
  EXPECT_TRUE(std::filesystem::is_directory(dir_));
}

}  // namespace
}  // namespace kiln::runtime
