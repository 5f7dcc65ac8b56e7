#include "compiler_core/support/file_bytes.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace kiln {

absl::StatusOr<std::string> ReadFileBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return absl::NotFoundError(absl::StrCat("cannot read '", path, "'"));
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

absl::Status ErrnoStatus(int err, const std::string& what) {
  std::string message = absl::StrCat(what, ": ", std::strerror(err));
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(message);
    case ENOSPC:
    case EDQUOT:
      return absl::ResourceExhaustedError(message);
    default:
      return absl::InternalError(message);
  }
}

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

absl::Status WriteFileAtomically(const std::string& path, const std::string& bytes) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) return ErrnoStatus(EISDIR, absl::StrCat("cannot write '", path, "'"));
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus(errno, absl::StrCat("cannot open '", path, "'"));
    const bool ok = WriteAll(fd, bytes.data(), bytes.size());
    const int err = errno;
    ::close(fd);
    return ok ? absl::OkStatus() : ErrnoStatus(err, absl::StrCat("cannot write '", path, "'"));
  }
  const size_t slash = path.rfind('/');
  const std::string dir =
      slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  // A unique sibling name; O_EXCL with mode 0666 so that the umask applies as for any file.
  static std::atomic<uint64_t> counter{0};
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; fd < 0; ++attempt) {
    tmp = absl::StrCat(path, ".tmp.", ::getpid(), ".", counter.fetch_add(1));
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && (errno != EEXIST || attempt == 100)) {
      return ErrnoStatus(errno, absl::StrCat("cannot create temp file '", tmp, "'"));
    }
  }
  auto fail = [&](const std::string& what) {
    absl::Status status = ErrnoStatus(errno, absl::StrCat(what, " '", tmp, "'"));
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    return status;
  };
  if (!WriteAll(fd, bytes.data(), bytes.size())) return fail("cannot write");
  if (::fsync(fd) != 0) return fail("cannot fsync");
  if (::close(fd) != 0) {
    fd = -1;
    return fail("cannot close");
  }
  fd = -1;
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return fail(absl::StrCat("cannot rename to '", path, "' from"));
  }
  // Make the rename itself durable.
  int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  return absl::OkStatus();
}

}  // namespace kiln
