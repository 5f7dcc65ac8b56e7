// KernelEmitter: translates one loop::Func into LLVM IR. One emitter core for every target,
// split across files by concern: emitter.cc (entry, the backend choice), emit_stmt.cc
// (statements, loops, memory), emit_vector.cc (SIMD loops), emit_expr.cc (expressions, casts),
// emit_intrinsics.cc (math, min/max, floor division) and emit_gpu_math.cc (the GPU math
// library: f32 polynomials, also run by GPU emulation on a host). What differs per code
// generator is a small set of hooks (the ABI of entry points, function attributes, loop binding,
// address spaces of allocations, warp-level statements, the math library) implemented once for
// CPUs (cpu_emitter.h) and once for NVPTX (compiler_core/codegen/nvptx/nvptx_emitter.h);
// object emission is codegen.cc's (an ELF object per shard for CPUs, PTX text for NVPTX).
#ifndef KILN_COMPILER_CORE_CODEGEN_LLVM_EMITTER_H_
#define KILN_COMPILER_CORE_CODEGEN_LLVM_EMITTER_H_

#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "compiler_core/ir/loop/loop_ir.h"
#include "compiler_core/support/target.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"

namespace kiln::codegen {

/// Emits one loop::Func into `module`, in the ABI of the target's backend (Create): on a CPU
///   extern "C" void <name>(const kiln_context* ctx, void* const* args)
/// (CpuKernelEmitter), on a GPU one PTX kernel entry per launch (NvptxKernelEmitter).
class KernelEmitter {
 public:
  virtual ~KernelEmitter() = default;

  /// The emitter of `target`'s backend: NVPTX for kind "cuda", else the CPU's.
  static std::unique_ptr<KernelEmitter> Create(llvm::Module& module, const Target& target,
                                               const loop::Func& func);

  /// Emits the kernel. Errors: kInvalidArgument for malformed loop IR (an unbound variable, a
  /// buffer the func does not declare, an unsupported dtype combination, a statement the
  /// target cannot run).
  absl::Status Emit();

 protected:
  KernelEmitter(llvm::Module& module, const Target& target, const loop::Func& func);

  // ---- Backend hooks.
  /// ABI: creates the entry point(s) and emits func_.body into them.
  virtual absl::Status EmitEntries() = 0;
  /// Target attributes of every function the backend creates.
  virtual void SetFunctionAttributes(llvm::Function* fn) = 0;
  /// A ForKind::kParallel loop.
  virtual void EmitParallelFor(const loop::StmtNode& s) = 0;
  /// Loop binding: a loop bound to a block or thread index.
  virtual void EmitBoundFor(const loop::StmtNode& s) = 0;
  /// Address spaces: a kAllocate's storage (by default a stack array).
  virtual void EmitAllocate(const loop::StmtNode& s);
  /// Warp-level statements; by default what they mean as loops (loop::MmaAsLoops,
  /// loop::AsyncCopyAsLoops; an async wait is then a no-op).
  virtual void EmitMma(const loop::StmtNode& s);
  virtual void EmitAsyncCopy(const loop::StmtNode& s);
  virtual void EmitAsyncWait(const loop::StmtNode& s) {}
  /// The math library: whether transcendental functions use the GPU math library
  /// (emit_gpu_math.cc) instead of LLVM intrinsics and libm.
  virtual bool UsesGpuMathLibrary() const = 0;

  // What is bound while emitting one LLVM function (the kernel body or an outlined body).
  struct FunctionState {
    llvm::Function* fn = nullptr;
    llvm::Value* ctx = nullptr;  // const kiln_context*
    llvm::MapVector<const loop::VarNode*, llvm::Value*> vars;   // scalar i64 values
    llvm::MapVector<const loop::Buffer*, llvm::Value*> buffers;  // base pointers
    int parallel_depth = 0;
  };
  // The vectorized loop being emitted, if any: its variable is the lane vector base + <0..W-1>.
  struct VectorState {
    const loop::VarNode* var = nullptr;
    int lanes = 1;
    llvm::Value* base = nullptr;  // scalar i64: the value of var in lane 0
  };

  // ---- emit_gpu_math.cc: the GPU math library (f32 polynomials; f16 through f32). NVPTX has
  // no libm to call, and LLVM cannot lower llvm.exp/log/pow for it.
  llvm::Value* EmitGpuMath(loop::UnaryOp op, DType dtype, llvm::Value* a);
  llvm::Value* EmitGpuPow(DType dtype, llvm::Value* a, llvm::Value* b);
  llvm::Value* EmitLogF32(llvm::Value* x);
  /// sin(x) (cosine false) or cos(x) for f32: Cody-Waite reduction by pi/2, then Cephes'
  /// minimax polynomials on [-pi/4, pi/4].
  llvm::Value* EmitSinCosF32(llvm::Value* x, bool cosine);
  llvm::Value* EmitAtanF32(llvm::Value* x);
  llvm::Value* EmitErfF32(llvm::Value* x);

