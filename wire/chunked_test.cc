// Verified chunked receive (right digest, wrong digest, too many bytes, chunks after the end),
// the stream reader around it, and chunked send.
#include "wire/chunked.h"

#include <deque>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "wire/digest.h"

namespace kiln::wire {
namespace {

TEST(VerifiedReceiverTest, RightDigestHandsOverTheBytes) {
  VerifiedReceiver r(DigestOf("hello world"), "FetchArtifact", "server");
  ASSERT_TRUE(r.Append("hello").ok());
  ASSERT_TRUE(r.Append("").ok());
  ASSERT_TRUE(r.Append(" world").ok());
  absl::StatusOr<std::string> bytes = r.Finish();
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, "hello world");
}

TEST(VerifiedReceiverTest, EmptyBlob) {
  VerifiedReceiver r(DigestOf(""), "FetchArtifact", "server");
  absl::StatusOr<std::string> bytes = r.Finish();
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, "");
}

TEST(VerifiedReceiverTest, WrongDigestIsDataLossNamingBoth) {
  v1::Digest want = DigestOf("hello world");
  v1::Digest got = DigestOf("hellO world");
  VerifiedReceiver r(want, "model x", "kilnd");
  ASSERT_TRUE(r.Append("hellO world").ok());
  EXPECT_EQ(r.Finish().status(),
            absl::DataLossError("model x: got 11 bytes hashing to " + got.hash() +
                                ", expected 11 bytes " + want.hash()));
}

TEST(VerifiedReceiverTest, TooFewBytesIsDataLoss) {
  v1::Digest want = DigestOf("hello world");
  VerifiedReceiver r(want, "FetchArtifact", "server");
  ASSERT_TRUE(r.Append("hello").ok());
  EXPECT_EQ(r.Finish().status(),
            absl::DataLossError("FetchArtifact: got 5 bytes hashing to " +
                                DigestOf("hello").hash() + ", expected 11 bytes " + want.hash()));
}

TEST(VerifiedReceiverTest, PastTheSizeIsRefused) {
  VerifiedReceiver r(DigestOf("hello"), "FetchArtifact", "server");
  ASSERT_TRUE(r.Append("hel").ok());
  absl::Status too_many = absl::DataLossError("FetchArtifact: server sent more than 5 bytes");
  EXPECT_EQ(r.Append("lo!"), too_many);
  EXPECT_EQ(r.Append("lo"), too_many);  // refused for good
  EXPECT_EQ(r.Finish().status(), too_many);
}

TEST(VerifiedReceiverTest, NegativeSizeTakesNothing) {
  v1::Digest d = DigestOf("");
  d.set_size_bytes(-1);
  VerifiedReceiver r(d, "FetchArtifact", "server");
  EXPECT_TRUE(absl::IsDataLoss(r.Append("")));
}

TEST(VerifiedReceiverTest, ChunksAfterTheEndAreRefused) {
  VerifiedReceiver r(DigestOf("ab"), "FetchArtifact", "server");
  ASSERT_TRUE(r.Append("ab").ok());
  ASSERT_TRUE(r.Finish().ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(r.Append("c")));
  EXPECT_TRUE(absl::IsFailedPrecondition(r.Finish().status()));
}

// A FetchArtifact stream that yields `chunks`, then `status`.
class FakeReader final : public grpc::ClientReaderInterface<v1::FetchArtifactResponse> {
 public:
  FakeReader(std::vector<std::string> chunks, grpc::Status status)
      : chunks_(chunks.begin(), chunks.end()), status_(std::move(status)) {}
  bool Read(v1::FetchArtifactResponse* msg) override {
    if (chunks_.empty()) return false;
    msg->set_data(chunks_.front());
    chunks_.pop_front();
    ++reads_;
    return true;
  }
  bool NextMessageSize(uint32_t* sz) override {
    *sz = chunks_.empty() ? 0 : static_cast<uint32_t>(chunks_.front().size());
    return !chunks_.empty();
  }
  grpc::Status Finish() override { return status_; }
  void WaitForInitialMetadata() override {}
  int reads_ = 0;

