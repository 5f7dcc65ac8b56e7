// Loops run at run time over a compiled body (graph op Loop, KernelCall.loop): the iteration
// count follows the data, a scan output that is a graph output is cut to the iterations run,
// running past the compiled scan length or a malformed Loop call is a clear error.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "compiler_core/importer/onnx/tensor_file.h"
#include "compiler_core/pipeline/compile.h"
#include "compiler_core/runtime/executable.h"
#include "compiler_core/runtime/manifest_calls.h"
#include "tests/e2e/shared_data.h"

namespace kiln {
namespace {

Tensor Scalar(DType dtype, double v) {
  Tensor t{TensorType{dtype, {}}, {}};
  t.bytes.resize(static_cast<size_t>(DTypeSize(dtype)));
  if (dtype == DType::kFloat32) {
    const float f = static_cast<float>(v);
    std::memcpy(t.bytes.data(), &f, 4);
  } else if (dtype == DType::kInt32) {
    const int32_t i = static_cast<int32_t>(v);
    std::memcpy(t.bytes.data(), &i, 4);
  }
  return t;
}

absl::StatusOr<runtime::Artifact> Compile(const std::string& model) {
  absl::StatusOr<pipeline::CompileResult> r = pipeline::CompileModelFile(model, {});
  if (!r.ok()) return r.status();
  return r->artifact;
}

// ONNX's Range function body: a Loop of ceil((limit - start) / delta) iterations given at run
// time, its scan output the graph output (declared [2]: the compiled bound).
TEST(RuntimeLoopTest, ScanOutputFollowsTheIterationsRun) {
  const std::string model =
      "../shared/conformance/node/test_range_float_type_positive_delta_expanded/model.onnx";
  KILN_REQUIRE_PATH_OR_SKIP(model);
  absl::StatusOr<runtime::Artifact> artifact = Compile(model);
  ASSERT_TRUE(artifact.ok()) << artifact.status();
  int loops = 0;
  runtime::ForEachKernelCall(artifact->manifest,
                             [&](const kiln::v1::KernelCall& c) { loops += c.has_loop(); });
  EXPECT_EQ(loops, 1);
  ASSERT_EQ(artifact->manifest.outputs_size(), 1);
  EXPECT_TRUE(artifact->manifest.outputs(0).bounded());
  auto exe = runtime::Executable::Load(*artifact, 1);
  ASSERT_TRUE(exe.ok()) << exe.status();
  auto run = [&](double start, double limit, double delta) {
    Tensor s = Scalar(DType::kFloat32, start), l = Scalar(DType::kFloat32, limit),
           d = Scalar(DType::kFloat32, delta);
    return (*exe)->Run({&s, &l, &d});
  };
  // Two iterations: 1, 3.5 (the data set's).
  auto two = run(1, 5, 2.5);
  ASSERT_TRUE(two.ok()) << two.status();
  ASSERT_EQ((*two)[0].type.shape, std::vector<int64_t>{2});
  EXPECT_EQ((*two)[0].data<float>()[0], 1.0f);
  EXPECT_EQ((*two)[0].data<float>()[1], 3.5f);
  // One iteration: the output has one element.
  auto one = run(10, 11, 3);
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_EQ((*one)[0].type.shape, std::vector<int64_t>{1});
  EXPECT_EQ((*one)[0].data<float>()[0], 10.0f);
  // None: empty.
  auto none = run(3, 1, 1);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ((*none)[0].type.shape, std::vector<int64_t>{0});
  // Five iterations do not fit the compiled [2].
  auto five = run(0, 5, 1);
  ASSERT_FALSE(five.ok());
  EXPECT_EQ(five.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(five.status().message().find(
                "(Loop): the loop runs more than the 2 iterations its scan outputs were "
                "compiled for"),
            std::string::npos)
      << five.status();
  // The executable still runs after a failed run.
  auto again = run(1, 5, 2.5);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)[0].data<float>()[1], 3.5f);
}

// tests/data/runtime_loop: a while loop, 500 RNN steps, a trip count from a graph input, a
// nested loop whose inner trip count comes from the outer iteration number, and a 600-step Scan.
TEST(RuntimeLoopTest, TripCountFromAnInputAndNestedLoops) {
  absl::StatusOr<runtime::Artifact> artifact = Compile("tests/data/runtime_loop/model.onnx");
  ASSERT_TRUE(artifact.ok()) << artifact.status();
  int loops = 0, nested = 0;
  for (const kiln::v1::KernelCall& c : artifact->manifest.kernels()) {
    if (!c.has_loop()) continue;
    ++loops;
    for (const kiln::v1::KernelCall& b : c.loop().body().kernels()) nested += b.has_loop();
  }
  EXPECT_EQ(loops, 5);
  EXPECT_EQ(nested, 1);
  auto exe = runtime::Executable::Load(*artifact, 2);
  ASSERT_TRUE(exe.ok()) << exe.status();
  auto x = importer::ReadTensorFile("tests/data/runtime_loop/test_data_set_0/input_0.pb");
  ASSERT_TRUE(x.ok()) << x.status();
  auto seq = importer::ReadTensorFile("tests/data/runtime_loop/test_data_set_0/input_2.pb");
  ASSERT_TRUE(seq.ok()) << seq.status();
  // nested_z after n outer iterations, the o-th running o + 1 inner steps z = z / 2 + 1.
  for (int64_t n : {0, 1, 3, 7}) {
    Tensor trips{TensorType{DType::kInt64, {}}, std::vector<uint8_t>(8)};
    std::memcpy(trips.bytes.data(), &n, 8);
    auto out = (*exe)->Run({&x->tensor, &trips, &seq->tensor});
    ASSERT_TRUE(out.ok()) << out.status();
    const Tensor& z = (*out)[5];
    for (int i = 0; i < 8; ++i) {
      float want = x->tensor.data<float>()[i];  // row 0
      for (int64_t o = 0; o < n; ++o) {
        for (int64_t k = 0; k <= o; ++k) want = want * 0.5f + 1.0f;
      }
      EXPECT_EQ(z.data<float>()[i], want) << "n=" << n << " i=" << i;
    }
  }
}

// A Loop call whose arguments disagree with its body is refused at load, naming the Loop.
TEST(RuntimeLoopTest, MalformedLoopCallIsRefusedAtLoad) {
  absl::StatusOr<runtime::Artifact> artifact = Compile("tests/data/runtime_loop/model.onnx");
  ASSERT_TRUE(artifact.ok()) << artifact.status();
  auto mutate = [&](const std::function<void(kiln::v1::LoopCall&)>& fn) {
    runtime::Artifact a = *artifact;
    for (kiln::v1::KernelCall& c : *a.manifest.mutable_kernels()) {
      if (c.has_loop() && c.loop().scan_length() > 0) {
        fn(*c.mutable_loop());
        break;
      }
    }
    return runtime::Executable::Load(a, 1).status();
  };
  absl::Status longer = mutate([](kiln::v1::LoopCall& l) { l.set_scan_length(501); });
  EXPECT_EQ(longer.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(longer.message().find("Loop call (node 'rnn_h' (Loop)): argument 5 binds 32000 "
                                  "bytes, the body needs 32064"),
            std::string::npos)
      << longer;
  absl::Status carried = mutate([](kiln::v1::LoopCall& l) { l.set_num_carried(0); });
  EXPECT_EQ(carried.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(carried.message().find("node 'rnn_h' (Loop)"), std::string::npos) << carried;
  // A graph output of the Loop's bytes but another shape: the runtime cuts its leading dim.
  runtime::Artifact reshaped = *artifact;
  for (kiln::v1::TensorSpec& out : *reshaped.manifest.mutable_outputs()) {
    if (out.name() != "rnn_seq") continue;
    out.clear_shape();
    for (int64_t d : {8000, 1, 1}) out.add_shape(d);
  }
  absl::Status shape = runtime::Executable::Load(reshaped, 1).status();
  EXPECT_EQ(shape.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(shape.message().find("binds graph output 'rnn_seq' f32 of another shape than the "
                                 "body gives"),
            std::string::npos)
      << shape;
  absl::Status missing = mutate([](kiln::v1::LoopCall& l) {
    l.mutable_body()->mutable_kernels(0)->set_symbol("l6_kernel_99");
  });
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing.message().find("l6_kernel_99"), std::string::npos) << missing;
}

// A scan output both returned and read by a later op (scripts/make-runtime-loop-model's
// scan_read_twice.onnx: scan [6,2] and its mean) is not cut to the iterations run: fewer than the
// compiled 6 is an error, never a mean over rows that were not computed.
TEST(RuntimeLoopTest, ScanOutputReadLaterMustHaveItsCompiledLength) {
  absl::StatusOr<runtime::Artifact> artifact =
      Compile("tests/data/runtime_loop/scan_read_twice.onnx");
  ASSERT_TRUE(artifact.ok()) << artifact.status();
  EXPECT_FALSE(artifact->manifest.outputs(0).bounded());
  auto exe = runtime::Executable::Load(*artifact, 1);
  ASSERT_TRUE(exe.ok()) << exe.status();
  Tensor x{TensorType{DType::kFloat32, {2}}, std::vector<uint8_t>(8)};
  const float xs[2] = {1, 2};
  std::memcpy(x.bytes.data(), xs, 8);
  auto run = [&](int64_t m) {
    Tensor trips{TensorType{DType::kInt64, {}}, std::vector<uint8_t>(8)};
    std::memcpy(trips.bytes.data(), &m, 8);
    return (*exe)->Run({&x, &trips});
  };
  auto three = run(3);
  ASSERT_FALSE(three.ok());
  EXPECT_NE(three.status().message().find("(Loop): the loop ran 3 iterations, but its scan "
                                          "output 0 was compiled for 6"),
            std::string::npos)
      << three.status();
  auto six = run(6);
  ASSERT_TRUE(six.ok()) << six.status();
  // Rows x + i for i in 0..5: means 1 + 2.5 and 2 + 2.5.
  EXPECT_FLOAT_EQ((*six)[1].data<float>()[0], 3.5f);
  EXPECT_FLOAT_EQ((*six)[1].data<float>()[1], 4.5f);
}

}  // namespace
}  // namespace kiln
