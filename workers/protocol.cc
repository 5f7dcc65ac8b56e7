// Shared kilnd ↔ worker conventions.
#include "workers/protocol.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/support/sha256.h"
#include "compiler_core/support/status_macros.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace kiln::workers {

kiln::v1::CompileOptions CanonicalOptions(const kiln::v1::CompileOptions& options) {
  kiln::v1::CompileOptions canonical = options;
  if (canonical.precision() == "fp32") canonical.clear_precision();
  auto* passes = canonical.mutable_disabled_passes();
  std::sort(passes->begin(), passes->end());
  passes->erase(std::unique(passes->begin(), passes->end()), passes->end());
  std::sort(canonical.mutable_constant_inputs()->begin(),
            canonical.mutable_constant_inputs()->end(),
            [](const kiln::v1::ConstantInput& a, const kiln::v1::ConstantInput& b) {
              return a.name() < b.name();
            });
  std::stable_sort(canonical.mutable_input_shapes()->begin(), canonical.mutable_input_shapes()->end(),
            [](const kiln::v1::InputShape& a, const kiln::v1::InputShape& b) {
              return a.name() < b.name();
            });
  return canonical;
}

std::string OptionsHash(const kiln::v1::CompileOptions& options) {
  kiln::v1::CompileOptions canonical = CanonicalOptions(options);
  // Of a record, only what shapes the artifact counts (tuning::RecordDigest's fields): a record
  // exported and imported elsewhere gives the same key.
  for (kiln::v1::TuningRecord& r : *canonical.mutable_records()) {
    kiln::v1::TuningRecord kept;
    kept.set_workload_key(r.workload_key());
    kept.set_hardware_key(r.hardware_key());
    kept.set_schedule(r.schedule());
    kept.set_median_ms(r.median_ms());
    r = std::move(kept);
  }
  std::sort(canonical.mutable_records()->begin(), canonical.mutable_records()->end(),
            [](const kiln::v1::TuningRecord& a, const kiln::v1::TuningRecord& b) {
              return a.workload_key() < b.workload_key();
            });
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    canonical.SerializeToCodedStream(&coded);
  }
  return Sha256Hex(bytes);
}

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

kiln::v1::Digest DigestOf(const std::string& bytes) {
  kiln::v1::Digest d;
  d.set_hash(Sha256Hex(bytes));
  d.set_size_bytes(static_cast<int64_t>(bytes.size()));
  return d;
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

absl::Status StatusFromCode(int code, const std::string& message) {
  if (code < 0 || code > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
    return absl::UnknownError(message);
  }
  return absl::Status(static_cast<absl::StatusCode>(code), message);
}

}  // namespace kiln::workers
