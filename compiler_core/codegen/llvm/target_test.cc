// ResolveTarget (support/resolve_target.cc, no LLVM at run time) agrees with LLVM itself: every
// x86-64 CPU name LLVM 19 knows resolves to LLVM's feature set for it, and the host's features
// and CPU name are those LLVM's host detection reports; every resolved target makes a
// TargetMachine.
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "compiler_core/codegen/llvm/internal.h"
#include "gtest/gtest.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/X86TargetParser.h"

namespace kiln::codegen {
namespace {

std::set<std::string> Split(const std::string& features) {
  std::set<std::string> out;
  for (absl::string_view f : absl::StrSplit(features, ',', absl::SkipEmpty())) {
    out.insert(std::string(f));
  }
  return out;
}

TEST(ResolveTargetAgreesWithLlvmTest, EveryNamedCpu) {
  llvm::SmallVector<llvm::StringRef, 128> names;
  llvm::X86::fillValidCPUArchList(names, /*Only64Bit=*/true);
  ASSERT_GT(names.size(), 50u);
  for (llvm::StringRef name : names) {
    absl::StatusOr<Target> t = ResolveTarget("cpu:" + name.str());
    ASSERT_TRUE(t.ok()) << t.status();
    llvm::SmallVector<llvm::StringRef, 128> features;
    llvm::X86::getFeaturesForCPU(name, features, /*NeedPlus=*/true);
    std::set<std::string> want;
    for (llvm::StringRef f : features) want.insert(f.str());
    EXPECT_EQ(Split(t->features), want) << name.str();
    EXPECT_TRUE(CreateTargetMachine(*t).ok()) << name.str();
  }
}

TEST(ResolveTargetAgreesWithLlvmTest, HostFeatures) {
  absl::StatusOr<Target> t = ResolveTarget("host");
  ASSERT_TRUE(t.ok()) << t.status();
  std::set<std::string> got = Split(t->features), want;
  for (const auto& entry : llvm::sys::getHostCPUFeatures()) {
    // LLVM 19.1 reads CPUID leaf 0x24 without setting its subleaf (ECX), so its avx10.1-512
    // depends on a stale register; ours reads subleaf 0, as the SDM says.
    if (entry.getKey() == "avx10.1-512") continue;
    want.insert(absl::StrCat(entry.getValue() ? "+" : "-", entry.getKey().str()));
  }
  got.erase("+avx10.1-512");
  got.erase("-avx10.1-512");
  EXPECT_EQ(got, want);
  EXPECT_EQ(t->cpu, llvm::sys::getHostCPUName().str());
  EXPECT_TRUE(CreateTargetMachine(*t).ok());
}

}  // namespace
}  // namespace kiln::codegen
