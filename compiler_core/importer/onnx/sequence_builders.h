// Sequence ops (ONNX sequences of tensors), imported as lists of graph values: every sequence
// Kiln compiles has a length known at compile time (a sequence graph input's elements are the
// graph inputs "name[k]", given as input shapes; a sequence graph output becomes the graph
// outputs "name[k]"), so the ops become list operations at import plus Concat/Slice nodes.
#ifndef KILN_COMPILER_CORE_IMPORTER_ONNX_SEQUENCE_BUILDERS_H_
#define KILN_COMPILER_CORE_IMPORTER_ONNX_SEQUENCE_BUILDERS_H_

#include <map>
#include <string>

#include "compiler_core/importer/onnx/control_flow.h"
#include "compiler_core/importer/onnx/import_context.h"

namespace kiln::importer {

/// Whether `op_type` (default domain) is a sequence op BuildSequenceOp imports:
/// SequenceEmpty, SequenceConstruct, SequenceInsert, SequenceAt, SequenceErase, SequenceLength,
/// ConcatFromSequence, SplitToSequence and SequenceMap.
bool IsSequenceOp(const std::string& op_type);

/// Imports sequence op `node`: sequence operands and results live in ctx's sequences, tensor
/// ones in `values` (results named `prefix` + their ONNX name). Positions (SequenceInsert,
/// SequenceAt, SequenceErase) and SplitToSequence's split must be compile-time constants.
/// SequenceMap imports its body once per element through `import`. Errors: kInvalidArgument
/// for a position out of range or sequences of different lengths in one SequenceMap;
/// kUnimplemented for run-time positions or splits.
absl::Status BuildSequenceOp(ImportContext& ctx, const onnx::NodeProto& node,
                             std::map<std::string, graph::Value*>& values,
                             const SubgraphImporter& import, const std::string& prefix);

}  // namespace kiln::importer

#endif  // KILN_COMPILER_CORE_IMPORTER_ONNX_SEQUENCE_BUILDERS_H_
