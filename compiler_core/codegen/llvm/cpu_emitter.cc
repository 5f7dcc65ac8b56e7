// The CPU backend's hooks: the exported kernel entry point and its always-inlined body (whose
// noalias buffer parameters become alias scopes when inlined), target function attributes, and
// outlining of parallel loops into kiln_task_fn callbacks run by ctx->parallel_for.
#include "compiler_core/codegen/llvm/cpu_emitter.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/ir/loop/visitor.h"
#include "compiler_core/schedule/schedule.h"

namespace kiln::codegen {
namespace {

// Collects the variables and buffers a statement refers to.
struct UseCollector {
  std::set<const loop::VarNode*> vars;
  std::set<const loop::Buffer*> buffers;

  // A buffer and, for a symbolic one, the params its dims read (its strides).
  void Use(const loop::Buffer* b) {
    if (!buffers.insert(b).second) return;
    for (const loop::Expr& d : b->sym_shape) Visit(d);
  }
  void Visit(const loop::Expr& e) {
    if (!e) return;
    if (e->kind == loop::ExprKind::kVar) vars.insert(e->var.get());
    if (e->kind == loop::ExprKind::kLoad) Use(e->buffer.get());
    for (const loop::Expr& op : e->operands) Visit(op);
  }
  void Visit(const loop::Stmt& s) {
    if (!s) return;
    if (s->buffer) Use(s->buffer.get());
    Visit(s->limit);
    for (const loop::Expr& i : s->indices) Visit(i);
    Visit(s->value);
    Visit(s->cond);
    Visit(s->body);
    Visit(s->then_body);
    Visit(s->else_body);
    for (const loop::Stmt& c : s->stmts) Visit(c);
  }
};

/// Caps each factor and sum of RunTimeWork, so that no product overflows int64; far above
/// schedule::kParallelThreshold, which is all the count is compared with.
constexpr int64_t kWorkCap = int64_t{1} << 24;

/// The leaf statements `s` runs (stores and MMAs), as an i64 expression of what is in scope
/// before it (`in_scope`: the enclosing loops' vars; the kernel's params always are): a loop
/// with a run-time limit counts the limit, clamped to [0, extent], when the limit reads only
/// vars in scope, else its extent; every factor and sum is capped at kWorkCap.
loop::Expr RunTimeWork(const loop::StmtNode* s, const std::set<const loop::VarNode*>& in_scope) {
  using loop::BinaryOp;
  auto cap = [](loop::Expr e) {
    return loop::Binary(BinaryOp::kMin, std::move(e), loop::IntImm(kWorkCap));
  };
  if (!s) return loop::IntImm(0);
  switch (s->kind) {
    case loop::StmtKind::kFor: {
      loop::Expr trip = loop::IntImm(std::min(s->extent, kWorkCap));
      const bool local = s->limit && !loop::AnyExpr(s->limit, [&](const loop::Expr& e) {
        return e->kind == loop::ExprKind::kVar && !in_scope.count(e->var.get());
      });
      if (local) {
        trip = loop::Binary(BinaryOp::kMax, cap(s->limit), loop::IntImm(0));
        trip = loop::Binary(BinaryOp::kMin, trip, loop::IntImm(s->extent));
      }
      return cap(trip * RunTimeWork(s->body.get(), in_scope));
    }
    case loop::StmtKind::kAllocate:
      return RunTimeWork(s->body.get(), in_scope);
    case loop::StmtKind::kIf:
      return loop::Binary(BinaryOp::kMax, RunTimeWork(s->then_body.get(), in_scope),
                          RunTimeWork(s->else_body.get(), in_scope));
    case loop::StmtKind::kBlock: {
      loop::Expr total = loop::IntImm(0);
      for (const loop::Stmt& c : s->stmts) total = cap(total + RunTimeWork(c.get(), in_scope));
      return total;
    }
    case loop::StmtKind::kStore:
    case loop::StmtKind::kMma:
    case loop::StmtKind::kAsyncCopy:
      return loop::IntImm(1);
    default:
      return loop::IntImm(0);
  }
}

/// Whether the loop `s` or a loop inside it has a run-time limit.
bool HasLimitedLoop(const loop::StmtNode& s) {
  bool found = s.limit != nullptr;
  loop::VisitStmts(s.body, [&](const loop::Stmt& t) {
    found = found || (t->kind == loop::StmtKind::kFor && t->limit != nullptr);
  });
  return found;
}

}  // namespace

void CpuKernelEmitter::SetFunctionAttributes(llvm::Function* fn) {
  if (!target_.cpu.empty()) fn->addFnAttr("target-cpu", target_.cpu);
  if (!target_.features.empty()) fn->addFnAttr("target-features", target_.features);
  // Let the backend keep SIMD values as wide as the target's registers (skylake-avx512 would
  // otherwise split 512-bit vectors under its prefer-256-bit tuning).
  std::string bits = std::to_string(target_.vector_bits);
  fn->addFnAttr("prefer-vector-width", bits);
  fn->addFnAttr("min-legal-vector-width", bits);
  fn->addFnAttr("no-trapping-math", "true");
  fn->setDoesNotThrow();
}

llvm::Function* CpuKernelEmitter::CreateBodyFunction(
    const std::string& name, const std::vector<const loop::Buffer*>& buffers,
    size_t num_i64_params) {
  std::vector<llvm::Type*> params(1 + buffers.size(), b_.getPtrTy());
  params.insert(params.end(), num_i64_params, b_.getInt64Ty());
  auto* fn = llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), params, false),
                                    llvm::GlobalValue::InternalLinkage, name, module_);
  SetFunctionAttributes(fn);
  fn->addFnAttr(llvm::Attribute::AlwaysInline);
  for (size_t i = 0; i < buffers.size(); ++i) {
    unsigned arg = static_cast<unsigned>(1 + i);
    // Distinct buffers never overlap; the runtime guarantees element alignment at least.
    fn->addParamAttr(arg, llvm::Attribute::NoAlias);
    fn->addParamAttr(arg, llvm::Attribute::NoCapture);
    fn->addParamAttr(arg, llvm::Attribute::getWithAlignment(
                              ctx_, llvm::Align(DTypeSize(buffers[i]->dtype))));
    // A buffer the body never touches may be passed as null (an init entry point gets null
    // for the inputs and outputs it does not read), so only used ones are dereferenceable.
    int64_t bytes = buffers[i]->NumBytes();
    if (bytes > 0 && used_buffers_.count(buffers[i])) {
      fn->addParamAttr(arg, llvm::Attribute::getWithDereferenceableBytes(ctx_, bytes));
    }
    fn->getArg(arg)->setName(buffers[i]->name);
  }
  fn->getArg(0)->setName("ctx");
  return fn;
}

