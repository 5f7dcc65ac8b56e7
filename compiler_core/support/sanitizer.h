// Whether this build runs under AddressSanitizer (CMake's KILN_SANITIZE or KILN_FUZZ), for the
// few places whose behaviour ASan changes: it reserves terabytes of shadow address space (so no
// RLIMIT_AS), and its handler turns a SIGSEGV into an abort (SIGABRT with abort_on_error=1).
#ifndef KILN_COMPILER_CORE_SUPPORT_SANITIZER_H_
#define KILN_COMPILER_CORE_SUPPORT_SANITIZER_H_

namespace kiln {

#if defined(__SANITIZE_ADDRESS__)  // GCC, and clang since 17
inline constexpr bool kAddressSanitizerBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizerBuild = true;
#else
inline constexpr bool kAddressSanitizerBuild = false;
#endif
#else
inline constexpr bool kAddressSanitizerBuild = false;
#endif

}  // namespace kiln

#endif  // KILN_COMPILER_CORE_SUPPORT_SANITIZER_H_
