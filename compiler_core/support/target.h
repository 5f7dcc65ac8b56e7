// The target descriptor: what hardware a compile is for. Resolved from a user spec ("host",
// "cpu:<llvm cpu name>") by codegen::ResolveTarget, which asks LLVM for the CPU's features.
#ifndef KILN_COMPILER_CORE_SUPPORT_TARGET_H_
#define KILN_COMPILER_CORE_SUPPORT_TARGET_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace kiln {

/// A resolved CPU target. All fields are filled by codegen::ResolveTarget.
struct Target {
  std::string kind = "cpu";   // "cpu" (later "cuda")
  std::string triple;          // LLVM target triple, e.g. "x86_64-pc-linux-gnu"
  std::string cpu;             // LLVM CPU name, e.g. "znver4", "skylake-avx512", "x86-64-v3"
  std::string features;        // LLVM feature string, sorted, e.g. "+avx2,+fma,..."
  int vector_bits = 128;       // widest usable float SIMD register: 128 (SSE), 256 (AVX2), 512
  int num_cores = 1;           // threads the runtime's pool uses by default (host only)

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
  /// Canonical string form, part of artifact cache keys: "cpu:<cpu>:<triple>:v<bits>:<features>".
  /// Excludes num_cores (the artifact runs with any thread count).
  std::string Key() const;
};

}  // namespace kiln

#endif  // KILN_COMPILER_CORE_SUPPORT_TARGET_H_
