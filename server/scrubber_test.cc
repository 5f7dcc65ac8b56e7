// The scrubber re-verifies blobs at rest and evicts corrupted ones with their artifact rows.
#include "server/scrubber.h"

#include <fstream>

#include "gtest/gtest.h"
#include "server/cache/test_util.h"

namespace kiln::server {
namespace {

TEST(ScrubberTest, EvictsCorruptedBlobsAndKeepsIntactOnes) {
  cache::testing::TempDir dir;
  auto storage = cache::testing::OpenStorageIn(dir);
  ASSERT_TRUE(storage.ok()) << storage.status();
  cache::Storage& s = **storage;
  const cache::ArtifactKey key{"g", "cpu:test", "v", "o"};
  absl::StatusOr<std::string> model = s.PutBlob(cache::BlobKind::kModel, "model bytes");
  ASSERT_TRUE(model.ok());
  absl::StatusOr<cache::ArtifactEntry> artifact = s.PutArtifact(key, "artifact bytes", 5);
  ASSERT_TRUE(artifact.ok());
  const std::string& digest = artifact->artifact_digest;
  {
    // One flipped byte at rest, same size.
    std::fstream f(dir.path() + "/blobs/" + digest.substr(0, 2) + "/" + digest,
                   std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.good());
    f.seekp(3);
    f.put('X');
  }
  // A hit trusts the index until the scrubber (or a fetch) finds the damage.
  ASSERT_TRUE(s.LookupArtifact(key)->has_value());
  Scrubber scrubber(ScrubberOptions{&s, nullptr, absl::Hours(1), int64_t{1} << 30});
  ScrubCounts counts = scrubber.RunPass();
  EXPECT_EQ(counts.verified, 1);
  EXPECT_EQ(counts.corrupted, 1);
  EXPECT_EQ(counts.bytes, 11 + 14);
  EXPECT_FALSE(s.LookupArtifact(key)->has_value());
  EXPECT_EQ(*s.HasBlob(digest), false);
  EXPECT_EQ(*s.GetBlob(*model), "model bytes");
  // A second pass finds nothing more.
  counts = scrubber.RunPass();
  EXPECT_EQ(counts.verified, 1);
  EXPECT_EQ(counts.corrupted, 0);
}

TEST(ScrubberTest, StopsPromptlyWhileRateLimited) {
  cache::testing::TempDir dir;
  auto storage = cache::testing::OpenStorageIn(dir);
  ASSERT_TRUE(storage.ok());
  ASSERT_TRUE((*storage)->PutBlob(cache::BlobKind::kModel, std::string(1000, 'a')).ok());
  ASSERT_TRUE((*storage)->PutBlob(cache::BlobKind::kModel, std::string(1000, 'b')).ok());
  // 1 byte per second: the pass would take 2000 s.
  Scrubber scrubber(ScrubberOptions{storage->get(), nullptr, absl::Milliseconds(1), 1});
  scrubber.Start();
  absl::SleepFor(absl::Milliseconds(50));
  absl::Time start = absl::Now();
  scrubber.Stop();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

}  // namespace
}  // namespace kiln::server
