// Graph-hash memo (import once per model digest) and target resolution memo.
#include "server/model_index.h"

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/graph_hash.h"
#include "compiler_core/support/sha256.h"
#include "compiler_core/support/target.h"
#include "server/graph_hash_task.h"
#include "server/limited_process.h"
#include "server/log.h"
#include "wire/status.h"

namespace kiln::server {
namespace {

/// The graph hash of `bytes` (one shape profile), from kiln-graph-hash in a limited child.
absl::StatusOr<std::string> SandboxedHash(const GraphHashSandbox& sandbox,
                                          const std::string& digest, std::string_view bytes,
                                          const importer::InputShapes& shapes,
                                          const ConstantInputs& constants,
                                          const importer::InputShapes& min_shapes) {
  auto start = absl::Now();
  const std::string input =
      MakeGraphHashTask(bytes, shapes, constants, min_shapes, sandbox.max_tensor_bytes)
          .SerializeAsString();
  absl::StatusOr<ProcessOutcome> ran = RunLimitedProcess({sandbox.binary}, input, sandbox.limits);
  if (!ran.ok()) {
    return absl::UnavailableError(
        absl::StrCat("cannot run ", sandbox.binary, ": ", ran.status().message()));
  }
  v1::GraphHashResult result;
  if (ran->exit_code == 127 && ran->out.empty()) {
    return absl::UnavailableError(
        absl::StrCat("cannot start ", sandbox.binary, ": ", ran->err_tail));
  }
  if (!ran->ok() || !result.ParseFromString(ran->out)) {
    // The model made the importer crash, hang or run out of memory: only the child died.
    std::string why = absl::StrCat(
        "model ", digest, " cannot be imported: ", ran->Failure("the importer", sandbox.limits));
    LogWarning("model.import_crashed",
               {{"model", digest.substr(0, 12)}, {"outcome", ran->Describe()}});
    return ran->HitLimit() ? absl::ResourceExhaustedError(why) : absl::InvalidArgumentError(why);
  }
  if (result.error_code() != 0) {
    absl::Status s = wire::StatusFromCode(result.error_code(), result.error_message());
    LogInfo("model.import_failed", {{"model", digest.substr(0, 12)}, {"status", s}});
    if (absl::IsUnimplemented(s) || absl::IsInvalidArgument(s)) {
      return absl::Status(s.code(), absl::StrCat("model ", digest, ": ", s.message()));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("model ", digest, " cannot be imported: ", s.message()));
  }
  LogInfo("model.imported", {{"model", digest.substr(0, 12)},
                             {"graph_hash", result.graph_hash().substr(0, 12)},
                             {"ms", absl::ToInt64Milliseconds(absl::Now() - start)}});
  return result.graph_hash();
}

bool Memoizable(const absl::StatusOr<std::string>& r) {
  return r.ok() || absl::IsInvalidArgument(r.status()) || absl::IsUnimplemented(r.status());
}

}  // namespace

absl::StatusOr<std::string> ModelIndex::GraphHash(const std::string& digest,
                                                  const importer::ShapeProfiles& profiles,
                                                  const ConstantInputs& constants,
                                                  const importer::InputShapes& min_shapes) {
  return ComputeProfiles(digest, nullptr, profiles, constants, min_shapes);
}

absl::StatusOr<std::string> ModelIndex::GraphHashOfBytes(const std::string& digest,
                                                         std::string_view bytes,
                                                         const importer::ShapeProfiles& profiles,
                                                         const ConstantInputs& constants,
                                                         const importer::InputShapes& min_shapes) {
  std::string copy(bytes);
  return ComputeProfiles(digest, &copy, profiles, constants, min_shapes);
}

ModelIndex::Result ModelIndex::ComputeProfiles(const std::string& digest, const std::string* bytes,
                                               const importer::ShapeProfiles& profiles,
                                               const ConstantInputs& constants,
                                               const importer::InputShapes& min_shapes) {
  // The constants in the memo key by their SHA-256, hashed once for all profiles.
  std::string constants_key;
  for (const auto& [name, tensor] : constants) {
    absl::StrAppend(&constants_key, " ", name, ":", Sha256Hex(tensor));
  }
  if (profiles.size() <= 1) {
    return Compute(digest, bytes, profiles.empty() ? importer::InputShapes{} : profiles.front(),
                   constants, constants_key, min_shapes);
  }
  std::vector<std::string> hashes;
  for (size_t k = 0; k < profiles.size(); ++k) {
    Result hash = Compute(digest, bytes, profiles[k], constants, constants_key);
    if (!hash.ok()) {
      return absl::Status(hash.status().code(),
                          absl::StrCat("shape profile ", k, " (",
                                       importer::FormatInputShapes(profiles[k]),
                                       "): ", hash.status().message()));
    }
    hashes.push_back(*hash);
  }
  return graph::ProfilesGraphHash(hashes);
}

ModelIndex::Result ModelIndex::Compute(const std::string& digest, const std::string* bytes,
                                       const importer::InputShapes& shapes,
                                       const ConstantInputs& constants,
                                       const std::string& constants_key,
                                       const importer::InputShapes& min_shapes) {
  // One import per model, input shapes and constant inputs.
  std::string memo_key =
      shapes.empty() ? digest
                     : absl::StrCat(digest, " ", importer::FormatBoundedShapes(shapes, min_shapes));
  memo_key += constants_key;
  std::promise<Result> promise;
  std::shared_future<Result> future;
  bool owner = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = hashes_.find(memo_key);
    if (it != hashes_.end()) {
      future = it->second;
    } else {
      future = promise.get_future().share();
      hashes_[memo_key] = future;
      owner = true;
    }
  }
  if (!owner) return future.get();

  Result result;
  if (bytes != nullptr) {
    result = SandboxedHash(sandbox_, digest, *bytes, shapes, constants, min_shapes);
  } else {
    absl::StatusOr<std::string> blob = storage_->GetBlob(digest);
    result = blob.ok() ? SandboxedHash(sandbox_, digest, *blob, shapes, constants, min_shapes)
                       : Result(blob.status());
  }
  promise.set_value(result);
  if (!Memoizable(result)) {
    std::lock_guard<std::mutex> lock(mu_);
    hashes_.erase(memo_key);
  }
  return result;
}

absl::StatusOr<Target> TargetResolver::Resolve(const std::string& spec) {
  if (spec == "native") {
    // The client's CPU, which only the client knows (kiln sends NativeTargetSpec()).
    return absl::InvalidArgumentError(
        "target 'native' is the client's CPU: the client resolves it and sends "
        "cpu:<name>:<features> (kiln --target native does)");
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = resolved_.find(spec);
  if (it != resolved_.end()) return it->second;
  absl::StatusOr<Target> target = kiln::ResolveTarget(spec);
  if (!target.ok() && !absl::IsInvalidArgument(target.status())) {
    target = absl::InvalidArgumentError(
        absl::StrCat("unknown target '", spec, "': ", target.status().message()));
  }
  // Bound the memo: specs come from clients.
  if (resolved_.size() < 1024) resolved_.emplace(spec, target);
  return target;
}

}  // namespace kiln::server
