// Content-addressed blob files with atomic writes and verified reads (POSIX I/O).
#include "server/cache/blob_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compiler_core/support/status_macros.h"
#include "server/cache/storage.h"
#include "wire/digest.h"

namespace kiln::cache {
namespace {

constexpr std::string_view kTempPrefix = ".tmp-";

absl::Status MakeDir(const std::string& path) {
  if (mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return absl::OkStatus();
  return FileError(errno, "create directory", path);
}

// Makes a rename or unlink in `dir` durable.
absl::Status SyncDir(const std::string& dir) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return FileError(errno, "open directory", dir);
  int rc = fsync(fd);
  int err = errno;
  close(fd);
  if (rc != 0) return FileError(err, "fsync directory", dir);
  return absl::OkStatus();
}

absl::Status WriteAll(int fd, std::string_view bytes, const std::string& path) {
  while (!bytes.empty()) {
    ssize_t n = write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return FileError(errno, "write", path);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

// Creates a unique temp file in `dir`; returns its path and descriptor.
absl::StatusOr<std::pair<std::string, int>> MakeTemp(const std::string& dir) {
  std::string path = absl::StrCat(dir, "/", std::string(kTempPrefix), "XXXXXX");
  int fd = mkostemp(path.data(), O_CLOEXEC);
  if (fd < 0) return FileError(errno, "create temp file in", dir);
  return std::make_pair(path, fd);
}

absl::Status DigestMismatch(std::string_view expected, std::string_view actual) {
  return absl::InvalidArgumentError(absl::StrCat("digest mismatch: expected ",
                                                 std::string(expected), ", got ",
                                                 std::string(actual)));
}

absl::Status SyncAndClose(int fd, const std::string& path) {
  if (fsync(fd) != 0) {
    int err = errno;
    close(fd);
    return FileError(err, "fsync", path);
  }
  if (close(fd) != 0) return FileError(errno, "close", path);
  return absl::OkStatus();
}

// Renames the durable file `temp_path` to the blob's final path and syncs its directory.
absl::Status RenameIntoPlace(const std::string& root, const std::string& temp_path,
                             const std::string& digest) {
  std::string shard = absl::StrCat(root, "/", digest.substr(0, 2));
  KILN_RETURN_IF_ERROR(MakeDir(shard));
  std::string final_path = absl::StrCat(shard, "/", digest);
  if (rename(temp_path.c_str(), final_path.c_str()) != 0) {
    return FileError(errno, "rename into", final_path);
  }
  return SyncDir(shard);
}

}  // namespace

absl::Status CheckDigest(std::string_view digest) {
  if (wire::IsValidDigest(digest)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "invalid digest '", std::string(digest), "': expected 64 lowercase hex characters"));
}

absl::Status FileError(int err, std::string_view what, std::string_view path) {
  std::string message =
      absl::StrCat("cannot ", std::string(what), " '", std::string(path), "': ", strerror(err));
  if (err == ENOSPC || err == EDQUOT) return absl::ResourceExhaustedError(message);
  if (err == ENOENT) return absl::NotFoundError(message);
  return absl::UnavailableError(message);
}

// ---- BlobWriter -------------------------------------------------------------------------------

BlobWriter::BlobWriter(BlobWriter&& other) noexcept
    : root_(std::move(other.root_)),
      temp_path_(std::exchange(other.temp_path_, "")),
      fd_(std::exchange(other.fd_, -1)),
      size_bytes_(other.size_bytes_),
      hash_(std::move(other.hash_)),
      digest_(std::move(other.digest_)) {}

BlobWriter::~BlobWriter() { Abandon(); }

void BlobWriter::Abandon() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  if (!temp_path_.empty()) unlink(temp_path_.c_str());
  temp_path_.clear();
}

absl::Status BlobWriter::Append(std::string_view bytes) {
  if (fd_ < 0) return absl::FailedPreconditionError("blob write already finished");
  absl::Status s = WriteAll(fd_, bytes, temp_path_);
  if (!s.ok()) {
    Abandon();  // a partial write is useless; free the space now
    return s;
  }
  hash_->Update(bytes);
  size_bytes_ += static_cast<int64_t>(bytes.size());
  return absl::OkStatus();
}

absl::StatusOr<std::string> BlobWriter::Seal(std::string_view expected_digest) {
  if (fd_ < 0) return absl::FailedPreconditionError("blob write already finished");
  absl::Status s = expected_digest.empty() ? absl::OkStatus() : CheckDigest(expected_digest);
  std::string digest = hash_->HexDigest();
  if (s.ok() && !expected_digest.empty() && digest != expected_digest) {
    s = DigestMismatch(expected_digest, digest);
  }
  if (s.ok()) s = SyncAndClose(std::exchange(fd_, -1), temp_path_);
  if (!s.ok()) {
    Abandon();
    return s;
  }
  digest_ = digest;
  return digest;
}

absl::Status BlobWriter::Publish() {
  if (fd_ >= 0 || temp_path_.empty()) {
    return absl::FailedPreconditionError("blob write is not sealed or already published");
  }
  absl::Status s = RenameIntoPlace(root_, temp_path_, digest_);
  if (!s.ok()) {
    Abandon();
    return s;
  }
  temp_path_.clear();
  return absl::OkStatus();
}

absl::StatusOr<std::string> BlobWriter::Commit(std::string_view expected_digest) {
  KILN_ASSIGN_OR_RETURN(std::string digest, Seal(expected_digest));
  KILN_RETURN_IF_ERROR(Publish());
  return digest;
}

// ---- BlobStore --------------------------------------------------------------------------------

absl::StatusOr<BlobStore> BlobStore::Open(std::string root) {
  KILN_RETURN_IF_ERROR(MakeDir(root));
  KILN_RETURN_IF_ERROR(MakeDir(absl::StrCat(root, "/tmp")));
  return BlobStore(std::move(root));
}

std::string BlobStore::PathFor(std::string_view digest) const {
  std::string d(digest);
  return absl::StrCat(root_, "/", d.substr(0, 2), "/", d);
}

absl::StatusOr<std::string> BlobStore::Put(std::string_view bytes) {
  return Put(bytes, std::string_view());
}

absl::StatusOr<std::string> BlobStore::Put(std::string_view bytes,
                                           std::string_view expected_digest) {
  if (!expected_digest.empty()) KILN_RETURN_IF_ERROR(CheckDigest(expected_digest));
  std::string digest = Sha256Hex(bytes);
  if (!expected_digest.empty() && digest != expected_digest) {
    return DigestMismatch(expected_digest, digest);
  }
  // The temp file sits in the blob's own shard directory, so the rename never crosses one.
  std::string shard = absl::StrCat(root_, "/", digest.substr(0, 2));
  KILN_RETURN_IF_ERROR(MakeDir(shard));
  KILN_ASSIGN_OR_RETURN(auto temp, MakeTemp(shard));
  auto [temp_path, fd] = temp;
  absl::Status s = WriteAll(fd, bytes, temp_path);
  if (s.ok()) {
    s = SyncAndClose(fd, temp_path);
    if (s.ok()) s = RenameIntoPlace(root_, temp_path, digest);
  } else {
    close(fd);
  }
  if (!s.ok()) {
    unlink(temp_path.c_str());
    return s;
  }
  return digest;
}

absl::StatusOr<BlobWriter> BlobStore::BeginWrite() {
  KILN_ASSIGN_OR_RETURN(auto temp, MakeTemp(absl::StrCat(root_, "/tmp")));
  return BlobWriter(root_, temp.first, temp.second);
}

absl::StatusOr<std::string> BlobStore::Get(std::string_view digest) {
  KILN_ASSIGN_OR_RETURN(std::string bytes, ReadUnverified(digest));
  std::string actual = Sha256Hex(bytes);
  if (actual != digest) {
    std::string path = PathFor(digest);
    unlink(path.c_str());
    return absl::DataLossError(absl::StrCat("blob ", std::string(digest),
                                            " is corrupted (content hashes to ", actual,
                                            "); removed"));
  }
  return bytes;
}

absl::StatusOr<std::string> BlobStore::ReadUnverified(std::string_view digest) const {
  KILN_RETURN_IF_ERROR(CheckDigest(digest));
  std::string path = PathFor(digest);
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) {
      return absl::NotFoundError(absl::StrCat("blob ", std::string(digest), " not found"));
    }
    return FileError(errno, "open", path);
  }
  std::string bytes;
  struct stat st;
  if (fstat(fd, &st) == 0) bytes.reserve(static_cast<size_t>(st.st_size));
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      close(fd);
      return FileError(err, "read", path);
    }
    if (n == 0) break;
    bytes.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return bytes;
}

