// Request validation for Compile and SubmitJob: checks the request, stores an inline model,
// resolves the target and computes the full artifact cache key. Blocking (storage, import):
// runs on the executor.
#ifndef KILN_SERVER_COMPILE_PREP_H_
#define KILN_SERVER_COMPILE_PREP_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "kiln/v1/service.pb.h"
#include "server/cache/storage.h"
#include "server/compile_handler.h"
#include "server/model_index.h"

namespace kiln::server {

class CompilePreparer {
 public:
  CompilePreparer(cache::Storage* storage, ModelIndex* models, TargetResolver* targets,
                  int64_t inline_model_max_bytes)
      : storage_(storage),
        models_(models),
        targets_(targets),
        inline_model_max_bytes_(inline_model_max_bytes) {}

  /// Validates `request` and computes its CompileSpec. An UNSPECIFIED priority becomes
  /// `default_priority`; an empty target becomes "host". Errors, with the codes clients see:
  ///   kInvalidArgument   no model, a malformed digest, a malformed model, an unknown target or
  ///                      an unknown priority;
  ///   kNotFound          a model digest that was never uploaded;
  ///   kResourceExhausted an inline model over --inline-model-max-bytes;
  ///   kUnimplemented     a model with an unsupported op or opset;
  ///   kDataLoss          the stored model blob was corrupted (it is evicted: upload it again).
  absl::StatusOr<CompileSpec> Prepare(const v1::CompileRequest& request,
                                      v1::Priority default_priority);

 private:
  cache::Storage* storage_;
  ModelIndex* models_;
  TargetResolver* targets_;
  int64_t inline_model_max_bytes_;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_COMPILE_PREP_H_
