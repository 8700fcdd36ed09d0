// The cache's files on disk: manifests, locks, atomic writes, sha256. Internal to server/hub;
// the public face is hub::Cache (hub.h), which documents the layout.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/hub/hub.h"

namespace hub::detail {

struct StoredFile {
  std::string path;  // relative to the cache root
  uint64_t size = 0;
  std::string sha256;  // "" when no checksum was known (plain URLs, non-LFS files)
};

// One cached model: manifests/<encoded id>.json.
struct Manifest {
  std::string id;
  std::string quant;
  std::string source;  // the spec it was pulled with
  std::vector<StoredFile> parts;
  std::optional<StoredFile> mmproj;
};

std::string manifest_file(const std::string& root, const std::string& id);
// The entry a manifest describes: absolute paths (parts first, then the mmproj), total bytes, the
// manifest's modification time.
CacheEntry entry_of(const std::string& root, const Manifest& m);
std::optional<Manifest> read_manifest(const std::string& file);  // nullopt when unreadable
std::vector<Manifest> all_manifests(const std::string& root);
// True when every file of `m` exists under `root` with its recorded size.
bool complete(const std::string& root, const Manifest& m);
// Writes `m` atomically (temporary file, fsync, rename) under the manifests lock, then deletes
// the files an earlier manifest of the same id had that no manifest uses any more.
void write_manifest(const std::string& root, const Manifest& m);
// Deletes the manifest of `id` and its files no other manifest uses. False when there is none.
bool remove_manifest(const std::string& root, const std::string& id);

// Creates `dir` and its parents; throws HubError naming the path and the reason.
void ensure_dir(const std::string& dir);

// An exclusive flock on `path` (created if need be), taken while polling `cancel`; released by
// the destructor. Works between threads of one process too (each lock opens its own file).
class FileLock {
 public:
  FileLock(const std::string& path, const std::atomic<bool>* cancel);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

// Lower-case hex SHA-256 of a file's bytes (OpenSSL); throws HubError on read errors or cancel.
std::string sha256_file(const std::string& path, const std::atomic<bool>* cancel);

}  // namespace hub::detail
