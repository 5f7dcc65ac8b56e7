// The NVPTX backend's hooks: one PTX kernel entry per launch of the Func
// (loop::SplitGpuLaunches), taking the Func's buffers (params, then workspaces) as global
// pointers, with kernel and launch-bound (maxntid) annotations; thread-bound loops read the
// block and thread index registers, those below the opening chain run guarded and end in a
// barrier; shared buffers are addrspace(3) globals; thread-indexed local buffers are per-thread.
#include "compiler_core/codegen/nvptx/nvptx_emitter.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/loop/gpu_launch.h"
#include "compiler_core/ir/loop/visitor.h"
#include "llvm/IR/IntrinsicsNVPTX.h"

namespace kiln::codegen {
namespace {

// Adds !{ptr fn, !"key", i32 value} to !nvvm.annotations (how NVVM marks kernel entries and
// launch bounds; NVPTX prints them as .entry and .maxntid).
void Annotate(llvm::Module& module, llvm::Function* fn, const char* key, int64_t value) {
  llvm::LLVMContext& ctx = module.getContext();
  llvm::Metadata* md[] = {llvm::ValueAsMetadata::get(fn), llvm::MDString::get(ctx, key),
                          llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(
                              llvm::Type::getInt32Ty(ctx), static_cast<uint64_t>(value)))};
  module.getOrInsertNamedMetadata("nvvm.annotations")->addOperand(llvm::MDNode::get(ctx, md));
}

}  // namespace

void NvptxKernelEmitter::SetFunctionAttributes(llvm::Function* fn) {
  if (!target_.cpu.empty()) fn->addFnAttr("target-cpu", target_.cpu);
  if (!target_.features.empty()) fn->addFnAttr("target-features", target_.features);
  fn->setDoesNotThrow();
}

absl::Status NvptxKernelEmitter::EmitEntries() {
  absl::StatusOr<std::vector<loop::GpuLaunch>> launches = loop::SplitGpuLaunches(func_.body);
  if (!launches.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("codegen of ", func_.name, ": ", launches.status().message()));
  }
  std::vector<const loop::Buffer*> globals;
  for (const auto& b : func_.params) globals.push_back(b.get());
  for (const auto& b : func_.workspaces) globals.push_back(b.get());
  std::vector<llvm::Type*> params(globals.size(), b_.getPtrTy());
  for (size_t k = 0; k < launches->size(); ++k) {
    const loop::GpuLaunch& launch = (*launches)[k];
    const std::string name = loop::GpuLaunchSymbol(func_.name, k);
    auto* fn = llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), params, false),
                                      llvm::GlobalValue::ExternalLinkage, name, module_);
    if (fn->getName() != name) {
      return absl::InvalidArgumentError(absl::StrCat("duplicate kernel name ", name));
    }
    fn->setCallingConv(llvm::CallingConv::PTX_Kernel);
    SetFunctionAttributes(fn);
    Annotate(module_, fn, "kernel", 1);
    Annotate(module_, fn, "maxntidx", launch.block[0]);
    Annotate(module_, fn, "maxntidy", launch.block[1]);
    Annotate(module_, fn, "maxntidz", launch.block[2]);
    fs_ = FunctionState{};
    fs_.fn = fn;
    chain_threads_ =
        std::set<const loop::StmtNode*>(launch.chain_threads.begin(), launch.chain_threads.end());
    launch_block_ = launch.block;
    thread_depth_ = 0;
    thread_dims_bound_ = {false, false, false};
    for (size_t i = 0; i < globals.size(); ++i) {
      unsigned arg = static_cast<unsigned>(i);
      fn->addParamAttr(arg, llvm::Attribute::NoAlias);
      fn->addParamAttr(arg, llvm::Attribute::NoCapture);
      fn->addParamAttr(arg, llvm::Attribute::getWithAlignment(
                                ctx_, llvm::Align(DTypeSize(globals[i]->dtype))));
      fn->getArg(arg)->setName(globals[i]->name);
      fs_.buffers[globals[i]] = fn->getArg(arg);
    }
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", fn));
    EmitStmt(launch.body);
    if (!status_.ok()) return status_;
    b_.CreateRetVoid();
  }
  return status_;
}

