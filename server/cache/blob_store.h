// A content-addressed blob directory: ROOT/<first 2 hex>/<sha256 hex>. Writes are atomic (temp
// file, fsync, rename, fsync of the directory) and reads verify the SHA-256, so a torn or
// corrupted file is never returned. Knows nothing of SQLite; Storage keeps the index.
#ifndef KILN_SERVER_CACHE_BLOB_STORE_H_
#define KILN_SERVER_CACHE_BLOB_STORE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler_core/support/sha256.h"

namespace kiln::cache {

/// A streaming write of one blob into a temp file under ROOT/tmp. Append, then Commit with the
/// expected digest (or Seal, then Publish, to do the slow part and the visible part separately);
/// an unpublished writer removes its temp file when destroyed. Move-only.
class BlobWriter {
 public:
  BlobWriter(BlobWriter&& other) noexcept;
  BlobWriter& operator=(BlobWriter&&) = delete;
  BlobWriter(const BlobWriter&) = delete;
  BlobWriter& operator=(const BlobWriter&) = delete;
  ~BlobWriter();

  /// Writes `bytes` to the temp file. kResourceExhausted if the disk is full, kUnavailable on
  /// other I/O errors, kFailedPrecondition once sealed.
  absl::Status Append(std::string_view bytes);
  /// Bytes appended so far.
  int64_t size_bytes() const { return size_bytes_; }
  /// Fsyncs and closes the temp file and verifies its digest. An empty `expected_digest` accepts
  /// any content. kInvalidArgument "digest mismatch: expected X, got Y" (temp removed, nothing
  /// stored) or for a malformed digest. Returns the digest; nothing is visible yet.
  absl::StatusOr<std::string> Seal(std::string_view expected_digest);
  /// Renames the sealed file into place and fsyncs its directory. kFailedPrecondition unless
  /// sealed and not yet published.
  absl::Status Publish();
  /// Seal, then Publish. Returns the digest.
  absl::StatusOr<std::string> Commit(std::string_view expected_digest);

 private:
  friend class BlobStore;
  BlobWriter(std::string root, std::string temp_path, int fd)
      : root_(std::move(root)), temp_path_(std::move(temp_path)), fd_(fd),
        hash_(std::make_unique<Sha256>()) {}
  void Abandon();

  std::string root_;
  std::string temp_path_;  // empty once published or abandoned
  int fd_ = -1;            // -1 once sealed
  int64_t size_bytes_ = 0;
  std::unique_ptr<Sha256> hash_;
  std::string digest_;  // set by Seal
};

class BlobStore {
 public:
  /// Creates `root` (and ROOT/tmp) if missing.
  static absl::StatusOr<BlobStore> Open(std::string root);

  /// Where the blob `digest` lives (whether or not it exists).
  std::string PathFor(std::string_view digest) const;
  const std::string& root() const { return root_; }

  /// Stores `bytes` and returns their digest. Idempotent.
  absl::StatusOr<std::string> Put(std::string_view bytes);
  /// Stores `bytes` only if they hash to `expected_digest`; otherwise kInvalidArgument "digest
  /// mismatch: expected X, got Y" and nothing is written.
  absl::StatusOr<std::string> Put(std::string_view bytes, std::string_view expected_digest);
  /// Starts a streaming write.
  absl::StatusOr<BlobWriter> BeginWrite();

  /// The verified bytes of `digest`. kNotFound if absent; kDataLoss "blob X is corrupted
  /// (content hashes to Y); removed" if the content does not match, after deleting the file.
  absl::StatusOr<std::string> Get(std::string_view digest);
  /// The bytes of `digest` as they are on disk, not verified and never deleting anything
  /// (callers verify and decide). kNotFound if absent.
  absl::StatusOr<std::string> ReadUnverified(std::string_view digest) const;
  absl::StatusOr<bool> Contains(std::string_view digest) const;
  /// Deletes the blob; OK if it was absent.
  absl::Status Remove(std::string_view digest);
  /// Size of the blob file in bytes; kNotFound if absent.
  absl::StatusOr<int64_t> SizeOnDisk(std::string_view digest) const;

  /// Every digest with a file in the store, sorted. Removes leftover temp files on the way
  /// (only call while no writer is active, e.g. at open).
  absl::StatusOr<std::vector<std::string>> ListAndCleanTemp();

 private:
  explicit BlobStore(std::string root) : root_(std::move(root)) {}
  std::string root_;
};

/// OK if `digest` is 64 lowercase hex characters; otherwise kInvalidArgument "invalid digest
/// 'D': expected 64 lowercase hex characters".
absl::Status CheckDigest(std::string_view digest);

/// Maps an errno from a file operation on `path` to kResourceExhausted (ENOSPC, EDQUOT),
/// kNotFound (ENOENT) or kUnavailable.
absl::Status FileError(int err, std::string_view what, std::string_view path);

}  // namespace kiln::cache

#endif  // KILN_SERVER_CACHE_BLOB_STORE_H_
