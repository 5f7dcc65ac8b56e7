#include "client/inspect.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "compiler_core/runtime/manifest_check.h"
#include "compiler_core/support/target.h"

namespace kiln::client {
namespace {

using kiln::v1::Binding;
using kiln::v1::KernelCall;
using kiln::v1::Manifest;

// "4.96 MB", "63.2 KB", "512 B" (decimal units).
std::string HumanBytes(int64_t bytes) {
  if (bytes >= 1000000000) return absl::StrFormat("%.2f GB", bytes / 1e9);
  if (bytes >= 1000000) return absl::StrFormat("%.2f MB", bytes / 1e6);
  if (bytes >= 1000) return absl::StrFormat("%.1f KB", bytes / 1e3);
  return absl::StrCat(bytes, " B");
}

// "705.4 MFLOP", "1.82 GFLOP".
std::string HumanFlops(int64_t flops) {
  if (flops >= 1000000000) return absl::StrFormat("%.2f GFLOP", flops / 1e9);
  if (flops >= 1000000) return absl::StrFormat("%.1f MFLOP", flops / 1e6);
  if (flops >= 1000) return absl::StrFormat("%.1f KFLOP", flops / 1e3);
  return absl::StrCat(flops, " FLOP");
}

// A tensor spec, e.g. "input: f32[1,3,224,224]"; a bounded dim (TensorSpec.lengths, symbols of
// `m`) prints as its range, "1..64", or its length in symbols, "4*input:0"; a symbolic dim
// (TensorSpec.dims) as its expression, "past + seq".
std::string SpecText(const kiln::v1::TensorSpec& s, const Manifest* m = nullptr) {
  std::vector<std::string> dims;
  for (int d = 0; d < s.shape_size(); ++d) {
    if (d < s.dims_size() && !s.dims(d).empty()) {  // a symbolic dim: its expression
      dims.push_back(s.dims(d));
      continue;
    }
    const int sym = m != nullptr && d < s.lengths_size() ? s.lengths(d).symbol() : -1;
    if (sym < 0 || sym >= m->bound_symbols_size()) {
      dims.push_back(s.shape(d) < 0 ? "?" : absl::StrCat(s.shape(d)));
      continue;
    }
    const kiln::v1::DimLength& l = s.lengths(d);
    const kiln::v1::BoundSymbol& b = m->bound_symbols(sym);
    dims.push_back(l.mul() == 1 && l.div() == 1
                       ? absl::StrCat(b.min(), "..", b.max())
                       : absl::StrCat(l.mul() == 1 ? "" : absl::StrCat(l.mul(), "*"), b.name(),
                                      l.div() == 1 ? "" : absl::StrCat("/", l.div())));
  }
  return absl::StrCat(
      s.name(), ": ", s.dtype(), "[", absl::StrJoin(dims, ","), "]",
      s.bounded() ? " (an upper bound: each run returns the shape its data give)" : "");
}

// The memory plan's buffer that arena binding `b` of kernel `k` points into, or null.
const kiln::v1::PlannedBuffer* BufferAt(const Manifest& m, const Binding& b, int k) {
  const kiln::v1::PlannedBuffer* best = nullptr;
  for (const kiln::v1::PlannedBuffer& p : m.buffers()) {
    if (k < p.first_kernel() || k > p.last_kernel()) continue;
    if (b.offset() < p.offset() ||
        b.offset() >= p.offset() + std::max<int64_t>(p.size_bytes(), 1)) {
      continue;
    }
    if (best == nullptr || p.offset() == b.offset()) best = &p;
  }
  return best;
}

// What binding `b` of kernel `k` names: a graph input or output, a buffer of the plan, a weight.
std::string BindingText(const Manifest& m, const Binding& b, int k) {
  switch (b.kind()) {
    case Binding::INPUT:
      return b.index() < m.inputs_size() ? m.inputs(static_cast<int>(b.index())).name()
                                         : absl::StrCat("input", b.index());
    case Binding::OUTPUT:
      return b.index() < m.outputs_size() ? m.outputs(static_cast<int>(b.index())).name()
                                          : absl::StrCat("output", b.index());
    case Binding::WEIGHT:
      return absl::StrCat("weights+", b.offset());
    case Binding::PERSISTENT:
      return absl::StrCat("persistent+", b.offset());
    case Binding::DIMS:
      return "dims";
    default: {
      const kiln::v1::PlannedBuffer* p = BufferAt(m, b, k);
      return p != nullptr ? p->name() : absl::StrCat("arena+", b.offset());
    }
  }
}

// The tensor kernel `k` writes first: a graph output it binds or the plan's buffer that starts
// living at `k`; "" if neither.
std::string KernelResult(const Manifest& m, int k) {
  const KernelCall& call = m.kernels(k);
  for (const Binding& b : call.args()) {
    if (b.kind() == Binding::OUTPUT) return BindingText(m, b, k);
  }
  for (const Binding& b : call.args()) {
    if (b.kind() != Binding::ARENA) continue;
    const kiln::v1::PlannedBuffer* p = BufferAt(m, b, k);
    if (p != nullptr && p->first_kernel() == k) return p->name();
  }
  return "";
}

std::string TuningText(const KernelCall& k) {
  if (k.tuned()) {
    return absl::StrFormat("tuned (record %s, %.4f ms)", k.record_digest().substr(0, 12),
                           k.tuned_median_ms());
  }
  if (k.record_digest().empty()) return "default schedule";
  return absl::StrFormat("default schedule (record %s: the default measured fastest, %.4f ms)",
                         k.record_digest().substr(0, 12), k.tuned_median_ms());
}

void AppendKernels(const Manifest& m, const std::string& indent, std::string& out) {
  absl::StrAppend(&out, indent, "kernels (", m.kernels_size(), "):\n");
  for (int i = 0; i < m.kernels_size(); ++i) {
    const KernelCall& k = m.kernels(i);
    std::vector<std::string> args;
    for (const Binding& b : k.args()) args.push_back(BindingText(m, b, i));
    absl::StrAppend(&out, indent, "  ", k.symbol().empty() ? absl::StrCat("call_", i) : k.symbol(),
                    "  ", k.fused_ops(), "  (", absl::StrJoin(args, ", "), ")",
                    k.flops() > 0 ? absl::StrCat("  ", HumanFlops(k.flops())) : "", "\n");
    if (!k.has_loop()) {
      absl::StrAppend(&out, indent, "      workload ", k.workload_key(), "  ", TuningText(k), "\n");
    }
    if (!k.init_symbol().empty()) {
      absl::StrAppend(&out, indent, "      init at load: ", k.init_symbol(), "\n");
    }
    for (const auto* launches : {&k.init_launches(), &k.launches()}) {
      for (const kiln::v1::GpuLaunch& l : *launches) {
        absl::StrAppend(&out, indent, "      ",
                        launches == &k.launches() ? "launch " : "init launch ", l.entry(),
                        "  grid ", absl::StrJoin(l.grid(), "x"), "  block ",
                        absl::StrJoin(l.block(), "x"), "\n");
      }
    }
    if (k.has_loop()) {
      const Manifest& body = k.loop().body();
      absl::StrAppend(&out, indent, "      loop over a compiled body: ", k.loop().num_carried(),
                      " carried values, ", body.outputs_size() - 1 - k.loop().num_carried(),
                      " scan outputs (length ", k.loop().scan_length(), "), body arena ",
                      body.arena_bytes(), " bytes\n");
      AppendKernels(body, indent + "        ", out);
    }
    for (absl::string_view line : absl::StrSplit(k.schedule(), '\n', absl::SkipEmpty())) {
      absl::StrAppend(&out, indent, "      ", line, "\n");
    }
  }
}

void AppendMemory(const Manifest& m, const std::string& indent, std::string& out) {
  absl::StrAppend(&out, indent, "memory plan (", m.buffers_size(), " buffers, arena ",
                  m.arena_bytes(), " bytes):\n");
  for (const auto& b : m.buffers()) {
    absl::StrAppend(&out, indent,
                    absl::StrFormat("  %-48s offset %10d size %10d live kernels %d..%d\n", b.name(),
                                    b.offset(), b.size_bytes(), b.first_kernel(), b.last_kernel()));
  }
  if (m.dynamic_buffers_size() == 0) return;
  absl::StrAppend(&out, indent, "dynamic buffers (", m.dynamic_buffers_size(),
                  ", sized at each run's symbol values and placed after the arena):\n");
  for (const auto& d : m.dynamic_buffers()) {
    absl::StrAppend(&out, indent,
                    absl::StrFormat("  %-48s bytes %s, live kernels %d..%d\n", d.name(),
                                    d.size_bytes(), d.first_kernel(), d.last_kernel()));
  }
}

// Counts of one manifest (a model's or a profile's), for the summary and the JSON.
struct Counts {
  int kernels = 0, tuned = 0, with_record = 0, loops = 0;
  int64_t flops = 0;
  std::map<std::string, int> ops;  // graph op → occurrences in the kernels' fused ops
};

Counts CountsOf(const Manifest& m) {
  Counts c;
  for (const KernelCall& k : m.kernels()) {
    ++c.kernels;
    c.tuned += k.tuned() ? 1 : 0;
    c.with_record += k.record_digest().empty() ? 0 : 1;
    c.loops += k.has_loop() ? 1 : 0;
    c.flops += k.flops();
    for (absl::string_view op : absl::StrSplit(k.fused_ops(), '+', absl::SkipEmpty())) {
      ++c.ops[std::string(op)];
    }
  }
  return c;
}

// "cpu:znver4:x86_64-pc-linux-gnu:v512 (112 CPU features)": the target key without its
// feature list, which kiln inspect --json prints whole.
std::string TargetSummary(const std::string& key) {
  std::optional<CpuTargetKey> cpu = ParseCpuTargetKey(key);
  if (!cpu) return key;
  const int features = static_cast<int>(
      std::count_if(cpu->features.begin(), cpu->features.end(), [](char c) { return c == '+'; }));
  return absl::StrCat("cpu:", cpu->cpu, ":", cpu->triple, ":", cpu->vector,
                      cpu->emulate_gpu ? ":emulate-gpu" : "", " (", features,
                      " CPU features enabled; the whole key: kiln inspect --json)");
}

void AppendSummary(const Manifest& m, const std::string& indent, std::string& out) {
  const Counts c = CountsOf(m);
  std::vector<std::pair<int, std::string>> ops;
  int total_ops = 0;
  for (const auto& [op, n] : c.ops) {
    ops.push_back({-n, op});
    total_ops += n;
  }
  std::sort(ops.begin(), ops.end());
  std::vector<std::string> op_text;
  for (const auto& [n, op] : ops) op_text.push_back(absl::StrCat(op, " ", -n));
  absl::StrAppend(&out, indent, "ops:              ", total_ops, " graph ops in ", c.kernels,
                  " kernels: ", absl::StrJoin(op_text, ", "), "\n");
  absl::StrAppend(
      &out, indent, "kernels:          ", c.kernels, ": ", c.tuned, " tuned, ",
      c.kernels - c.tuned - c.loops, " default schedules",
      c.with_record > c.tuned
          ? absl::StrCat(" (", c.with_record - c.tuned, " of them chosen by a tuning record)")
          : "",
      c.loops > 0 ? absl::StrCat(", ", c.loops, " loops over compiled bodies") : "", "\n");
  absl::StrAppend(&out, indent, "compute:          ", HumanFlops(c.flops), " per run\n");
  absl::StrAppend(&out, indent, "arena:            ", m.arena_bytes(), " bytes (",
                  HumanBytes(m.arena_bytes()), "; ", HumanBytes(m.arena_bytes_no_reuse()),
                  " without buffer reuse)\n");
  absl::StrAppend(&out, indent, "persistent:       ", m.persistent_bytes(),
                  " bytes (computed from the weights at load)\n");
  std::vector<int> order;
  for (int k = 0; k < m.kernels_size(); ++k) {
    if (m.kernels(k).flops() > 0) order.push_back(k);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return m.kernels(a).flops() > m.kernels(b).flops(); });
  if (order.empty()) return;
  absl::StrAppend(&out, indent, "top kernels by FLOPs:\n");
  for (size_t i = 0; i < order.size() && i < 5; ++i) {
    const KernelCall& k = m.kernels(order[i]);
    absl::StrAppend(
        &out, indent,
        absl::StrFormat("  %-11s %-22s %12s %5.1f%%  -> %s\n", k.symbol(), k.fused_ops(),
                        HumanFlops(k.flops()), c.flops > 0 ? 100.0 * k.flops() / c.flops : 0.0,
                        KernelResult(m, order[i])));
  }
}

// Dot's quoted string.
std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out + "\"";
}

}  // namespace

