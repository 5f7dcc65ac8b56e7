#include "compiler_core/runtime/chrome_trace.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"

namespace kiln::runtime {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

Value Str(const std::string& s) {
  Value v;
  v.set_string_value(s);
  return v;
}

Value Num(double d) {
  Value v;
  v.set_number_value(d);
  return v;
}

// A complete event ("ph": "X") on thread `tid`, starting at `start_ms` and lasting `ms`.
Struct CompleteEvent(const std::string& name, const std::string& category, double start_ms,
                     double ms, int tid) {
  Struct e;
  auto& f = *e.mutable_fields();
  f["name"] = Str(name);
  f["cat"] = Str(category);
  f["ph"] = Str("X");
  f["ts"] = Num(start_ms * 1000.0);
  f["dur"] = Num(ms * 1000.0);
  f["pid"] = Num(1);
  f["tid"] = Num(tid);
  return e;
}

}  // namespace

std::string ChromeTraceJson(const kiln::v1::Manifest& manifest,
                            const std::vector<ProfiledRun>& runs) {
  Struct trace;
  auto& top = *trace.mutable_fields();
  auto* events = top["traceEvents"].mutable_list_value();
  for (size_t r = 0; r < runs.size(); ++r) {
    const ProfiledRun& run = runs[r];
    Struct run_event = CompleteEvent(absl::StrCat("run ", r), "run", run.start_ms, run.total_ms, 1);
    *events->add_values()->mutable_struct_value() = run_event;
    for (size_t k = 0; k < run.kernel_ms.size(); ++k) {
      const bool known = k < static_cast<size_t>(manifest.kernels_size());
      const kiln::v1::KernelCall* call = known ? &manifest.kernels(static_cast<int>(k)) : nullptr;
      std::string name = absl::StrCat("kernel ", k);
      if (call != nullptr) {
        const std::string ops = call->fused_ops().empty() ? "Loop" : call->fused_ops();
        name = call->symbol().empty() ? ops : absl::StrCat(ops, " (", call->symbol(), ")");
      }
      const double start =
          run.start_ms + (k < run.kernel_start_ms.size() ? run.kernel_start_ms[k] : 0.0);
      Struct e = CompleteEvent(name, "kernel", start, run.kernel_ms[k], 1);
      auto& args = *(*e.mutable_fields())["args"].mutable_struct_value()->mutable_fields();
      args["index"] = Num(static_cast<double>(k));
      args["run"] = Num(static_cast<double>(r));
      if (call != nullptr) {
        args["symbol"] = Str(call->symbol());
        args["fused_ops"] = Str(call->fused_ops());
        args["schedule"] = Str(call->schedule());
        args["tuned"] = Str(call->tuned() ? "yes" : "no");
        args["workload_key"] = Str(call->workload_key());
      }
      *events->add_values()->mutable_struct_value() = std::move(e);
    }
  }
  top["displayTimeUnit"] = Str("ms");
  auto& other = *top["otherData"].mutable_struct_value()->mutable_fields();
  other["model"] = Str(manifest.model_name());
  other["target"] = Str(manifest.target_key());
  other["compiler_version"] = Str(manifest.compiler_version());
  other["graph_hash"] = Str(manifest.graph_hash());
  other["runs"] = Num(static_cast<double>(runs.size()));
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  // Struct-only input: printing cannot fail.
  (void)google::protobuf::util::MessageToJsonString(trace, &json, options);
  return json;
}

}  // namespace kiln::runtime
