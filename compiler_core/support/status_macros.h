// Status propagation macros. Debian's abseil (20220623) has no public RETURN_IF_ERROR or
// ASSIGN_OR_RETURN, so Kiln keeps its own two.
#ifndef KILN_COMPILER_CORE_SUPPORT_STATUS_MACROS_H_
#define KILN_COMPILER_CORE_SUPPORT_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define KILN_CONCAT_INNER_(a, b) a##b
#define KILN_CONCAT_(a, b) KILN_CONCAT_INNER_(a, b)

/// Returns the status from the enclosing function if `expr` is not OK.
#define KILN_RETURN_IF_ERROR(expr)                   \
  do {                                               \
    ::absl::Status kiln_status_ = (expr);            \
    if (!kiln_status_.ok()) return kiln_status_;     \
  } while (0)

#define KILN_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                \
  if (!tmp.ok()) return std::move(tmp).status();     \
  lhs = std::move(tmp).value()

/// Evaluates `rexpr` (an absl::StatusOr<T>); on error returns its status, otherwise assigns the
/// value to `lhs` (which may be a declaration such as `auto x`).
#define KILN_ASSIGN_OR_RETURN(lhs, rexpr) \
  KILN_ASSIGN_OR_RETURN_IMPL_(KILN_CONCAT_(kiln_statusor_, __LINE__), lhs, rexpr)

#endif  // KILN_COMPILER_CORE_SUPPORT_STATUS_MACROS_H_