absl::Status CpuKernelEmitter::EmitEntries() {
  std::vector<const loop::Buffer*> globals;
  for (const auto& b : func_.params) globals.push_back(b.get());
  for (const auto& b : func_.workspaces) globals.push_back(b.get());

  // <name>.impl(ctx, noalias buffers...): the body.
  llvm::Function* impl = CreateBodyFunction(func_.name + ".impl", globals, 0);
  fs_ = FunctionState{};
  fs_.fn = impl;
  fs_.ctx = impl->getArg(0);
  for (size_t i = 0; i < globals.size(); ++i) {
    fs_.buffers[globals[i]] = impl->getArg(static_cast<unsigned>(1 + i));
  }
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", impl));
  EmitStmt(func_.body);
  if (!status_.ok()) return status_;
  b_.CreateRetVoid();

  // <name>(ctx, args): unpacks args and calls the body.
  auto* kernel = llvm::Function::Create(
      llvm::FunctionType::get(b_.getVoidTy(), {b_.getPtrTy(), b_.getPtrTy()}, false),
      llvm::GlobalValue::ExternalLinkage, func_.name, module_);
  if (kernel->getName() != func_.name) {
    return absl::InvalidArgumentError(absl::StrCat("duplicate kernel name ", func_.name));
  }
  SetFunctionAttributes(kernel);
  kernel->addParamAttr(1, llvm::Attribute::NoCapture);
  kernel->addParamAttr(1, llvm::Attribute::ReadOnly);
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", kernel));
  std::vector<llvm::Value*> call_args = {kernel->getArg(0)};
  for (size_t i = 0; i < globals.size(); ++i) {
    llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(b_.getPtrTy(), kernel->getArg(1), i);
    llvm::LoadInst* p = b_.CreateAlignedLoad(b_.getPtrTy(), slot, llvm::Align(8),
                                             globals[i]->name);
    p->setMetadata(llvm::LLVMContext::MD_noundef, llvm::MDNode::get(ctx_, {}));
    call_args.push_back(p);
  }
  b_.CreateCall(impl, call_args);
  b_.CreateRetVoid();
  return status_;
}

