// CostModelOptions as text (stored inside a serialized model, so that a restored model trains
// and predicts as it did) and their validation. Internal to tuning/.
#ifndef KILN_COMPILER_CORE_TUNING_COST_MODEL_OPTIONS_H_
#define KILN_COMPILER_CORE_TUNING_COST_MODEL_OPTIONS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler_core/tuning/cost_model.h"

namespace kiln::tuning {

/// kInvalidArgument naming the first out-of-range field.
absl::Status ValidateOptions(const CostModelOptions& options);

/// "key=value;..." with every field; doubles printed so that they parse back exactly.
std::string FormatOptions(const CostModelOptions& options);

/// Inverse of FormatOptions. Errors: kInvalidArgument for a missing, unknown or malformed field
/// or out-of-range options.
absl::StatusOr<CostModelOptions> ParseOptions(absl::string_view text);

/// `v` with 17 significant digits (round-trips exactly).
std::string FormatDouble(double v);

}  // namespace kiln::tuning

#endif  // KILN_COMPILER_CORE_TUNING_COST_MODEL_OPTIONS_H_
