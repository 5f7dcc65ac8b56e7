// Group lowering, argument binding and memory planning for the artifact's kernel sequence.
#include "compiler_core/pipeline/kernel_plan.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/ir/graph/sym_values.h"
#include "compiler_core/ir/loop/printer.h"
#include "compiler_core/lowering/lower.h"
#include "compiler_core/runtime/abi.h"
#include "compiler_core/runtime/memory_plan.h"
#include "compiler_core/runtime/manifest_calls.h"
#include "compiler_core/schedule/bound_loops.h"
#include "compiler_core/schedule/schedule.h"
#include "compiler_core/support/sha256.h"
#include "compiler_core/support/status_macros.h"
#include "compiler_core/tuning/workload.h"

namespace kiln::pipeline {
namespace {

using runtime::BufferRequest;
using runtime::MemoryPlan;
using runtime::PlanMemory;

// A buffer's name in the memory plan: the model's name for the value, else its producing node's
// (the ONNX node name the importer kept, with ":<output>" past the first output), else
// "v<id>".
std::string BufferName(const graph::Value& v) {
  if (!v.name().empty()) return v.name();
  if (v.producer() != nullptr && !v.producer()->name().empty()) {
    return v.output_index() == 0 ? v.producer()->name()
                                 : absl::StrCat(v.producer()->name(), ":", v.output_index());
  }
  return absl::StrCat("v", v.id());
}

using graph::Node;
using graph::OpKind;
using graph::Value;

constexpr int64_t kAlignment = 64;

int64_t AlignUp(int64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

kiln::v1::TensorSpec Spec(const Value* v) {
  kiln::v1::TensorSpec spec;
  spec.set_name(v->name());
  spec.set_dtype(DTypeName(v->type().dtype));
  for (int64_t d : v->type().shape) spec.add_shape(d);
  if (!v->type().is_static()) {
    for (size_t d = 0; d < v->type().shape.size(); ++d) {
      spec.add_dims(v->type().shape[d] == kSymbolicDim ? v->type().dim(d).ToString() : "");
    }
  }
  return spec;
}

// The bytes of a symbolic type as an expression over its symbols.
sym::Expr SymbolicBytes(const TensorType& type) {
  return type.NumElementsExpr() * sym::Expr(static_cast<int64_t>(DTypeSize(type.dtype)));
}

class Planner {
 public:
  Planner(const graph::Graph& graph, const Target& target,
          const schedule::ScheduleSource& schedules,
          const std::function<bool(const std::string&)>& print_stage,
          const std::function<void(const std::string&, const std::string&)>& print,
          const StageTimeFn& on_stage, const passes::BoundedDims* bounded,
          const BodyPlanner& plan_body)
      : graph_(graph),
        target_(target),
        schedules_(schedules),
        print_stage_(print_stage),
        print_(print),
        on_stage_(on_stage),
        bounded_(bounded),
        plan_body_(plan_body) {}

  absl::StatusOr<KernelPlan> Build() {
    KILN_ASSIGN_OR_RETURN(std::vector<sym::Symbol> symbols, graph::GraphSymbols(graph_));
    if (!symbols.empty()) {
      // Symbolic dims: the kernels read the symbols' values from the graph input "kiln.dims"
      // (added by the compile pipeline), bound to Binding.DIMS.
      if (bounded_ != nullptr) {
        return absl::InvalidArgumentError("bounded dims and symbolic dims cannot be combined");
      }
      for (const Value* in : graph_.inputs()) {
        if (in->name() == kSymbolDimsInput) symbols_.dims = in;
      }
      if (symbols_.dims == nullptr) {
        return absl::InternalError("a graph with symbolic dims has no \"kiln.dims\" input");
      }
      symbols_list_ = std::move(symbols);
      for (const sym::Symbol& sym : symbols_list_) symbols_.names.push_back(sym.name);
    }
    size_t index = 0;
    for (size_t i = 0; i < graph_.inputs().size(); ++i) {
      if (IsDims(graph_.inputs()[i])) continue;
      input_index_[graph_.inputs()[i]] = index++;
    }
    KILN_RETURN_IF_ERROR(LowerGroups());
    KILN_RETURN_IF_ERROR(AddOutputCopies());
    {
      ScopedStageTimer timer(on_stage_, "pack weights");
      PackWeights();
    }
    {
      ScopedStageTimer timer(on_stage_, "memory plan");
      PlanArena();
    }
    ScopedStageTimer timer(on_stage_, "manifest");
    return Finish();
  }

 private:
  struct Kernel;

  // Storage root of a value: views alias their source.
  const Value* Root(const Value* v) const {
    auto it = view_source_.find(v);
    while (it != view_source_.end()) {
      v = it->second;
      it = view_source_.find(v);
    }
    return v;
  }

  absl::Status LowerGroups() {
    std::vector<Node*> nodes = graph_.nodes();
    // Emit each group where its last member stands: by then every value any member reads from
    // outside the group has been produced.
    std::map<int, std::vector<const Node*>> members;
    std::map<int, int> last_position;
    for (size_t i = 0; i < nodes.size(); ++i) {
      int group = nodes[i]->fusion_group();
      if (group < 0) group = -1 - static_cast<int>(i);  // unfused: its own group
      members[group].push_back(nodes[i]);
      last_position[group] = static_cast<int>(i);
    }
    std::vector<std::pair<int, int>> order;  // (last position, group)
    for (const auto& [group, pos] : last_position) order.push_back({pos, group});
    std::sort(order.begin(), order.end());
    for (const auto& [pos, group] : order) {
      const std::vector<const Node*>& group_nodes = members[group];
      const Node* anchor = group_nodes.front();
      if (anchor->op() == OpKind::kLoop) {
        KILN_RETURN_IF_ERROR(AddLoop(*anchor));
        continue;
      }
      if (group_nodes.size() == 1 && graph::IsViewOp(anchor->op())) {
        view_source_[anchor->output(0)] = anchor->input(0);
        continue;
      }
      if (symbols_.dims != nullptr && group_nodes.back()->outputs().size() == 1) {
        // A shape computed from the symbols: the run's shape program evaluates it on the host.
        const Value* result = group_nodes.back()->output(0);
        if (std::optional<std::vector<sym::Expr>> elems = graph::SymbolicShapeValue(*result)) {
          kiln::v1::ShapeValue sv;
          sv.set_name(BufferName(*result));
          sv.set_dtype(DTypeName(result->type().dtype));
          for (int64_t d : result->type().shape) sv.add_shape(d);
          for (const sym::Expr& e : *elems) sv.add_elements(e.ToString());
          shape_value_index_[result] = shape_values_.size();
          shape_values_.push_back(std::move(sv));
          continue;
        }
      }
      std::string name = absl::StrCat("kernel_", kernels_.size());
      std::vector<std::string> ops;
      for (const Node* n : group_nodes) ops.push_back(n->info().name);
      ScopedStageTimer timer(on_stage_,
                             on_stage_ ? absl::StrCat("lower: ", name, " ", absl::StrJoin(ops, "+"))
                                       : std::string());
      KILN_ASSIGN_OR_RETURN(
          lowering::LoweredKernel lowered,
          lowering::LowerGroup(group_nodes, name, symbols_.dims != nullptr ? &symbols_ : nullptr));
      timer.Stop();
      KILN_RETURN_IF_ERROR(AddKernel(std::move(lowered), absl::StrJoin(ops, "+")));
    }
    return absl::OkStatus();
  }

  // Whether Loop `node` surely runs exactly its scan_length iterations: M is that constant, the
  // initial condition a constant true, and the body's condition its input condition (through
  // Identity or a view) or a constant true.
  static bool ExactTrips(const Node& node, const graph::Graph& body) {
    const Value* m = node.input(0);
    const Value* c = node.input(1);
    if (!m->is_constant() ||
        m->constant()->GetAsInt64(0) != graph::LoopAttrs::Of(node).scan_length ||
        !c->is_constant() || c->constant()->GetAsInt64(0) == 0) {
      return false;
    }
    const Value* out = body.outputs()[0];
    while (out->producer() != nullptr &&
           (out->producer()->op() == OpKind::kIdentity || graph::IsViewOp(out->producer()->op()))) {
      out = out->producer()->input(0);
    }
    return out == body.inputs()[1] || (out->is_constant() && out->constant()->GetAsInt64(0) != 0);
  }

  // A Loop call over the plan of the node's body.
  absl::Status AddLoop(const Node& node) {
    const std::string what = absl::StrCat("node '", node.name(), "' (Loop)");
    if (symbols_.dims != nullptr) {
      return absl::UnimplementedError(
          what + ": a Loop in a graph with symbolic dims is not supported yet; give fixed shapes "
                 "(--input-shape)");
    }
    if (bounded_ != nullptr) {
      return absl::UnimplementedError(
          what +
          ": bounded dims (--input-shape with ranges) and a Loop run over its compiled "
          "body cannot be combined yet; give fixed shapes or several profiles");
    }
    std::shared_ptr<graph::Graph> body = graph::LoopAttrs::Of(node).body;
    if (body == nullptr || !plan_body_) {
      return absl::InternalError(what + ": no body graph or no body planner");
    }
    Kernel k;
    k.loop_exact = ExactTrips(node, *body);
    absl::StatusOr<KernelPlan> plan = plan_body_(*body);
    if (!plan.ok()) {
      return absl::Status(plan.status().code(),
                          absl::StrCat(what, " body: ", plan.status().message()));
    }
    // The body's outputs are the Loop's to read, never cut to a run's shape.
    for (kiln::v1::TensorSpec& out : *plan->manifest.mutable_outputs()) out.set_bounded(false);
    k.loop_body = std::make_unique<KernelPlan>(std::move(*plan));
    k.loop_node = &node;
    for (const Value* v : node.inputs()) k.lowered.param_values.push_back(v);
    for (const Value* v : node.outputs()) {
      k.lowered.param_values.push_back(v);
      k.lowered.results.push_back(v);
    }
    k.fused_ops = "Loop";
    kernels_.push_back(std::move(k));
    return absl::OkStatus();
  }

  // Fills Loop call `call` (kernel `k`) with its body's plan: symbols prefixed "l<k>_", weights
  // appended to this plan's, funcs added to `funcs`.
  void FinishLoop(size_t k, Kernel& kernel, kiln::v1::KernelCall& call, kiln::v1::Manifest& m,
                  std::vector<loop::Func>& funcs) {
    KernelPlan& body = *kernel.loop_body;
    const std::string prefix = absl::StrCat("l", k, "_");
    const int64_t base = AlignUp(static_cast<int64_t>(weights_.size()));
    weights_.resize(static_cast<size_t>(base), '\0');
    weights_.append(body.weights);
    weights_.resize(static_cast<size_t>(AlignUp(static_cast<int64_t>(weights_.size()))), '\0');
    RelocateCalls(body.manifest, prefix, base);
    for (loop::Func& f : body.funcs) {
      f.name = prefix + f.name;
      funcs.push_back(std::move(f));
    }
    body.manifest.set_abi_version(KILN_ABI_VERSION);
    body.manifest.set_weights_bytes(0);  // the artifact's one weights section holds them
    const Node& node = *kernel.loop_node;
    kiln::v1::LoopCall* loop = call.mutable_loop();
    const graph::LoopAttrs la = graph::LoopAttrs::Of(node);
    loop->set_num_carried(static_cast<int32_t>(la.num_carried));
    // The manifest writes "no scan length" (a Loop without scan outputs) as 0.
    loop->set_scan_length(std::max<int64_t>(la.scan_length, 0));
    loop->set_what(absl::StrCat("node '", node.name(), "' (Loop)"));
    *loop->mutable_body() = std::move(body.manifest);
    // A scan output returned as a model output (once) that nothing else reads has the
    // iterations run as its leading dim; anything read elsewhere needs the compiled length. A
    // Loop body's outputs are never cut: the Loop around it reads them.
    const int num_carried = loop->num_carried();
    for (size_t o = static_cast<size_t>(num_carried); o < node.outputs().size(); ++o) {
      const Value* v = node.output(static_cast<int>(o));
      auto it = output_index_.find(v);
      if (it == output_index_.end() || kernel.loop_exact || !graph_.Users(v).empty() ||
          std::count(graph_.outputs().begin(), graph_.outputs().end(), v) != 1) {
        continue;
      }
      m.mutable_outputs(it->second)->set_bounded(true);
    }
  }

  absl::Status AddKernel(lowering::LoweredKernel lowered, std::string fused_ops) {
    if (print_stage_("lower")) print_("lower", loop::PrintFunc(lowered.func));
    ScopedStageTimer timer(on_stage_, on_stage_ ? absl::StrCat("schedule: ", lowered.func.name, " ",
                                                               fused_ops)
                                                : std::string());
    for (const loop::BufferRef& ws : lowered.func.workspaces) {
      if (ws->NumBytes() < 0) {
        return absl::InternalError(absl::StrCat(lowered.func.name, " (", fused_ops,
                                                "): workspace ", ws->name, " has symbolic dims"));
      }
    }
    Kernel k;
    k.workload_key = tuning::WorkloadKey(lowered.func);
    schedule::ScheduleChoice choice = schedules_.Choose(lowered.func, k.workload_key, target_);
    absl::Status st = absl::OkStatus();
    if (choice.tuned) {
      loop::Func tuned = lowered.func;
      st = schedule::ApplySchedule(choice.schedule, tuned);
      if (st.ok()) {
        lowered.func = std::move(tuned);
      } else {  // the record does not apply: the default schedule, no record
        choice = schedule::ScheduleChoice{schedule::DefaultSchedule(lowered.func, target_)};
      }
    }
    if (!choice.tuned) {
      // The default schedule (an untuned choice holds it), still naming a record that chose
      // it (the default measured fastest), if any.
      st = schedule::ApplySchedule(choice.schedule, lowered.func);
      if (!st.ok()) {
        return absl::InternalError(absl::StrCat("default schedule of ", lowered.func.name, " (",
                                                fused_ops, ") failed: ", st.message()));
      }
    }
    if (bounded_ != nullptr) BoundKernelLoops(lowered);
    if (print_stage_("schedule")) print_("schedule", loop::PrintFunc(lowered.func));
    k.fused_ops = std::move(fused_ops);
    k.schedule = choice.schedule.ToString();
    k.tuned = choice.tuned;
    k.tuned_median_ms = choice.tuned_median_ms;
    k.record_digest = choice.record_digest;
    k.lowered = std::move(lowered);
    kernels_.push_back(std::move(k));
    return absl::OkStatus();
  }

  // Bounded dims: loops whose later iterations only store into the padding of the kernel's
  // results stop at the run's lengths (schedule::BoundLoops), read from the kernel's dims param
  // (a BoundMask's operand, or a new first param bound to Binding.DIMS).
  void BoundKernelLoops(lowering::LoweredKernel& lk) const {
    loop::Func& f = lk.func;
    loop::BufferRef dims;
    std::set<std::string> names;
    for (size_t p = 0; p < f.params.size(); ++p) {
      if (lk.param_values[p] == bounded_->dims) dims = f.params[p];
      names.insert(f.params[p]->name);
    }
    for (const loop::BufferRef& w : f.workspaces) names.insert(w->name);
    const bool new_dims = dims == nullptr;
    if (new_dims) {
      std::string name = "dims";
      for (int k = 1; names.count(name); ++k) name = absl::StrCat("dims_", k);
      dims =
          loop::MakeBuffer(name, DType::kInt64, {static_cast<int64_t>(bounded_->symbols.size())});
    }
    schedule::BufferLengths lengths;
    for (size_t p = 0; p < f.params.size(); ++p) {
      const Value* v = lk.param_values[p];
      auto it = bounded_->values.find(v);
      if (it == bounded_->values.end() || it->second.shape != v->type().shape ||
          f.params[p]->shape != v->type().shape) {
        continue;
      }
      std::vector<loop::Expr> exprs;
      bool any = false;
      for (const passes::DimLength& l : it->second.dims) {
        if (l.symbol < 0) {
          exprs.push_back(nullptr);
          continue;
        }
        loop::Expr len = loop::Load(dims, {loop::IntImm(l.symbol)});
        if (l.mul != 1) len = len * loop::IntImm(l.mul);
        if (l.div != 1) len = loop::Binary(loop::BinaryOp::kFloorDiv, len, loop::IntImm(l.div));
        exprs.push_back(std::move(len));
        any = true;
      }
      if (any) lengths[f.params[p].get()] = std::move(exprs);
    }
    loop::Stmt body = schedule::BoundLoops(f, lengths);
    if (body == f.body) return;
    f.body = std::move(body);
    if (new_dims) {
      f.params.insert(f.params.begin(), dims);
      lk.param_values.insert(lk.param_values.begin(), bounded_->dims);
    }
  }

  // Every graph output needs a kernel that writes it into the caller's output buffer. A value
  // computed by a kernel is written there directly; anything else (a graph input, a constant, a
  // view, a value listed as an output twice) gets a copy kernel.
  absl::Status AddOutputCopies() {
    std::unordered_map<const Value*, bool> produced_by_kernel;
    for (const Kernel& k : kernels_) {
      for (const Value* r : k.lowered.results) produced_by_kernel[r] = true;
    }
    for (size_t i = 0; i < graph_.outputs().size(); ++i) {
      const Value* out = graph_.outputs()[i];
      if (produced_by_kernel.count(out) && !output_index_.count(out)) {
        output_index_[out] = static_cast<int>(i);
        continue;
      }
      std::string name = absl::StrCat("kernel_", kernels_.size());
      KILN_ASSIGN_OR_RETURN(
          lowering::LoweredKernel copy,
          lowering::LowerCopy(out, out, name, symbols_.dims != nullptr ? &symbols_ : nullptr));
      copy_outputs_[kernels_.size()] = static_cast<int>(i);
      KILN_RETURN_IF_ERROR(AddKernel(std::move(copy), "Copy"));
    }
    return absl::OkStatus();
  }

  void PackWeights() {
    for (const Kernel& k : kernels_) {
      for (const Value* v : k.lowered.param_values) {
        const Value* r = Root(v);
        if (!r->is_constant() || weight_offset_.count(r)) continue;
        int64_t offset = AlignUp(static_cast<int64_t>(weights_.size()));
        weights_.resize(offset, '\0');
        const Tensor& t = *r->constant();
        weights_.append(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
        weight_offset_[r] = offset;
      }
    }
    weights_.resize(AlignUp(static_cast<int64_t>(weights_.size())), '\0');
  }

  bool IsDims(const Value* v) const {
    return (bounded_ != nullptr && v == bounded_->dims) ||
           (symbols_.dims != nullptr && v == symbols_.dims);
  }

  bool InArena(const Value* root) const {
    return !root->is_constant() && !input_index_.count(root) && !output_index_.count(root) &&
           !IsDims(root) && !shape_value_index_.count(root);
  }

  void PlanArena() {
    // Live ranges of arena roots, in kernel indices.
    std::map<int, BufferRequest> by_value_id;  // ordered by value id for determinism
    std::unordered_map<int, const Value*> value_of_id;
    for (size_t k = 0; k < kernels_.size(); ++k) {
      const lowering::LoweredKernel& lk = kernels_[k].lowered;
      for (size_t p = 0; p < lk.param_values.size(); ++p) {
        const Value* r = Root(lk.param_values[p]);
        if (copy_outputs_.count(k) && p + 1 == lk.param_values.size()) continue;  // output slot
        if (!InArena(r)) continue;
        if (!r->type().is_static()) {
          auto [dit, fresh] = dynamic_index_.try_emplace(r, dynamic_.size());
          if (fresh) {
            kiln::v1::DynamicBuffer d;
            d.set_name(BufferName(*r));
            d.set_size_bytes(SymbolicBytes(r->type()).ToString());
            d.set_first_kernel(static_cast<int>(k));
            dynamic_.push_back(d);
          }
          dynamic_[dit->second].set_last_kernel(static_cast<int>(k));
          continue;
        }
        auto [it, inserted] = by_value_id.try_emplace(r->id());
        BufferRequest& req = it->second;
        if (inserted) {
          req.name = BufferName(*r);
          req.size_bytes = r->type().NumBytes();
          req.first_use = static_cast<int>(k);
          value_of_id[r->id()] = r;
        }
        req.last_use = static_cast<int>(k);
      }
    }
    std::vector<BufferRequest> requests;
    std::vector<const Value*> request_values;
    for (auto& [id, req] : by_value_id) {
      requests.push_back(req);
      request_values.push_back(value_of_id[id]);
    }
    // Workspaces live during their kernel only; persistent ones (computed by the kernel's init
    // at load) get their own space for the executable's lifetime, 64-byte aligned, no reuse.
    for (size_t k = 0; k < kernels_.size(); ++k) {
      for (const loop::BufferRef& ws : loop::PersistentWorkspaces(kernels_[k].lowered.func)) {
        persistent_offset_[{k, ws->name}] = persistent_bytes_;
        persistent_bytes_ = AlignUp(persistent_bytes_ + ws->NumBytes());
      }
    }
    for (size_t k = 0; k < kernels_.size(); ++k) {
      for (const loop::BufferRef& ws : kernels_[k].lowered.func.workspaces) {
        if (persistent_offset_.count({k, ws->name})) continue;
        requests.push_back({absl::StrCat(kernels_[k].lowered.func.name, ".", ws->name),
                            ws->NumBytes(), static_cast<int>(k), static_cast<int>(k)});
        request_values.push_back(nullptr);
        workspace_request_[{k, ws->name}] = requests.size() - 1;
      }
    }
    plan_ = PlanMemory(requests);
    requests_ = std::move(requests);
    for (size_t i = 0; i < request_values.size(); ++i) {
      if (request_values[i] != nullptr) arena_offset_[request_values[i]] = plan_.offsets[i];
    }
  }

  kiln::v1::Binding BindingFor(const Value* v) const {
    kiln::v1::Binding b;
    const Value* r = Root(v);
    // A symbolic value's size is known at run time only (0 here).
    b.set_size_bytes(std::max<int64_t>(v->type().NumBytes(), 0));
    if (IsDims(r)) {
      b.set_kind(kiln::v1::Binding::DIMS);
    } else if (auto it = dynamic_index_.find(r); it != dynamic_index_.end()) {
      b.set_kind(kiln::v1::Binding::DYNAMIC);
      b.set_index(static_cast<int64_t>(it->second));
    } else if (auto sv = shape_value_index_.find(r); sv != shape_value_index_.end()) {
      b.set_kind(kiln::v1::Binding::SHAPE_VALUE);
      b.set_index(static_cast<int64_t>(sv->second));
    } else if (auto it = input_index_.find(r); it != input_index_.end()) {
      b.set_kind(kiln::v1::Binding::INPUT);
      b.set_index(static_cast<int64_t>(it->second));
    } else if (r->is_constant()) {
      b.set_kind(kiln::v1::Binding::WEIGHT);
      b.set_offset(weight_offset_.at(r));
    } else if (auto it = output_index_.find(r); it != output_index_.end()) {
      b.set_kind(kiln::v1::Binding::OUTPUT);
      b.set_index(it->second);
    } else {
      b.set_kind(kiln::v1::Binding::ARENA);
      b.set_offset(arena_offset_.at(r));
    }
    return b;
  }

  absl::StatusOr<KernelPlan> Finish() {
    KernelPlan plan;
    kiln::v1::Manifest& m = plan.manifest;
    std::string applied_records;  // "<workload key> <record digest>\n" per tuned kernel
    for (const Value* in : graph_.inputs()) {
      if (!IsDims(in)) *m.add_inputs() = Spec(in);
    }
    for (const Value* out : graph_.outputs()) *m.add_outputs() = Spec(out);
    if (bounded_ != nullptr) {
      for (const passes::BoundSymbol& s : bounded_->symbols) {
        kiln::v1::BoundSymbol* bs = m.add_bound_symbols();
        bs->set_name(s.name);
        bs->set_min(s.min);
        bs->set_max(s.max);
      }
      auto lengths = [](kiln::v1::TensorSpec* spec, const std::vector<passes::DimLength>& dims) {
        for (const passes::DimLength& d : dims) {
          kiln::v1::DimLength* l = spec->add_lengths();
          l->set_symbol(d.symbol);
          l->set_mul(d.mul);
          l->set_div(d.div);
        }
      };
      for (size_t i = 0; i < bounded_->inputs.size(); ++i) {
        lengths(m.mutable_inputs(static_cast<int>(i)), bounded_->inputs[i]);
      }
      for (size_t i = 0; i < bounded_->outputs.size(); ++i) {
        lengths(m.mutable_outputs(static_cast<int>(i)), bounded_->outputs[i]);
      }
    }
    for (const sym::Symbol& s : symbols_list_) {
      kiln::v1::SymbolSpec* spec = m.add_symbols();
      spec->set_name(s.name);
      spec->set_min(s.min);
      spec->set_max(s.max == sym::kUnbounded ? -1 : s.max);
    }
    for (const kiln::v1::DynamicBuffer& d : dynamic_) *m.add_dynamic_buffers() = d;
    for (const kiln::v1::ShapeValue& sv : shape_values_) *m.add_shape_values() = sv;
    for (size_t k = 0; k < kernels_.size(); ++k) {
      Kernel& kernel = kernels_[k];
      kiln::v1::KernelCall* call = m.add_kernels();
      if (kernel.loop_body != nullptr) {
        call->set_fused_ops(kernel.fused_ops);
        for (const Value* v : kernel.lowered.param_values) *call->add_args() = BindingFor(v);
        if (!kernel.loop_body->manifest.tuning_digest().empty()) {
          absl::StrAppend(&applied_records, "loop ", kernel.loop_body->manifest.tuning_digest(),
                          "\n");
        }
        FinishLoop(k, kernel, *call, m, plan.funcs);
        continue;
      }
      call->set_symbol(kernel.lowered.func.name);
      call->set_fused_ops(kernel.fused_ops);
      call->set_schedule(kernel.schedule);
      call->set_workload_key(kernel.workload_key);
      // A kernel over symbolic dims does work in proportion to the run's values: no count.
      call->set_flops(loop::HasSymbolicParams(kernel.lowered.func)
                          ? 0
                          : tuning::CountFlops(kernel.lowered.func));
      if (!kernel.record_digest.empty()) {
        call->set_tuned(kernel.tuned);
        call->set_tuned_median_ms(kernel.tuned_median_ms);
        call->set_record_digest(kernel.record_digest);
        absl::StrAppend(&applied_records, kernel.workload_key, " ", kernel.record_digest, "\n");
      }
      const auto& params = kernel.lowered.param_values;
      for (size_t p = 0; p < params.size(); ++p) {
        if (auto it = copy_outputs_.find(k); it != copy_outputs_.end() && p + 1 == params.size()) {
          kiln::v1::Binding* b = call->add_args();
          b->set_kind(kiln::v1::Binding::OUTPUT);
          b->set_index(it->second);
          b->set_size_bytes(std::max<int64_t>(params[p]->type().NumBytes(), 0));
          continue;
        }
        *call->add_args() = BindingFor(params[p]);
      }
      for (const loop::BufferRef& ws : kernel.lowered.func.workspaces) {
        kiln::v1::Binding* b = call->add_args();
        b->set_size_bytes(ws->NumBytes());
        if (auto it = persistent_offset_.find({k, ws->name}); it != persistent_offset_.end()) {
          b->set_kind(kiln::v1::Binding::PERSISTENT);
          b->set_offset(it->second);
          continue;
        }
        b->set_kind(kiln::v1::Binding::ARENA);
        b->set_offset(plan_.offsets[workspace_request_.at({k, ws->name})]);
      }
      if (kernel.lowered.func.init) {
        call->set_init_symbol(loop::InitSymbol(kernel.lowered.func.name));
      }
      for (const lowering::LoweredKernel::ShapeCheck& check : kernel.lowered.shape_checks) {
        const auto& ws = kernel.lowered.func.workspaces;
        auto it = std::find_if(ws.begin(), ws.end(), [&](const loop::BufferRef& b) {
          return b->name == check.workspace;
        });
        if (it == ws.end() || persistent_offset_.count({k, check.workspace})) {
          return absl::InternalError(absl::StrCat(kernel.lowered.func.name, ": shape check '",
                                                  check.workspace,
                                                  "' is not a scratch workspace after scheduling"));
        }
        kiln::v1::ShapeCheck* sc = call->add_shape_checks();
        sc->set_arg(static_cast<int32_t>(params.size() + (it - ws.begin())));
        for (int64_t d : check.expected) sc->add_expected(d);
        sc->set_what(check.what);
        sc->set_values(check.values);
        if (check.bounded) {
          const auto& outs = graph_.outputs();
          auto out = std::find(outs.begin(), outs.end(), kernel.lowered.results[0]);
          if (out == outs.end()) {
            return absl::InternalError(absl::StrCat(kernel.lowered.func.name, ": ", check.what,
                                                    ": a bounded output that is not a graph "
                                                    "output"));
          }
          sc->set_bounded(true);
          sc->set_output(static_cast<int32_t>(out - outs.begin()));
          m.mutable_outputs(static_cast<int>(out - outs.begin()))->set_bounded(true);
        }
      }
      plan.funcs.push_back(std::move(kernel.lowered.func));
    }
    if (!applied_records.empty()) m.set_tuning_digest(Sha256Hex(applied_records));
    m.set_arena_bytes(plan_.arena_bytes);
    m.set_arena_bytes_no_reuse(plan_.arena_bytes_no_reuse);
    m.set_persistent_bytes(persistent_bytes_);
    for (size_t i = 0; i < requests_.size(); ++i) {
      kiln::v1::PlannedBuffer* pb = m.add_buffers();
      pb->set_name(requests_[i].name);
      pb->set_offset(plan_.offsets[i]);
      pb->set_size_bytes(requests_[i].size_bytes);
      pb->set_first_kernel(requests_[i].first_use);
      pb->set_last_kernel(requests_[i].last_use);
    }
    m.set_weights_bytes(static_cast<int64_t>(weights_.size()));
    plan.weights = std::move(weights_);
    return plan;
  }

  struct Kernel {
    lowering::LoweredKernel lowered;
    std::string fused_ops;
    std::string schedule;
    std::string workload_key;
    bool tuned = false;
    double tuned_median_ms = 0;
    std::string record_digest;
    // A Loop call (AddLoop): its node, its body's plan, and whether its trip count is exact.
    const Node* loop_node = nullptr;
    std::unique_ptr<KernelPlan> loop_body;
    bool loop_exact = false;
  };

  const graph::Graph& graph_;
  const Target& target_;
  const schedule::ScheduleSource& schedules_;
  const std::function<bool(const std::string&)>& print_stage_;
  const std::function<void(const std::string&, const std::string&)>& print_;
  const StageTimeFn& on_stage_;
  const passes::BoundedDims* bounded_;
  const BodyPlanner& plan_body_;
  // Symbolic dims: the graph's symbols and how kernels receive them; dims null otherwise.
  std::vector<sym::Symbol> symbols_list_;
  lowering::KernelSymbols symbols_;
  std::vector<kiln::v1::DynamicBuffer> dynamic_;
  std::unordered_map<const Value*, size_t> dynamic_index_;
  std::vector<kiln::v1::ShapeValue> shape_values_;
  std::unordered_map<const Value*, size_t> shape_value_index_;

  std::vector<Kernel> kernels_;
  std::unordered_map<const Value*, const Value*> view_source_;
  std::unordered_map<const Value*, size_t> input_index_;
  std::unordered_map<const Value*, int> output_index_;
  std::map<size_t, int> copy_outputs_;  // kernel index → graph output index it writes
  std::unordered_map<const Value*, int64_t> weight_offset_;
  std::unordered_map<const Value*, int64_t> arena_offset_;
  std::map<std::pair<size_t, std::string>, size_t> workspace_request_;
  std::map<std::pair<size_t, std::string>, int64_t> persistent_offset_;  // into persistent_bytes_
  int64_t persistent_bytes_ = 0;
  std::vector<BufferRequest> requests_;
  MemoryPlan plan_;
  std::string weights_;
};

}  // namespace

void RelocateCalls(kiln::v1::Manifest& m, const std::string& prefix, int64_t weight_base) {
  runtime::ForEachKernelCall(m, [&](kiln::v1::KernelCall& c) {
    if (!c.symbol().empty()) c.set_symbol(prefix + c.symbol());
    if (!c.init_symbol().empty()) c.set_init_symbol(prefix + c.init_symbol());
    for (kiln::v1::Binding& b : *c.mutable_args()) {
      if (b.kind() == kiln::v1::Binding::WEIGHT) b.set_offset(b.offset() + weight_base);
    }
  });
}

absl::StatusOr<KernelPlan> BuildKernelPlan(
    const graph::Graph& graph, const Target& target, const schedule::ScheduleSource& schedules,
    const std::function<bool(const std::string&)>& print_stage,
    const std::function<void(const std::string&, const std::string&)>& print,
    const StageTimeFn& on_stage, const passes::BoundedDims* bounded, const BodyPlanner& plan_body) {
  return Planner(graph, target, schedules, print_stage, print, on_stage, bounded, plan_body)
      .Build();
}

}  // namespace kiln::pipeline
