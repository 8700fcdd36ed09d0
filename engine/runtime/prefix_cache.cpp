// Cached token blocks shared by sequences: lookup, publishing, LRU eviction. See prefix_cache.h.
#include "engine/runtime/prefix_cache.h"

#include <algorithm>
#include <climits>
#include <random>
#include <stdexcept>

namespace engine {

namespace {

constexpr int32_t B = PrefixCache::kBlockTokens;

size_t sz(int64_t n) { return static_cast<size_t>(n); }

static_assert(B == RecurrentCache::kChunk, "hybrid stacks' snapshots fall on block ends");
static_assert(B == PrefixStore::kBlockTokens, "a block is a file of the disk cache");

// splitmix64's finalizer: every input bit reaches every output bit.
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

uint64_t PrefixCache::default_hash(uint64_t before, const int32_t* tokens, int32_t n) {
  uint64_t h = before;
  for (int32_t i = 0; i < n; ++i) h = mix(h + 0x9e3779b97f4a7c15ull + static_cast<uint32_t>(tokens[i]));
  return h;
}

bool PrefixCache::Block::follows(const Block* before, const int32_t* toks) const {
  return parent == before && std::equal(tokens.begin(), tokens.end(), toks);
}

PrefixCache::PrefixCache(KvCache& cache, int64_t reserved_cells, BlockHash hash)
    : cache_(cache),
      hash_(hash),
      // A seed per cache: keys cannot be chosen in advance to collide with a known prompt's.
      seed_((static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}()),
      reserved_cells_(reserved_cells) {
  if (cache.n_window_cells() > 0) {
    throw std::invalid_argument("prefix cache: a KV cache with sliding-window cells cannot share prefixes");
  }
}

PrefixCache::~PrefixCache() { clear(); }

void PrefixCache::match(std::span<const int32_t> tokens, int64_t n_max) {
  chain_.clear();
  const int64_t limit = std::min<int64_t>(n_max, static_cast<int64_t>(tokens.size()));
  uint64_t key = seed_;
  Block* prev = nullptr;
  for (int64_t end = B; end <= limit; end += B) {
    const int32_t* t = tokens.data() + (end - B);
    key = hash_(key, t, B);
    const auto it = blocks_.find(key);
    if (it == blocks_.end() || !it->second.follows(prev, t)) break;
    prev = &it->second;
    chain_.push_back(prev);
  }
}

void PrefixCache::touch() {
  for (auto b = chain_.rbegin(); b != chain_.rend(); ++b) {
    lru_.erase({(*b)->used, (*b)->key});
    (*b)->used = ++tick_;
    lru_.insert({(*b)->used, (*b)->key});
  }
}

int32_t PrefixCache::attach(SeqId seq, std::span<const int32_t> tokens, int32_t have, int32_t n_max) {
  ++lookups_;
  match(tokens, n_max);
  if (store_ != nullptr && load_stored(tokens, n_max)) match(tokens, n_max);
  touch();
  RecurrentCache* rc = cache_.recurrent();
  if (rc != nullptr) {  // only as far as the last block whose end state is known
    while (!chain_.empty() && !rc->valid(chain_.back()->snap)) chain_.pop_back();
  }
  const auto n = static_cast<int32_t>(chain_.size()) * B;
  if (n <= have) return 0;
  cells_.clear();
  for (const Block* b : chain_) cells_.insert(cells_.end(), b->cells.begin(), b->cells.end());
  cache_.free_sequence(seq);  // its cells that blocks hold stay, the others are freed
  cache_.attach(seq, cells_);
  if (rc != nullptr && !rc->restore(seq, chain_.back()->snap)) {
    cache_.free_sequence(seq);
    return 0;
  }
  hit_tokens_ += n;
  return n;
}

void PrefixCache::publish(SeqId seq, std::span<const int32_t> tokens) {
  chain_.clear();
  const std::vector<KvCache::Entry>& entries = cache_.entries(seq);
  if (entries.empty() || entries.front().pos != 0) return;
  const size_t n_blocks = std::min(tokens.size(), entries.size()) / B;
  uint64_t key = seed_;
  Block* prev = nullptr;
  PrefixStore::Key disk_key = store_ != nullptr ? store_->first() : PrefixStore::Key{};
  for (size_t k = 0; k < n_blocks; ++k) {
    const size_t first = k * B, last = first + B - 1;
    // sorted distinct positions from 0: the block's positions are all there when its last is
    if (entries[last].pos != static_cast<int32_t>(last)) break;
    const int32_t* t = tokens.data() + first;
    key = hash_(key, t, B);
    const PrefixStore::Key parent_disk_key = disk_key;
    if (store_ != nullptr) disk_key = store_->next(disk_key, t);
    const auto [it, inserted] = blocks_.try_emplace(key);
    Block& b = it->second;
    if (inserted) {
      std::array<int32_t, B> cells;
      for (size_t i = 0; i < sz(B); ++i) cells[i] = entries[first + i].cell;
      init(b, key, disk_key, prev, t, cells);
    } else if (!b.follows(prev, t)) {
      break;  // the key is another prefix's: nothing past here can be cached for this one
    } else if (!std::equal(b.cells.begin(), b.cells.end(), entries.begin() + static_cast<std::ptrdiff_t>(first),
                           [](int32_t c, const KvCache::Entry& e) { return c == e.cell; })) {
      cache_.adopt(seq, static_cast<int32_t>(first), b.cells);  // entries keep their places
    }
    RecurrentCache* rc = cache_.recurrent();
    if (rc != nullptr && !rc->valid(b.snap)) b.snap = rc->claim(seq, static_cast<int32_t>(last + 1));
    if (inserted && store_ != nullptr) save(b, parent_disk_key);
    chain_.push_back(&b);
    prev = &b;
  }
  touch();
}

void PrefixCache::init(Block& b, uint64_t key, PrefixStore::Key disk_key, Block* parent, const int32_t* tokens,
                       std::span<const int32_t, B> cells) {
  b.key = key;
  b.disk_key = disk_key;
  b.parent = parent;
  std::copy(tokens, tokens + B, b.tokens.begin());
  std::copy(cells.begin(), cells.end(), b.cells.begin());
  for (int32_t c : b.cells) cache_.retain(c);
  if (parent != nullptr) ++parent->children;
}

void PrefixCache::save(const Block& b, PrefixStore::Key parent) {
  kv_buf_.resize(sz(B) * cache_.cell_bytes());
  cache_.read_cells(b.cells, kv_buf_);
  std::span<const uint8_t> snap;
  if (const RecurrentCache* rc = cache_.recurrent()) snap = rc->snapshot_memory(b.snap);
  store_->save(b.disk_key, parent, b.tokens.data(), kv_buf_, snap);
}

bool PrefixCache::load_stored(std::span<const int32_t> tokens, int64_t n_max) {
  const int64_t limit = std::min<int64_t>(n_max, static_cast<int64_t>(tokens.size()));
  auto end = static_cast<int64_t>(chain_.size()) * B;
  Block* prev = chain_.empty() ? nullptr : chain_.back();
  PrefixStore::Key disk_key = prev != nullptr ? prev->disk_key : store_->first();
  if (end + B > limit || !store_->contains(store_->next(disk_key, tokens.data() + end))) return false;
  // A sequence of its own holds the matched blocks and the new cells while they are read, so that
  // making room evicts neither; the blocks' own holds keep the cells when it goes.
  constexpr SeqId kLoading = INT32_MAX;
  cells_.clear();
  for (const Block* b : chain_) cells_.insert(cells_.end(), b->cells.begin(), b->cells.end());
  cache_.free_sequence(kLoading);
  cache_.attach(kLoading, cells_);
  RecurrentCache* rc = cache_.recurrent();
  kv_buf_.resize(sz(B) * cache_.cell_bytes());
  snap_buf_.resize(rc != nullptr ? rc->snapshot_size() : 0);
  uint64_t key = prev != nullptr ? prev->key : seed_;
  bool loaded = false;
  for (; end + B <= limit; end += B) {
    const int32_t* t = tokens.data() + end;
    const PrefixStore::Key next = store_->next(disk_key, t);
    key = hash_(key, t, B);
    bool has_snapshot = false;
    // (a key already in the index here is another prefix's: match() stopped before it)
    if (blocks_.count(key) != 0 || !store_->contains(next) || !make_room(B) ||
        !store_->load(next, disk_key, t, kv_buf_, snap_buf_, has_snapshot)) {
      break;
    }
    std::array<int32_t, B> cells;
    for (int32_t i = 0; i < B; ++i) cells[sz(i)] = cache_.cell_for(kLoading, static_cast<int32_t>(end + i));
    cache_.write_cells(cells, kv_buf_);
    Block& b = blocks_[key];
    init(b, key, next, prev, t, cells);
    if (rc != nullptr && has_snapshot) b.snap = rc->adopt(static_cast<int32_t>(end + B), snap_buf_);
    b.used = ++tick_;
    lru_.insert({b.used, key});
    prev = &b;
    disk_key = next;
    loaded = true;
  }
  cache_.free_sequence(kLoading);
  return loaded;
}

bool PrefixCache::evictable(const Block& b) const {
  return b.children == 0 && cache_.refs(b.cells.back()) == 1;
}

void PrefixCache::drop(Block& b) {
  for (int32_t c : b.cells) cache_.release(c);
  if (RecurrentCache* rc = cache_.recurrent()) rc->release(b.snap);
  if (b.parent != nullptr) --b.parent->children;
  const uint64_t key = b.key;  // not a reference into the node being erased
  blocks_.erase(key);
}

bool PrefixCache::make_room(int64_t n_cells) {
  // Oldest first; a parent is more recent than its children, so a parent whose last child goes
  // comes later in the same pass. Another pass only if that order was not enough.
  for (bool progress = true; cache_.n_free() < n_cells && progress;) {
    progress = false;
    for (auto it = lru_.begin(); it != lru_.end() && cache_.n_free() < n_cells;) {
      Block& b = blocks_.at(it->second);
      if (!evictable(b)) {
        ++it;
        continue;
      }
      it = lru_.erase(it);
      drop(b);
      ++evictions_;
      progress = true;
    }
  }
  return cache_.n_free() >= n_cells;
}

void PrefixCache::clear() {
  for (auto& [key, b] : blocks_) {
    for (int32_t c : b.cells) cache_.release(c);
    if (RecurrentCache* rc = cache_.recurrent()) rc->release(b.snap);
  }
  blocks_.clear();
  lru_.clear();
}

PrefixCacheStats PrefixCache::stats() const {
  PrefixCacheStats s;
  s.block_tokens = B;
  s.blocks = static_cast<int64_t>(blocks_.size());
  s.bytes = sz(s.blocks * B) * cache_.cell_bytes();
  s.lookups = lookups_;
  s.hit_tokens = hit_tokens_;
  s.evictions = evictions_;
  s.reserved_cells = reserved_cells_;
  if (store_ != nullptr) {
    s.on_disk = true;
    s.disk = store_->stats();
  }
  if (const RecurrentCache* rc = cache_.recurrent()) {
    for (const auto& [key, b] : blocks_) s.snapshot_blocks += rc->valid(b.snap);
    s.snapshot_slots = rc->n_snapshots();
    s.snapshot_bytes = static_cast<size_t>(rc->n_snapshots()) * rc->snapshot_size();
  }
  return s;
}

}  // namespace engine
