// Prefix caching across sequences: complete blocks of prompt (and generated) tokens whose K/V cells
// any sequence may share, so a system prompt or a conversation's history is computed once.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <set>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/model/kv_cache.h"
#include "engine/runtime/prefix_store.h"

namespace engine {

struct PrefixCacheStats {
  int32_t block_tokens = 0;    // tokens per block; 0: no prefix cache
  int64_t blocks = 0;          // blocks cached now (in use by sequences or not)
  size_t bytes = 0;            // their K/V memory
  int64_t lookups = 0;         // requests that looked for a cached prefix
  int64_t hit_tokens = 0;      // prompt tokens those requests took from cached blocks
  int64_t evictions = 0;       // blocks evicted to make room
  int64_t reserved_cells = 0;  // KV cells allocated beyond the slots' own for cached blocks
  // Hybrid stacks: blocks whose end has a recurrent-state snapshot (only those can be resumed
  // from), and the snapshot pool's size and memory.
  int64_t snapshot_blocks = 0;
  int64_t snapshot_slots = 0;
  size_t snapshot_bytes = 0;
  // The disk cache (--cache-dir), when there is one.
  bool on_disk = false;
  PrefixStoreStats disk;
};

// An index of immutable blocks of kBlockTokens consecutive tokens of some sequence, each with the
// KV-cache cells holding them, so that another sequence starting with the same tokens attaches
// those cells instead of computing them.
//
// A block is keyed by a chained hash: of the hash of everything before it and its own tokens, so
// a key stands for the whole prefix up to the block's end. A key is only a hint: a block is used
// only when its own tokens equal the sequence's, token by token, and its parent is the block
// matched just before it, so a hash collision can never give one prompt another's K/V. Only
// complete blocks are cached, and a cached block never changes: sequences attach whole blocks and
// compute anything after them in cells of their own (KvCache refuses to write a shared cell).
//
// Cells: each cached block holds its cells once (KvCache::retain), beside the sequences mapped to
// them. A sequence that published a block, or attached it, holds the cells of every block before
// it too, so "a sequence holds a block's last cell" means it uses the whole block, and then all
// of the block's ancestors. A block is evictable when no sequence holds its last cell and no
// cached block continues it; make_room() evicts such blocks, least recently used first, when the
// cache needs free cells. A block in use is never evicted.
//
// The blocks may fill every cell the sequences leave free; the KV cache is sized with
// reserved_cells beyond the sequences' worst case (the RAM budget), so that cached blocks survive
// even when every sequence is at its longest. Sharing needs every layer in the full pool: the
// cache must have no window pool.
//
// Hybrid stacks (KvCache::recurrent()): a sequence can only resume where a recurrent state is
// known, so a block also holds the snapshot of the state at its end when the forward pass took one
// (RecurrentCache; kBlockTokens equals its chunk). attach() then takes the blocks up to the last
// one with a snapshot and restores it; the blocks after it only serve as ancestors.
//
// On disk (set_store()): every block this cache creates is also written to a PrefixStore, and
// attach() extends the blocks it matched in memory with the ones that follow on disk, read into
// free cells (as many as make_room() finds) and cached like any other; a hybrid stack's block
// brings its snapshot. So a prefix computed by an earlier session, or before a restart, is
// attached as if this cache had computed it.
//
// Ownership: borrows the KvCache (which must outlive it) and the store; releases its blocks' cells (and
// snapshots) when destroyed. Thread-safety: none; the evaluator's thread only, like the KvCache.
class PrefixCache {
 public:
  // 32: half a block (16 tokens) is lost on average at the end of a shared prefix, little next to
  // a system prompt of hundreds of tokens; the index stays small (a block per 32 cells, tens of
  // bytes each, next to the cells' kilobytes) and a prefix is hashed in one pass.
  static constexpr int32_t kBlockTokens = 32;

