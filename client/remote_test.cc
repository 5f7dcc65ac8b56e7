// The remote client against an in-process fake KilnService on loopback: uploads only what is
// missing, in chunks of at most 1 MiB with the digest first; a fetched artifact that does not
// match its digest is kDataLoss; server errors keep their codes; the --json
// objects.
#include "client/remote.h"

#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

#include "compiler_core/runtime/artifact.h"
#include "compiler_core/support/sha256.h"
#include "gtest/gtest.h"

namespace kiln::client {
namespace {

/// Stores uploads; "compiles" by echoing the model reversed as the artifact.
class FakeKiln final : public kiln::v1::KilnService::Service {
 public:
  std::mutex mu;
  std::map<std::string, std::string> blobs;
  int uploads = 0;
  size_t largest_chunk = 0;
  bool digest_first = true;
  bool corrupt_fetch = false;
  bool wrong_manifest = false;  // the artifact names another graph hash than its key

 private:
  grpc::Status FindMissingBlobs(grpc::ServerContext*, const kiln::v1::FindMissingBlobsRequest* req,
                                kiln::v1::FindMissingBlobsResponse* resp) override {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& d : req->digests()) {
      if (!blobs.count(d.hash())) *resp->add_missing() = d;
    }
    return grpc::Status::OK;
  }
  grpc::Status UploadModel(grpc::ServerContext*,
                           grpc::ServerReader<kiln::v1::UploadModelRequest>* reader,
                           kiln::v1::UploadModelResponse* resp) override {
    kiln::v1::UploadModelRequest m;
    std::string bytes, hash;
    bool first = true;
    while (reader->Read(&m)) {
      std::lock_guard<std::mutex> lock(mu);
      if (first && !m.has_digest()) digest_first = false;
      if (first) hash = m.digest().hash();
      first = false;
      largest_chunk = std::max(largest_chunk, m.data().size());
      bytes += m.data();
    }
    if (Sha256Hex(bytes) != hash) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "digest mismatch");
    }
    std::lock_guard<std::mutex> lock(mu);
    ++uploads;
    blobs[hash] = bytes;
    *resp->mutable_digest() = DigestOf(bytes);
    return grpc::Status::OK;
  }
  grpc::Status Compile(grpc::ServerContext*, const kiln::v1::CompileRequest* req,
                       kiln::v1::CompileResponse* resp) override {
    std::lock_guard<std::mutex> lock(mu);
    auto it = blobs.find(req->model_digest().hash());
    if (it == blobs.end()) return grpc::Status(grpc::StatusCode::NOT_FOUND, "model not uploaded");
    if (req->target() != "host") {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "unknown target");
    }
    runtime::Artifact made;
    made.code.assign(it->second.rbegin(), it->second.rend());
    resp->mutable_key()->set_graph_hash("g\"h");
    resp->mutable_key()->set_target_key("cpu:test");
    resp->mutable_key()->set_compiler_version("v1");
    resp->mutable_key()->set_options_hash("o");
    made.manifest.set_graph_hash(wrong_manifest ? "another graph" : resp->key().graph_hash());
    made.manifest.set_target_key(resp->key().target_key());
    made.manifest.set_compiler_version(resp->key().compiler_version());
    made.manifest.set_options_hash("o");
    std::string artifact = runtime::SerializeArtifact(made);
    *resp->mutable_artifact_digest() = DigestOf(artifact);
    blobs[resp->artifact_digest().hash()] = artifact;
    resp->set_cache_hit(false);
    resp->set_compile_ms(12.5);
    return grpc::Status::OK;
  }
  grpc::Status FetchArtifact(grpc::ServerContext*, const kiln::v1::FetchArtifactRequest* req,
                             grpc::ServerWriter<kiln::v1::FetchArtifactResponse>* w) override {
    std::string bytes;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = blobs.find(req->digest().hash());
      if (it == blobs.end()) return grpc::Status(grpc::StatusCode::NOT_FOUND, "no artifact");
      bytes = it->second;
    }
    if (corrupt_fetch) bytes[0] ^= 1;
    for (size_t off = 0; off < bytes.size(); off += 1 << 20) {
      kiln::v1::FetchArtifactResponse chunk;
      chunk.set_data(bytes.substr(off, 1 << 20));
      w->Write(chunk);
    }
    return grpc::Status::OK;
  }
};

class RemoteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&fake_);
    server_ = builder.BuildAndStart();
    ASSERT_GT(port_, 0);
    client_ = std::make_unique<RemoteClient>("127.0.0.1:" + std::to_string(port_), 30'000);
  }
  void TearDown() override { server_->Shutdown(); }

  FakeKiln fake_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<RemoteClient> client_;
};

std::string BigModel() {
  std::string model(2 * (1 << 20) + 12345, '\0');
  for (size_t i = 0; i < model.size(); ++i) model[i] = static_cast<char>(i * 7 + 3);
  return model;
}

TEST_F(RemoteTest, UploadsOnlyWhatIsMissingInSmallChunks) {
  std::string model = BigModel();
  auto first = client_->CompileModel(model, {});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->uploaded);
  absl::StatusOr<runtime::Artifact> artifact = runtime::ParseArtifact(first->artifact);
  ASSERT_TRUE(artifact.ok()) << artifact.status();
  EXPECT_EQ(artifact->code, std::string(model.rbegin(), model.rend()));
  auto second = client_->CompileModel(model, {});
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_FALSE(second->uploaded);
  std::lock_guard<std::mutex> lock(fake_.mu);
  EXPECT_EQ(fake_.uploads, 1);
  EXPECT_TRUE(fake_.digest_first);
  EXPECT_EQ(fake_.largest_chunk, size_t{1} << 20);
}

