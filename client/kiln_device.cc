// kiln-device: runs compiled artifacts on a device without the compiler (no LLVM), for GPU
// machines that only run: the device check and benchmark scripts (tests/device/run.sh) carry it
// there with the artifacts compiled on a CPU host.
//
//   kiln-device info [--device cuda:N]
//   kiln-device check OUT.kiln DIR [--device D]   DIR/test_data_set_*: compare every output
//   kiln-device time OUT.kiln [DIR] [--device D] [--warmup N] [--repeats N]
//       median and minimum latency of data set 0 (without DIR: of deterministic pseudo-random
//       inputs, e.g. for a GEMM) in ms, one JSON line; on a GPU the device time of the
//       launches (CUDA events, inputs already on the device), on a CPU the wall time.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "client/check_data.h"
#include "compiler_core/runtime/cuda/cuda_driver.h"
#include "compiler_core/runtime/cuda/cuda_executable.h"
#include "compiler_core/runtime/cuda/load_runner.h"

namespace kiln {
namespace {

constexpr char kUsage[] =
    "usage:\n"
    "  kiln-device info [--device cuda:N]\n"
    "  kiln-device check OUT.kiln DIR [--device cpu|cuda:N]\n"
    "  kiln-device time OUT.kiln [DIR] [--device cpu|cuda:N] [--warmup N] [--repeats N]\n"
    "The device defaults to cuda:0 for a CUDA artifact, cpu otherwise.\n";

int Fail(const std::string& message) {
  std::cerr << "kiln-device: " << message << "\n";
  return 2;
}

struct Args {
  std::vector<std::string> positional;
  std::string device;
  int warmup = 10, repeats = 50;
};

absl::StatusOr<Args> Parse(int argc, char** argv) {
  Args args;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> absl::StatusOr<std::string> {
      if (i + 1 >= argc) return absl::InvalidArgumentError(absl::StrCat(flag, " needs a value"));
      return std::string(argv[++i]);
    };
    if (a == "--device") {
      auto v = value("--device");
      if (!v.ok()) return v.status();
      args.device = *v;
    } else if (a == "--warmup" || a == "--repeats") {
      auto v = value(a.c_str());
      int n = 0;
      if (!v.ok()) return v.status();
      if (!absl::SimpleAtoi(*v, &n) || n < (a == "--repeats" ? 1 : 0)) {
        return absl::InvalidArgumentError(absl::StrCat(a, " needs a count"));
      }
      (a == "--warmup" ? args.warmup : args.repeats) = n;
    } else if (a.rfind("--", 0) == 0) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", a));
    } else {
      args.positional.push_back(a);
    }
  }
  return args;
}

std::string DeviceFor(const Args& args, const runtime::Artifact& artifact) {
  if (!args.device.empty()) return args.device;
  return artifact.manifest.code_kind() == kiln::v1::PTX ? "cuda:0" : "cpu";
}

int Info(const Args& args) {
  absl::StatusOr<int> ordinal =
      runtime::cuda::ParseCudaDevice(args.device.empty() ? "cuda:0" : args.device);
  if (!ordinal.ok()) return Fail(std::string(ordinal.status().message()));
  auto info = runtime::cuda::QueryCudaDevice(*ordinal);
  if (!info.ok()) return Fail(info.status().ToString());
  std::cout << absl::StrFormat(
      "{\"device\": \"cuda:%d\", \"name\": \"%s\", \"sm\": %d, \"multiprocessors\": %d, "
      "\"memory_bytes\": %d, \"driver_version\": %d}\n",
      info->ordinal, info->name, info->sm, info->multiprocessors, info->memory_bytes,
      info->driver_version);
  return 0;
}

int Check(const Args& args) {
  if (args.positional.size() != 2) return Fail(std::string("check: OUT.kiln DIR\n") + kUsage);
  auto artifact = runtime::ReadArtifactFile(args.positional[0]);
  if (!artifact.ok()) return Fail(artifact.status().ToString());
  // A tensor-core artifact ("cuda:...:tf32") is checked with its precision's tolerance.
  const std::string& key = artifact->manifest.target_key();
  const std::string precision = key.substr(key.rfind(':') + 1);
  const client::Tolerance tolerance = client::ToleranceFor(precision);
  std::cout << client::ToleranceNote(precision);
  auto comparisons =
      client::CheckArtifact(args.positional[1], *artifact, tolerance, DeviceFor(args, *artifact));
  if (!comparisons.ok()) return Fail(comparisons.status().ToString());
  bool pass = !comparisons->empty();
  for (const client::OutputComparison& c : *comparisons) {
    std::cout << client::FormatComparison(c) << "\n";
    pass = pass && c.pass;
  }
  std::cout << (pass ? "PASS " : "FAIL ") << args.positional[1] << "\n";
  return pass ? 0 : 1;
}

