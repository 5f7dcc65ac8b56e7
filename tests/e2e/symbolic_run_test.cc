// One artifact for every shape (issue 32): llama_decoder_kv compiled once with symbolic dims
// (no --input-shape) runs every data set, decode steps at any past length and the empty cache
// of a first step, with exact errors for inputs that disagree on a symbol, and the tensor-size
// limit at run time.
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/check.h"
#include "client/check_data.h"
#include "compiler_core/pipeline/compile.h"
#include "compiler_core/runtime/executable.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/shared_data.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const char kModelDir[] = "../shared/models/llama_decoder_kv";

class SymbolicRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    KILN_REQUIRE_PATH_OR_SKIP(kModelDir);
    absl::StatusOr<pipeline::CompileResult> compiled = pipeline::CompileModelFile(
        std::string(kModelDir) + "/model.onnx", pipeline::CompileOptions{});
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    artifact_ = compiled->artifact;
    absl::StatusOr<std::unique_ptr<runtime::Executable>> exe =
        runtime::Executable::Load(artifact_, 2);
    ASSERT_TRUE(exe.ok()) << exe.status();
    exe_ = std::move(*exe);
  }

  // Inputs for one step: input_ids [1, seq] (token ids below the vocabulary), each past_*
  // [1, 2, past, 32] random; `past_of(i)` overrides input i's past length.
  std::vector<Tensor> Inputs(int64_t seq, int64_t past, unsigned seed,
                             const std::function<int64_t(int)>& past_of = nullptr) {
    std::mt19937 gen(seed);
    std::vector<Tensor> inputs;
    const kiln::v1::Manifest& m = artifact_.manifest;
    for (int i = 0; i < m.inputs_size(); ++i) {
      Tensor t;
      if (m.inputs(i).name() == "input_ids") {
        t.type = TensorType{DType::kInt64, {1, seq}};
        t.bytes.resize(static_cast<size_t>(t.type.NumBytes()));
        auto* ids = reinterpret_cast<int64_t*>(t.bytes.data());
        for (int64_t k = 0; k < seq; ++k) ids[k] = static_cast<int64_t>(gen() % 1000);
      } else {
        const int64_t p = past_of ? past_of(i) : past;
        t.type = TensorType{DType::kFloat32, {1, 2, p, 32}};
        t.bytes.resize(static_cast<size_t>(t.type.NumBytes()));
        std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
        auto* f = reinterpret_cast<float*>(t.bytes.data());
        for (int64_t k = 0; k < t.type.NumElements(); ++k) f[k] = dist(gen);
      }
      inputs.push_back(std::move(t));
    }
    return inputs;
  }

  absl::StatusOr<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs) {
    std::vector<const Tensor*> ptrs;
    for (const Tensor& t : inputs) ptrs.push_back(&t);
    return exe_->Run(ptrs);
  }

  int InputIndex(const std::string& name) const {
    const kiln::v1::Manifest& m = artifact_.manifest;
    for (int i = 0; i < m.inputs_size(); ++i) {
      if (m.inputs(i).name() == name) return i;
    }
    return -1;
  }

  runtime::Artifact artifact_;
  std::unique_ptr<runtime::Executable> exe_;
};

TEST_F(SymbolicRunTest, OneArtifactRunsEveryDataSet) {
  const kiln::v1::Manifest& m = artifact_.manifest;
  ASSERT_EQ(m.symbols_size(), 2);
  EXPECT_EQ(m.symbols(0).name(), "past");
  EXPECT_EQ(m.symbols(1).name(), "seq");
  EXPECT_EQ(m.symbols(0).max(), -1);
  EXPECT_GT(m.dynamic_buffers_size(), 0);
  client::CheckCompile all;
  for (const auto& entry : fs::directory_iterator(kModelDir)) {
    if (entry.path().filename().string().rfind("test_data_set_", 0) == 0) {
      all.data_sets.push_back(entry.path().string());
    }
  }
  ASSERT_EQ(all.data_sets.size(), 5u);
  absl::StatusOr<std::vector<client::OutputComparison>> outputs =
      client::CheckCompiled(all, artifact_, nullptr);
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  ASSERT_EQ(outputs->size(), 5u * 9u);  // logits and 8 present tensors per data set
  for (const client::OutputComparison& c : *outputs) {
    EXPECT_TRUE(c.pass) << client::FormatComparison(c);
  }
}

