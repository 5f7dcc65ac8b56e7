// Vectorized loops as explicit SIMD code. The body is emitted once at width W with the loop
// variable as the lane vector base + <0..W-1>. Each access is classified by the linear
// coefficient of its flat index in that variable (vector_analysis.h): 0 → scalar access (loads
// are splatted on use), 1 → one contiguous vector load/store, other small constant strides →
// (loads) one contiguous load of the span plus a shuffle, anything else → gather/scatter.
#include <algorithm>
#include <cstdlib>

#include "compiler_core/codegen/llvm/emitter.h"
#include "compiler_core/codegen/llvm/vector_analysis.h"

namespace kiln::codegen {
namespace {

// Extents up to this become one SIMD body; longer loops are strip-mined into chunks.
constexpr int64_t kMaxSingleVectorLanes = 64;
// Loads with a constant stride up to this (in elements) read the whole span contiguously and
// pick lanes with a shuffle instead of a gather. The span holds only elements between accessed
// ones, so it stays in bounds.
constexpr int64_t kMaxShuffledStride = 4;

}  // namespace

void KernelEmitter::EmitVectorizedFor(const loop::StmtNode& s) {
  const loop::VarNode* var = s.loop_var.get();
  if (s.extent == 1 || vs_.lanes > 1 || !CanVectorizeBody(s.body, var)) {
    // Always correct; LLVM's loop vectorizer may still vectorize it.
    EmitSerialFor(s);
    return;
  }
  if (s.extent <= kMaxSingleVectorLanes) {
    EmitVectorBody(s, b_.getInt64(0), static_cast<int>(s.extent));
    return;
  }
  const int64_t chunk = std::max<int64_t>(16, 2 * target_.f32_lanes());
  const int64_t num_chunks = s.extent / chunk;
  EmitLoop(b_.getInt64(0), b_.getInt64(num_chunks), /*nonempty=*/true, [&](llvm::Value* iv) {
    llvm::Value* base = b_.CreateMul(iv, b_.getInt64(chunk), "", /*HasNUW=*/true,
                                     /*HasNSW=*/true);
    EmitVectorBody(s, base, static_cast<int>(chunk));
  });
  const int64_t tail = s.extent % chunk;
  if (tail == 1) {
    fs_.vars[var] = b_.getInt64(num_chunks * chunk);
    EmitStmt(s.body);
    fs_.vars.erase(var);
  } else if (tail > 1) {
    EmitVectorBody(s, b_.getInt64(num_chunks * chunk), static_cast<int>(tail));
  }
}

void KernelEmitter::EmitVectorBody(const loop::StmtNode& s, llvm::Value* base, int lanes) {
  VectorState saved = vs_;
  vs_ = {s.loop_var.get(), lanes, base};
  fs_.vars[s.loop_var.get()] = base;  // used when evaluating an index at lane 0
  EmitStmt(s.body);
  fs_.vars.erase(s.loop_var.get());
  vs_ = saved;
}

llvm::Value* KernelEmitter::LaneZeroFlatIndex(const loop::Buffer& buffer,
                                              const std::vector<loop::Expr>& indices) {
  VectorState saved = vs_;
  vs_ = VectorState{};
  llvm::Value* idx = FlatIndex(buffer, indices);
  vs_ = saved;
  return idx;
}

llvm::Value* KernelEmitter::EmitVectorLoad(const loop::ExprNode& e, llvm::Value* base_ptr) {
  const loop::Buffer& buf = *e.buffer;
  llvm::Type* elem = MemType(buf.dtype);
  llvm::Align align(DTypeSize(buf.dtype));
  std::optional<int64_t> coeff = FlatCoefficient(buf, e.operands, vs_.var);
  llvm::Value* v;
  if (coeff && *coeff == 0) {
    llvm::Value* ptr = b_.CreateInBoundsGEP(elem, base_ptr, LaneZeroFlatIndex(buf, e.operands));
    v = b_.CreateAlignedLoad(elem, ptr, align);
  } else if (coeff && *coeff == 1) {
    llvm::Value* ptr = b_.CreateInBoundsGEP(elem, base_ptr, LaneZeroFlatIndex(buf, e.operands));
    v = b_.CreateAlignedLoad(llvm::FixedVectorType::get(elem, vs_.lanes), ptr, align);
  } else if (coeff && std::abs(*coeff) <= kMaxShuffledStride) {
    // Lane l reads element idx0 + c*l: load [min, max] of those and shuffle.
    int64_t c = *coeff;
    int64_t first = std::min<int64_t>(0, c * (vs_.lanes - 1));
    int64_t span = std::abs(c) * (vs_.lanes - 1) + 1;
    llvm::Value* start = b_.CreateAdd(LaneZeroFlatIndex(buf, e.operands), b_.getInt64(first));
    llvm::Value* ptr = b_.CreateInBoundsGEP(elem, base_ptr, start);
    llvm::Value* wide = b_.CreateAlignedLoad(
        llvm::FixedVectorType::get(elem, static_cast<unsigned>(span)), ptr, align);
    llvm::SmallVector<int, 64> mask;
    for (int l = 0; l < vs_.lanes; ++l) mask.push_back(static_cast<int>(c * l - first));
    v = b_.CreateShuffleVector(wide, mask);
  } else {
    llvm::Value* ptrs = b_.CreateInBoundsGEP(elem, base_ptr, Splat(FlatIndex(buf, e.operands)));
    v = b_.CreateMaskedGather(llvm::FixedVectorType::get(elem, vs_.lanes), ptrs, align);
  }
  if (buf.dtype == DType::kBool) {
    v = b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  }
  return v;
}

void KernelEmitter::EmitVectorStore(const loop::StmtNode& s, llvm::Value* base_ptr,
                                    llvm::Value* value) {
  const loop::Buffer& buf = *s.buffer;
  llvm::Type* elem = MemType(buf.dtype);
  llvm::Align align(DTypeSize(buf.dtype));
  std::optional<int64_t> coeff = FlatCoefficient(buf, s.indices, vs_.var);
  if (coeff && *coeff == 0) {
    // One location for every lane: the last lane's value is what serial order leaves.
    if (value->getType()->isVectorTy()) value = b_.CreateExtractElement(value, vs_.lanes - 1);
    llvm::Value* ptr = b_.CreateInBoundsGEP(elem, base_ptr, LaneZeroFlatIndex(buf, s.indices));
    b_.CreateAlignedStore(value, ptr, align);
  } else if (coeff && *coeff == 1) {
    llvm::Value* ptr = b_.CreateInBoundsGEP(elem, base_ptr, LaneZeroFlatIndex(buf, s.indices));
    b_.CreateAlignedStore(Splat(value), ptr, align);
  } else {
    // Scatter writes overlapping lanes in lane order, matching serial order.
    llvm::Value* ptrs = b_.CreateInBoundsGEP(elem, base_ptr, Splat(FlatIndex(buf, s.indices)));
    b_.CreateMaskedScatter(Splat(value), ptrs, align);
  }
}

}  // namespace kiln::codegen