std::string InspectText(const runtime::Artifact& artifact, const std::string& path,
                        const InspectDetails& details) {
  const Manifest& m = artifact.manifest;
  std::string out;
  absl::StrAppend(
      &out, "artifact:         ", path, "\n",
      "model:            ", m.model_name().empty() ? "(unnamed)" : m.model_name(), "\n",
      "graph hash:       ", m.graph_hash(), "\n",
      "target:           ", TargetSummary(m.target_key()), "\n",
      "compiler version: ", m.compiler_version(), "\n", "abi version:      ", m.abi_version(), "\n",
      "tuning:           ",
      m.tuning_digest().empty() ? std::string("none (default schedules)")
                                : "records " + m.tuning_digest(),
      "\n", "code:             ", artifact.code.size(),
      m.code_kind() == kiln::v1::PTX ? " bytes (PTX module)\n" : " bytes (ELF shared object)\n",
      "weights:          ", m.weights_bytes(), " bytes (", HumanBytes(m.weights_bytes()), ")\n");
  for (const auto& in : m.inputs()) absl::StrAppend(&out, "input:  ", SpecText(in, &m), "\n");
  for (const auto& o : m.outputs()) absl::StrAppend(&out, "output: ", SpecText(o, &m), "\n");
  if (m.bound_symbols_size() > 0) {
    std::vector<std::string> symbols;
    for (const auto& b : m.bound_symbols()) {
      symbols.push_back(absl::StrCat(b.name(), "=", b.min(), "..", b.max()));
    }
    absl::StrAppend(&out, "bounded dims:     ", absl::StrJoin(symbols, " "),
                    " (tensors padded to the maximums; kernels read the lengths at run time)\n");
  }
  if (m.symbols_size() > 0) {
    std::vector<std::string> symbols;
    for (const auto& s : m.symbols()) symbols.push_back(runtime::SymbolText(s));
    absl::StrAppend(&out, "symbolic dims:    ", absl::StrJoin(symbols, " "),
                    " (bound from the input shapes at each run)\n");
    absl::StrAppend(&out, "shape program:    ", m.shape_values_size(),
                    " shape values evaluated on the host, ", m.dynamic_buffers_size(),
                    " intermediates sized and placed per run (", m.buffers_size(),
                    " static ones in the arena); output dims evaluated per run\n");
  }
  if (m.profiles_size() == 0) {
    AppendSummary(m, "", out);
    if (details.kernels) AppendKernels(m, "", out);
    if (details.memory) AppendMemory(m, "", out);
  } else {
    absl::StrAppend(&out, "shape profiles (", m.profiles_size(),
                    "; the runtime runs the one whose input shapes match):\n");
    for (int k = 0; k < m.profiles_size(); ++k) {
      const Manifest& p = m.profiles(k);
      std::vector<std::string> inputs, outputs;
      for (const auto& in : p.inputs()) inputs.push_back(SpecText(in));
      for (const auto& o : p.outputs()) outputs.push_back(SpecText(o));
      absl::StrAppend(&out, "profile ", k, ": ", absl::StrJoin(inputs, ", "), " -> ",
                      absl::StrJoin(outputs, ", "), "\n", "  graph hash:       ", p.graph_hash(),
                      "\n");
      AppendSummary(p, "  ", out);
      if (details.kernels) AppendKernels(p, "  ", out);
      if (details.memory) AppendMemory(p, "  ", out);
    }
  }
  if (!details.kernels && !details.memory) {
    absl::StrAppend(&out,
                    "details: --kernels (bindings, tuning, schedules), --memory (the arena "
                    "plan), --json (everything), --dot (the fused graph)\n");
  }
  return out;
}

