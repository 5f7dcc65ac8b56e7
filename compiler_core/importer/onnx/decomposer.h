// Emits the graph ops one ONNX node decomposes into at import (quantization and training ops),
// each named "<node>/<n>" after the ONNX node.
#ifndef KILN_COMPILER_CORE_IMPORTER_ONNX_DECOMPOSER_H_
#define KILN_COMPILER_CORE_IMPORTER_ONNX_DECOMPOSER_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler_core/importer/onnx/import_context.h"
#include "compiler_core/importer/onnx/tensor_proto.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::importer {

/// Emits the nodes of one decomposition. Errors are those of ImportContext::Emit (the op's
/// shape rule, naming the emitted node).
class Decomposer {
 public:
  Decomposer(ImportContext& ctx, const OnnxNode& node) : ctx_(ctx), node_(node) {}

  /// A single-output op over `inputs`.
  absl::StatusOr<graph::Value*> Op(graph::OpKind op, std::vector<graph::Value*> inputs,
                                   graph::AttrMap attrs = {}) {
    KILN_ASSIGN_OR_RETURN(graph::Node * n, ctx_.Emit(op, absl::StrCat(node_.name, "/", ++count_),
                                                     std::move(inputs), std::move(attrs)));
    return n->output(0);
  }
  /// `v` cast to `to` (itself if it has that type already).
  absl::StatusOr<graph::Value*> Cast(graph::Value* v, DType to) {
    if (v->type().dtype == to) return v;
    graph::AttrMap a;
    a.Set("to", static_cast<int64_t>(DTypeToOnnx(to)));
    return Op(graph::OpKind::kCast, {v}, a);
  }
  /// A rank-0 constant.
  graph::Value* Scalar(DType dtype, double value) {
    return ctx_.ConstScalar(absl::StrCat(node_.name, "/c", ++count_), dtype, value);
  }
  ImportContext& ctx() { return ctx_; }
  const OnnxNode& node() const { return node_; }

 private:
  ImportContext& ctx_;
  const OnnxNode& node_;
  int count_ = 0;
};

}  // namespace kiln::importer

#endif  // KILN_COMPILER_CORE_IMPORTER_ONNX_DECOMPOSER_H_