  // ---- emit_stmt.cc: statements and memory.
  void EmitStmt(const loop::Stmt& s);
  void EmitFor(const loop::StmtNode& s);
  /// The end of loop `s`'s iterations: its extent, or min(extent, limit) clamped at 0.
  llvm::Value* LoopEnd(const loop::StmtNode& s);
  void EmitSerialFor(const loop::StmtNode& s);
  void EmitUnrolledFor(const loop::StmtNode& s);
  void EmitIf(const loop::StmtNode& s);
  void EmitStore(const loop::StmtNode& s);
  /// Emits `for iv in [begin, end)`, calling body(iv) with the builder inside the loop. With
  /// `nonempty` the entry guard is omitted. `loop_md` is attached to the back edge.
  void EmitLoop(llvm::Value* begin, llvm::Value* end, bool nonempty,
                const std::function<void(llvm::Value* iv)>& body,
                llvm::MDNode* loop_md = nullptr);
  /// Row-major flattened i64 index (a <W x i64> vector if an index varies across lanes).
  llvm::Value* FlatIndex(const loop::Buffer& buffer, const std::vector<loop::Expr>& indices);
  /// FlatIndex without the dims a GPU thread holds privately (private_dims_).
  llvm::Value* FlatIndexOf(const loop::Buffer& buffer, const std::vector<loop::Expr>& indices);
  llvm::Value* BufferPointer(const loop::Buffer& buffer);
  llvm::Value* EmitLoad(const loop::ExprNode& e);
  llvm::AllocaInst* CreateEntryAlloca(llvm::Type* type, uint64_t align, const std::string& name);

  // ---- emit_vector.cc: SIMD loops.
  void EmitVectorizedFor(const loop::StmtNode& s);
  void EmitVectorBody(const loop::StmtNode& s, llvm::Value* base, int lanes);
  /// Flat index of a contiguous access evaluated at lane 0 (scalar i64).
  llvm::Value* LaneZeroFlatIndex(const loop::Buffer& buffer,
                                 const std::vector<loop::Expr>& indices);
  llvm::Value* EmitVectorLoad(const loop::ExprNode& e, llvm::Value* base_ptr);
  void EmitVectorStore(const loop::StmtNode& s, llvm::Value* base_ptr, llvm::Value* value);

  // ---- emit_expr.cc: expressions.
  llvm::Value* EmitExpr(const loop::Expr& e);
  llvm::Value* EmitBinary(const loop::ExprNode& e);
  llvm::Value* EmitCompare(loop::BinaryOp op, DType dtype, llvm::Value* a, llvm::Value* b);
  llvm::Value* EmitCast(DType to, DType from, llvm::Value* v);
  llvm::Value* EmitSelect(const loop::ExprNode& e);

  // ---- emit_intrinsics.cc: math.
  llvm::Value* EmitUnary(const loop::ExprNode& e);
  llvm::Value* EmitMinMax(bool is_max, DType dtype, llvm::Value* a, llvm::Value* b);
  llvm::Value* EmitFloorDivMod(bool is_mod, const loop::ExprNode& e, llvm::Value* a,
                               llvm::Value* b);
  /// Integer division made total, as the loop IR defines it: a divisor of 0 gives 0, and for
  /// signed types MIN / -1 gives MIN and its remainder 0 (x86's idiv traps on both). `op`
  /// computes the result from `a` and a divisor that is neither; divisors known to be safe
  /// (a constant other than 0 and -1) skip the guards.
  llvm::Value* EmitTotalDivision(const loop::Expr& divisor, bool is_signed, llvm::Value* a,
                                 llvm::Value* b,
                                 const std::function<llvm::Value*(llvm::Value*, llvm::Value*)>& op);
  llvm::Value* EmitIntrinsic(llvm::Intrinsic::ID id, llvm::Value* a, llvm::Value* b = nullptr);
  /// acc + dot4_u8s8(a, b) (acc may be null: 0) on i32 scalars or <W x i32> vectors; VPDPBUSD
  /// where the target has it at W lanes, else widened byte products.
  llvm::Value* EmitDot4U8S8(llvm::Value* acc, llvm::Value* a, llvm::Value* b);
  static bool IsF32Vector(llvm::Value* v);
  /// Horner evaluation of c0 x^k + c1 x^(k-1) + ... with fmuladd.
  llvm::Value* EmitPolynomial(llvm::Value* x, std::initializer_list<double> coeffs);
  /// exp and tanh on <W x float> without libm calls.
  llvm::Value* EmitVectorExpF32(llvm::Value* x);
  llvm::Value* EmitVectorTanhF32(llvm::Value* x);
  /// Calls a libm function (e.g. tanhf) lane by lane.
  llvm::Value* EmitLibmCall(const char* f32_name, const char* f64_name, DType dtype,
                            llvm::Value* a);

  // ---- helpers (emit_expr.cc).
  llvm::Type* RegType(DType dtype);  // bool → i1
  llvm::Type* MemType(DType dtype);  // bool → i8, f16 → half
  llvm::Type* WithLanes(llvm::Type* scalar, llvm::Value* like);
  /// Splats a scalar to the current lane count (no-op in scalar code or for vectors).
  llvm::Value* Splat(llvm::Value* v);
  /// Makes both operands vectors if either is.
  void Unify(llvm::Value*& a, llvm::Value*& b);
  llvm::Value* Fail(const std::string& message, llvm::Type* type = nullptr);

  llvm::Module& module_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  const Target& target_;
  const loop::Func& func_;
  std::set<const loop::Buffer*> used_buffers_;  // buffers func_.body loads or stores
  FunctionState fs_;
  VectorState vs_;
  bool index_mode_ = false;  // emitting index arithmetic: integer ops get nsw
  // Dims of local buffers each GPU thread holds its own slice of, dropped from their indices.
  std::map<const loop::Buffer*, std::vector<bool>> private_dims_;
  absl::Status status_;
};

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CORE_CODEGEN_LLVM_EMITTER_H_