 private:
  std::deque<std::string> chunks_;
  grpc::Status status_;
};

TEST(ReceiveVerifiedTest, VerifiedBytes) {
  grpc::ClientContext context;
  FakeReader reader({"ab", "cd"}, grpc::Status::OK);
  absl::StatusOr<std::string> bytes =
      ReceiveVerified(context, reader, DigestOf("abcd"), "FetchArtifact", "server", "");
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, "abcd");
}

TEST(ReceiveVerifiedTest, StopsReadingPastTheSize) {
  grpc::ClientContext context;
  FakeReader reader({"ab", "cd", "ef"}, grpc::Status(grpc::StatusCode::CANCELLED, "cancelled"));
  absl::StatusOr<std::string> bytes =
      ReceiveVerified(context, reader, DigestOf("abc"), "model m", "kilnd", "");
  EXPECT_EQ(bytes.status(), absl::DataLossError("model m: kilnd sent more than 3 bytes"));
  EXPECT_EQ(reader.reads_, 2);
}

TEST(ReceiveVerifiedTest, StreamErrorNamesTheRpc) {
  grpc::ClientContext context;
  FakeReader reader({}, grpc::Status(grpc::StatusCode::NOT_FOUND, "no blob"));
  EXPECT_EQ(
      ReceiveVerified(context, reader, DigestOf("x"), "FetchArtifact", "server", "FetchArtifact")
          .status(),
      absl::NotFoundError("FetchArtifact: no blob"));
}

TEST(ReceiveVerifiedTest, WrongBytesAreDataLoss) {
  grpc::ClientContext context;
  FakeReader reader({"abce"}, grpc::Status::OK);
  EXPECT_TRUE(absl::IsDataLoss(
      ReceiveVerified(context, reader, DigestOf("abcd"), "FetchArtifact", "server", "").status()));
}

// Records what WriteChunks writes; fails the Write numbered `fail_at` (0: never).
struct FakeWriter {
  bool Write(const v1::UploadArtifactRequest& r) {
    written.push_back(r);
    return static_cast<int>(written.size()) != fail_at;
  }
  void WritesDone() { done = true; }
  std::vector<v1::UploadArtifactRequest> written;
  int fail_at = 0;
  bool done = false;
};

TEST(WriteChunksTest, SplitsWithTheDigestFirst) {
  FakeWriter w;
  v1::Digest d = DigestOf("abcdefg");
  EXPECT_TRUE(WriteChunks<v1::UploadArtifactRequest>(w, d, "abcdefg", 3));
  ASSERT_EQ(w.written.size(), 3u);
  EXPECT_EQ(w.written[0].digest().hash(), d.hash());
  EXPECT_FALSE(w.written[1].has_digest());
  EXPECT_EQ(w.written[0].data() + w.written[1].data() + w.written[2].data(), "abcdefg");
  EXPECT_EQ(w.written[2].data(), "g");
  EXPECT_TRUE(w.done);
}

TEST(WriteChunksTest, EmptyBlobSendsTheDigestOnce) {
  FakeWriter w;
  EXPECT_TRUE(WriteChunks<v1::UploadArtifactRequest>(w, DigestOf(""), ""));
  ASSERT_EQ(w.written.size(), 1u);
  EXPECT_TRUE(w.written[0].has_digest());
  EXPECT_TRUE(w.done);
}

TEST(WriteChunksTest, StopsAtAFailedWrite) {
  FakeWriter w;
  w.fail_at = 2;
  EXPECT_FALSE(WriteChunks<v1::UploadArtifactRequest>(w, DigestOf("abcdefg"), "abcdefg", 2));
  EXPECT_EQ(w.written.size(), 2u);
  EXPECT_TRUE(w.done);
}

}  // namespace
}  // namespace kiln::wire
