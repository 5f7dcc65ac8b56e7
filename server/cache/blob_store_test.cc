// Tests for the content-addressed blob directory: layout, atomic and verified writes, corruption
// detection, streaming writes and cleanup of temp files.
#include "server/cache/blob_store.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "server/cache/test_util.h"

namespace kiln::cache {
namespace {

using ::kiln::cache::testing::FlipByte;
using ::kiln::cache::testing::ListFiles;
using ::kiln::cache::testing::ReadFile;
using ::kiln::cache::testing::TempDir;
using ::kiln::cache::testing::WriteFile;

constexpr char kHello[] = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";

TEST(BlobStoreTest, PutStoresUnderShardedDigestPath) {
  TempDir dir;
  absl::StatusOr<BlobStore> store = BlobStore::Open(dir.path() + "/blobs");
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<std::string> digest = store->Put("hello");
  ASSERT_TRUE(digest.ok()) << digest.status();
  EXPECT_EQ(*digest, kHello);
  EXPECT_EQ(store->PathFor(kHello), dir.path() + "/blobs/2c/" + kHello);
  EXPECT_EQ(ListFiles(dir.path()), std::vector<std::string>{std::string("blobs/2c/") + kHello});
  EXPECT_EQ(ReadFile(store->PathFor(kHello)), "hello");
  EXPECT_EQ(*store->Contains(kHello), true);
  EXPECT_EQ(*store->SizeOnDisk(kHello), 5);
  EXPECT_EQ(*store->Get(kHello), "hello");
  // Idempotent.
  EXPECT_EQ(*store->Put("hello"), kHello);
  EXPECT_EQ(ListFiles(dir.path()).size(), 1u);
}

TEST(BlobStoreTest, DigestMismatchWritesNothing) {
  TempDir dir;
  absl::StatusOr<BlobStore> store = BlobStore::Open(dir.path());
  ASSERT_TRUE(store.ok());
  std::string wrong(64, 'a');
  EXPECT_EQ(store->Put("hello", wrong).status(),
            absl::InvalidArgumentError("digest mismatch: expected " + wrong + ", got " + kHello));
  EXPECT_EQ(ListFiles(dir.path()), std::vector<std::string>{});
  EXPECT_EQ(*store->Put("hello", kHello), kHello);
}

TEST(BlobStoreTest, MalformedDigestIsRejected) {
  TempDir dir;
  absl::StatusOr<BlobStore> store = BlobStore::Open(dir.path());
  ASSERT_TRUE(store.ok());
  absl::Status expected = absl::InvalidArgumentError(
      "invalid digest '../etc': expected 64 lowercase hex characters");
  EXPECT_EQ(store->Get("../etc").status(), expected);
  EXPECT_EQ(store->Contains("../etc").status(), expected);
  EXPECT_EQ(store->Put("x", "../etc").status(), expected);
  std::string upper(kHello);
  upper[0] = 'A';
  EXPECT_EQ(store->Contains(upper).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(BlobStoreTest, GetDetectsCorruptionAndRemovesFile) {
  TempDir dir;
  absl::StatusOr<BlobStore> store = BlobStore::Open(dir.path());
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE(store->Put("hello").ok());
  FlipByte(store->PathFor(kHello), 0);
  std::string corrupted_digest = Sha256Hex(ReadFile(store->PathFor(kHello)));
  EXPECT_EQ(store->Get(kHello).status(),
            absl::DataLossError(std::string("blob ") + kHello +
                                " is corrupted (content hashes to " + corrupted_digest +
                                "); removed"));
  EXPECT_FALSE(std::filesystem::exists(store->PathFor(kHello)));
  EXPECT_EQ(store->Get(kHello).status(),
            absl::NotFoundError(std::string("blob ") + kHello + " not found"));
}

TEST(BlobStoreTest, StreamingWriterCommitsVerifiedBytes) {
  TempDir dir;
  absl::StatusOr<BlobStore> store = BlobStore::Open(dir.path());
  ASSERT_TRUE(store.ok());
  absl::StatusOr<BlobWriter> writer = store->BeginWrite();
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE(writer->Append("he").ok());
  ASSERT_TRUE(writer->Append("").ok());
  ASSERT_TRUE(writer->Append("llo").ok());
  EXPECT_EQ(writer->size_bytes(), 5);
  EXPECT_EQ(ListFiles(dir.path()).size(), 1u);  // the temp file
  EXPECT_EQ(*writer->Commit(kHello), kHello);
  EXPECT_EQ(writer->Commit(kHello).status(),
            absl::FailedPreconditionError("blob write already finished"));
  EXPECT_EQ(ListFiles(dir.path()), std::vector<std::string>{std::string("2c/") + kHello});
  EXPECT_EQ(*store->Get(kHello), "hello");
}

TEST(BlobStoreTest, StreamingWriterMismatchAndAbandonLeaveNothing) {
  TempDir dir;
  absl::StatusOr<BlobStore> store = BlobStore::Open(dir.path());
  ASSERT_TRUE(store.ok());
  {
    absl::StatusOr<BlobWriter> writer = store->BeginWrite();
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE(writer->Append("hellO").ok());
    EXPECT_EQ(writer->Commit(kHello).status(),
              absl::InvalidArgumentError(std::string("digest mismatch: expected ") + kHello +
                                         ", got " + Sha256Hex("hellO")));
    EXPECT_EQ(writer->Append("x"), absl::FailedPreconditionError("blob write already finished"));
  }
  {
    absl::StatusOr<BlobWriter> writer = store->BeginWrite();
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE(writer->Append("hello").ok());
    EXPECT_EQ(ListFiles(dir.path()).size(), 1u);
  }  // abandoned
  EXPECT_EQ(ListFiles(dir.path()), std::vector<std::string>{});
}

TEST(BlobStoreTest, SealThenPublish) {
  TempDir dir;
  absl::StatusOr<BlobStore> store = BlobStore::Open(dir.path());
  ASSERT_TRUE(store.ok());
  absl::StatusOr<BlobWriter> writer = store->BeginWrite();
  ASSERT_TRUE(writer.ok());
  EXPECT_EQ(writer->Publish(),
            absl::FailedPreconditionError("blob write is not sealed or already published"));
  ASSERT_TRUE(writer->Append("hello").ok());
  EXPECT_EQ(*writer->Seal(""), kHello);
  EXPECT_EQ(*store->Contains(kHello), false);  // sealed is not visible
  EXPECT_EQ(writer->Append("x"), absl::FailedPreconditionError("blob write already finished"));
  ASSERT_TRUE(writer->Publish().ok());
  EXPECT_EQ(writer->Publish(),
            absl::FailedPreconditionError("blob write is not sealed or already published"));
  EXPECT_EQ(ListFiles(dir.path()), std::vector<std::string>{std::string("2c/") + kHello});
}

TEST(BlobStoreTest, RemoveAndListAndCleanTemp) {
  TempDir dir;
  absl::StatusOr<BlobStore> store = BlobStore::Open(dir.path());
  ASSERT_TRUE(store.ok());
  std::string a = *store->Put("a");
  std::string b = *store->Put("b");
  WriteFile(dir.path() + "/tmp/.tmp-123456", "partial");
  std::filesystem::create_directories(dir.path() + "/2c");
  WriteFile(dir.path() + "/2c/.tmp-abcdef", "partial");
  WriteFile(dir.path() + "/2c/not-a-digest", "x");
  absl::StatusOr<std::vector<std::string>> listed = store->ListAndCleanTemp();
  ASSERT_TRUE(listed.ok()) << listed.status();
  std::vector<std::string> expected = {a, b};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(*listed, expected);
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/tmp/.tmp-123456"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/2c/.tmp-abcdef"));

  ASSERT_TRUE(store->Remove(a).ok());
  ASSERT_TRUE(store->Remove(a).ok());  // absent is fine
  EXPECT_EQ(*store->Contains(a), false);
  EXPECT_EQ(store->SizeOnDisk(a).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(*store->Contains(b), true);
}

}  // namespace
}  // namespace kiln::cache
