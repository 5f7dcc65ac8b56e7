// The loop IR: buffers, scalar expressions and loop-nest statements that one fused kernel
// lowers to. Nodes are immutable and shared (shared_ptr<const ...>); transformations build new
// trees. All loops start at 0 and have a static extent; a loop may also carry a run-time limit
// on its iterations (bounded dims, and symbolic dims: a loop over a dim known only at run time
// has its upper bound as extent and the dim as limit). A buffer's dims are static, or
// expressions of symbol values the kernel receives (docs/symbolic-shapes.md).
#ifndef KILN_COMPILER_CORE_IR_LOOP_LOOP_IR_H_
#define KILN_COMPILER_CORE_IR_LOOP_LOOP_IR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler_core/ir/graph/dtype.h"
#include "compiler_core/ir/graph/op.h"

namespace kiln::loop {

struct ExprNode;
using Expr = std::shared_ptr<const ExprNode>;

/// Buffer::shape's entry for a dim known only at run time; its expression is in
/// Buffer::sym_shape.
inline constexpr int64_t kSymbolicDim = -1;
/// The extent of a loop over a symbolic dim whose symbols have no upper bound: a count no run
/// reaches (2^40), so that the loop's `limit` alone stops it and products of a few such
/// extents stay far from overflow.
inline constexpr int64_t kUnboundedExtent = int64_t{1} << 40;

/// A multi-dimensional row-major array the kernel reads or writes.
struct Buffer {
  enum class Scope : uint8_t {
    kGlobal,  // passed in by the runtime: a kernel parameter or a workspace
    kLocal,   // allocated on the kernel's stack by an Allocate statement (e.g. a register tile)
    // GPU shared memory, allocated by an Allocate inside a launch's block loops and outside its
    // thread loops: one copy per block, seen by all its threads (a tile staged for reuse). On
    // a CPU (and in the interpreter) it is a local buffer.
    kShared,
  };
  std::string name;              // unique within a Func; printed as %name
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;    // static (kSymbolicDim where sym_shape has it); rank 0 is one element
  /// Empty for a static buffer. Otherwise one i64 expression per dim: an IntImm for a static
  /// dim, and for a symbolic one (shape[d] == kSymbolicDim) an expression of loads from a
  /// param that holds the run's symbol values (the kernel's "dims", i64[symbols]), e.g.
  /// `%dims[0] + %dims[1]`. Element (i0, ..., ik) is at the row-major offset over these dims.
  /// Only global buffers (params) may be symbolic.
  std::vector<Expr> sym_shape;
  Scope scope = Scope::kGlobal;
  /// A param whose contents are fixed when the kernel is compiled (a weight): printed
  /// "const"; part of the workload key; a nest that reads only such params and workspaces it
  /// computes from them can run once at load time instead of every call (Func::init).
  bool constant = false;

