// Shared kilnd ↔ worker conventions.
#include "workers/protocol.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::workers {

absl::StatusOr<importer::ShapeProfiles> ShapeProfilesOf(const kiln::v1::CompileOptions& options) {
  std::vector<importer::NamedShape> given;
  for (const kiln::v1::InputShape& shape : options.input_shapes()) {
    if (shape.name().empty()) {
      return absl::InvalidArgumentError("input_shapes: an entry has no input name");
    }
    std::vector<int64_t> dims(shape.dims().begin(), shape.dims().end());
    for (int64_t d : dims) {
      if (d < 1) {
        return absl::InvalidArgumentError(absl::StrCat("input_shapes: input '", shape.name(),
                                                       "' has dim ", d, " (dims must be >= 1)"));
      }
    }
    given.emplace_back(shape.name(), std::move(dims));
  }
  return importer::ProfilesOf(given);
}

absl::StatusOr<importer::InputShapes> BoundedMinShapesOf(const kiln::v1::CompileOptions& options) {
  importer::InputShapes mins;
  for (const kiln::v1::InputShape& shape : options.input_shapes()) {
    if (shape.min_dims_size() == 0) continue;
    bool ok = shape.min_dims_size() == shape.dims_size() && !mins.count(shape.name());
    for (int d = 0; ok && d < shape.dims_size(); ++d) {
      ok = shape.min_dims(d) >= 1 && shape.min_dims(d) <= shape.dims(d);
    }
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input_shapes: input '", shape.name(), "' has min_dims [",
          absl::StrJoin(shape.min_dims(), ","), "] for dims [", absl::StrJoin(shape.dims(), ","),
          "] (one minimum per dim, 1 <= min <= dim, one bounded entry per input)"));
    }
    std::vector<int64_t> min_dims(shape.min_dims().begin(), shape.min_dims().end());
    // Every dim fixed (min == max): not bounded, as the command line drops such ranges.
    if (std::equal(min_dims.begin(), min_dims.end(), shape.dims().begin())) continue;
    mins[shape.name()] = std::move(min_dims);
  }
  KILN_ASSIGN_OR_RETURN(importer::ShapeProfiles profiles, ShapeProfilesOf(options));
  if (!mins.empty() && profiles.size() > 1) {
    return absl::InvalidArgumentError(
        "input_shapes: bounded dims (min_dims) and several shape profiles cannot be combined");
  }
  return mins;
}

absl::StatusOr<std::map<std::string, std::string>> ConstantInputsOf(
    const kiln::v1::CompileOptions& options) {
  std::map<std::string, std::string> constants;
  for (const kiln::v1::ConstantInput& c : options.constant_inputs()) {
    if (c.name().empty()) {
      return absl::InvalidArgumentError("constant_inputs: an entry has no input name");
    }
    if (!constants.emplace(c.name(), c.tensor()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("constant_inputs: input '", c.name(), "' is given twice"));
    }
  }
  return constants;
}

absl::StatusOr<importer::InputShapes> OneShapeProfileOf(const kiln::v1::CompileOptions& options) {
  absl::StatusOr<importer::ShapeProfiles> profiles = ShapeProfilesOf(options);
  if (!profiles.ok()) return profiles.status();
  KILN_ASSIGN_OR_RETURN(importer::InputShapes mins, BoundedMinShapesOf(options));
  if (!mins.empty()) {
    return absl::InvalidArgumentError(
        "tuning takes fixed input shapes: bounded dims (min_dims) are not tuned; tune at the "
        "maximums, whose records the bounded compile's kernels share");
  }
  return importer::SingleProfile(*profiles, "tuning");
}

std::string CapabilitiesText(const kiln::v1::WorkerCapabilities& capabilities) {
  std::vector<std::string> parts;
  for (const kiln::v1::Capability& c : capabilities.capabilities()) {
    switch (c.kind_case()) {
      case kiln::v1::Capability::kCompile:
        parts.push_back(
            absl::StrCat("compile(targets=", absl::StrJoin(c.compile().target_kinds(), ","),
                         " host_cpu=", c.compile().host_cpu(), ")"));
        break;
      case kiln::v1::Capability::kMeasure: {
        const kiln::v1::MeasureCapability& m = c.measure();
        parts.push_back(absl::StrCat(
            "measure(device=", m.device_kind(), ":", m.device_ordinal(), " name=\"",
            m.device_name(), "\" hardware_key=", m.hardware_key(), " cores=", m.cores(), ")"));
        break;
      }
      default:
        parts.push_back("unknown");
        break;
    }
  }
  return parts.empty() ? "none" : absl::StrJoin(parts, " ");
}

}  // namespace kiln::workers
