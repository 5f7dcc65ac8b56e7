// x86-64 CPU table lookups and host feature detection (x86_cpu.h).
#include "compiler_core/support/x86_cpu.h"

#include <cstdint>

#include "absl/strings/str_split.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace kiln::x86 {
namespace {

#include "compiler_core/support/x86_cpu_table.inc"

struct Regs {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
  bool ok = false;
};

#if defined(__x86_64__)
Regs Cpuid(uint32_t leaf, uint32_t subleaf) {
  Regs r;
  r.ok = __get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx) != 0;
  return r;
}
uint64_t Xgetbv0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t{hi} << 32) | lo;
}
#endif

bool Bit(uint32_t reg, int bit) { return ((reg >> bit) & 1) != 0; }

// Whether host detection reports `feature` at all.
bool Detected(const std::string& feature) {
  for (const char* f : kX86FeatureUniverse) {
    if (feature == f) return true;
  }
  return false;
}

}  // namespace

std::vector<X86Cpu> KnownCpus() {
  return std::vector<X86Cpu>(std::begin(kX86Cpus), std::end(kX86Cpus));
}

const X86Cpu* FindCpu(std::string_view name) {
  for (const X86Cpu& cpu : kX86Cpus) {
    if (name == cpu.name) return &cpu;
  }
  return nullptr;
}

std::vector<std::string> FeaturesOf(const X86Cpu& cpu) {
  std::vector<std::string> out;
  for (absl::string_view f : absl::StrSplit(cpu.features, ',', absl::SkipEmpty())) {
    out.emplace_back(f.substr(f[0] == '+' ? 1 : 0));
  }
  return out;
}

