// x86-64 CPUs without LLVM at run time: LLVM's CPU names and their feature sets (a table
// generated from LLVM's target parser when Kiln is built, gen_x86_cpu_table.cc) and the host's
// features read with CPUID/XGETBV, in LLVM's feature names.
#ifndef KILN_COMPILER_CORE_SUPPORT_X86_CPU_H_
#define KILN_COMPILER_CORE_SUPPORT_X86_CPU_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::x86 {

/// An x86-64 CPU LLVM knows: its name ("skylake-avx512") and ISA features ("+avx512f,...",
/// LLVM's getFeaturesForCPU).
struct X86Cpu {
  const char* name;
  const char* features;
};

/// Every x86-64 CPU of the table, in LLVM's order.
std::vector<X86Cpu> KnownCpus();

/// The CPU named `name`, or null if LLVM knows no 64-bit x86 CPU by that name.
const X86Cpu* FindCpu(std::string_view name);

/// The features of `cpu` without their "+" ("avx512f", ...).
std::vector<std::string> FeaturesOf(const X86Cpu& cpu);

/// The running machine's features: every feature LLVM's host detection reports, each true
/// where CPUID says the CPU has it and XGETBV says the OS saves the registers it needs (AVX:
/// YMM state; AVX-512: opmask and ZMM state; AMX: tile state), as LLVM's
/// sys::getHostCPUFeatures decides it (CPUID leaves 1, 7.0, 7.1, 0xD.1, 0x14, 0x19, 0x24 and
/// 0x80000001/8; Intel SDM vol. 2A, "CPUID"; AMD APM vol. 3, appendix E). Empty off x86-64.
std::map<std::string, bool> HostFeatures();

/// A CPU's vendor ("intel", "amd" or "" for another), family and model as CPUID leaf 1 gives
/// them (the extended family and model folded in, Intel SDM vol. 2A, "CPUID").
struct CpuSignature {
  std::string vendor;
  uint32_t family = 0;
  uint32_t model = 0;
};

/// The running machine's signature.
CpuSignature HostSignature();

/// The CPU a signature names, as LLVM's sys::getHostCPUName names it (Intel family 6, AMD
/// families 0x10 to 0x1a; "cascadelake"/"cooperlake" told from skylake-avx512 by
/// `features`), e.g. "rocketlake", "znver4". A CPU it does not name gets the newest x86-64
/// microarchitecture level whose features `features` all has ("x86-64-v4", "-v3", "-v2", else
/// "x86-64"): the code uses the host's features either way, as its feature string lists them.
const X86Cpu& NameCpu(const CpuSignature& sig, const std::map<std::string, bool>& features);

}  // namespace kiln::x86

#endif  // KILN_COMPILER_CORE_SUPPORT_X86_CPU_H_
