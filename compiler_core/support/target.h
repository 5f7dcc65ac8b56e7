// The target descriptor: what hardware a compile is for, resolved from a user spec by
// ResolveTarget without LLVM ("host" and "cpu:<llvm cpu name>" from a table of LLVM's x86-64
// CPUs generated at build time and CPUID; "cuda:sm_80" .. "cuda:sm_90a" by ParseCudaTarget),
// so kilnd resolves targets once and sends them resolved, and links no LLVM.
#ifndef KILN_COMPILER_CORE_SUPPORT_TARGET_H_
#define KILN_COMPILER_CORE_SUPPORT_TARGET_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kiln {

/// The GPU part of a CUDA target: the SM architecture the PTX is generated for and the PTX ISA
/// version it declares (the lowest that SM allows, so that older drivers still JIT it).
struct GpuTarget {
  int sm = 0;                  // compute capability * 10: 80, 86, 89, 90
  bool arch_specific = false;  // sm_90a: Hopper's wgmma/setmaxnreg; runs on sm_90 only
  int ptx_version = 0;         // PTX ISA * 10, e.g. 70 for PTX 7.0
  /// Matmuls and convs: "fp32" (CUDA cores, the default), or on tensor cores with inputs
  /// rounded to "tf32", "fp16" or "bf16" (accumulating in f32): `--precision`.
  std::string precision = "fp32";
  /// "sm_90a", "sm_80".
  std::string SmName() const;
};

/// A resolved target: a kind, the LLVM triple/CPU/features its code generator uses, and for
/// "cuda" the GPU part. All fields are filled by ResolveTarget (or ParseCudaTarget).
struct Target {
  std::string kind = "cpu";   // "cpu" or "cuda"
  std::string triple;          // LLVM target triple: "x86_64-pc-linux-gnu", "nvptx64-nvidia-cuda"
  std::string cpu;             // LLVM CPU name, e.g. "znver4", "skylake-avx512", "sm_90a"
  std::string features;        // LLVM feature string, sorted, e.g. "+avx2,+fma,..." or "+ptx78"
  int vector_bits = 128;       // widest usable float SIMD register: 128 (SSE), 256 (AVX2), 512;
                               // 32 on a GPU (one f32 per thread)
  int num_cores = 1;           // threads the runtime's pool uses by default (host only)
  GpuTarget gpu;               // kind "cuda" only
  /// A CPU target running loop IR scheduled for a GPU (CompileOptions::emulate_gpu_on_host):
  /// thread-bound loops run as serial loops and math uses the GPU math library, so the GPU
  /// schedules and math are checked against references on machines without a GPU.
  bool emulate_gpu = false;

  /// Whether this is a GPU target (kind "cuda").
  bool IsGpu() const { return kind == "cuda"; }

  /// f32 lanes in one vector register (vector_bits / 32).
  int f32_lanes() const { return vector_bits / 32; }
  /// Architectural vector registers a kernel's register block can use: 32 with AVX-512
  /// (zmm0-31), else 16 (x86-64's ymm/xmm0-15).
  int vector_registers() const { return vector_bits >= 512 ? 32 : 16; }
  /// Whether `features` enables LLVM feature `name` ("+name"), e.g. HasFeature("avx512vnni").
  bool HasFeature(std::string_view name) const;
  /// Whether the target has a 4-way u8 x s8 → i32 dot product (x86 VPDPBUSD) on `bits`-wide
  /// vectors: AVX-512 VNNI for 512 bits, AVX-VNNI or AVX-512 VNNI + VL for 256 and 128.
  bool HasInt8Dot4(int bits) const;
  /// HasInt8Dot4 at the target's full vector width.
  bool HasInt8Dot4() const { return HasInt8Dot4(vector_bits); }
  /// Canonical string form, part of artifact cache keys: "cpu:<cpu>:<triple>:v<bits>:<features>"
  /// or "cuda:<sm>:ptx<version>:<triple>". Excludes num_cores (the artifact runs with any thread
  /// count).
  std::string Key() const;
};

/// The fields of a CPU target's Key(), "cpu:<cpu>:<triple>:v<bits>:<features>[:emulate-gpu]",
/// as readers of an artifact's manifest need them (the runtime's CPU-feature check, inspect).
struct CpuTargetKey {
  std::string cpu;           // "znver4"
  std::string triple;        // "x86_64-pc-linux-gnu"
  std::string vector;        // "v512"
  std::string features;      // "+avx2,-avx512f,..." as Key() wrote it
  bool emulate_gpu = false;  // the ":emulate-gpu" suffix
};

/// Parses a CPU target key; nullopt for a key of another form (a CUDA target's, or not a key).
std::optional<CpuTargetKey> ParseCpuTargetKey(std::string_view key);

/// The CUDA SM architectures Kiln generates PTX for: sm_80, sm_86, sm_89, sm_90, sm_90a.
inline constexpr const char* kCudaSmNames[] = {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"};

/// Parses "cuda:sm_80|sm_86|sm_89|sm_90|sm_90a" into a kind "cuda" Target (triple
/// nvptx64-nvidia-cuda, cpu the SM name, features "+ptxNN"). The PTX version is the lowest the
/// SM allows (PTX ISA notes: sm_80 7.0, sm_86 7.1, sm_89 and sm_90 7.8, sm_90a 8.0).
/// Errors: kInvalidArgument naming the spec and listing the SMs supported.
absl::StatusOr<Target> ParseCudaTarget(std::string_view spec);

/// Resolves a target spec. "host" (or "native"): this machine's x86-64 CPU, its features as CPUID
/// and XGETBV report them (x86_cpu.h HostFeatures: every feature LLVM detects, + or -) and the CPU
/// name LLVM gives its CPUID signature (x86::NameCpu); num_cores its hardware threads.
/// "cpu:<name>": a CPU of LLVM's x86-64 table with its features (LLVM's getFeaturesForCPU), one
/// core; "cpu:<name>:+f1,-f2,...": that CPU with exactly the features listed (each one LLVM knows
/// for x86-64), as NativeTargetSpec() sends. "cuda:sm_NN": ParseCudaTarget. Features are sorted by
/// name; vector_bits is 512 with avx512f, 256 with avx/avx2, else 128. Errors: kInvalidArgument
/// naming the spec (an unknown spec or CPU, or a host that is not x86-64).
absl::StatusOr<Target> ResolveTarget(std::string_view spec);

/// `--target native` as a client sends it to kilnd, whose "host" is the server's machine: this
/// machine's CPU as "cpu:<name>:<features>" (ResolveTarget("host")'s name and features), so the
/// server compiles for the client's CPU and the target key equals a local `host` compile's.
/// "native" if this host is not x86-64 (the server then refuses it).
std::string NativeTargetSpec();

/// Sets a resolved target's --precision: "fp32" (or empty) leaves it as it is; "tf32", "fp16"
/// and "bf16" need a cuda target and set target.gpu.precision (part of its Key()).
/// Errors: kInvalidArgument naming the precision, for an unknown one or a non-cuda target.
absl::Status SetPrecision(Target& target, std::string_view precision);

}  // namespace kiln

#endif  // KILN_COMPILER_CORE_SUPPORT_TARGET_H_