void NvptxKernelEmitter::EmitBoundFor(const loop::StmtNode& s) {
  llvm::Intrinsic::ID id = llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x;
  switch (s.for_kind) {
    case loop::ForKind::kBlockIdxX: id = llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x; break;
    case loop::ForKind::kBlockIdxY: id = llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y; break;
    case loop::ForKind::kBlockIdxZ: id = llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z; break;
    case loop::ForKind::kThreadIdxX: id = llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x; break;
    case loop::ForKind::kThreadIdxY: id = llvm::Intrinsic::nvvm_read_ptx_sreg_tid_y; break;
    case loop::ForKind::kThreadIdxZ: id = llvm::Intrinsic::nvvm_read_ptx_sreg_tid_z; break;
    default: Fail("EmitBoundFor on a loop that is not thread-bound"); return;
  }
  llvm::Value* index = b_.CreateIntrinsic(id, {}, {});
  llvm::Value* var = b_.CreateZExt(index, b_.getInt64Ty(), s.loop_var->name);
  fs_.vars[s.loop_var.get()] = var;
  // A block loop, or a thread loop of the opening chain: the launch has exactly `extent`
  // blocks / threads along this index (SplitGpuLaunches), so the index is the loop variable.
  if (loop::IsBlockBound(s.for_kind) || chain_threads_.count(&s) != 0) {
    if (!loop::IsBlockBound(s.for_kind)) {
      thread_dims_bound_[static_cast<int>(s.for_kind) -
                         static_cast<int>(loop::ForKind::kThreadIdxX)] = true;
    }
    EmitStmt(s.body);
    return;
  }
  // A thread loop below the chain: threads past its extent skip it; after the outermost one,
  // all threads of the block meet at a barrier (the block-level code around it is uniform),
  // so the next statement sees what this one wrote to shared memory, and a tile is not
  // overwritten while others still read it.
  const int dim = static_cast<int>(s.for_kind) - static_cast<int>(loop::ForKind::kThreadIdxX);
  const bool outermost = thread_depth_ == 0;
  ++thread_depth_;
  const bool was_bound = thread_dims_bound_[dim];
  thread_dims_bound_[dim] = true;
  // Runs on threads with index < extent along this dim and index 0 along every other dim of
  // the block no thread loop around or inside it binds (those threads idle: the loop runs
  // once, not once per row of the other dims).
  std::array<bool, 3> bound = thread_dims_bound_;
  loop::VisitStmts(s.body, [&](const loop::Stmt& inner) {
    if (inner->kind == loop::StmtKind::kFor && loop::IsThreadBound(inner->for_kind) &&
        !loop::IsBlockBound(inner->for_kind)) {
      bound[static_cast<int>(inner->for_kind) - static_cast<int>(loop::ForKind::kThreadIdxX)] =
          true;
    }
  });
  llvm::Value* run = nullptr;
  auto both = [&](llvm::Value* c) { run = run == nullptr ? c : b_.CreateAnd(run, c); };
  if (s.extent < launch_block_[dim]) both(b_.CreateICmpULT(var, b_.getInt64(s.extent)));
  static constexpr llvm::Intrinsic::ID kTid[] = {llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x,
                                                 llvm::Intrinsic::nvvm_read_ptx_sreg_tid_y,
                                                 llvm::Intrinsic::nvvm_read_ptx_sreg_tid_z};
  for (int d = 0; d < 3; ++d) {
    if (d == dim || bound[d] || launch_block_[d] <= 1) continue;
    both(b_.CreateICmpEQ(b_.CreateIntrinsic(kTid[d], {}, {}), b_.getInt32(0)));
  }
  if (run != nullptr) {
    llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, s.loop_var->name + ".run", fs_.fn);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, s.loop_var->name + ".done", fs_.fn);
    b_.CreateCondBr(run, body, done);
    b_.SetInsertPoint(body);
    EmitStmt(s.body);
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
  } else {
    EmitStmt(s.body);
  }
  thread_dims_bound_[dim] = was_bound;
  --thread_depth_;
  if (outermost) b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
}