std::string InspectJson(const runtime::Artifact& artifact, const std::string& path) {
  using google::protobuf::Struct;
  using google::protobuf::Value;
  const Manifest& m = artifact.manifest;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string manifest_json;
  (void)google::protobuf::util::MessageToJsonString(m, &manifest_json, options);
  Struct top;
  auto& f = *top.mutable_fields();
  f["artifact"].set_string_value(path);
  f["code_bytes"].set_number_value(static_cast<double>(artifact.code.size()));
  f["code_kind"].set_string_value(m.code_kind() == kiln::v1::PTX ? "PTX" : "HOST");
  Struct* summary = f["summary"].mutable_struct_value();
  const Manifest& plan = m.profiles_size() > 0 ? m.profiles(0) : m;
  const Counts c = CountsOf(plan);
  auto& s = *summary->mutable_fields();
  s["kernels"].set_number_value(c.kernels);
  s["tuned_kernels"].set_number_value(c.tuned);
  s["flops"].set_number_value(static_cast<double>(c.flops));
  s["weights_bytes"].set_number_value(static_cast<double>(m.weights_bytes()));
  s["arena_bytes"].set_number_value(static_cast<double>(plan.arena_bytes()));
  s["shape_profiles"].set_number_value(m.profiles_size());
  Struct* ops = s["ops"].mutable_struct_value();
  for (const auto& [op, n] : c.ops) (*ops->mutable_fields())[op].set_number_value(n);
  // The manifest's own JSON, as an object of the result (a Manifest prints as valid JSON).
  (void)google::protobuf::util::JsonStringToMessage(manifest_json,
                                                    f["manifest"].mutable_struct_value());
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(top, &out, options);
  return out;
}

