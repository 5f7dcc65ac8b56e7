#include "server/graph_hash_task.h"

#include "compiler_core/importer/onnx/importer.h"
#include "compiler_core/ir/graph/graph_hash.h"
#include "compiler_core/passes/graph/bounded_dims.h"

namespace kiln::server {
namespace {

absl::StatusOr<std::string> ImportAndHash(std::string_view bytes,
                                          const importer::InputShapes& shapes,
                                          const std::map<std::string, std::string>& constants,
                                          const importer::InputShapes& min_shapes,
                                          int64_t max_tensor_bytes) {
  importer::ImportOptions options{shapes, constants};
  if (max_tensor_bytes > 0) options.max_tensor_bytes = max_tensor_bytes;
  // As the compile pipeline imports (pipeline::ImportOptionsFor): with no shapes given, dynamic
  // dims stay symbolic, so that the hash is the symbolic graph's.
  options.symbolic_dims = true;
  absl::StatusOr<std::unique_ptr<graph::Graph>> graph =
      importer::ImportOnnxBytes(bytes, /*base_dir=*/"", options);
  if (!graph.ok()) return graph.status();
  if (min_shapes.empty()) return graph::GraphHash(**graph);
  // Bounded dims: the probe imports and the analysis the worker's pipeline runs.
  absl::StatusOr<passes::BoundedDims> bounded = passes::BoundDims(
      **graph, shapes, min_shapes, [&](const importer::InputShapes& probe_shapes) {
        importer::ImportOptions probe{probe_shapes, constants};
        probe.max_tensor_bytes = options.max_tensor_bytes;
        return importer::ImportOnnxBytes(bytes, "", probe);
      });
  if (!bounded.ok()) return absl::InvalidArgumentError(bounded.status().message());
  return passes::BoundedGraphHash(**graph, *bounded);
}

}  // namespace

v1::GraphHashTask MakeGraphHashTask(std::string_view model, const importer::InputShapes& shapes,
                                    const std::map<std::string, std::string>& constants,
                                    const importer::InputShapes& min_shapes,
                                    int64_t max_tensor_bytes) {
  v1::GraphHashTask task;
  task.set_max_tensor_bytes(max_tensor_bytes);
  task.set_model(std::string(model));
  for (const auto& [name, dims] : shapes) {
    v1::InputShape* shape = task.add_input_shapes();
    shape->set_name(name);
    for (int64_t d : dims) shape->add_dims(d);
    if (auto mins = min_shapes.find(name); mins != min_shapes.end()) {
      for (int64_t d : mins->second) shape->add_min_dims(d);
    }
  }
  for (const auto& [name, tensor] : constants) {
    v1::ConstantInput* c = task.add_constant_inputs();
    c->set_name(name);
    c->set_tensor(tensor);
  }
  return task;
}

v1::GraphHashResult RunGraphHashTask(const v1::GraphHashTask& task) {
  importer::InputShapes shapes, min_shapes;
  for (const v1::InputShape& s : task.input_shapes()) {
    shapes[s.name()].assign(s.dims().begin(), s.dims().end());
    if (!s.min_dims().empty())
      min_shapes[s.name()].assign(s.min_dims().begin(), s.min_dims().end());
  }
  std::map<std::string, std::string> constants;
  for (const v1::ConstantInput& c : task.constant_inputs()) constants[c.name()] = c.tensor();
  absl::StatusOr<std::string> hash =
      ImportAndHash(task.model(), shapes, constants, min_shapes, task.max_tensor_bytes());
  v1::GraphHashResult result;
  if (hash.ok()) {
    result.set_graph_hash(*hash);
  } else {
    result.set_error_code(static_cast<int32_t>(hash.status().code()));
    result.set_error_message(std::string(hash.status().message()));
  }
  return result;
}

}  // namespace kiln::server
