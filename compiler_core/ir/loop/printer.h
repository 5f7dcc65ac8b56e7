// Textual form of the loop IR, for tests (FileCheck) and --print-ir-after. Deterministic.
//
//   func @k0(%x: f32[4,16], %y: f32[4,16]) workspace(%t: f32[64]) anchor=Relu {
//     parallel for i in 0..4 {
//       vectorized for j in 0..16 {
//         %y[i, j] = max(%x[i, j], 0.0)
//       }
//     }
//   }
//
// A loop's kind prefixes it (serial loops have none): parallel, vectorized, unrolled, or a GPU
// binding blockIdx.x|y|z, threadIdx.x|y|z. Reduction loops print "reduce" after the range;
// immediates of a dtype other than i64 (ints) or f32 (floats) carry a ":dtype" suffix.
#ifndef KILN_COMPILER_CORE_IR_LOOP_PRINTER_H_
#define KILN_COMPILER_CORE_IR_LOOP_PRINTER_H_

#include <string>

#include "compiler_core/ir/loop/loop_ir.h"

namespace kiln::loop {

std::string PrintExpr(const Expr& expr);
/// Prints `stmt` with each line indented by `indent` spaces.
std::string PrintStmt(const Stmt& stmt, int indent = 0);
std::string PrintFunc(const Func& func);
const char* ForKindName(ForKind kind);
const char* BinaryOpName(BinaryOp op);
const char* UnaryOpName(UnaryOp op);

}  // namespace kiln::loop

#endif  // KILN_COMPILER_CORE_IR_LOOP_PRINTER_H_