absl::StatusOr<bool> BlobStore::Contains(std::string_view digest) const {
  KILN_RETURN_IF_ERROR(CheckDigest(digest));
  struct stat st;
  std::string path = PathFor(digest);
  if (stat(path.c_str(), &st) == 0) return true;
  if (errno == ENOENT) return false;
  return FileError(errno, "stat", path);
}

absl::Status BlobStore::Remove(std::string_view digest) {
  KILN_RETURN_IF_ERROR(CheckDigest(digest));
  std::string path = PathFor(digest);
  if (unlink(path.c_str()) != 0 && errno != ENOENT) return FileError(errno, "remove", path);
  return absl::OkStatus();
}

absl::StatusOr<int64_t> BlobStore::SizeOnDisk(std::string_view digest) const {
  KILN_RETURN_IF_ERROR(CheckDigest(digest));
  struct stat st;
  std::string path = PathFor(digest);
  if (stat(path.c_str(), &st) != 0) return FileError(errno, "stat", path);
  return static_cast<int64_t>(st.st_size);
}

absl::StatusOr<std::vector<std::string>> BlobStore::ListAndCleanTemp() {
  std::vector<std::string> digests;
  DIR* top = opendir(root_.c_str());
  if (top == nullptr) return FileError(errno, "list", root_);
  std::vector<std::string> subdirs;
  while (dirent* e = readdir(top)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") subdirs.push_back(name);
  }
  closedir(top);
  for (const std::string& sub : subdirs) {
    std::string dir = absl::StrCat(root_, "/", sub);
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) continue;  // a stray file at the top level: not ours, leave it
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      if (name.rfind(kTempPrefix, 0) == 0) {
        unlink(absl::StrCat(dir, "/", name).c_str());
      } else if (sub != "tmp" && wire::IsValidDigest(name) && name.compare(0, 2, sub) == 0) {
        digests.push_back(name);
      }
    }
    closedir(d);
  }
  std::sort(digests.begin(), digests.end());
  return digests;
}

}  // namespace kiln::cache