std::map<std::string, bool> HostFeatures() {
  std::map<std::string, bool> f;
#if defined(__x86_64__)
  for (const char* name : kX86FeatureUniverse) f[name] = false;
  const Regs l0 = Cpuid(0, 0);
  if (!l0.ok || l0.eax < 1) return f;
  const uint32_t max_leaf = l0.eax;
  const Regs l1 = Cpuid(1, 0);
  // The OS saves a register set only if XCR0 says so (XSAVE enabled: OSXSAVE, ECX bit 27).
  const bool os_xsave = Bit(l1.ecx, 27);
  const uint64_t xcr0 = os_xsave ? Xgetbv0() : 0;
  const bool avx_state = os_xsave && Bit(l1.ecx, 28) && (xcr0 & 0x6) == 0x6;
  const bool avx512_state = avx_state && (xcr0 & 0xe0) == 0xe0;
  const bool amx_state = os_xsave && (xcr0 & 0x60000) == 0x60000;
  enum Need { kNone, kAvx, kAvx512, kAmx };
  auto set = [&](const char* name, bool has, Need need = kNone) {
    const bool state = need == kNone     ? true
                       : need == kAvx    ? avx_state
                       : need == kAvx512 ? avx512_state
                                         : amx_state;
    f[name] = has && state;
  };
  // Leaf 1.
  set("cx8", Bit(l1.edx, 8));
  set("cmov", Bit(l1.edx, 15));
  set("mmx", Bit(l1.edx, 23));
  set("fxsr", Bit(l1.edx, 24));
  set("sse", Bit(l1.edx, 25));
  set("sse2", Bit(l1.edx, 26));
  set("sse3", Bit(l1.ecx, 0));
  set("pclmul", Bit(l1.ecx, 1));
  set("ssse3", Bit(l1.ecx, 9));
  set("fma", Bit(l1.ecx, 12), kAvx);
  set("cx16", Bit(l1.ecx, 13));
  set("sse4.1", Bit(l1.ecx, 19));
  set("sse4.2", Bit(l1.ecx, 20));
  set("crc32", Bit(l1.ecx, 20));
  set("movbe", Bit(l1.ecx, 22));
  set("popcnt", Bit(l1.ecx, 23));
  set("aes", Bit(l1.ecx, 25));
  set("xsave", Bit(l1.ecx, 26), kAvx);
  set("avx", true, kAvx);
  set("f16c", Bit(l1.ecx, 29), kAvx);
  set("rdrnd", Bit(l1.ecx, 30));
  // Extended leaves 0x80000001 and 0x80000008.
  const uint32_t max_ext = Cpuid(0x80000000, 0).eax;
  const Regs e1 = max_ext >= 0x80000001 ? Cpuid(0x80000001, 0) : Regs{};
  set("sahf", Bit(e1.ecx, 0));
  set("lzcnt", Bit(e1.ecx, 5));
  set("sse4a", Bit(e1.ecx, 6));
  set("prfchw", Bit(e1.ecx, 8));
  set("xop", Bit(e1.ecx, 11), kAvx);
  set("lwp", Bit(e1.ecx, 15));
  set("fma4", Bit(e1.ecx, 16), kAvx);
  set("tbm", Bit(e1.ecx, 21));
  set("mwaitx", Bit(e1.ecx, 29));
  set("64bit", Bit(e1.edx, 29));
  const Regs e8 = max_ext >= 0x80000008 ? Cpuid(0x80000008, 0) : Regs{};
  set("clzero", Bit(e8.ebx, 0));
  set("rdpru", Bit(e8.ebx, 4));
  set("wbnoinvd", Bit(e8.ebx, 9));
  // Leaf 7, subleaf 0.
  const Regs l7 = max_leaf >= 7 ? Cpuid(7, 0) : Regs{};
  set("fsgsbase", Bit(l7.ebx, 0));
  set("sgx", Bit(l7.ebx, 2));
  set("bmi", Bit(l7.ebx, 3));
  set("avx2", Bit(l7.ebx, 5), kAvx);
  set("bmi2", Bit(l7.ebx, 8));
  set("invpcid", Bit(l7.ebx, 10));
  set("rtm", Bit(l7.ebx, 11));
  set("avx512f", Bit(l7.ebx, 16), kAvx512);
  set("avx512dq", Bit(l7.ebx, 17), kAvx512);
  set("rdseed", Bit(l7.ebx, 18));
  set("adx", Bit(l7.ebx, 19));
  set("avx512ifma", Bit(l7.ebx, 21), kAvx512);
  set("clflushopt", Bit(l7.ebx, 23));
  set("clwb", Bit(l7.ebx, 24));
  set("avx512cd", Bit(l7.ebx, 28), kAvx512);
  set("sha", Bit(l7.ebx, 29));
  set("avx512bw", Bit(l7.ebx, 30), kAvx512);
  set("avx512vl", Bit(l7.ebx, 31), kAvx512);
  set("avx512vbmi", Bit(l7.ecx, 1), kAvx512);
  set("pku", Bit(l7.ecx, 4));
  set("waitpkg", Bit(l7.ecx, 5));
  set("avx512vbmi2", Bit(l7.ecx, 6), kAvx512);
  set("shstk", Bit(l7.ecx, 7));
  set("gfni", Bit(l7.ecx, 8));
  set("vaes", Bit(l7.ecx, 9), kAvx);
  set("vpclmulqdq", Bit(l7.ecx, 10), kAvx);
  set("avx512vnni", Bit(l7.ecx, 11), kAvx512);
  set("avx512bitalg", Bit(l7.ecx, 12), kAvx512);
  set("avx512vpopcntdq", Bit(l7.ecx, 14), kAvx512);
  set("rdpid", Bit(l7.ecx, 22));
  set("kl", Bit(l7.ecx, 23));
  set("cldemote", Bit(l7.ecx, 25));
  set("movdiri", Bit(l7.ecx, 27));
  set("movdir64b", Bit(l7.ecx, 28));
  set("enqcmd", Bit(l7.ecx, 29));
  set("uintr", Bit(l7.edx, 5));
  set("avx512vp2intersect", Bit(l7.edx, 8), kAvx512);
  set("serialize", Bit(l7.edx, 14));
  set("tsxldtrk", Bit(l7.edx, 16));
  set("pconfig", Bit(l7.edx, 18));
  set("amx-bf16", Bit(l7.edx, 22), kAmx);
  set("avx512fp16", Bit(l7.edx, 23), kAvx512);
  set("amx-tile", Bit(l7.edx, 24), kAmx);
  set("amx-int8", Bit(l7.edx, 25), kAmx);
  // EVEX-encoded 512-bit vectors come with AVX-512 (LLVM reports the feature only then).
  if (f["avx512f"]) {
    f["evex512"] = true;
  } else {
    f.erase("evex512");
  }
  // Leaf 7, subleaf 1 (if leaf 7 reports it).
  const Regs l71 = l7.eax >= 1 ? Cpuid(7, 1) : Regs{};
  set("sha512", Bit(l71.eax, 0));
  set("sm3", Bit(l71.eax, 1));
  set("sm4", Bit(l71.eax, 2));
  set("raoint", Bit(l71.eax, 3));
  set("avxvnni", Bit(l71.eax, 4), kAvx);
  set("avx512bf16", Bit(l71.eax, 5), kAvx512);
  set("cmpccxadd", Bit(l71.eax, 7));
  set("amx-fp16", Bit(l71.eax, 21), kAmx);
  set("hreset", Bit(l71.eax, 22));
  set("avxifma", Bit(l71.eax, 23), kAvx);
  set("avxvnniint8", Bit(l71.edx, 4), kAvx);
  set("avxneconvert", Bit(l71.edx, 5), kAvx);
  set("amx-complex", Bit(l71.edx, 8), kAmx);
  set("avxvnniint16", Bit(l71.edx, 10), kAvx);
  set("prefetchi", Bit(l71.edx, 14));
  set("usermsr", Bit(l71.edx, 15));
  // APX (extended GPRs and the instructions that use them).
  for (const char* apx : {"egpr", "push2pop2", "ppx", "ndd", "ccmp", "cf"}) {
    set(apx, Bit(l71.edx, 21));
  }
  // Leaf 0xD subleaf 1 (XSAVE variants, with YMM state saved), 0x14 (PTWRITE), 0x19 (wide
  // Key Locker), 0x24 (the AVX10 version and whether 512-bit vectors are supported).
  const Regs ld = max_leaf >= 0xd ? Cpuid(0xd, 1) : Regs{};
  set("xsaveopt", Bit(ld.eax, 0), kAvx);
  set("xsavec", Bit(ld.eax, 1), kAvx);
  set("xsaves", Bit(ld.eax, 3), kAvx);
  const Regs l14 = max_leaf >= 0x14 ? Cpuid(0x14, 0) : Regs{};
  set("ptwrite", Bit(l14.ebx, 4));
  const Regs l19 = max_leaf >= 0x19 ? Cpuid(0x19, 0) : Regs{};
  set("widekl", Bit(l19.ebx, 2));
  const Regs l24 = max_leaf >= 0x24 ? Cpuid(0x24, 0) : Regs{};
  // AVX10.1 (leaf 7.1 EDX bit 19) and its 512-bit vectors (leaf 0x24 subleaf 0, EBX bit 18).
  const bool avx10 = Bit(l71.edx, 19);
  set("avx10.1-256", avx10);
  set("avx10.1-512", avx10 && (l24.ebx & 0xff) >= 1 && Bit(l24.ebx, 18));
#endif
  return f;
}

