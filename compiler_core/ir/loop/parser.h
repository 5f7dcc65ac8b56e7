// Parser for the textual loop IR: reads exactly what PrintFunc prints (the form is documented
// in printer.h), so that tests and kiln-opt can build kernels from text; print → parse → print
// is the identity.
#ifndef KILN_COMPILER_CORE_IR_LOOP_PARSER_H_
#define KILN_COMPILER_CORE_IR_LOOP_PARSER_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "compiler_core/ir/loop/loop_ir.h"

namespace kiln::loop {

/// Parses one func:
///
///   func @k(%x: f32[4,16], %y: f32[4,16]) workspace(%t: f32[64]) anchor=Relu {
///     parallel for i in 0..4 {
///       alloc %acc: f32[16] {
///         for j in 0..16 reduce {
///           %y[i, j] = max(%x[i, j], 0.0)
///         }
///       }
///     }
///   }
///
/// A global buffer's dim may be an i64 expression of params declared before it (a symbolic
/// dim): `func @k(%dims: i64[2], %x: f32[1,%dims[0],(%dims[0] + %dims[1])])`; a loop over one
/// has a run-time limit: `for i in 0..1099511627776 limit %dims[0] {`.
///
/// Names resolve by scope: a loop variable is visible in its loop's body (the innermost loop of
/// that name wins), an alloc'd buffer (scope kLocal) in its alloc's body, params and workspaces
/// everywhere. Dtypes come from the text (immediates without a ":dtype" suffix are i64 / f32;
/// a literal with '.', an exponent, inf or nan is a float). A statement list of one statement
/// is that statement, otherwise a Block (so an empty body is an empty Block). Whole lines
/// starting with `//` are comments. The result is not verified (call VerifyFunc).
/// Errors: kInvalidArgument, the message starting with "LINE:COL: " (1-based) and saying what
/// was expected: unknown keywords, ops, dtypes or anchors; undefined or duplicate buffers;
/// undefined loop variables; operand dtypes that differ; index counts that differ from the
/// buffer's rank; a stored value whose dtype is not the buffer's.
absl::StatusOr<Func> ParseFunc(std::string_view text);

}  // namespace kiln::loop

#endif  // KILN_COMPILER_CORE_IR_LOOP_PARSER_H_
