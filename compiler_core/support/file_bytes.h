// Reading a whole file into memory, with the error every caller reports.
#ifndef KILN_COMPILER_CORE_SUPPORT_FILE_BYTES_H_
#define KILN_COMPILER_CORE_SUPPORT_FILE_BYTES_H_

#include <string>

#include "absl/status/statusor.h"

namespace kiln {

/// The bytes of the file at `path`. Errors: kNotFound "cannot read 'PATH'".
absl::StatusOr<std::string> ReadFileBytes(const std::string& path);

}  // namespace kiln

#endif  // KILN_COMPILER_CORE_SUPPORT_FILE_BYTES_H_
