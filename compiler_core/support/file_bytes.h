// Reading a whole file into memory and writing one atomically, with the errors every caller
// reports.
#ifndef KILN_COMPILER_CORE_SUPPORT_FILE_BYTES_H_
#define KILN_COMPILER_CORE_SUPPORT_FILE_BYTES_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kiln {

/// The bytes of the file at `path`. Errors: kNotFound "cannot read 'PATH'".
absl::StatusOr<std::string> ReadFileBytes(const std::string& path);

/// Writes `bytes` to `path` so that a reader (or a crash) sees the old file or the new one,
/// never a part: a sibling temp file (mode 0666 less the umask), fsync, rename over `path`,
/// fsync of the directory. A `path` that exists and is not a regular file (/dev/null, a FIFO,
/// /dev/stdout) is written in place instead: renaming over it would replace the device.
/// Errors, naming the file and strerror: kNotFound (no such directory), kPermissionDenied,
/// kResourceExhausted (ENOSPC, EDQUOT), kInternal (another errno); no temp file is left.
absl::Status WriteFileAtomically(const std::string& path, const std::string& bytes);

/// Writes all `size` bytes of `data` to `fd`, retrying short writes and EINTR; false with
/// errno set on an error.
bool WriteAll(int fd, const char* data, size_t size);

/// The status for errno `err` after `what` failed: "<what>: <strerror>", with the codes
/// WriteFileAtomically documents.
absl::Status ErrnoStatus(int err, const std::string& what);

}  // namespace kiln

#endif  // KILN_COMPILER_CORE_SUPPORT_FILE_BYTES_H_
