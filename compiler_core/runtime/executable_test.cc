// End-to-end tests for Executable: builds small kernel shared objects with the system C compiler
// at test time (real kernels come from Kiln's LLVM codegen), wraps them in a hand-written
// manifest (inputs, a weight, arena intermediates, outputs) and checks Load/Run and its errors.
#include "compiler_core/runtime/executable.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "compiler_core/runtime/abi.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#ifndef KILN_TEST_C_COMPILER
#define KILN_TEST_C_COMPILER "cc"
#endif

namespace kiln::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Three kernels over the kiln ABI. BIAS lets two builds share symbol names but differ in results.
constexpr char kKernelSource[] = R"C(
#include <stdint.h>
typedef void (*kiln_task_fn)(void*, int64_t, int64_t);
typedef struct kiln_context {
  void (*parallel_for)(void*, kiln_task_fn, void*, int64_t);
  void* pool;
} kiln_context;

struct affine { const float* x; const float* b; const float* w; float* t; int64_t* chunks; };

static void affine_body(void* closure, int64_t begin, int64_t end) {
  struct affine* a = (struct affine*)closure;
  for (int64_t i = begin; i < end; ++i) a->t[i] = a->x[i] * a->w[i] + a->b[i % 3] + BIAS;
  __atomic_fetch_add(a->chunks, 1, __ATOMIC_RELAXED);
}

/* args: x (input 0, f32[2,3]), b (input 1, f32[3]), w (weight, f32[6]), t (arena, f32[6]),
 * chunk counter (arena, i64). */
void kiln_affine(const kiln_context* ctx, void* const* args) {
  struct affine a = {(const float*)args[0], (const float*)args[1], (const float*)args[2],
                     (float*)args[3], (int64_t*)args[4]};
  *a.chunks = 0;
  ctx->parallel_for(ctx->pool, affine_body, &a, 6);
}

/* args: t (arena), y (output 0, f32[2,3]), count (output 1, i64[]), workspace (arena, i64). */
void kiln_relu_count(const kiln_context* ctx, void* const* args) {
  const float* t = (const float*)args[0];
  float* y = (float*)args[1];
  int64_t* count = (int64_t*)args[2];
  int64_t* ws = (int64_t*)args[3];
  (void)ctx;
  ws[0] = 0;
  for (int i = 0; i < 6; ++i) {
    y[i] = t[i] > 0 ? t[i] : 0;
    if (t[i] > 0) ws[0]++;
  }
  *count = ws[0];
}

/* args: w (weight), arena base, chunk counter (arena), stats (output 2, i64[3]). */
void kiln_probe(const kiln_context* ctx, void* const* args) {
  int64_t* stats = (int64_t*)args[3];
  (void)ctx;
  stats[0] = *(const int64_t*)args[2];
  stats[1] = (int64_t)((uintptr_t)args[0] % 64);
  stats[2] = (int64_t)((uintptr_t)args[1] % 64);
}
)C";

