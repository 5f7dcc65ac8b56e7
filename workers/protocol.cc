// Shared kilnd ↔ worker conventions.
#include "workers/protocol.h"

#include <algorithm>

#include "compiler_core/support/sha256.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace kiln::workers {

std::string OptionsHash(const kiln::v1::CompileOptions& options) {
  kiln::v1::CompileOptions canonical = options;
  auto* passes = canonical.mutable_disabled_passes();
  std::sort(passes->begin(), passes->end());
  passes->erase(std::unique(passes->begin(), passes->end()), passes->end());
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    canonical.SerializeToCodedStream(&coded);
  }
  return Sha256Hex(bytes);
}

kiln::v1::Digest DigestOf(const std::string& bytes) {
  kiln::v1::Digest d;
  d.set_hash(Sha256Hex(bytes));
  d.set_size_bytes(static_cast<int64_t>(bytes.size()));
  return d;
}

absl::Status StatusFromCode(int code, const std::string& message) {
  if (code < 0 || code > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
    return absl::UnknownError(message);
  }
  return absl::Status(static_cast<absl::StatusCode>(code), message);
}

}  // namespace kiln::workers