void CpuKernelEmitter::EmitBoundFor(const loop::StmtNode& s) {
  if (target_.emulate_gpu) return EmitSerialFor(s);
  Fail(absl::StrCat("loop '", s.loop_var->name, "' is bound to ", loop::ForKindName(s.for_kind),
                    "; thread-bound loops need a GPU target"));
}

void CpuKernelEmitter::EmitParallelFor(const loop::StmtNode& s) {
  if (fs_.parallel_depth > 0 || vs_.lanes > 1) {
    EmitSerialFor(s);  // nested parallelism runs serially inside one task
    return;
  }
  UseCollector uses;
  uses.Visit(s.body);
  std::vector<const loop::Buffer*> bufs;
  std::vector<llvm::Value*> buf_values;
  for (const auto& [buf, value] : fs_.buffers) {
    if (uses.buffers.count(buf)) {
      bufs.push_back(buf);
      buf_values.push_back(value);
    }
  }
  std::vector<const loop::VarNode*> vars;
  std::vector<llvm::Value*> var_values;
  for (const auto& [var, value] : fs_.vars) {
    if (uses.vars.count(var)) {
      vars.push_back(var);
      var_values.push_back(value);
    }
  }
  std::string name = absl::StrCat(func_.name, ".par", num_outlined_++);

  // Closure {ctx, buffers..., vars...} on the caller's stack.
  std::vector<llvm::Type*> fields(1 + bufs.size(), b_.getPtrTy());
  fields.insert(fields.end(), vars.size(), b_.getInt64Ty());
  llvm::StructType* closure_ty = llvm::StructType::get(ctx_, fields);
  llvm::AllocaInst* closure = CreateEntryAlloca(closure_ty, 8, "closure");
  std::vector<llvm::Value*> values = {fs_.ctx};
  values.insert(values.end(), buf_values.begin(), buf_values.end());
  values.insert(values.end(), var_values.begin(), var_values.end());
  for (size_t i = 0; i < values.size(); ++i) {
    b_.CreateStore(values[i], b_.CreateStructGEP(closure_ty, closure, static_cast<unsigned>(i)));
  }

  // The kiln_task_fn: unpacks the closure and runs [begin, end) through the body function.
  auto* task = llvm::Function::Create(
      llvm::FunctionType::get(b_.getVoidTy(), {b_.getPtrTy(), b_.getInt64Ty(), b_.getInt64Ty()},
                              false),
      llvm::GlobalValue::InternalLinkage, name, module_);
  SetFunctionAttributes(task);
  llvm::Function* body = CreateBodyFunction(name + ".body", bufs, vars.size() + 2);

  // ctx->parallel_for(ctx->pool, task, &closure, extent).
  llvm::StructType* ctx_ty = llvm::StructType::get(ctx_, {b_.getPtrTy(), b_.getPtrTy()});
  llvm::Value* pf = b_.CreateLoad(b_.getPtrTy(), b_.CreateStructGEP(ctx_ty, fs_.ctx, 0));
  llvm::Value* pool = b_.CreateLoad(b_.getPtrTy(), b_.CreateStructGEP(ctx_ty, fs_.ctx, 1));
  llvm::FunctionType* pf_ty = llvm::FunctionType::get(
      b_.getVoidTy(), {b_.getPtrTy(), b_.getPtrTy(), b_.getPtrTy(), b_.getInt64Ty()}, false);
  llvm::Value* trip = LoopEnd(s);
  if (HasLimitedLoop(s)) {
    // A kernel of symbolic dims decided to go parallel without its sizes: at run time, a launch
    // with less work than the default schedule's threshold for static nests runs the task
    // inline instead (a decoding step's seq = 1 rows), as OpenMP's `if` clause would.
    std::set<const loop::VarNode*> in_scope;
    for (const auto& [var, value] : fs_.vars) in_scope.insert(var);
    llvm::Value* work = EmitExpr(RunTimeWork(&s, in_scope));
    llvm::BasicBlock* inline_bb = llvm::BasicBlock::Create(ctx_, "par.inline", fs_.fn);
    llvm::BasicBlock* launch_bb = llvm::BasicBlock::Create(ctx_, "par.launch", fs_.fn);
    llvm::BasicBlock* join_bb = llvm::BasicBlock::Create(ctx_, "par.join", fs_.fn);
    b_.CreateCondBr(b_.CreateICmpSLT(work, b_.getInt64(schedule::kParallelThreshold)), inline_bb,
                    launch_bb);
    b_.SetInsertPoint(inline_bb);
    b_.CreateCall(task, {closure, b_.getInt64(0), trip});
    b_.CreateBr(join_bb);
    b_.SetInsertPoint(launch_bb);
    b_.CreateCall(pf_ty, pf, {pool, task, closure, trip});
    b_.CreateBr(join_bb);
    b_.SetInsertPoint(join_bb);
  } else {
    b_.CreateCall(pf_ty, pf, {pool, task, closure, trip});
  }
  llvm::IRBuilderBase::InsertPoint caller_ip = b_.saveIP();

  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", task));
  std::vector<llvm::Value*> body_args;
  for (size_t i = 0; i < fields.size(); ++i) {
    body_args.push_back(b_.CreateLoad(
        fields[i], b_.CreateStructGEP(closure_ty, task->getArg(0), static_cast<unsigned>(i))));
  }
  body_args.push_back(task->getArg(1));
  body_args.push_back(task->getArg(2));
  b_.CreateCall(body, body_args);
  b_.CreateRetVoid();

  // The body function: for iv in [begin, end) { body }.
  FunctionState caller = std::move(fs_);
  fs_ = FunctionState{};
  fs_.fn = body;
  fs_.ctx = body->getArg(0);
  fs_.parallel_depth = caller.parallel_depth + 1;
  for (size_t i = 0; i < bufs.size(); ++i) {
    fs_.buffers[bufs[i]] = body->getArg(static_cast<unsigned>(1 + i));
  }
  unsigned first_var = static_cast<unsigned>(1 + bufs.size());
  for (size_t i = 0; i < vars.size(); ++i) {
    fs_.vars[vars[i]] = body->getArg(first_var + static_cast<unsigned>(i));
  }
  llvm::Value* begin = body->getArg(first_var + static_cast<unsigned>(vars.size()));
  llvm::Value* end = body->getArg(first_var + static_cast<unsigned>(vars.size()) + 1);
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", body));
  EmitLoop(begin, end, /*nonempty=*/false, [&](llvm::Value* iv) {
    fs_.vars[s.loop_var.get()] = iv;
    EmitStmt(s.body);
  });
  b_.CreateRetVoid();
  fs_ = std::move(caller);
  b_.restoreIP(caller_ip);
}

}  // namespace kiln::codegen
