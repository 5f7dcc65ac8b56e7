// Checks the structural invariants of a loop IR func: scoping of buffers and loop variables,
// index counts and dtypes, and the legality of loop kinds that schedules set.
#ifndef KILN_COMPILER_CORE_IR_LOOP_VERIFIER_H_
#define KILN_COMPILER_CORE_IR_LOOP_VERIFIER_H_

#include "absl/status/status.h"
#include "compiler_core/ir/loop/loop_ir.h"

namespace kiln::loop {

/// Verifies `func`:
/// - params and workspaces have scope kGlobal and distinct names; every buffer a load, store or
///   alloc uses is one of them or was allocated (scope kLocal) by an enclosing Allocate, and no
///   alloc reuses the name of a visible buffer;
/// - every variable used is bound by an enclosing loop; no variable is bound by two loops and no
///   loop reuses the name of an enclosing loop (sibling loops may share a name: a split tail
///   copies the loops below the split under their names);
/// - loads and stores have one index per buffer dimension, every index is i64, a stored value
///   has the buffer's dtype, binary operands agree in dtype, a select's condition is bool and
///   its values agree, an if's condition is bool;
/// - no loop extent is negative (zero is legal: empty tensors lower to loops that run no
///   iteration); a vectorized loop is innermost and not a reduction; a
///   parallel loop is not a reduction and has no parallel loop around it;
/// - no store writes a const param and no workspace is const; `init` (checked first, by the
///   same rules) stores only to workspaces and loads only const params, the workspaces it
///   stores to (the persistent ones) and its own locals; the body never stores to a
///   persistent workspace.
/// Errors: kInvalidArgument "func 'NAME': in 'STMT': WHY", STMT being the first line of the
/// offending statement as PrintStmt prints it (the first violation found, in program order).
absl::Status VerifyFunc(const Func& func);

}  // namespace kiln::loop

#endif  // KILN_COMPILER_CORE_IR_LOOP_VERIFIER_H_
