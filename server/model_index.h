// What kilnd knows about models and targets before compiling: the graph hash of each uploaded
// model (found by importing it: protobuf parse + checker + shape inference, never compiling,
// in kiln-graph-hash, a child process with resource limits: kilnd never parses a model),
// memoized by model digest, and resolved targets, memoized by spec. Both are blocking: call them
// from the executor, never from a gRPC reactor.
#ifndef KILN_SERVER_MODEL_INDEX_H_
#define KILN_SERVER_MODEL_INDEX_H_

#include <future>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "compiler_core/importer/onnx/input_shapes.h"
#include "compiler_core/support/target.h"
#include "server/cache/storage.h"
#include "server/limited_process.h"

namespace kiln::server {

/// Graph inputs given as constants: name → serialized onnx.TensorProto.
using ConstantInputs = std::map<std::string, std::string>;

/// Where and how the graph hash is computed: the kiln-graph-hash binary and its child's limits.
struct GraphHashSandbox {
  std::string binary;
  ProcessLimits limits;
  /// --max-tensor-bytes: a model with a larger tensor is INVALID_ARGUMENT (0: 1 TiB).
  int64_t max_tensor_bytes = 0;
};

/// Model digest → graph hash. Thread-safe; concurrent requests for one digest import once.
class ModelIndex {
 public:
  ModelIndex(cache::Storage* storage, GraphHashSandbox sandbox)
      : storage_(storage), sandbox_(std::move(sandbox)) {}

  /// The graph hash of the stored model blob `digest` imported with `profiles` for its
  /// symbolic input dims and `constants` for inputs compiled as constants (memoized per digest,
  /// profile and constants): the imported graph's hash for no
  /// or one profile, graph::ProfilesGraphHash of each profile's for several (as the pipeline's
  /// CompileProfiles). Errors: those of GetBlob (kNotFound, kDataLoss), kInvalidArgument for a
  /// malformed model (also for one with external data, which kilnd cannot read) or shapes that
  /// do not fit it, kUnimplemented for an unsupported op or opset; kInvalidArgument too when
  /// the model crashes the importer, kResourceExhausted when it runs past the child's memory or
  /// time limits (not memoized), kUnavailable when kiln-graph-hash cannot be run.
  /// With `min_shapes` (bounded dims, one profile), the bounded compile's hash
  /// (passes::BoundedGraphHash after passes::BoundDims, as the pipeline computes it).
  absl::StatusOr<std::string> GraphHash(const std::string& digest,
                                        const importer::ShapeProfiles& profiles = {},
                                        const ConstantInputs& constants = {},
                                        const importer::InputShapes& min_shapes = {});

  /// The same for model bytes in hand (an inline model whose SHA-256 is `digest`).
  absl::StatusOr<std::string> GraphHashOfBytes(const std::string& digest, std::string_view bytes,
                                               const importer::ShapeProfiles& profiles = {},
                                               const ConstantInputs& constants = {},
                                               const importer::InputShapes& min_shapes = {});

 private:
  using Result = absl::StatusOr<std::string>;
  Result ComputeProfiles(const std::string& digest, const std::string* bytes,
                         const importer::ShapeProfiles& profiles, const ConstantInputs& constants,
                         const importer::InputShapes& min_shapes);
  Result Compute(const std::string& digest, const std::string* bytes,
                 const importer::InputShapes& shapes, const ConstantInputs& constants,
                 const std::string& constants_key, const importer::InputShapes& min_shapes = {});

  cache::Storage* storage_;
  const GraphHashSandbox sandbox_;
  std::mutex mu_;
  /// Results are kept when they depend only on the bytes (OK, kInvalidArgument, kUnimplemented).
  std::map<std::string, std::shared_future<Result>> hashes_;
};

/// Target spec → resolved Target, through kiln::ResolveTarget. "host" is kilnd's own host,
/// which local workers share. Thread-safe.
class TargetResolver {
 public:
  /// Errors: kInvalidArgument for an unknown spec or CPU name, and for "native" (the
  /// client's CPU: a client sends it resolved, as NativeTargetSpec()).
  absl::StatusOr<Target> Resolve(const std::string& spec);

 private:
  std::mutex mu_;
  std::map<std::string, absl::StatusOr<Target>> resolved_;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_MODEL_INDEX_H_