// Each step's outputs have the shapes their dims give, and present_* starts with past_*
// exactly (the cache is concatenated, not recomputed), from an empty cache to a long one.
TEST_F(SymbolicRunTest, StepsAtAnyLengthFromOneArtifact) {
  for (auto [seq, past] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 0}, {16, 0}, {1, 1}, {1, 300}, {3, 17}, {1, 5}}) {
    SCOPED_TRACE(absl::StrCat("seq=", seq, " past=", past));
    std::vector<Tensor> inputs = Inputs(seq, past, static_cast<unsigned>(seq * 1000 + past));
    absl::StatusOr<std::vector<Tensor>> outputs = Run(inputs);
    ASSERT_TRUE(outputs.ok()) << outputs.status();
    const kiln::v1::Manifest& m = artifact_.manifest;
    for (int o = 0; o < m.outputs_size(); ++o) {
      const std::string& name = m.outputs(o).name();
      const Tensor& t = (*outputs)[o];
      if (name == "logits") {
        EXPECT_EQ(t.type.shape, (std::vector<int64_t>{1, seq, 1024}));
        continue;
      }
      ASSERT_EQ(t.type.shape, (std::vector<int64_t>{1, 2, past + seq, 32})) << name;
      // present_key_0 → past_key_0.
      const int in = InputIndex("past" + name.substr(std::string("present").size()));
      ASSERT_GE(in, 0) << name;
      const float* got = reinterpret_cast<const float*>(t.bytes.data());
      const float* was = reinterpret_cast<const float*>(inputs[in].bytes.data());
      for (int64_t h = 0; h < 2; ++h) {
        EXPECT_EQ(std::memcmp(got + h * (past + seq) * 32, was + h * past * 32,
                              static_cast<size_t>(past * 32) * sizeof(float)),
                  0)
            << name << " head " << h;
      }
    }
  }
}

TEST_F(SymbolicRunTest, InputsThatDisagreeOnASymbolAreRefusedNamingIt) {
  const int k0 = InputIndex("past_key_0"), k1 = InputIndex("past_key_1");
  ASSERT_GE(k0, 0);
  ASSERT_GE(k1, 0);
  std::vector<Tensor> inputs = Inputs(1, 7, 1, [&](int i) { return i == k1 ? 6 : 7; });
  absl::StatusOr<std::vector<Tensor>> outputs = Run(inputs);
  ASSERT_FALSE(outputs.ok());
  EXPECT_EQ(outputs.status().code(), absl::StatusCode::kInvalidArgument);
  // The first input naming `past` binds it (past_key_0 comes before past_key_1); the one that
  // disagrees is named with its dim and the symbol.
  ASSERT_LT(k0, k1);
  EXPECT_THAT(outputs.status().message(),
              HasSubstr(absl::StrCat("input ", k1, " ('past_key_1'): dim 2 is 6 but symbol "
                                     "'past' is 7")));
  // Wrong rank.
  std::vector<Tensor> flat = Inputs(1, 7, 2);
  flat[InputIndex("input_ids")].type.shape = {1};
  outputs = Run(flat);
  ASSERT_FALSE(outputs.ok());
  EXPECT_EQ(outputs.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(outputs.status().message(), HasSubstr("('input_ids') has rank 1, expected 2"));
  // The executable still runs good inputs after a refused call.
  EXPECT_TRUE(Run(Inputs(2, 3, 3)).ok());
}

TEST_F(SymbolicRunTest, TensorSizeLimitAppliesAtRunTime) {
  // logits [1, seq, 1024] f32 at seq = 64 takes 256 KiB.
  exe_->SetMaxTensorBytes(128 * 1024);
  absl::StatusOr<std::vector<Tensor>> outputs = Run(Inputs(64, 0, 4));
  ASSERT_FALSE(outputs.ok());
  EXPECT_EQ(outputs.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(outputs.status().message(), HasSubstr("max_tensor_bytes"));
  // Within the limit the same artifact runs.
  EXPECT_TRUE(Run(Inputs(4, 0, 5)).ok());
}

}  // namespace
}  // namespace kiln