// Compiles kKernelSource with -DBIAS=`bias` into a shared object and returns its bytes (cached).
const std::string* BuildKernels(int bias) {
  static std::map<int, std::string>* cache = new std::map<int, std::string>();
  auto it = cache->find(bias);
  if (it != cache->end()) return &it->second;
  std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / ("kiln_exe_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path src = dir / ("k" + std::to_string(bias) + ".c");
  const std::filesystem::path so = dir / ("k" + std::to_string(bias) + ".so");
  std::ofstream(src) << kKernelSource;
  const std::string command = std::string(KILN_TEST_C_COMPILER) +
                              " -shared -fPIC -O2 -DBIAS=" + std::to_string(bias) + " -o " +
                              so.string() + " " + src.string() + " 2>&1";
  if (std::system(command.c_str()) != 0) return nullptr;
  std::ifstream in(so, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  std::filesystem::remove_all(dir);
  std::string& slot = (*cache)[bias];
  slot = bytes.str();
  return &slot;
}

void AddSpec(google::protobuf::RepeatedPtrField<kiln::v1::TensorSpec>* specs,
             const std::string& name, const std::string& dtype, std::vector<int64_t> shape) {
  kiln::v1::TensorSpec* spec = specs->Add();
  spec->set_name(name);
  spec->set_dtype(dtype);
  for (int64_t d : shape) spec->add_shape(d);
}

void AddArg(kiln::v1::KernelCall* call, kiln::v1::Binding::Kind kind, int64_t index_or_offset,
            int64_t size_bytes = 0) {
  kiln::v1::Binding* b = call->add_args();
  b->set_kind(kind);
  if (kind == kiln::v1::Binding::INPUT || kind == kiln::v1::Binding::OUTPUT) {
    b->set_index(index_or_offset);
  } else {
    b->set_offset(index_or_offset);
  }
  b->set_size_bytes(size_bytes);
}

constexpr float kWeights[6] = {0.5f, 1.0f, 2.0f, -1.0f, 0.25f, 1.0f};

// inputs x f32[2,3], b f32[3]; weights: 64 bytes of padding then w f32[6]; arena: t at 0,
// workspace at 64, chunk counter at 128; outputs y f32[2,3], count i64[], stats i64[3].
Artifact MakeArtifact(const std::string& code) {
  using B = kiln::v1::Binding;
  Artifact a;
  kiln::v1::Manifest& m = a.manifest;
  m.set_abi_version(KILN_ABI_VERSION);
  m.set_model_name("tiny");
  AddSpec(m.mutable_inputs(), "x", "f32", {2, 3});
  AddSpec(m.mutable_inputs(), "b", "f32", {3});
  AddSpec(m.mutable_outputs(), "y", "f32", {2, 3});
  AddSpec(m.mutable_outputs(), "count", "i64", {});
  AddSpec(m.mutable_outputs(), "stats", "i64", {3});
  m.set_arena_bytes(192);
  m.set_arena_bytes_no_reuse(192);

  kiln::v1::KernelCall* k0 = m.add_kernels();
  k0->set_symbol("kiln_affine");
  AddArg(k0, B::INPUT, 0, 24);
  AddArg(k0, B::INPUT, 1, 12);
  AddArg(k0, B::WEIGHT, 64, 24);
  AddArg(k0, B::ARENA, 0, 24);
  AddArg(k0, B::ARENA, 128, 8);
  kiln::v1::KernelCall* k1 = m.add_kernels();
  k1->set_symbol("kiln_relu_count");
  AddArg(k1, B::ARENA, 0, 24);
  AddArg(k1, B::OUTPUT, 0, 24);
  AddArg(k1, B::OUTPUT, 1, 8);
  AddArg(k1, B::ARENA, 64, 8);
  kiln::v1::KernelCall* k2 = m.add_kernels();
  k2->set_symbol("kiln_probe");
  AddArg(k2, B::WEIGHT, 64, 24);
  AddArg(k2, B::ARENA, 0, 0);
  AddArg(k2, B::ARENA, 128, 8);
  AddArg(k2, B::OUTPUT, 2, 24);

  a.code = code;
  a.weights.assign(64, '\xee');
  a.weights.append(reinterpret_cast<const char*>(kWeights), sizeof(kWeights));
  m.set_weights_bytes(static_cast<int64_t>(a.weights.size()));
  return a;
}

Tensor MakeF32(std::vector<int64_t> shape, std::vector<float> values) {
  Tensor t;
  t.type = TensorType{DType::kFloat32, std::move(shape)};
  t.bytes.resize(values.size() * sizeof(float));
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

std::vector<float> F32Values(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.type.NumElements());
}

std::vector<int64_t> I64Values(const Tensor& t) {
  return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.type.NumElements());
}

class ExecutableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    code_ = BuildKernels(0);
    if (code_ == nullptr) GTEST_SKIP() << "no C compiler (" << KILN_TEST_C_COMPILER << ")";
  }
  const std::string* code_ = nullptr;
  Tensor x_ = MakeF32({2, 3}, {1, -2, 3, -4, 5, -6});
  Tensor b_ = MakeF32({3}, {1, 2, 3});
};