namespace {

// LLVM's name for an Intel family 6 model, as sys::getHostCPUName names it (Intel SDM vol. 4,
// table 2-1, "CPUID signature values"), or null for a model it does not list.
const char* IntelFamily6Name(uint32_t model, const std::map<std::string, bool>& f) {
  auto has = [&](const char* name) {
    auto it = f.find(name);
    return it != f.end() && it->second;
  };
  switch (model) {
    case 0x0f:
    case 0x16:
      return "core2";
    case 0x17:
    case 0x1d:
      return "penryn";
    case 0x1a:
    case 0x1e:
    case 0x1f:
    case 0x2e:
      return "nehalem";
    case 0x25:
    case 0x2c:
    case 0x2f:
      return "westmere";
    case 0x2a:
    case 0x2d:
      return "sandybridge";
    case 0x3a:
    case 0x3e:
      return "ivybridge";
    case 0x3c:
    case 0x3f:
    case 0x45:
    case 0x46:
      return "haswell";
    case 0x3d:
    case 0x47:
    case 0x4f:
    case 0x56:
      return "broadwell";
    case 0x4e:
    case 0x5e:
    case 0x8e:
    case 0x9e:
    case 0xa5:
    case 0xa6:
      return "skylake";
    case 0xa7:
      return "rocketlake";
    case 0x55:
      if (has("avx512bf16")) return "cooperlake";
      if (has("avx512vnni")) return "cascadelake";
      return "skylake-avx512";
    case 0x66:
      return "cannonlake";
    case 0x7d:
    case 0x7e:
      return "icelake-client";
    case 0x8c:
    case 0x8d:
      return "tigerlake";
    case 0x97:
    case 0x9a:
      return "alderlake";
    case 0xb7:
    case 0xba:
    case 0xbf:
      return "raptorlake";
    case 0xaa:
    case 0xac:
      return "meteorlake";
    case 0xbe:
      return "gracemont";
    case 0xc5:
    case 0xb5:
      return "arrowlake";
    case 0xc6:
      return "arrowlake-s";
    case 0xbd:
      return "lunarlake";
    case 0xcc:
      return "pantherlake";
    case 0x6a:
    case 0x6c:
      return "icelake-server";
    case 0x8f:
      return "sapphirerapids";
    case 0xcf:
      return "emeraldrapids";
    case 0xad:
      return "graniterapids";
    case 0xae:
      return "graniterapids-d";
    case 0x1c:
    case 0x26:
    case 0x27:
    case 0x35:
    case 0x36:
      return "bonnell";
    case 0x37:
    case 0x4a:
    case 0x4d:
    case 0x5a:
    case 0x5d:
    case 0x4c:
      return "silvermont";
    case 0x5c:
    case 0x5f:
      return "goldmont";
    case 0x7a:
      return "goldmont-plus";
    case 0x86:
    case 0x8a:
    case 0x96:
    case 0x9c:
      return "tremont";
    case 0xaf:
      return "sierraforest";
    case 0xb6:
      return "grandridge";
    case 0xdd:
      return "clearwaterforest";
    case 0x57:
      return "knl";
    case 0x85:
      return "knm";
    default:
      return nullptr;
  }
}

// LLVM's name for an AMD family/model (sys::getHostCPUName's), or null.
const char* AmdName(uint32_t family, uint32_t model) {
  switch (family) {
    case 0x10:
      return "amdfam10";
    case 0x14:
      return "btver1";
    case 0x15:
      if (model >= 0x60 && model <= 0x7f) return "bdver4";
      if (model >= 0x30 && model <= 0x3f) return "bdver3";
      if ((model >= 0x10 && model <= 0x1f) || model == 0x02) return "bdver2";
      return model <= 0x0f ? "bdver1" : nullptr;
    case 0x16:
      return "btver2";
    case 0x17:
      if ((model >= 0x30 && model <= 0x3f) || model == 0x47 || (model >= 0x60 && model <= 0x67) ||
          (model >= 0x68 && model <= 0x6f) || (model >= 0x70 && model <= 0x7f) ||
          (model >= 0x84 && model <= 0x87) || (model >= 0x90 && model <= 0x9f) ||
          (model >= 0xa0 && model <= 0xaf)) {
        return "znver2";
      }
      return "znver1";
    case 0x19:
      if (model <= 0x0f || (model >= 0x20 && model <= 0x2f) || (model >= 0x30 && model <= 0x3f) ||
          (model >= 0x40 && model <= 0x4f) || (model >= 0x50 && model <= 0x5f)) {
        return "znver3";
      }
      return "znver4";
    case 0x1a:
      return "znver5";
    default:
      return nullptr;
  }
}

}  // namespace

