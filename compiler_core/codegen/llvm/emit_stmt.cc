// Statement emission: serial and unrolled loops, branches, stack allocations, and scalar loads
// and stores with row-major index flattening. Vectorized loops live in emit_vector.cc and
// parallel loops in the backends (cpu_emitter.cc, ../nvptx/nvptx_emitter.cc).
#include "absl/strings/str_cat.h"
#include "compiler_core/codegen/llvm/emitter.h"
#include "compiler_core/codegen/llvm/vector_analysis.h"
#include "compiler_core/ir/loop/printer.h"

namespace kiln::codegen {

using loop::ForKind;
using loop::Stmt;
using loop::StmtKind;

namespace {

// Unrolled loops up to this extent are replicated with the variable as a constant; longer ones
// become a loop carrying llvm.loop.unroll.full.
constexpr int64_t kMaxReplicatedUnroll = 64;

llvm::MDNode* MakeLoopMetadata(llvm::LLVMContext& ctx, llvm::ArrayRef<llvm::Metadata*> props) {
  llvm::SmallVector<llvm::Metadata*, 4> ops = {nullptr};
  ops.append(props.begin(), props.end());
  llvm::MDNode* node = llvm::MDNode::getDistinct(ctx, ops);
  node->replaceOperandWith(0, node);
  return node;
}

}  // namespace

void KernelEmitter::EmitStmt(const Stmt& s) {
  if (!s || !status_.ok()) return;
  switch (s->kind) {
    case StmtKind::kFor:
      EmitFor(*s);
      return;
    case StmtKind::kStore:
      EmitStore(*s);
      return;
    case StmtKind::kBlock:
      for (const Stmt& c : s->stmts) EmitStmt(c);
      return;
    case StmtKind::kIf:
      EmitIf(*s);
      return;
    case StmtKind::kAllocate:
      EmitAllocate(*s);
      return;
    case StmtKind::kMma:
      EmitMma(*s);
      return;
    case StmtKind::kAsyncCopy:
      EmitAsyncCopy(*s);
      return;
    case StmtKind::kAsyncWait:
      EmitAsyncWait(*s);
      return;
  }
  Fail("unknown statement kind");
}

void KernelEmitter::EmitFor(const loop::StmtNode& s) {
  if (s.extent <= 0) return;
  switch (s.for_kind) {
    case ForKind::kSerial:
      return EmitSerialFor(s);
    case ForKind::kUnrolled:
      return EmitUnrolledFor(s);
    case ForKind::kVectorized:
      return EmitVectorizedFor(s);
    case ForKind::kParallel:
      return EmitParallelFor(s);
    case ForKind::kBlockIdxX:
    case ForKind::kBlockIdxY:
    case ForKind::kBlockIdxZ:
    case ForKind::kThreadIdxX:
    case ForKind::kThreadIdxY:
    case ForKind::kThreadIdxZ:
      return EmitBoundFor(s);
  }
}

void KernelEmitter::EmitLoop(llvm::Value* begin, llvm::Value* end, bool nonempty,
                             const std::function<void(llvm::Value* iv)>& body,
                             llvm::MDNode* loop_md) {
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  llvm::BasicBlock* loop_bb = llvm::BasicBlock::Create(ctx_, "loop", fs_.fn);
  llvm::BasicBlock* exit_bb = llvm::BasicBlock::Create(ctx_, "loop.exit");
  if (nonempty) {
    b_.CreateBr(loop_bb);
  } else {
    b_.CreateCondBr(b_.CreateICmpSLT(begin, end), loop_bb, exit_bb);
  }
  b_.SetInsertPoint(loop_bb);
  llvm::PHINode* iv = b_.CreatePHI(b_.getInt64Ty(), 2, "iv");
  iv->addIncoming(begin, pre);
  body(iv);
  llvm::Value* next = b_.CreateAdd(iv, b_.getInt64(1), "iv.next", /*HasNUW=*/true,
                                   /*HasNSW=*/true);
  llvm::BasicBlock* latch = b_.GetInsertBlock();
  llvm::BranchInst* br = b_.CreateCondBr(b_.CreateICmpSLT(next, end), loop_bb, exit_bb);
  if (loop_md != nullptr) br->setMetadata(llvm::LLVMContext::MD_loop, loop_md);
  iv->addIncoming(next, latch);
  exit_bb->insertInto(fs_.fn);
  b_.SetInsertPoint(exit_bb);
}

llvm::Value* KernelEmitter::LoopEnd(const loop::StmtNode& s) {
  if (!s.limit) return b_.getInt64(s.extent);
  llvm::Value* limit = EmitExpr(s.limit);
  llvm::Value* end =
      b_.CreateSelect(b_.CreateICmpSLT(limit, b_.getInt64(s.extent)), limit, b_.getInt64(s.extent));
  return b_.CreateSelect(b_.CreateICmpSGT(end, b_.getInt64(0)), end, b_.getInt64(0), "end");
}

void KernelEmitter::EmitSerialFor(const loop::StmtNode& s) {
  const loop::VarNode* var = s.loop_var.get();
  if (s.limit) {
    EmitLoop(b_.getInt64(0), LoopEnd(s), /*nonempty=*/false, [&](llvm::Value* iv) {
      fs_.vars[var] = iv;
      EmitStmt(s.body);
    });
  } else if (s.extent == 1) {
    fs_.vars[var] = b_.getInt64(0);
    EmitStmt(s.body);
  } else {
    EmitLoop(b_.getInt64(0), b_.getInt64(s.extent), /*nonempty=*/true, [&](llvm::Value* iv) {
      fs_.vars[var] = iv;
      EmitStmt(s.body);
    });
  }
  fs_.vars.erase(var);
}

void KernelEmitter::EmitUnrolledFor(const loop::StmtNode& s) {
  const loop::VarNode* var = s.loop_var.get();
  if (s.extent <= kMaxReplicatedUnroll) {
    for (int64_t k = 0; k < s.extent; ++k) {
      fs_.vars[var] = b_.getInt64(k);
      EmitStmt(s.body);
    }
  } else {
    llvm::MDNode* md = MakeLoopMetadata(
        ctx_, {llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.full")})});
    EmitLoop(
        b_.getInt64(0), b_.getInt64(s.extent), /*nonempty=*/true,
        [&](llvm::Value* iv) {
          fs_.vars[var] = iv;
          EmitStmt(s.body);
        },
        md);
  }
  fs_.vars.erase(var);
}

void KernelEmitter::EmitIf(const loop::StmtNode& s) {
  llvm::Value* cond = EmitExpr(s.cond);
  if (cond->getType()->isVectorTy()) {
    Fail("an If condition varies across the lanes of a vectorized loop");
    return;
  }
  llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "if.then", fs_.fn);
  llvm::BasicBlock* merge_bb = llvm::BasicBlock::Create(ctx_, "if.end");
  llvm::BasicBlock* else_bb = merge_bb;
  if (s.else_body) else_bb = llvm::BasicBlock::Create(ctx_, "if.else");
  b_.CreateCondBr(cond, then_bb, else_bb);
  b_.SetInsertPoint(then_bb);
  EmitStmt(s.then_body);
  b_.CreateBr(merge_bb);
  if (s.else_body) {
    else_bb->insertInto(fs_.fn);
    b_.SetInsertPoint(else_bb);
    EmitStmt(s.else_body);
    b_.CreateBr(merge_bb);
  }
  merge_bb->insertInto(fs_.fn);
  b_.SetInsertPoint(merge_bb);
}

llvm::AllocaInst* KernelEmitter::CreateEntryAlloca(llvm::Type* type, uint64_t align,
                                                   const std::string& name) {
  llvm::BasicBlock& entry = fs_.fn->getEntryBlock();
  llvm::IRBuilder<> eb(&entry, entry.begin());
  llvm::AllocaInst* a = eb.CreateAlloca(type, nullptr, name);
  a->setAlignment(llvm::Align(align));
  return a;
}

// The lane's sums (the loop IR's meaning); a GPU backend runs the warp's mma.sync.
void KernelEmitter::EmitMma(const loop::StmtNode& s) { EmitStmt(loop::MmaAsLoops(s)); }

// A plain copy; a GPU backend copies asynchronously.
void KernelEmitter::EmitAsyncCopy(const loop::StmtNode& s) { EmitStmt(loop::AsyncCopyAsLoops(s)); }

void KernelEmitter::EmitAllocate(const loop::StmtNode& s) {
  const loop::Buffer& buf = *s.buffer;
  if (buf.scope != loop::Buffer::Scope::kLocal && buf.scope != loop::Buffer::Scope::kShared) {
    Fail(absl::StrCat("Allocate of non-local buffer ", buf.name));
    return;
  }
  uint64_t n = static_cast<uint64_t>(std::max<int64_t>(buf.NumElements(), 1));
  fs_.buffers[&buf] = CreateEntryAlloca(llvm::ArrayType::get(MemType(buf.dtype), n), 64,
                                        buf.name);
  EmitStmt(s.body);
  fs_.buffers.erase(&buf);
}

llvm::Value* KernelEmitter::BufferPointer(const loop::Buffer& buffer) {
  auto it = fs_.buffers.find(&buffer);
  if (it == fs_.buffers.end()) {
    return Fail(absl::StrCat("buffer ", buffer.name, " is not a param, workspace or allocation"),
                b_.getPtrTy());
  }
  return it->second;
}

llvm::Value* KernelEmitter::FlatIndexOf(const loop::Buffer& buffer,
                                        const std::vector<loop::Expr>& indices) {
  auto it = private_dims_.find(&buffer);
  if (it == private_dims_.end()) return FlatIndex(buffer, indices);
  loop::Buffer reduced = buffer;
  reduced.shape.clear();
  reduced.sym_shape.clear();
  std::vector<loop::Expr> kept;
  for (size_t d = 0; d < indices.size() && d < it->second.size(); ++d) {
    if (it->second[d]) continue;
    reduced.shape.push_back(buffer.shape[d]);
    if (buffer.is_symbolic()) reduced.sym_shape.push_back(buffer.sym_shape[d]);
    kept.push_back(indices[d]);
  }
  return FlatIndex(reduced, kept);
}

llvm::Value* KernelEmitter::FlatIndex(const loop::Buffer& buffer,
                                      const std::vector<loop::Expr>& indices) {
  if (indices.size() != buffer.shape.size()) {
    return Fail(absl::StrCat("access to ", buffer.name, " has ", indices.size(),
                             " indices for rank ", buffer.shape.size()));
  }
  bool saved = index_mode_;
  index_mode_ = true;
  if (!buffer.is_symbolic()) {
    if (loop::Expr folded = FoldRowMajor(buffer.shape, indices)) {
      llvm::Value* flat = EmitExpr(folded);
      index_mode_ = saved;
      return flat;
    }
  }
  // A symbolic dim's expression reads only params, so LLVM hoists it out of the loops.
  auto dim = [&](size_t d) -> llvm::Value* {
    return buffer.is_symbolic() && buffer.shape[d] == loop::kSymbolicDim
               ? EmitExpr(buffer.sym_shape[d])
               : b_.getInt64(buffer.shape[d]);
  };
  // Indices (floordiv(e, D), floormod(e, D)) over dims (d, D) address element e of the two
  // dims flattened (a loop over the pixels of a symbolic image): emitted as e, so that
  // addresses of consecutive e stay visibly distinct (LLVM keeps a register block's
  // accumulators in registers only then).
  auto merged_pair = [&](size_t d) -> loop::Expr {
    if (!buffer.is_symbolic() || d + 1 >= indices.size()) return nullptr;
    const loop::Expr& div = indices[d];
    const loop::Expr& mod = indices[d + 1];
    if (div->kind != loop::ExprKind::kBinary || mod->kind != loop::ExprKind::kBinary ||
        div->binary_op != loop::BinaryOp::kFloorDiv ||
        mod->binary_op != loop::BinaryOp::kFloorMod ||
        !loop::SameExpr(div->operands[0], mod->operands[0]) ||
        !loop::SameExpr(div->operands[1], mod->operands[1]) ||
        !loop::SameExpr(div->operands[1], buffer.sym_shape[d + 1])) {
      return nullptr;
    }
    return div->operands[0];
  };
  llvm::Value* flat = b_.getInt64(0);
  for (size_t d = 0; d < indices.size(); ++d) {
    // flat * dim_d * D + e for a merged pair (d, d + 1), flat * dim_d + index otherwise.
    const loop::Expr merged = merged_pair(d);
    const loop::Expr& index = merged ? merged : indices[d];
    llvm::Value* idx = EmitExpr(index);
    if (index->dtype != DType::kInt64) {
      idx = b_.CreateIntCast(idx, WithLanes(b_.getInt64Ty(), idx), IsSigned(index->dtype));
    }
    if (d > 0) {
      llvm::Value* stride = dim(d);
      if (merged) stride = b_.CreateMul(stride, dim(d + 1), "", true, true);
      Unify(flat, stride);
      flat = b_.CreateMul(flat, stride, "", /*HasNUW=*/true, /*HasNSW=*/true);
      Unify(flat, idx);
      flat = b_.CreateAdd(flat, idx, "", /*HasNUW=*/true, /*HasNSW=*/true);
    } else {
      flat = idx;
    }
    if (merged) ++d;
  }
  index_mode_ = saved;
  return flat;
}

llvm::Value* KernelEmitter::EmitLoad(const loop::ExprNode& e) {
  llvm::Value* base = BufferPointer(*e.buffer);
  if (vs_.lanes > 1) return EmitVectorLoad(e, base);
  llvm::Type* mem = MemType(e.buffer->dtype);
  llvm::Value* ptr = b_.CreateInBoundsGEP(mem, base, FlatIndexOf(*e.buffer, e.operands));
  llvm::Value* v = b_.CreateAlignedLoad(mem, ptr, llvm::Align(DTypeSize(e.buffer->dtype)));
  if (e.buffer->dtype == DType::kBool) v = b_.CreateICmpNE(v, b_.getInt8(0));
  return v;
}

void KernelEmitter::EmitStore(const loop::StmtNode& s) {
  llvm::Value* base = BufferPointer(*s.buffer);
  llvm::Value* value = EmitExpr(s.value);
  if (s.value->dtype != s.buffer->dtype) {
    Fail(absl::StrCat("store of ", DTypeName(s.value->dtype), " into ", s.buffer->name, " of ",
                      DTypeName(s.buffer->dtype)));
    return;
  }
  if (s.buffer->dtype == DType::kBool) value = b_.CreateZExt(value, WithLanes(b_.getInt8Ty(), value));
  if (vs_.lanes > 1) return EmitVectorStore(s, base, value);
  llvm::Type* mem = MemType(s.buffer->dtype);
  llvm::Value* ptr = b_.CreateInBoundsGEP(mem, base, FlatIndexOf(*s.buffer, s.indices));
  b_.CreateAlignedStore(value, ptr, llvm::Align(DTypeSize(s.buffer->dtype)));
}

}  // namespace kiln::codegen
