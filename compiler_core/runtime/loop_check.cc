// CheckLoopCall: a Loop call's body and arguments agree in count, dtype and size.
#include "compiler_core/runtime/loop_check.h"

#include <algorithm>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/tensor.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::runtime {
namespace {

// Bytes of a tensor spec, or -1 when its dtype is unknown or a dim negative.
int64_t SpecBytes(const kiln::v1::TensorSpec& spec) {
  std::optional<DType> dtype = ParseDType(spec.dtype());
  if (!dtype) return -1;
  TensorType t{*dtype, {spec.shape().begin(), spec.shape().end()}};
  for (int64_t d : t.shape) {
    if (d < 0) return -1;
  }
  return t.NumBytes();
}

bool IsScalar(const kiln::v1::TensorSpec& spec, const char* dtype) {
  int64_t n = 1;
  for (int64_t d : spec.shape()) n *= d;
  return spec.dtype() == dtype && n == 1;
}

}  // namespace

absl::Status CheckLoopCall(
    const kiln::v1::Manifest& parent, const kiln::v1::KernelCall& call,
    const std::function<absl::Status(const kiln::v1::Manifest&)>& validate_body) {
  const kiln::v1::LoopCall& loop = call.loop();
  const kiln::v1::Manifest& body = loop.body();
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("Loop call (", loop.what(), "): ", why));
  };
  if (body.profiles_size() > 0 || body.bound_symbols_size() > 0 || !call.init_symbol().empty()) {
    return bad("a Loop body has no shape profiles, bound symbols or init symbol");
  }
  for (const auto* specs : {&body.inputs(), &body.outputs()}) {
    for (const kiln::v1::TensorSpec& spec : *specs) {
      if (spec.bounded() || spec.lengths_size() > 0) {
        return bad(absl::StrCat("body tensor '", spec.name(), "' is bounded"));
      }
    }
  }
  for (const kiln::v1::KernelCall& c : body.kernels()) {
    for (const kiln::v1::ShapeCheck& check : c.shape_checks()) {
      if (check.bounded()) return bad("a body kernel bounds an output (ShapeCheck.bounded)");
    }
  }
  absl::Status valid = validate_body(body);
  if (!valid.ok()) return bad(absl::StrCat("body: ", valid.message()));
  const int nc = loop.num_carried();
  const int num_outer = body.inputs_size() - 2 - nc;
  const int num_scans = body.outputs_size() - 1 - nc;
  if (nc < 0 || num_outer < 0 || num_scans < 0) {
    return bad(absl::StrCat("a body of ", body.inputs_size(), " inputs and ", body.outputs_size(),
                            " outputs cannot carry ", nc, " values"));
  }
  if (num_scans > 0 && loop.scan_length() < 0) return bad("scan outputs without a scan_length");
  if (!(body.inputs(0).dtype() == "i64" && body.inputs(0).shape_size() == 0) ||
      !(body.inputs(1).dtype() == "bool" && body.inputs(1).shape_size() == 0) ||
      !IsScalar(body.outputs(0), "bool")) {
    return bad("body inputs 0, 1 and output 0 must be i64 [], bool [] and one bool");
  }
  if (call.args_size() != body.inputs_size() + nc + num_scans) {
    return bad(absl::StrCat(call.args_size(), " arguments for ", body.inputs_size(),
                            " body inputs, ", nc, " carried values and ", num_scans,
                            " scan outputs"));
  }
  // The bytes each argument must have, and the parent's spec behind an INPUT or OUTPUT binding.
  for (int a = 0; a < call.args_size(); ++a) {
    int64_t want;
    if (a == 0) {
      want = 8;
    } else if (a == 1) {
      want = 1;
    } else if (a < body.inputs_size()) {
      want = SpecBytes(body.inputs(a));
    } else if (a < body.inputs_size() + nc) {
      const int i = a - body.inputs_size();
      const kiln::v1::TensorSpec& before = body.inputs(2 + i);
      const kiln::v1::TensorSpec& after = body.outputs(1 + i);
      if (before.dtype() != after.dtype() ||
          !std::equal(before.shape().begin(), before.shape().end(), after.shape().begin(),
                      after.shape().end())) {
        return bad(absl::StrCat("carried value ", i, " changes type in the body"));
      }
      want = SpecBytes(after);
    } else {
      const int64_t step = SpecBytes(body.outputs(1 + nc + (a - body.inputs_size() - nc)));
      want = step < 0 || (step > 0 && loop.scan_length() > INT64_MAX / step)
                 ? -1
                 : step * loop.scan_length();
    }
    const kiln::v1::Binding& b = call.args(a);
    int64_t have = b.size_bytes();
    if (b.kind() == kiln::v1::Binding::INPUT && b.index() >= 0 &&
        b.index() < parent.inputs_size()) {
      have = SpecBytes(parent.inputs(static_cast<int>(b.index())));
    } else if (b.kind() == kiln::v1::Binding::OUTPUT && b.index() >= 0 &&
               b.index() < parent.outputs_size()) {
      have = SpecBytes(parent.outputs(static_cast<int>(b.index())));
    }
    if (want < 0 || have != want || b.size_bytes() != want) {
      return bad(absl::StrCat("argument ", a, " binds ", have, " bytes, the body needs ", want));
    }
    // A Loop output written into a graph output: the runtime cuts a bounded scan output's
    // leading dim, so the output's spec must be the body's (with scan_length rows) exactly.
    if (a >= body.inputs_size() && b.kind() == kiln::v1::Binding::OUTPUT) {
      const int o = a - body.inputs_size();  // Loop output: carried, then scans
      const kiln::v1::TensorSpec& step = body.outputs(1 + o);
      const kiln::v1::TensorSpec& out = parent.outputs(static_cast<int>(b.index()));
      std::vector<int64_t> shape(step.shape().begin(), step.shape().end());
      if (o >= nc) shape.insert(shape.begin(), loop.scan_length());
      if (out.dtype() != step.dtype() ||
          !std::equal(shape.begin(), shape.end(), out.shape().begin(), out.shape().end()) ||
          (o < nc && out.bounded())) {
        return bad(absl::StrCat("argument ", a, " binds graph output '", out.name(), "' ",
                                out.dtype(), " of another shape than the body gives"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace kiln::runtime