// Inputs for `m` (one profile: its own specs) filled from a fixed-seed LCG: floats in [-1, 1),
// integers in 0..3, bools false.
std::vector<Tensor> RandomInputs(const kiln::v1::Manifest& m) {
  const kiln::v1::Manifest& v = m.profiles_size() > 0 ? m.profiles(0) : m;
  std::vector<Tensor> inputs;
  uint64_t state = 0x9E3779B97F4A7C15ull;
  for (const kiln::v1::TensorSpec& spec : v.inputs()) {
    Tensor t;
    t.type = TensorType{*ParseDType(spec.dtype()), {spec.shape().begin(), spec.shape().end()}};
    t.bytes.assign(static_cast<size_t>(t.type.NumBytes()), 0);
    for (int64_t i = 0; i < t.type.NumElements(); ++i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const double u = static_cast<double>(state >> 11) / 9007199254740992.0;  // [0, 1)
      const float f = static_cast<float>(2 * u - 1);
      const int64_t n = static_cast<int64_t>(u * 4);
      switch (t.type.dtype) {
        case DType::kFloat32:
          t.mutable_data<float>()[i] = f;
          break;
        case DType::kFloat64:
          t.mutable_data<double>()[i] = f;
          break;
        case DType::kFloat16:
          t.mutable_data<uint16_t>()[i] = FloatToHalf(f);
          break;
        case DType::kBFloat16:
          t.mutable_data<uint16_t>()[i] = FloatToBFloat16(f);
          break;
        case DType::kInt64:
          t.mutable_data<int64_t>()[i] = n;
          break;
        case DType::kInt32:
          t.mutable_data<int32_t>()[i] = static_cast<int32_t>(n);
          break;
        default:
          break;  // other dtypes stay 0
      }
    }
    inputs.push_back(std::move(t));
  }
  return inputs;
}

int Time(const Args& args) {
  if (args.positional.empty() || args.positional.size() > 2) {
    return Fail(std::string("time: OUT.kiln [DIR]\n") + kUsage);
  }
  auto artifact = runtime::ReadArtifactFile(args.positional[0]);
  if (!artifact.ok()) return Fail(artifact.status().ToString());
  const std::string device = DeviceFor(args, *artifact);
  std::vector<Tensor> random;
  std::vector<importer::NamedTensor> files;
  std::vector<const Tensor*> inputs;
  if (args.positional.size() == 1) {
    random = RandomInputs(artifact->manifest);
    for (const Tensor& t : random) inputs.push_back(&t);
  } else {
    std::vector<std::filesystem::path> sets = client::DataSets(args.positional[1]);
    if (sets.empty()) return Fail("no test_data_set_* in " + args.positional[1]);
    auto read = client::ReadDataSetInputs(sets[0], artifact->manifest);
    if (!read.ok()) return Fail(read.status().ToString());
    files = std::move(*read);
    for (importer::NamedTensor* f : client::FeedsOf(artifact->manifest, files)) {
      if (f == nullptr) return Fail("a data set file is missing for an input");
      inputs.push_back(&f->tensor);
    }
  }
  std::vector<double> ms;
  if (device == "cpu") {
    auto exe = runtime::cuda::LoadRunner(*artifact, device);
    if (!exe.ok()) return Fail(exe.status().ToString());
    for (int r = 0; r < args.warmup + args.repeats; ++r) {
      auto start = std::chrono::steady_clock::now();
      auto out = (*exe)->Run(inputs);
      if (!out.ok()) return Fail(out.status().ToString());
      if (r >= args.warmup) {
        ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count());
      }
    }
  } else {
    auto ordinal = runtime::cuda::ParseCudaDevice(device);
    if (!ordinal.ok()) return Fail(ordinal.status().ToString());
    auto exe = runtime::cuda::CudaExecutable::Load(*artifact, *ordinal);
    if (!exe.ok()) return Fail(exe.status().ToString());
    auto times = (*exe)->TimeRuns(inputs, args.warmup, args.repeats);
    if (!times.ok()) return Fail(times.status().ToString());
    ms = *times;
  }
  std::sort(ms.begin(), ms.end());
  std::cout << absl::StrFormat(
      "{\"artifact\": \"%s\", \"device\": \"%s\", \"median_ms\": %.5f, \"min_ms\": %.5f, "
      "\"repeats\": %d}\n",
      args.positional[0], device,
      ms.size() % 2 == 1 ? ms[ms.size() / 2] : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2,
      ms.front(), static_cast<int>(ms.size()));
  return 0;
}

int Main(int argc, char** argv) {
  if (argc < 2) return Fail(kUsage);
  absl::StatusOr<Args> args = Parse(argc, argv);
  if (!args.ok()) return Fail(std::string(args.status().message()) + "\n" + kUsage);
  const std::string command = argv[1];
  if (command == "info") return Info(*args);
  if (command == "check") return Check(*args);
  if (command == "time") return Time(*args);
  return Fail("unknown command '" + command + "'\n" + kUsage);
}

}  // namespace
}  // namespace kiln

int main(int argc, char** argv) { return kiln::Main(argc, argv); }
