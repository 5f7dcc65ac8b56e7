// Binding symbols at run time: the values of a graph's symbols from the shapes its inputs are
// fed with, checked against each symbol's range and against every other input that names the
// same symbol. The first step of a run of a symbolic artifact (docs/symbolic-shapes.md, "the
// shape program"); every dim the plan needs is then sym::Evaluate of its expression.
#ifndef KILN_COMPILER_CORE_IR_SYM_BIND_H_
#define KILN_COMPILER_CORE_IR_SYM_BIND_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_core/ir/sym/expr.h"

namespace kiln::sym {

/// A graph input as the artifact declares it: its name and one expression per dim (a constant,
/// a symbol, or an expression over symbols).
struct DeclaredInput {
  std::string name;
  std::vector<Expr> dims;
};

/// The value of every symbol named by itself as a dim of some input (`seq` in [1,seq]), read
/// from `fed` (one shape per input, in order), then every declared dim checked against the fed
/// one. Errors (kInvalidArgument), each naming the input by index and name, the dim and the
/// symbol:
///   "input 0 ('ids') has rank 1, expected 2 ([1,seq])"
///   "input 2 ('past_key_1'): dim 2 is 5 but symbol 'past' is 7 (input 1 'past_key_0', dim 2)"
///   "input 0 ('ids'): dim 1 is 5000, outside the range [1, 4096] of symbol 'seq'"
///   "input 1 ('mask'): dim 1 is 9, expected 8 (past + seq)"
///   "input 1 ('x'): dim 0 is 2*n, whose symbol 'n' no input dim gives by itself"
/// `fed` with another number of shapes than `inputs` is kInvalidArgument too.
absl::StatusOr<std::map<std::string, int64_t>> BindSymbols(
    const std::vector<DeclaredInput>& inputs, const std::vector<std::vector<int64_t>>& fed);

}  // namespace kiln::sym

#endif  // KILN_COMPILER_CORE_IR_SYM_BIND_H_
