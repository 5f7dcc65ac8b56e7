// Compile request validation and cache-key computation.
#include "server/compile_prep.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler_core/pipeline/compiler_version.h"
#include "compiler_core/support/sha256.h"
#include "compiler_core/support/status_macros.h"
#include "server/artifact_key.h"
#include "server/tuning_records.h"
#include "wire/digest.h"
#include "wire/options.h"
#include "workers/protocol.h"

namespace kiln::server {

absl::StatusOr<CompileSpec> CompilePreparer::Prepare(const v1::CompileRequest& request,
                                                     v1::Priority default_priority) {
  CompileSpec spec;
  switch (request.priority()) {
    case v1::PRIORITY_UNSPECIFIED:
      spec.priority = default_priority;
      break;
    case v1::INTERACTIVE:
    case v1::BATCH:
      spec.priority = request.priority();
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("unknown priority ", static_cast<int>(request.priority())));
  }
  spec.target = request.target().empty() ? "host" : request.target();
  KILN_ASSIGN_OR_RETURN(Target target, targets_->Resolve(spec.target));
  spec.options = wire::CanonicalOptions(request.options());
  KILN_RETURN_IF_ERROR(SetPrecision(target, spec.options.precision()));
  KILN_ASSIGN_OR_RETURN(importer::ShapeProfiles shapes, workers::ShapeProfilesOf(spec.options));
  KILN_ASSIGN_OR_RETURN(importer::InputShapes min_shapes,
                        workers::BoundedMinShapesOf(spec.options));
  KILN_ASSIGN_OR_RETURN(ConstantInputs constants, workers::ConstantInputsOf(spec.options));

  std::string graph_hash;
  switch (request.model_case()) {
    case v1::CompileRequest::kModelDigest: {
      const v1::Digest& digest = request.model_digest();
      KILN_RETURN_IF_ERROR(wire::CheckDigest(digest.hash(), "model digest"));
      KILN_ASSIGN_OR_RETURN(bool present, storage_->HasBlob(digest.hash()));
      if (!present) {
        return absl::NotFoundError(absl::StrCat("model ", digest.hash(),
                                                " was never uploaded; upload it with UploadModel"));
      }
      KILN_ASSIGN_OR_RETURN(int64_t size, storage_->GetBlobSize(digest.hash()));
      spec.model_digest = digest.hash();
      spec.model_size_bytes = size;
      KILN_ASSIGN_OR_RETURN(graph_hash,
                            models_->GraphHash(spec.model_digest, shapes, constants, min_shapes));
      break;
    }
    case v1::CompileRequest::kInlineModel: {
      const std::string& bytes = request.inline_model();
      if (bytes.empty()) return absl::InvalidArgumentError("inline model is empty");
      if (static_cast<int64_t>(bytes.size()) > inline_model_max_bytes_) {
        return absl::ResourceExhaustedError(
            absl::StrCat("inline model of ", bytes.size(), " bytes exceeds the server's limit of ",
                         inline_model_max_bytes_, " bytes; upload it with UploadModel"));
      }
      spec.model_digest = Sha256Hex(bytes);
      spec.model_size_bytes = static_cast<int64_t>(bytes.size());
      // Import first: a malformed model is refused before it takes space in the store.
      KILN_ASSIGN_OR_RETURN(graph_hash, models_->GraphHashOfBytes(spec.model_digest, bytes, shapes,
                                                                  constants, min_shapes));
      KILN_ASSIGN_OR_RETURN(std::string stored, storage_->PutBlob(cache::BlobKind::kModel, bytes));
      (void)stored;
      break;
    }
    default:
      return absl::InvalidArgumentError(
          "the request names no model: set model_digest (after UploadModel) or inline_model");
  }
  // The records of the model's own workloads, when an earlier compile or tune told kilnd
  // which they are; else every best record of the hardware (CompileHandler then also files the
  // artifact under the key of its own records).
  KILN_ASSIGN_OR_RETURN(std::optional<std::vector<std::string>> workloads,
                        storage_->GetModelWorkloads(graph_hash, target.Key(),
                                                    WorkloadOptionsHash(spec.options)));
  spec.workloads_known = workloads.has_value();
  KILN_RETURN_IF_ERROR(FillTuningRecords(*storage_, target, spec.options,
                                         workloads.has_value() ? &*workloads : nullptr));
  spec.key = cache::ArtifactKey{graph_hash, target.Key(), pipeline::kCompilerVersion,
                                wire::OptionsHash(spec.options)};
  return spec;
}

}  // namespace kiln::server