void NvptxKernelEmitter::EmitMma(const loop::StmtNode& s) {
  using loop::BinaryOp;
  const loop::Expr& a = s.value->operands[0];
  const loop::Expr& b = s.value->operands[1];
  const loop::Expr g = loop::Binary(BinaryOp::kFloorDiv, s.cond, loop::IntImm(4));
  const loop::Expr t = loop::Binary(BinaryOp::kFloorMod, s.cond, loop::IntImm(4));
  // (base.k + dk + k, base.m + dm + m) of a tile load `base`: its last two indices, swapped
  // for a tile stored [m, k] (`m_major`).
  auto at_of = [](bool m_major) {
    return [m_major](const loop::Expr& base, int64_t dk, const loop::Expr& k, int64_t dm,
                     const loop::Expr& m) {
      std::vector<loop::Expr> idx = base->operands;
      const size_t n = idx.size();
      loop::Expr& ki = m_major ? idx[n - 1] : idx[n - 2];
      loop::Expr& mi = m_major ? idx[n - 2] : idx[n - 1];
      ki = ki + loop::IntImm(dk) + k;
      mi = mi + loop::IntImm(dm) + m;
      return loop::Load(base->buffer, idx);
    };
  };
  const auto at_a = at_of((s.mma_layout & loop::kMmaAMajorM) != 0);
  const auto at_b = at_of((s.mma_layout & loop::kMmaBMajorN) != 0);
  auto f32 = [&](const loop::Expr& e) {
    llvm::Value* v = EmitExpr(e);
    if (e->dtype != DType::kFloat32) v = EmitCast(DType::kFloat32, e->dtype, v);
    return v;
  };
  std::vector<llvm::Value*> args;
  llvm::Intrinsic::ID id;
  const loop::Expr two_t = loop::IntImm(2) * t;
  if (s.mma == loop::MmaShape::kM16N8K8Tf32) {
    // A (16 x 8): a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4); B (8 x 8):
    // b0 (t, g), b1 (t + 4, g); each rounded to tf32 in an i32.
    auto tf32 = [&](const loop::Expr& e) {
      return b_.CreateIntrinsic(llvm::Intrinsic::nvvm_f2tf32_rna, {}, {f32(e)});
    };
    for (auto [dk, dm] : {std::pair<int64_t, int64_t>{0, 0}, {0, 8}, {4, 0}, {4, 8}}) {
      args.push_back(tf32(at_a(a, dk, t, dm, g)));
    }
    for (int64_t dk : {0, 4}) args.push_back(tf32(at_b(b, dk, t, 0, g)));
    id = llvm::Intrinsic::nvvm_mma_m16n8k8_row_col_tf32;
  } else {
    // m16n8k16: A a0 (g, 2t..2t+1), a1 (g + 8, ..), a2 (g, 2t+8..2t+9), a3 (g + 8, ..);
    // B b0 (2t..2t+1, g), b1 (2t+8..2t+9, g); pairs along k packed low element first.
    const bool f16 = s.mma == loop::MmaShape::kM16N8K16F16;
    auto pack = [&](const loop::Expr& lo, const loop::Expr& hi) -> llvm::Value* {
      if (f16) {
        llvm::Value* v = llvm::PoisonValue::get(llvm::FixedVectorType::get(b_.getHalfTy(), 2));
        v = b_.CreateInsertElement(v, b_.CreateFPTrunc(f32(lo), b_.getHalfTy()), uint64_t{0});
        return b_.CreateInsertElement(v, b_.CreateFPTrunc(f32(hi), b_.getHalfTy()), uint64_t{1});
      }
      // bf16: the upper 16 bits of the f32, rounded to nearest even (EmitCast's rounding).
      auto bits = [&](const loop::Expr& e) {
        llvm::Value* h = EmitCast(DType::kBFloat16, DType::kFloat32, f32(e));
        return b_.CreateZExt(b_.CreateBitCast(h, b_.getInt16Ty()), b_.getInt32Ty());
      };
      return b_.CreateOr(bits(lo), b_.CreateShl(bits(hi), 16));
    };
    for (auto [dk, dm] : {std::pair<int64_t, int64_t>{0, 0}, {0, 8}, {8, 0}, {8, 8}}) {
      args.push_back(pack(at_a(a, dk, two_t, dm, g), at_a(a, dk + 1, two_t, dm, g)));
    }
    for (int64_t dk : {0, 8}) {
      args.push_back(pack(at_b(b, dk, two_t, 0, g), at_b(b, dk + 1, two_t, 0, g)));
    }
    id = f16 ? llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32
             : llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_bf16;
  }
  // C: the 4 accumulators from `indices` on along the last dim.
  std::vector<std::vector<loop::Expr>> c_at;
  for (int64_t e = 0; e < 4; ++e) {
    std::vector<loop::Expr> idx = s.indices;
    idx.back() = idx.back() + loop::IntImm(e);
    c_at.push_back(idx);
    args.push_back(EmitExpr(loop::Load(s.buffer, idx)));
  }
  llvm::Value* d = b_.CreateIntrinsic(id, {}, args);
  for (unsigned e = 0; e < 4; ++e) {
    llvm::Value* ptr = b_.CreateInBoundsGEP(MemType(DType::kFloat32), BufferPointer(*s.buffer),
                                            FlatIndexOf(*s.buffer, c_at[e]));
    b_.CreateAlignedStore(b_.CreateExtractValue(d, e), ptr, llvm::Align(4));
  }
}