TEST_F(ExecutableTest, RunsKernelSequenceEndToEnd) {
  absl::StatusOr<std::unique_ptr<Executable>> exe = Executable::Load(MakeArtifact(*code_), 4);
  ASSERT_TRUE(exe.ok()) << exe.status();
  EXPECT_EQ((*exe)->manifest().model_name(), "tiny");
  EXPECT_EQ((*exe)->manifest().kernels_size(), 3);

  for (int run = 0; run < 3; ++run) {  // the arena is reused across runs
    absl::StatusOr<std::vector<Tensor>> out = (*exe)->Run({&x_, &b_});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->size(), 3u);
    // t = x * w + b[i % 3] = [1.5, 0, 9, 5, 3.25, -3]; y = relu(t).
    EXPECT_EQ((*out)[0].type.ToString(), "f32[2,3]");
    EXPECT_THAT(F32Values((*out)[0]), ElementsAre(1.5f, 0.0f, 9.0f, 5.0f, 3.25f, 0.0f));
    EXPECT_EQ((*out)[1].type.ToString(), "i64[]");
    EXPECT_THAT(I64Values((*out)[1]), ElementsAre(4));
    // stats: 4 chunks for 6 iterations on 4 threads; weights and arena 64-byte aligned
    // (the weight binding is at offset 64).
    EXPECT_THAT(I64Values((*out)[2]), ElementsAre(4, 0, 0));
  }
}

TEST_F(ExecutableTest, SingleThreadRunsOneChunk) {
  absl::StatusOr<std::unique_ptr<Executable>> exe = Executable::Load(MakeArtifact(*code_), 1);
  ASSERT_TRUE(exe.ok()) << exe.status();
  absl::StatusOr<std::vector<Tensor>> out = (*exe)->Run({&x_, &b_});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(F32Values((*out)[0]), ElementsAre(1.5f, 0.0f, 9.0f, 5.0f, 3.25f, 0.0f));
  EXPECT_THAT(I64Values((*out)[2]), ElementsAre(1, 0, 0));
}

TEST_F(ExecutableTest, DefaultThreadCountWorks) {
  absl::StatusOr<std::unique_ptr<Executable>> exe = Executable::Load(MakeArtifact(*code_));
  ASSERT_TRUE(exe.ok()) << exe.status();
  absl::StatusOr<std::vector<Tensor>> out = (*exe)->Run({&x_, &b_});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(F32Values((*out)[0]), ElementsAre(1.5f, 0.0f, 9.0f, 5.0f, 3.25f, 0.0f));
  const int64_t cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  EXPECT_EQ(I64Values((*out)[2])[0], std::min<int64_t>(6, cores));
}

TEST_F(ExecutableTest, ArtifactsWithSameSymbolsStayIsolated) {
  const std::string* biased = BuildKernels(100);
  ASSERT_NE(biased, nullptr);
  auto a = Executable::Load(MakeArtifact(*code_), 2);
  auto b = Executable::Load(MakeArtifact(*biased), 2);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  auto out_a = (*a)->Run({&x_, &b_});
  auto out_b = (*b)->Run({&x_, &b_});
  ASSERT_TRUE(out_a.ok() && out_b.ok());
  EXPECT_THAT(F32Values((*out_a)[0]), ElementsAre(1.5f, 0.0f, 9.0f, 5.0f, 3.25f, 0.0f));
  EXPECT_THAT(F32Values((*out_b)[0]), ElementsAre(101.5f, 100.0f, 109.0f, 105.0f, 103.25f, 97.0f));
  // Unload the biased one and load other code again: it must not get the stale object back.
  b->reset();
  for (int i = 0; i < 5; ++i) {
    auto c = Executable::Load(MakeArtifact(i % 2 == 0 ? *code_ : *biased), 1);
    ASSERT_TRUE(c.ok()) << c.status();
    auto out_c = (*c)->Run({&x_, &b_});
    ASSERT_TRUE(out_c.ok());
    EXPECT_EQ(F32Values((*out_c)[0])[0], i % 2 == 0 ? 1.5f : 101.5f) << "load " << i;
  }
}

TEST_F(ExecutableTest, WrongInputShape) {
  auto exe = Executable::Load(MakeArtifact(*code_), 2);
  ASSERT_TRUE(exe.ok()) << exe.status();
  Tensor wrong = MakeF32({3, 2}, {1, 2, 3, 4, 5, 6});
  absl::Status status = (*exe)->Run({&wrong, &b_}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "input 0 ('x'): expected shape [2,3], got [3,2]");
  Tensor scalar = MakeF32({}, {1});
  EXPECT_EQ((*exe)->Run({&x_, &scalar}).status().message(),
            "input 1 ('b'): expected shape [3], got []");
}

TEST_F(ExecutableTest, WrongInputDtype) {
  auto exe = Executable::Load(MakeArtifact(*code_), 2);
  ASSERT_TRUE(exe.ok()) << exe.status();
  Tensor ints;
  ints.type = TensorType{DType::kInt32, {3}};
  ints.bytes.assign(12, 0);
  absl::Status status = (*exe)->Run({&x_, &ints}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "input 1 ('b'): expected dtype f32, got i32");
}

