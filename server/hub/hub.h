// Model download from the Hugging Face Hub (or a mirror, or any https URL) into the local model
// cache, and the cache itself. Used by `ggufd pull|list|rm` and by the server's model router.
//
// Specs: "org/repo" (the repo's Q4_K_M file, else Q8_0, else its first model file, as llama-server
// picks), "org/repo:QUANT" (the file whose name carries that tag), "hf://org/repo/path/file.gguf"
// (that file) and "https://host/path/file.gguf". Every part of a split file (-00001-of-0000N) is
// fetched; for Hub specs also the repo's mmproj file closest to the model (folder, then quant bits).
//
// Cache layout under the root (GGUFD_CACHE, default ~/.cache/ggufd):
//   models/<org>/<repo>/<path in repo>   downloaded Hub files
//   urls/<host>/<path>                   files fetched from plain https URLs
//   manifests/<id, %-encoded>.json       one per pulled model: its files, sizes and sha256
//   tmp/                                 partial downloads (*.part, kept for resume) and locks
// A model is in the cache exactly when its manifest is; files are moved into place (rename) only
// once complete and verified, and the manifest is written last, also by rename.
//
// Errors: everything throws HubError with a message that says what failed, where (URL or path),
// and expected vs found; 401/403 name HF_TOKEN, 404 names the repo or file.
//
// Thread safety: pull(), Cache::list/find/remove may run concurrently from any threads and
// processes on the same cache; each file's download holds an flock on tmp/<key>.lock, so two
// pulls of the same file wait for each other instead of writing the same partial file, and
// manifests are written and removed under tmp/manifests.lock. One gap: removing an entry while
// another entry that shares a file (an mmproj) is being pulled can delete that file before the
// new manifest names it; that entry is then not listed until pulled again.
//
// Network: https only (redirects too, at most 10), certificate checks always on, HTTPS_PROXY and
// NO_PROXY honoured (libcurl). The token goes to the hub's host only. Files of plain URLs have
// no checksum to verify and are not fetched again once cached.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace hub {

class HubError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Phase { kResolving, kDownloading, kVerifying, kDone };
const char* phase_name(Phase p);

// One progress event. `file` is the file's path in its repo (or on its host) while downloading
// and verifying, the spec while resolving, the cache id when done; bytes_total is 0 when unknown
// (plain URLs). Events come on the thread that called pull(): at most every ~100 ms per file
// while downloading, and once per phase change. Files already cached report only kDone.
struct Progress {
  std::string file;
  uint64_t bytes_done = 0;
  uint64_t bytes_total = 0;
  Phase phase = Phase::kResolving;
  std::string sha256;  // the file's expected sha256 (lower-case hex) when the Hub gives one, else ""
};
using ProgressFn = std::function<void(const Progress&)>;

struct PullOptions {
  std::string cache_dir;      // "" = default_cache_dir()
  std::string endpoint;       // "" = $HF_ENDPOINT, else https://huggingface.co
  std::string token;          // "" = $HF_TOKEN (sent to the endpoint's host only)
  std::string ca_file;        // trust these CAs (PEM) instead of the system's; checks always on
  bool offline = false;       // cache only, no network
  bool mmproj = true;         // also fetch the repo's mmproj file, when it has one
  int retries = 5;            // reconnections (with Range) after a cut transfer, per file
  long low_speed_seconds = 60;  // abort a transfer that moves nothing for this long
};

struct PullResult {
  std::string id;                  // the cache id, e.g. "org/repo:Q4_K_M"
  std::string model_path;          // the model file (the first part when split)
  std::vector<std::string> parts;  // every part, in order (one entry when not split)
  std::string mmproj_path;         // "" when none
  uint64_t bytes = 0;              // all files together
};

// Resolves `spec`, downloads what is missing (resuming partial files), verifies and caches it.
// Returns the local paths. `cancel` (optional) is polled during transfers; when it becomes true
// the pull throws HubError("cancelled") and keeps the partial file for a later resume.
PullResult pull(const std::string& spec, const PullOptions& options, const ProgressFn& progress = {},
                const std::atomic<bool>* cancel = nullptr);

// $GGUFD_CACHE, else $HOME/.cache/ggufd.
std::string default_cache_dir();

struct CacheEntry {
  std::string id;           // "org/repo:QUANT", or "host/path/file.gguf" for URLs
  std::string quant;        // the tag after ':' ("" for URLs without one)
  std::string path;         // the model file (first part when split)
  std::vector<std::string> files;  // every file of the entry, mmproj included
  std::string mmproj;       // "" when none
  uint64_t bytes = 0;       // all files together
  int64_t mtime = 0;        // seconds since the epoch, of the manifest
};

// The local model cache. Cheap to construct; holds no open files. Thread-safe (see above).
class Cache {
 public:
  explicit Cache(std::string root = {});  // "" = default_cache_dir()
  const std::string& root() const { return root_; }

  // Every cached model, sorted by id. Manifests that are unreadable or name missing files are
  // left out (a half-removed entry is never listed).
  std::vector<CacheEntry> list() const;
  // The entry of `id`; "org/repo" without a tag finds Q4_K_M, else Q8_0, else the first entry of
  // that repo by id. nullopt when absent.
  std::optional<CacheEntry> find(const std::string& id) const;
  // Removes the entry and its files that no other entry uses. Throws HubError when absent.
  void remove(const std::string& id) const;

 private:
  std::string root_;
};

// Lower-case hex SHA-256 of `data` (OpenSSL): cache keys of plain URLs, Ollama's model digests.
std::string sha256_hex(const std::string& data);

}  // namespace hub