CpuSignature HostSignature() {
  CpuSignature sig;
#if defined(__x86_64__)
  const Regs l0 = Cpuid(0, 0), l1 = Cpuid(1, 0);
  if (l0.ebx == 0x756e6547 && l0.edx == 0x49656e69 && l0.ecx == 0x6c65746e) sig.vendor = "intel";
  if (l0.ebx == 0x68747541 && l0.edx == 0x69746e65 && l0.ecx == 0x444d4163) sig.vendor = "amd";
  sig.family = (l1.eax >> 8) & 0xf;
  sig.model = (l1.eax >> 4) & 0xf;
  if (sig.family == 0xf) sig.family += (l1.eax >> 20) & 0xff;
  if (sig.family == 0x6 || sig.family >= 0xf) sig.model += ((l1.eax >> 16) & 0xf) << 4;
#endif
  return sig;
}

const X86Cpu& NameCpu(const CpuSignature& sig, const std::map<std::string, bool>& features) {
  const char* name = sig.vendor == "intel" && sig.family == 6
                         ? IntelFamily6Name(sig.model, features)
                     : sig.vendor == "amd" ? AmdName(sig.family, sig.model)
                                           : nullptr;
  if (name != nullptr && FindCpu(name) != nullptr) return *FindCpu(name);
  // Otherwise the newest x86-64 microarchitecture level whose features the host has all of.
  for (const char* level : {"x86-64-v4", "x86-64-v3", "x86-64-v2"}) {
    const X86Cpu* cpu = FindCpu(level);
    if (cpu == nullptr) continue;
    bool fits = true;
    for (const std::string& feature : FeaturesOf(*cpu)) {
      // A feature host detection does not report (x87) is every x86-64's.
      auto it = features.find(feature);
      fits = fits && (it != features.end() ? it->second : !Detected(feature));
    }
    if (fits) return *cpu;
  }
  return *FindCpu("x86-64");
}

}  // namespace kiln::x86
