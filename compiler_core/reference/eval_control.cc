// Loop: the body graph evaluated once per iteration (ONNX Loop semantics).
#include <cstring>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/op_attrs.h"
#include "compiler_core/reference/eval_internal.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::reference {

absl::StatusOr<TensorVec> EvalLoop(const graph::Node& node, const TensorVec& in) {
  const graph::LoopAttrs a = graph::LoopAttrs::Of(node);
  std::shared_ptr<graph::Graph> body = a.body;
  const int64_t carried = a.num_carried;
  const int64_t scan_length = a.scan_length;
  const size_t num_scans = body->outputs().size() - 1 - static_cast<size_t>(carried);
  const int64_t trips = in[0]->GetAsInt64(0);
  bool cond = in[1]->GetAsInt64(0) != 0;
  // Body inputs: iteration_num, cond, carried..., outer... (the outer values stay as given).
  TensorVec args(in.begin(), in.end());
  std::vector<std::shared_ptr<Tensor>> scans;
  for (size_t k = 0; k < num_scans; ++k) {
    const graph::Value* out = node.output(static_cast<int>(carried + k));
    auto t = std::make_shared<Tensor>();
    t->type = out->type();
    t->bytes.assign(static_cast<size_t>(t->type.NumBytes()), 0);
    scans.push_back(std::move(t));
  }
  int64_t n = 0;
  for (; n < trips && cond; ++n) {
    if (num_scans > 0 && n >= scan_length) {
      return absl::InvalidArgumentError(
          NodePrefix(node) +
          absl::StrCat("runs more iterations than its scan outputs' ", scan_length));
    }
    auto iter = std::make_shared<Tensor>();
    iter->type = TensorType{DType::kInt64, {}};
    iter->bytes.resize(8);
    std::memcpy(iter->bytes.data(), &n, 8);
    auto c = std::make_shared<Tensor>();
    c->type = TensorType{DType::kBool, {}};
    c->bytes.assign(1, 1);
    args[0] = iter;
    args[1] = c;
    KILN_ASSIGN_OR_RETURN(TensorVec out, EvaluateGraph(*body, args));
    cond = out[0]->GetAsInt64(0) != 0;
    for (int64_t i = 0; i < carried; ++i) args[2 + i] = out[1 + i];
    for (size_t k = 0; k < num_scans; ++k) {
      const Tensor& step = *out[1 + carried + k];
      std::memcpy(scans[k]->bytes.data() + n * step.bytes.size(), step.bytes.data(),
                  step.bytes.size());
    }
  }
  if (num_scans > 0 && n != scan_length) {
    return absl::InvalidArgumentError(
        NodePrefix(node) +
        absl::StrCat("ran ", n, " iterations, its scan outputs have ", scan_length));
  }
  TensorVec result(args.begin() + 2, args.begin() + 2 + carried);
  result.insert(result.end(), scans.begin(), scans.end());
  return result;
}

}  // namespace kiln::reference