  // The key of a block: of the key before it (a per-cache seed for the first block) and its
  // tokens (n). Tests substitute a colliding one.
  using BlockHash = uint64_t (*)(uint64_t before, const int32_t* tokens, int32_t n);
  static uint64_t default_hash(uint64_t before, const int32_t* tokens, int32_t n);

  // cache: must have no window pool (std::invalid_argument otherwise). reserved_cells: reported
  // in stats() only.
  explicit PrefixCache(KvCache& cache, int64_t reserved_cells = 0, BlockHash hash = default_hash);
  ~PrefixCache();
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  // Sequence seq holds `have` positions, the start of `tokens`. Finds the longest run of cached
  // blocks that begins `tokens` and covers at most n_max tokens; when that is longer than `have`,
  // seq's positions are replaced by the blocks' cells. Returns the positions attached (a
  // multiple of kBlockTokens), 0 when seq is left as it was. Counts one lookup.
  int32_t attach(SeqId seq, std::span<const int32_t> tokens, int32_t have, int32_t n_max);

  // Sequence seq holds the K/V of `tokens` at positions 0, 1, ...: its complete blocks are cached
  // (a block already cached with the same prefix is kept, and seq takes its cells in place of its
  // own, which hold the same K/V). Stops at a block whose key another prefix took (a collision).
  void publish(SeqId seq, std::span<const int32_t> tokens);

  // Evicts evictable blocks, least recently used first, until the cache has n_cells free cells.
  // Returns whether it has them.
  bool make_room(int64_t n_cells);

  // Drops every block (their cells are released).
  void clear();

  // Writes blocks to, and reads them from, `store` (borrowed; null: memory only).
  void set_store(PrefixStore* store) { store_ = store; }

  PrefixCacheStats stats() const;

 private:
  struct Block {
    uint64_t key = 0;
    Block* parent = nullptr;  // the block before it; null for a prompt's first block
    int32_t children = 0;     // cached blocks whose parent it is
    uint64_t used = 0;        // last use; a parent is always used later than its children
    std::array<int32_t, kBlockTokens> tokens{};
    std::array<int32_t, kBlockTokens> cells{};
    RecurrentCache::SnapshotRef snap;  // hybrid stacks: the state after the block, when known
    PrefixStore::Key disk_key;         // its key in the store (with one)

    bool follows(const Block* before, const int32_t* toks) const;
  };

  // The cached blocks that begin `tokens`, verified, at most n_max tokens' worth, into chain_.
  void match(std::span<const int32_t> tokens, int64_t n_max);
  // Marks chain_ used now, its last block first, so a parent stays more recent than its children.
  void touch();
  bool evictable(const Block& b) const;
  void drop(Block& b);  // releases its cells and forgets it (not its lru_ entry)
  // Reads from the store the blocks that continue chain_ (as `tokens` goes, at most n_max tokens'
  // worth) into the index. Returns whether it read any.
  bool load_stored(std::span<const int32_t> tokens, int64_t n_max);
  void save(const Block& b, PrefixStore::Key parent);
  // A new block b of the index: its keys, parent, tokens (kBlockTokens) and cells, which it now
  // holds (KvCache::retain); its parent gains a child.
  void init(Block& b, uint64_t key, PrefixStore::Key disk_key, Block* parent, const int32_t* tokens,
            std::span<const int32_t, kBlockTokens> cells);

  KvCache& cache_;
  BlockHash hash_;
  uint64_t seed_;
  int64_t reserved_cells_;
  std::unordered_map<uint64_t, Block> blocks_;  // by key; nodes stay put, so Block* are stable
  std::set<std::pair<uint64_t, uint64_t>> lru_;  // (used, key) of every block, oldest first
  uint64_t tick_ = 0;
  int64_t lookups_ = 0, hit_tokens_ = 0, evictions_ = 0;
  std::vector<Block*> chain_;    // scratch of attach() / publish()
  std::vector<int32_t> cells_;   // scratch of attach()
  PrefixStore* store_ = nullptr;
  std::vector<uint8_t> kv_buf_, snap_buf_;  // a block's rows and snapshot, to and from the store
};

}  // namespace engine