TEST_F(ExecutableTest, WrongInputCountNullAndShortData) {
  auto exe = Executable::Load(MakeArtifact(*code_), 2);
  ASSERT_TRUE(exe.ok()) << exe.status();
  EXPECT_EQ((*exe)->Run({&x_}).status().message(), "expected 2 inputs, got 1");
  EXPECT_EQ((*exe)->Run({&x_, nullptr}).status().message(), "input 1 ('b') is null");
  Tensor short_data = MakeF32({3}, {1, 2, 3});
  short_data.bytes.resize(8);
  EXPECT_EQ((*exe)->Run({&x_, &short_data}).status().message(),
            "input 1 ('b') holds 8 bytes of data, expected 12 for f32[3]");
}

TEST_F(ExecutableTest, MissingSymbol) {
  Artifact a = MakeArtifact(*code_);
  a.manifest.add_kernels()->set_symbol("kiln_no_such_kernel");
  absl::StatusOr<std::unique_ptr<Executable>> exe = Executable::Load(std::move(a), 2);
  EXPECT_EQ(exe.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(exe.status().message(),
            "kernel 3: symbol 'kiln_no_such_kernel' is not exported by the artifact's code");
}

TEST_F(ExecutableTest, AbiVersionMismatch) {
  Artifact a = MakeArtifact(*code_);
  a.manifest.set_abi_version(KILN_ABI_VERSION + 1);
  absl::StatusOr<std::unique_ptr<Executable>> exe = Executable::Load(std::move(a), 2);
  EXPECT_EQ(exe.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(exe.status().message(),
            "artifact abi version 2 is not supported: this runtime implements kiln abi version 1");
}

TEST_F(ExecutableTest, BindingsOutOfRange) {
  Artifact a = MakeArtifact(*code_);
  a.manifest.mutable_kernels(0)->mutable_args(2)->set_offset(80);  // 80 + 24 > 88
  EXPECT_EQ(Executable::Load(a, 1).status().message(),
            "kernel 0 (kiln_affine) argument 2 binds weights [80, +24) outside the 88-byte "
            "weights section");
  a = MakeArtifact(*code_);
  a.manifest.mutable_kernels(1)->mutable_args(3)->set_offset(188);
  EXPECT_EQ(Executable::Load(a, 1).status().message(),
            "kernel 1 (kiln_relu_count) argument 3 binds arena [188, +8) outside the 192-byte "
            "arena");
  a = MakeArtifact(*code_);
  a.manifest.mutable_kernels(1)->mutable_args(2)->set_index(3);
  EXPECT_EQ(Executable::Load(a, 1).status().message(),
            "kernel 1 (kiln_relu_count) argument 2 binds output 3 but the model has 3 outputs");
  a = MakeArtifact(*code_);
  a.manifest.mutable_kernels(0)->mutable_args(0)->set_index(-1);
  EXPECT_EQ(Executable::Load(a, 1).status().message(),
            "kernel 0 (kiln_affine) argument 0 binds input -1 but the model has 2 inputs");
}

TEST_F(ExecutableTest, WeightsSizeDisagreesWithManifest) {
  Artifact a = MakeArtifact(*code_);
  a.manifest.set_weights_bytes(100);
  EXPECT_EQ(Executable::Load(std::move(a), 1).status().message(),
            "manifest says weights_bytes is 100 but the weights section has 88 bytes");
}

TEST_F(ExecutableTest, UnknownDtypeInManifest) {
  Artifact a = MakeArtifact(*code_);
  a.manifest.mutable_outputs(1)->set_dtype("q7");
  EXPECT_EQ(Executable::Load(std::move(a), 1).status().message(),
            "output 1 ('count') has unknown dtype 'q7'");
}

TEST_F(ExecutableTest, GarbageCodeIsALoaderError) {
  Artifact a = MakeArtifact("this is not an ELF file");
  absl::StatusOr<std::unique_ptr<Executable>> exe = Executable::Load(std::move(a), 1);
  EXPECT_EQ(exe.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(exe.status().message(), HasSubstr("cannot load the artifact's shared object"));
}

TEST_F(ExecutableTest, KernelsWithoutCode) {
  Artifact a = MakeArtifact("");
  EXPECT_EQ(Executable::Load(std::move(a), 1).status().message(),
            "artifact has 3 kernel calls but no code");
}

// MakeArtifact's model as the one shape profile of a manifest whose x has a varying batch dim.
Artifact MakeProfiledArtifact(const std::string& code) {
  Artifact a = MakeArtifact(code);
  kiln::v1::Manifest profile = a.manifest;
  profile.set_weights_bytes(0);
  a.manifest.clear_kernels();
  a.manifest.mutable_inputs(0)->set_shape(0, -1);
  a.manifest.set_arena_bytes(0);
  *a.manifest.add_profiles() = profile;
  return a;
}

TEST_F(ExecutableTest, ShapeProfilesRunTheMatchingOneAndListThemOtherwise) {
  auto exe = Executable::Load(MakeProfiledArtifact(*code_), 2);
  ASSERT_TRUE(exe.ok()) << exe.status();
  auto out = (*exe)->Run({&x_, &b_});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(F32Values((*out)[0]), ElementsAre(1.5f, 0.0f, 9.0f, 5.0f, 3.25f, 0.0f));
  std::vector<double> kernel_ms;
  ASSERT_TRUE((*exe)->RunProfiled({&x_, &b_}, &kernel_ms).ok());
  EXPECT_EQ(kernel_ms.size(), 3u);  // the profile's kernels
  Tensor x4 = MakeF32({4, 3}, std::vector<float>(12, 1.0f));
  EXPECT_EQ((*exe)->Run({&x4, &b_}).status().message(),
            "input shapes x=[4,3] b=[3] match none of the artifact's 1 shape profiles: "
            "x=[2,3] b=[3]");
  Tensor x23 = MakeF32({2, 4}, std::vector<float>(8, 1.0f));
  EXPECT_EQ((*exe)->Run({&x23, &b_}).status().message(),
            "input 0 ('x'): expected shape [?,3], got [2,4]");
}

TEST_F(ExecutableTest, MalformedShapeProfilesAreRefused) {
  Artifact own_kernels = MakeProfiledArtifact(*code_);
  *own_kernels.manifest.add_kernels() = own_kernels.manifest.profiles(0).kernels(0);
  EXPECT_EQ(Executable::Load(std::move(own_kernels), 1).status().message(),
            "a manifest with 1 shape profiles has 1 kernels of its own");
  Artifact renamed = MakeProfiledArtifact(*code_);
  renamed.manifest.mutable_profiles(0)->mutable_inputs(1)->set_name("c");
  EXPECT_EQ(Executable::Load(std::move(renamed), 1).status().message(),
            "shape profile 0 input 1 ('c' f32[3]) does not match the model's ('b' f32[3])");
  Artifact fixed_dim = MakeProfiledArtifact(*code_);
  fixed_dim.manifest.mutable_inputs(0)->set_shape(1, 4);
  EXPECT_EQ(Executable::Load(std::move(fixed_dim), 1).status().message(),
            "shape profile 0 input 0 ('x' f32[2,3]) does not match the model's ('x' f32[?,4])");
  Artifact outside = MakeProfiledArtifact(*code_);
  outside.manifest.mutable_profiles(0)->mutable_kernels(0)->mutable_args(2)->set_offset(4096);
  EXPECT_EQ(Executable::Load(std::move(outside), 1).status().message(),
            "shape profile 0: kernel 0 (kiln_affine) argument 2 binds weights [4096, +24) "
            "outside the 88-byte weights section");
  Artifact missing = MakeProfiledArtifact(*code_);
  missing.manifest.mutable_profiles(0)->mutable_kernels(1)->set_symbol("kiln_nope");
  EXPECT_EQ(Executable::Load(std::move(missing), 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ExecutableNoKernelsTest, ModelWithoutKernelsReturnsZeroOutputs) {
  Artifact a;
  a.manifest.set_abi_version(KILN_ABI_VERSION);
  AddSpec(a.manifest.mutable_outputs(), "z", "f16", {2, 0});
  AddSpec(a.manifest.mutable_outputs(), "one", "u8", {2});
  auto exe = Executable::Load(std::move(a), 2);
  ASSERT_TRUE(exe.ok()) << exe.status();
  auto out = (*exe)->Run({});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ((*out)[0].type.ToString(), "f16[2,0]");
  EXPECT_TRUE((*out)[0].bytes.empty());
  EXPECT_THAT((*out)[1].bytes, ElementsAre(0, 0));
}

}  // namespace
}  // namespace kiln::runtime
