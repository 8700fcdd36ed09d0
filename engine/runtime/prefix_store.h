// The prefix cache on disk (--cache-dir): blocks of K/V (and recurrent snapshots) that outlive the
// server, so a new agent session or a restarted server starts from a cached system prompt.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace engine {

class Model;
enum class KvType;

struct PrefixStoreOptions {
  std::string dir;                      // empty: no store
  uint64_t max_bytes = uint64_t{10} << 30;  // the files of one model (LRU beyond)
  // Called with what was wrong when a file is ignored (corrupt, foreign, unreadable) or the
  // directory cannot be used; may be empty.
  std::function<void(const std::string&)> warn;
};

struct PrefixStoreStats {
  int64_t files = 0;      // blocks on disk for this model
  uint64_t bytes = 0;     // their size
  int64_t loaded = 0;     // blocks read back (since start)
  int64_t saved = 0;      // blocks written
  int64_t rejected = 0;   // files ignored: corrupt, foreign or unreadable
  int64_t evicted = 0;    // files removed to stay within max_bytes
};

// A directory of prefix blocks of one model: DIR/<model fingerprint>/<key>.blk, one file per
// block of PrefixCache::kBlockTokens tokens.
//
// Keys chain like the in-memory cache's: a block's key is a keyed 128-bit hash of the key before
// it and its tokens, the first block's "before" being derived from the model's fingerprint. The
// hash key is a random secret kept in DIR/secret (created once, mode 0600), so keys cannot be
// chosen to collide. Nothing in a file is trusted: load() checks the header (magic, version,
// fingerprint, its own key, its parent's key, the block's tokens, sizes) and a checksum of the
// payload; a file that fails is ignored with a warning and removed. Writes go to a temporary file
// renamed into place, so a crash leaves no half-written block under a key.
//
// Size: the model's files are kept within max_bytes, least recently used (read or written;
// the file's mtime, so the order survives restarts) removed first.
//
// Payload of a block: per attention layer (and NextN block, with its rows), the K rows of its kBlockTokens cells then their V
// rows, in the KV cache's element type (the fingerprint covers it), then, for hybrid stacks, the
// recurrent snapshot at the block's end when there was one.
//
// Ownership: owns nothing but its index. Thread-safety: none (the evaluator's thread).
class PrefixStore {
 public:
  static constexpr int32_t kBlockTokens = 32;  // tokens per block file (PrefixCache's blocks)

  struct Key {
    uint64_t a = 0, b = 0;
    auto operator<=>(const Key&) const = default;
  };

  // Identifies the model file and the cache's layout: the GGUF header (metadata, tensor table),
  // the file size, samples of every tensor's data, the KV element type, whether cells hold the
  // NextN block's rows (nextn: `--spec mtp`) and the block format.
  static uint64_t fingerprint(const Model& model, KvType kv_type, bool nextn = false);

  // Opens (creating) the directory and indexes its files. Throws std::runtime_error when the
  // directory cannot be created or written.
  PrefixStore(const PrefixStoreOptions& options, uint64_t fingerprint);

  // The key of the block after `before` (first() for a prompt's first block) holding `tokens`.
  Key first() const { return first_; }
  Key next(Key before, const int32_t* tokens) const;
  bool contains(Key key) const { return index_.count(key) != 0; }

  // Writes a block (nothing if it is there already or larger than the whole budget).
  void save(Key key, Key parent, const int32_t* tokens, std::span<const uint8_t> kv,
            std::span<const uint8_t> snapshot);
  // Reads block `key`, which must continue `parent` with `tokens`: its K/V into kv (exactly
  // kv.size() bytes) and, when it has one (has_snapshot), its snapshot into snapshot (exactly
  // snapshot.size() bytes). False when it is absent or bad (then forgotten; a bad file is
  // reported and removed).
  bool load(Key key, Key parent, const int32_t* tokens, std::span<uint8_t> kv, std::span<uint8_t> snapshot,
            bool& has_snapshot);

  PrefixStoreStats stats() const;

 private:
  std::string path_of(Key key) const;
  void forget(Key key, bool remove_file);
  void touch(Key key, uint64_t bytes, bool set_mtime);
  void evict();
  void warn(const std::string& what) const;

  PrefixStoreOptions opt_;
  uint64_t fingerprint_;
  std::string model_dir_;
  uint64_t secret_[2] = {0, 0};
  Key first_;
  struct Entry {
    uint64_t bytes = 0;
    int64_t used = 0;  // last use: the file clock's count (the file's mtime at start)
  };
  std::map<Key, Entry> index_;
  std::set<std::pair<int64_t, Key>> lru_;  // (used, key), oldest first
  uint64_t bytes_ = 0;
  int64_t loaded_ = 0, saved_ = 0, rejected_ = 0, evicted_ = 0;
  bool write_failed_ = false;  // reported once
};

}  // namespace engine
