// A reference interpreter for loop IR Funcs over host buffers. It executes every loop serially
// (vectorized/parallel/unrolled kinds are semantically serial loops) with the same scalar
// semantics as the LLVM code generator, so lowering and schedules can be tested numerically.
#ifndef KILN_COMPILER_CORE_IR_LOOP_INTERPRETER_H_
#define KILN_COMPILER_CORE_IR_LOOP_INTERPRETER_H_

#include <vector>

#include "absl/status/status.h"
#include "compiler_core/ir/loop/loop_ir.h"

namespace kiln::loop {

/// Runs `func` on `args`: one host pointer per entry of func.params followed by one per entry
/// of func.workspaces, each pointing at a row-major array of the buffer's dtype and shape (a
/// symbolic buffer's dims evaluated from the params they read).
/// A func with an init runs it first, then the body (one call as the runtime makes the first).
/// Semantics match codegen: f32 arithmetic is rounded to f32 after every operation (f16 to
/// f16), integer kDiv truncates, kFloorDiv/kFloorMod round toward negative infinity, integer
/// results wrap to their dtype's width, Cast float→int truncates, Cast to bool tests != 0.
/// Select evaluates both arms (as vector code does), so a load out of bounds in either arm is
/// an error. kLocal buffers of Allocate statements are zero-filled on entry.
/// Errors: kInvalidArgument for a wrong argument count or an unbound buffer/variable;
/// kOutOfRange naming the buffer for an index out of bounds; kInvalidArgument for an integer
/// division by zero.
absl::Status InterpretFunc(const Func& func, const std::vector<void*>& args);

}  // namespace kiln::loop

#endif  // KILN_COMPILER_CORE_IR_LOOP_INTERPRETER_H_