TEST_F(RemoteTest, CorruptArtifactIsDataLoss) {
  fake_.corrupt_fetch = true;
  auto result = client_->CompileModel("model", {});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDataLoss) << result.status();
}

// The client compares the fetched artifact's manifest with the key the server answered before
// anything loads it.
TEST_F(RemoteTest, ArtifactOfAnotherKeyIsDataLoss) {
  fake_.wrong_manifest = true;
  auto result = client_->CompileModel("model", {});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDataLoss) << result.status();
  EXPECT_EQ(result.status().message(),
            "the fetched artifact is not the one asked for: the artifact's manifest has "
            "graph_hash 'another graph' but its key has 'g\"h'");
}

TEST_F(RemoteTest, ServerErrorsKeepTheirCodes) {
  RemoteCompileOptions options;
  options.target = "cpu:nonsense";
  auto bad_target = client_->CompileModel("model", options);
  EXPECT_EQ(bad_target.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad_target.status().message().find("Compile: unknown target"), absl::string_view::npos);
  kiln::v1::CompileRequest never;
  *never.mutable_model_digest() = DigestOf("never uploaded");
  EXPECT_EQ(client_->Compile(never).status().code(), absl::StatusCode::kNotFound);
  auto lie = client_->UploadModel("actual bytes", DigestOf("other bytes"));
  EXPECT_EQ(lie.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RemoteClientTest, NoServerIsUnavailable) {
  RemoteClient client("127.0.0.1:1", 5'000);
  EXPECT_EQ(client.GetStats().status().code(), absl::StatusCode::kUnavailable);
}

TEST(RemoteJsonTest, CompileResultFieldsThroughProtobufsPrinter) {
  RemoteCompileResult r;
  r.response.set_cache_hit(true);
  r.response.mutable_key()->set_graph_hash("g");
  r.response.mutable_key()->set_target_key("cpu:\"x\"\n");
  r.response.mutable_key()->set_compiler_version("kiln-0.1.0");
  r.response.mutable_key()->set_options_hash("o");
  r.response.mutable_artifact_digest()->set_hash("d");
  r.response.mutable_artifact_digest()->set_size_bytes(42);
  r.response.set_compile_ms(1.5);
  r.response.set_server_ms(0.25);
  r.total_ms = 3;
  const std::string json = ToJson(CompileResultJson(r));
  EXPECT_EQ(json.find('\n'), std::string::npos) << "one line: " << json;
  EXPECT_NE(json.find("\"target_key\":\"cpu:\\\"x\\\"\\n\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"artifact_bytes\":42"), std::string::npos) << json;
  google::protobuf::Struct parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &parsed).ok()) << json;
  const auto& f = parsed.fields();
  EXPECT_EQ(f.size(), 13u) << json;
  EXPECT_TRUE(f.at("cache_hit").bool_value());
  EXPECT_FALSE(f.at("uploaded").bool_value());
  EXPECT_EQ(f.at("target_key").string_value(), "cpu:\"x\"\n");
  EXPECT_EQ(f.at("compiler_version").string_value(), "kiln-0.1.0");
  EXPECT_EQ(f.at("artifact_digest").string_value(), "d");
  EXPECT_EQ(f.at("artifact_bytes").number_value(), 42);
  EXPECT_EQ(f.at("compile_ms").number_value(), 1.5);
  EXPECT_EQ(f.at("server_ms").number_value(), 0.25);
  EXPECT_EQ(f.at("total_ms").number_value(), 3);
  EXPECT_EQ(f.at("job_id").string_value(), "");
  EXPECT_EQ(f.at("worker").string_value(), "");
}

TEST(RemoteJsonTest, MessagesKeepProtoNamesAndZeroFields) {
  kiln::v1::GetStatsResponse stats;
  stats.set_compiler_version("kiln-x");
  stats.set_uptime_ms(5);
  const std::string json = ToJson(stats);
  EXPECT_NE(json.find("\"compiler_version\":\"kiln-x\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"uptime_ms\":\"5\""), std::string::npos) << "int64 as a string: " << json;
  EXPECT_NE(json.find("\"cache_hits\":\"0\""), std::string::npos) << "zeros printed: " << json;
  google::protobuf::Struct nan;
  SetNumber(nan, "x", std::nan(""));
  SetNumbers(nan, "y", {1, INFINITY});
  EXPECT_EQ(ToJson(nan), "{\"x\":\"NaN\",\"y\":[1,\"Infinity\"]}");
}

TEST(RemoteFileTest, WriteFileAtomicallyReplacesWholeFile) {
  std::string path = ::testing::TempDir() + "/kiln_atomic_" + std::to_string(getpid()) + ".bin";
  ASSERT_TRUE(WriteFileAtomically(path, "first version, longer").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "second").ok());
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  EXPECT_EQ(s.str(), "second");
  EXPECT_FALSE(WriteFileAtomically("/nonexistent-dir/x.kiln", "x").ok());
}

}  // namespace
}  // namespace kiln::client