void NvptxKernelEmitter::EmitAsyncCopy(const loop::StmtNode& s) {
  const int64_t bytes = s.extent * static_cast<int64_t>(DTypeSize(s.buffer->dtype));
  llvm::Type* elem = MemType(s.buffer->dtype);
  llvm::Value* dst =
      b_.CreateInBoundsGEP(elem, BufferPointer(*s.buffer), FlatIndexOf(*s.buffer, s.indices));
  const loop::Buffer& from = *s.value->buffer;
  llvm::Value* src = b_.CreateInBoundsGEP(MemType(from.dtype), BufferPointer(from),
                                          FlatIndex(from, s.value->operands));
  llvm::Value* in_bounds = s.cond ? EmitExpr(s.cond) : nullptr;
  // Outside the bounds nothing is read (src-size 0 zero-fills), but the address stays the
  // buffer's own.
  if (in_bounds != nullptr) src = b_.CreateSelect(in_bounds, src, BufferPointer(from));
  src = b_.CreateAddrSpaceCast(src, llvm::PointerType::get(ctx_, 1));
  llvm::Intrinsic::ID id;
  switch (bytes) {
    case 4:
      id = in_bounds ? llvm::Intrinsic::nvvm_cp_async_ca_shared_global_4_s
                     : llvm::Intrinsic::nvvm_cp_async_ca_shared_global_4;
      break;
    case 8:
      id = in_bounds ? llvm::Intrinsic::nvvm_cp_async_ca_shared_global_8_s
                     : llvm::Intrinsic::nvvm_cp_async_ca_shared_global_8;
      break;
    case 16:
      // .cg: 16-byte copies may bypass L1 (the tile is read once per block).
      id = in_bounds ? llvm::Intrinsic::nvvm_cp_async_cg_shared_global_16_s
                     : llvm::Intrinsic::nvvm_cp_async_cg_shared_global_16;
      break;
    default:
      Fail(absl::StrCat("async_copy of ", bytes, " bytes"));
      return;
  }
  std::vector<llvm::Value*> args = {dst, src};
  if (in_bounds != nullptr) {
    args.push_back(
        b_.CreateSelect(in_bounds, b_.getInt32(static_cast<uint32_t>(bytes)), b_.getInt32(0)));
  }
  b_.CreateIntrinsic(id, {}, args);
}