std::string InspectDot(const Manifest& manifest) {
  const Manifest& m = manifest.profiles_size() > 0 ? manifest.profiles(0) : manifest;
  std::string out = "digraph kiln {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n";
  for (int i = 0; i < m.inputs_size(); ++i) {
    absl::StrAppend(&out, "  in", i, " [shape=ellipse, label=", Quoted(SpecText(m.inputs(i))),
                    "];\n");
  }
  for (int i = 0; i < m.outputs_size(); ++i) {
    absl::StrAppend(&out, "  out", i, " [shape=ellipse, label=", Quoted(SpecText(m.outputs(i))),
                    "];\n");
  }
  std::set<std::string> edges;
  std::vector<bool> output_written(static_cast<size_t>(m.outputs_size()), false);
  for (int k = 0; k < m.kernels_size(); ++k) {
    const KernelCall& call = m.kernels(k);
    const std::string label = absl::StrCat(
        call.symbol().empty() ? absl::StrCat("call_", k) : call.symbol(), "\\n", call.fused_ops(),
        call.flops() > 0 ? absl::StrCat("\\n", HumanFlops(call.flops())) : "");
    absl::StrAppend(&out, "  k", k, " [label=\"", label, "\"];\n");
    for (const Binding& b : call.args()) {
      std::string edge;
      if (b.kind() == Binding::INPUT) {
        edge = absl::StrCat("  in", b.index(), " -> k", k, ";\n");
      } else if (b.kind() == Binding::OUTPUT && b.index() < m.outputs_size()) {
        // The first kernel binding an output writes it; later ones read it.
        const size_t o = static_cast<size_t>(b.index());
        edge = output_written[o] ? absl::StrCat("  out", o, " -> k", k, ";\n")
                                 : absl::StrCat("  k", k, " -> out", o, ";\n");
        output_written[o] = true;
      } else if (b.kind() == Binding::ARENA) {
        const kiln::v1::PlannedBuffer* p = BufferAt(m, b, k);
        if (p == nullptr || p->first_kernel() == k) continue;
        edge = absl::StrCat("  k", p->first_kernel(), " -> k", k, " [label=", Quoted(p->name()),
                            "];\n");
      }
      if (!edge.empty() && edges.insert(edge).second) out += edge;
    }
  }
  return out + "}\n";
}

}  // namespace kiln::client
