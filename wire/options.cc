// Canonical CompileOptions and the options hash.
#include "wire/options.h"

#include <algorithm>
#include <utility>

#include "compiler_core/support/sha256.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace kiln::wire {

v1::CompileOptions CanonicalOptions(const v1::CompileOptions& options) {
  v1::CompileOptions canonical = options;
  if (canonical.precision() == "fp32") canonical.clear_precision();
  auto* passes = canonical.mutable_disabled_passes();
  std::sort(passes->begin(), passes->end());
  passes->erase(std::unique(passes->begin(), passes->end()), passes->end());
  std::sort(
      canonical.mutable_constant_inputs()->begin(), canonical.mutable_constant_inputs()->end(),
      [](const v1::ConstantInput& a, const v1::ConstantInput& b) { return a.name() < b.name(); });
  std::stable_sort(
      canonical.mutable_input_shapes()->begin(), canonical.mutable_input_shapes()->end(),
      [](const v1::InputShape& a, const v1::InputShape& b) { return a.name() < b.name(); });
  return canonical;
}

std::string OptionsHash(const v1::CompileOptions& options) {
  v1::CompileOptions canonical = CanonicalOptions(options);
  // Of a record, only what shapes the artifact counts (tuning::RecordDigest's fields): a record
  // exported and imported elsewhere gives the same key.
  for (v1::TuningRecord& r : *canonical.mutable_records()) {
    v1::TuningRecord kept;
    kept.set_workload_key(r.workload_key());
    kept.set_hardware_key(r.hardware_key());
    kept.set_schedule(r.schedule());
    kept.set_median_ms(r.median_ms());
    r = std::move(kept);
  }
  std::sort(canonical.mutable_records()->begin(), canonical.mutable_records()->end(),
            [](const v1::TuningRecord& a, const v1::TuningRecord& b) {
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

}  // namespace kiln::wire