void NvptxKernelEmitter::EmitAsyncWait(const loop::StmtNode& s) {
  b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, {}, {});
  b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {},
                     {b_.getInt32(static_cast<uint32_t>(s.extent))});
}

void NvptxKernelEmitter::EmitAllocate(const loop::StmtNode& s) {
  const loop::Buffer& buf = *s.buffer;
  llvm::Type* elem = MemType(buf.dtype);
  if (buf.scope == loop::Buffer::Scope::kShared) {
    const uint64_t n = static_cast<uint64_t>(std::max<int64_t>(buf.NumElements(), 1));
    auto* array = llvm::ArrayType::get(elem, n);
    auto* global = new llvm::GlobalVariable(
        module_, array, /*isConstant=*/false, llvm::GlobalValue::InternalLinkage,
        llvm::UndefValue::get(array), absl::StrCat(fs_.fn->getName().str(), ".", buf.name), nullptr,
        llvm::GlobalValue::NotThreadLocal, /*AddressSpace=*/3);
    global->setAlignment(llvm::Align(16));
    fs_.buffers[&buf] = global;
    EmitStmt(s.body);
    fs_.buffers.erase(&buf);
    return;
  }
  // Dims indexed, in every access, by the variable of a thread loop inside the alloc: each
  // thread only ever touches its own slice along them.
  std::vector<bool> private_dims(buf.shape.size(), thread_depth_ == 0);
  std::set<const loop::VarNode*> thread_vars;
  loop::VisitStmts(s.body, [&](const loop::Stmt& st) {
    if (st->kind == loop::StmtKind::kFor && loop::IsThreadBound(st->for_kind) &&
        !loop::IsBlockBound(st->for_kind)) {
      thread_vars.insert(st->loop_var.get());
    }
  });
  auto check = [&](const std::vector<loop::Expr>& indices) {
    for (size_t d = 0; d < indices.size() && d < private_dims.size(); ++d) {
      private_dims[d] = private_dims[d] && indices[d]->kind == loop::ExprKind::kVar &&
                        thread_vars.count(indices[d]->var.get()) != 0;
    }
  };
  loop::VisitStmts(s.body, [&](const loop::Stmt& st) {
    if ((st->kind == loop::StmtKind::kStore || st->kind == loop::StmtKind::kMma ||
         st->kind == loop::StmtKind::kAsyncCopy) &&
        st->buffer.get() == &buf) {
      check(st->indices);
    }
  });
  loop::VisitExprs(s.body, [&](const loop::Expr& e) {
    if (e->kind == loop::ExprKind::kLoad && e->buffer.get() == &buf) check(e->operands);
  });
  int64_t n = 1;
  for (size_t d = 0; d < buf.shape.size(); ++d) {
    if (!private_dims[d]) n *= buf.shape[d];
  }
  if (std::find(private_dims.begin(), private_dims.end(), true) != private_dims.end()) {
    private_dims_[&buf] = private_dims;
  }
  fs_.buffers[&buf] = CreateEntryAlloca(
      llvm::ArrayType::get(elem, static_cast<uint64_t>(std::max<int64_t>(n, 1))), 16, buf.name);
  EmitStmt(s.body);
  fs_.buffers.erase(&buf);
  private_dims_.erase(&buf);
}

}  // namespace kiln::codegen