  /// Whether some dim is symbolic (sym_shape is set).
  bool is_symbolic() const { return !sym_shape.empty(); }
  /// The element count and bytes of a static buffer; -1 for a symbolic one.
  int64_t NumElements() const;
  int64_t NumBytes() const;
};
using BufferRef = std::shared_ptr<const Buffer>;
BufferRef MakeBuffer(std::string name, DType dtype, std::vector<int64_t> shape,
                     Buffer::Scope scope = Buffer::Scope::kGlobal, bool constant = false);
/// A global buffer whose dims are `dims` (i64 expressions; see Buffer::sym_shape). When every
/// dim is an IntImm the buffer is static (an empty sym_shape).
BufferRef MakeSymbolicBuffer(std::string name, DType dtype, std::vector<Expr> dims,
                             bool constant = false);
/// Dim `d` of `buffer` as an i64 expression (an IntImm for a static dim).
Expr BufferDim(const Buffer& buffer, size_t d);
/// Every dim of `buffer` (BufferDim).
std::vector<Expr> BufferDims(const Buffer& buffer);

/// A loop variable (always i64). Identity is the object; `name` is unique within a Func and is
/// how schedule primitives refer to the loop that binds it.
struct VarNode {
  std::string name;
};
using Var = std::shared_ptr<const VarNode>;
Var MakeVar(std::string name);

enum class ExprKind : uint8_t { kIntImm, kFloatImm, kVar, kBinary, kUnary, kSelect, kLoad, kCast };

enum class BinaryOp : uint8_t {
  kAdd,
  kSub,
  kMul,
  // Integer division (kDiv, kFloorDiv, kFloorMod) is total: a divisor of 0 gives 0, and a signed
  // MIN / -1 gives MIN (remainder 0) where C leaves both undefined and x86 traps.
  kDiv,       // float division; for integers, truncating division (C semantics)
  kFloorDiv,  // integer division rounding toward negative infinity (index arithmetic)
  kFloorMod,  // remainder with the sign of the divisor (index arithmetic)
  kMin,
  kMax,
  kPow,  // float only
  kLt,
  kLe,
  kGt,
  kGe,
  kEq,
  kNe,  // result dtype bool
  kAnd,
  kOr,  // bool operands
  kShl,
  kShr,  // integer shifts; kShr is arithmetic for signed, logical for unsigned dtypes
  // i32 operands, each four packed bytes (byte k = bits 8k..8k+7): the i32 sum over k of
  // a's byte k as uint8 times b's byte k as int8 (exact; |result| <= 4 * 255 * 128). The
  // product of x86's VPDPBUSD (AVX-512 VNNI / AVX-VNNI) and CUDA's __dp4a(u8, s8); printed
  // dot4_u8s8(a, b). Codegen maps `acc + dot4_u8s8(a, b)` to VPDPBUSD where the target has it.
  kDot4U8S8,
};

enum class UnaryOp : uint8_t {
  kNeg, kAbs, kExp, kLog, kSqrt, kTanh, kErf, kFloor, kCeil, kNot,
  // Float only (identity on integers for kRound): round half to even, trigonometric and
  // hyperbolic functions and their inverses.
  kRound, kSin, kCos, kTan, kAsin, kAcos, kAtan, kSinh, kCosh, kAsinh, kAcosh, kAtanh,
};

/// A scalar expression. One node type with a kind tag (like tinygrad's UOp); which fields are
/// meaningful depends on `kind`.
struct ExprNode {
  ExprKind kind;
  DType dtype;                 // result type; i64 for index arithmetic, bool for conditions
  int64_t int_value = 0;       // kIntImm (also bool immediates: 0 / 1)
  double float_value = 0;      // kFloatImm
  Var var;                     // kVar
  BinaryOp binary_op{};        // kBinary
  UnaryOp unary_op{};          // kUnary
  BufferRef buffer;            // kLoad
  /// kBinary: {a, b}; kUnary: {a}; kSelect: {cond, true_value, false_value};
  /// kLoad: one index per buffer dimension; kCast: {a}.
  std::vector<Expr> operands;
};

// Expression constructors. Binary/unary constructors take their dtype from the operands
// (bool for comparisons); both operands of a binary op must have the same dtype.
Expr IntImm(int64_t v, DType dtype = DType::kInt64);
Expr FloatImm(double v, DType dtype = DType::kFloat32);
Expr VarRef(const Var& var);
Expr Binary(BinaryOp op, Expr a, Expr b);
Expr Unary(UnaryOp op, Expr a);
Expr Select(Expr cond, Expr true_value, Expr false_value);
Expr Load(BufferRef buffer, std::vector<Expr> indices);
Expr Cast(DType dtype, Expr a);

inline Expr operator+(Expr a, Expr b) { return Binary(BinaryOp::kAdd, std::move(a), std::move(b)); }
inline Expr operator-(Expr a, Expr b) { return Binary(BinaryOp::kSub, std::move(a), std::move(b)); }
inline Expr operator*(Expr a, Expr b) { return Binary(BinaryOp::kMul, std::move(a), std::move(b)); }
inline Expr Min(Expr a, Expr b) { return Binary(BinaryOp::kMin, std::move(a), std::move(b)); }
inline Expr Max(Expr a, Expr b) { return Binary(BinaryOp::kMax, std::move(a), std::move(b)); }

enum class StmtKind : uint8_t {
  kFor,
  kStore,
  kBlock,
  kIf,
  kAllocate,
  kMma,
  kAsyncCopy,
  kAsyncWait,
};

/// A warp-level tensor-core multiply-accumulate (StmtKind::kMma): the shape and input types of
/// PTX's mma.sync (PTX ISA 8.x, "Matrix multiply-accumulate operation using mma instruction");
/// accumulation is always f32.
enum class MmaShape : uint8_t {
  kNone,
  kM16N8K8Tf32,   // m16n8k8, A and B rounded to tf32 (sm_80+)
  kM16N8K16F16,   // m16n8k16, A and B f16 (sm_80+)
  kM16N8K16Bf16,  // m16n8k16, A and B bf16 (sm_80+)
};
/// "m16n8k8.tf32", "m16n8k16.f16", "m16n8k16.bf16" (printed after "mma.").
const char* MmaShapeName(MmaShape shape);
/// The K of one MMA of `shape` (8 or 16).
int MmaK(MmaShape shape);
/// The type A and B are rounded to for `shape`: f16, bf16, or f32 for tf32 (kept in f32
/// registers; the hardware reads their tf32 part).
DType MmaInputType(MmaShape shape);

/// How a kMma statement's tiles are indexed (StmtNode::mma_layout bits): by default A as
/// [k, m] and B as [k, n] (k-major); kMmaAMajorM makes A [m, k], kMmaBMajorN makes B [n, k]
/// (the layout whose rows are contiguous along k, as a row-major A[M, K] or a B given as
/// [N, K] are in global memory). Printed "layout(km|mk, kn|nk)" when not the default.
inline constexpr uint8_t kMmaAMajorM = 1;
inline constexpr uint8_t kMmaBMajorN = 2;

/// How a loop executes. Set by schedule primitives; lowering emits kSerial only.
enum class ForKind : uint8_t {
  kSerial,
  kParallel,    // iterations split across the runtime's thread pool
  kVectorized,  // iterations become SIMD lanes; must be innermost, static extent
  kUnrolled,    // body replicated `extent` times
  // GPU thread binding (CUDA's grid): each iteration runs on its own block or thread, the loop
  // variable being that index. Printed blockIdx.x .. threadIdx.z. Iterations are independent
  // (no reduction loop); within one nest each index is bound once, and a block loop is never
  // inside a thread loop. Only a GPU target's code generator accepts them.
  kBlockIdxX,
  kBlockIdxY,
  kBlockIdxZ,
  kThreadIdxX,
  kThreadIdxY,
  kThreadIdxZ,
};

/// Whether `kind` binds the loop to a GPU block or thread index.
inline bool IsThreadBound(ForKind kind) { return kind >= ForKind::kBlockIdxX; }
/// Whether `kind` binds the loop to a block index (blockIdx.x/y/z).
inline bool IsBlockBound(ForKind kind) {
  return kind >= ForKind::kBlockIdxX && kind <= ForKind::kBlockIdxZ;
}

struct StmtNode;
using Stmt = std::shared_ptr<const StmtNode>;

/// A statement. One node type with a kind tag; which fields are meaningful depends on `kind`.
struct StmtNode {
  StmtKind kind;
  // kFor: for loop_var in [0, extent) { body }; with `limit` (i64, may be null) the loop stops
  // before min(extent, limit): a run-time bound (a bounded dim's length; schedule::BoundLoops)
  // on a serial or parallel loop, reading only enclosing loops' variables and params.
  Var loop_var;
  int64_t extent = 0;
  Expr limit;
  ForKind for_kind = ForKind::kSerial;
  /// True if the loop iterates a reduction axis (a loop-carried dependence through the store
  /// it accumulates into): it may not be vectorized or parallelized.
  bool is_reduction = false;
  Stmt body;
  // kStore: buffer[indices] = value. kAllocate: buffer (kLocal or kShared scope) lives for
  // `body`.
  BufferRef buffer;
  std::vector<Expr> indices;
  Expr value;
  // kBlock: stmts run in order.
  std::vector<Stmt> stmts;
  // kIf: if (cond) then_body else else_body (else_body may be null).
  Expr cond;
  Stmt then_body;
  Stmt else_body;
  // kMma (`mma` the shape): one lane's part of a warp's D = A B + C on a 16 x 8 tile, C and D
  // being `buffer` at `indices` and the 3 elements after it along the last dim (f32). `value`
  // is Load(a, {..., a_k, a_m}) * Load(b, {..., b_k, b_n}): A[r][k] = a[..., a_k + k, a_m + r]
  // and B[k][c] = b[..., b_k + k, b_n + c] (k-major tiles, usually shared; the leading indices,
  // e.g. a pipeline stage, are fixed), the last two swapped per `mma_layout` (kMmaAMajorM:
  // a[..., a_m + r, a_k + k]; kMmaBMajorN likewise). `cond` is the lane (0..31).
  // Lane l with g = l / 4, t = l % 4 accumulates element e at row r = g + 8 (e / 2), column
  // c = 2 t + e % 2 over k < K (MmaK), A and B rounded to the shape's input type: exactly
  // PTX's fragment layout of C/D, so the 32 lanes together hold the whole tile and the GPU runs
  // one mma.sync for them (CPUs and the interpreter run the sums, MmaAsLoops).
  MmaShape mma = MmaShape::kNone;
  uint8_t mma_layout = 0;
  // kAsyncCopy: an asynchronous copy (PTX cp.async, sm_80+) of `extent` consecutive elements
  // along the last dim from global memory, `value` being the Load of the first, to `buffer`
  // (shared) at `indices` and on; where `cond` (bool, may be null: always) is false the
  // elements are zeros instead. The copy is complete only after a later kAsyncWait of this
  // thread. extent * element size is 4, 8 or 16 bytes, and both addresses are aligned to it.
  // Off the GPU it is a plain copy.
  // kAsyncWait: commits the thread's async copies issued since the last wait as one group,
  // then waits until at most `extent` of its groups are still in flight (cp.async.commit_group;
  // cp.async.wait_group N). Other threads see the data after a barrier. Off the GPU a no-op.
};

Stmt For(Var loop_var, int64_t extent, Stmt body, ForKind kind = ForKind::kSerial,
         bool is_reduction = false);
Stmt Store(BufferRef buffer, std::vector<Expr> indices, Expr value);
Stmt Block(std::vector<Stmt> stmts);
Stmt IfThenElse(Expr cond, Stmt then_body, Stmt else_body = nullptr);
Stmt Allocate(BufferRef buffer, Stmt body);
/// A kMma statement (see StmtNode). `a_tile` and `b_tile` are the loads at the tiles' origins.
Stmt Mma(MmaShape shape, BufferRef acc, std::vector<Expr> acc_indices, Expr a_tile, Expr b_tile,
         Expr lane, uint8_t layout = 0);
/// A kAsyncCopy statement (see StmtNode): `lanes` elements from `src` (a Load) to
/// `dst[indices]`, zeros where `in_bounds` (may be null) is false.
Stmt AsyncCopy(BufferRef dst, std::vector<Expr> indices, Expr src, int64_t lanes,
               Expr in_bounds = nullptr);
/// A kAsyncWait statement: commit, then wait until at most `pending` groups are in flight.
Stmt AsyncWait(int64_t pending);
/// What a kAsyncCopy statement does, as plain statements (an unrolled loop over its lanes).
Stmt AsyncCopyAsLoops(const StmtNode& copy);
/// What a kMma statement computes for its lane, as plain loops (unrolled e < 4, k < K) over
/// its buffers, with A and B rounded to f16 / bf16 (casts) for those shapes; tf32 is not
/// rounded off the GPU (its 10-bit mantissa rounding changes results within tf32's tolerance).
Stmt MmaAsLoops(const StmtNode& mma);

/// One kernel: a function over buffers. The runtime calls it with one pointer per entry of
/// `params` followed by one per entry of `workspaces` (see runtime/abi.h).
///
/// `init` (may be null) runs once, before the first call of `body`, with the same arguments:
/// at artifact load, and once per measurement. It reads only constant params and the
/// workspaces it writes itself, and writes only workspaces; those are the kernel's
/// *persistent* workspaces (PersistentWorkspaces): they keep their contents from `init` for
/// every later call, and `body` only reads them (e.g. Winograd's transformed weights; the
/// weight prepacking ONNX Runtime does at session creation). Other workspaces are scratch:
/// their contents on entry to `body` are unspecified.
struct Func {
  std::string name;                  // exported symbol name; a C identifier
  std::vector<BufferRef> params;     // bound to graph values (inputs, weights, results)
  std::vector<BufferRef> workspaces; // kernel-private buffers the runtime allocates
  Stmt init;
  Stmt body;
  /// The op the kernel was lowered from (its fusion group's anchor); guides default schedules.
  graph::OpKind anchor = graph::OpKind::kIdentity;
};

/// Whether some param of `func` has symbolic dims (the kernel's work follows the run's
/// symbol values).
bool HasSymbolicParams(const Func& func);

/// The workspaces `func.init` stores to, in `func.workspaces` order (empty without init).
std::vector<BufferRef> PersistentWorkspaces(const Func& func);

/// The symbol of `func`'s init entry point: "<name>.init".
std::string InitSymbol(const std::string& func_name);

}  // namespace kiln::loop

#endif  // KILN_COMPILER_CORE_IR_LOOP_LOOP_IR_H_
