#include "engine/model/kv_cache.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace engine {

KvCache::KvCache(const HParams& hp, int64_t n_cells, KvType type)
    : type_(type),
      n_layer_(hp.n_layer),
      n_cells_(n_cells),
      k_dim_(hp.k_dim()),
      v_dim_(hp.v_dim()),
      elem_bytes_(type == KvType::kF16 ? 2 : 4) {
  if (n_cells <= 0 || n_cells > INT32_MAX) {
    throw std::invalid_argument("KV cache size must be in [1, 2^31), got " + std::to_string(n_cells));
  }
  k_ = std::make_unique_for_overwrite<uint8_t[]>(static_cast<size_t>(n_layer_ * n_cells_ * k_dim_) * elem_bytes_);
  v_ = std::make_unique_for_overwrite<uint8_t[]>(static_cast<size_t>(n_layer_ * n_cells_ * v_dim_) * elem_bytes_);
  clear();
}

int32_t KvCache::cell_for(SeqId seq, int32_t pos) {
  std::vector<Entry>& s = seqs_[seq];
  auto it = std::lower_bound(s.begin(), s.end(), pos,
                             [](const Entry& a, int32_t p) { return a.pos < p; });
  if (it != s.end() && it->pos == pos) return it->cell;
  if (free_.empty()) {
    if (s.empty()) seqs_.erase(seq);
    throw std::runtime_error("KV cache is full (" + std::to_string(n_cells_) + " cells)");
  }
  const int32_t cell = free_.back();
  free_.pop_back();
  s.insert(it, Entry{pos, cell});
  return cell;
}

int32_t KvCache::seq_length(SeqId seq) const {
  const auto it = seqs_.find(seq);
  return it == seqs_.end() || it->second.empty() ? 0 : it->second.back().pos + 1;
}

const std::vector<KvCache::Entry>& KvCache::entries(SeqId seq) const {
  const auto it = seqs_.find(seq);
  return it == seqs_.end() ? no_entries_ : it->second;
}

void KvCache::truncate(SeqId seq, int32_t p) {
  const auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  std::vector<Entry>& s = it->second;
  while (!s.empty() && s.back().pos >= p) {
    free_.push_back(s.back().cell);
    s.pop_back();
  }
  if (s.empty()) seqs_.erase(it);
}

void KvCache::free_sequence(SeqId seq) { truncate(seq, INT32_MIN); }

void KvCache::clear() {
  seqs_.clear();
  free_.resize(static_cast<size_t>(n_cells_));
  // Pop order 0, 1, 2...: a fresh sequence gets consecutive cells.
  for (int64_t i = 0; i < n_cells_; ++i) free_[static_cast<size_t>(i)] = static_cast<int32_t>(n_cells_ - 1 - i);
}

}  // namespace engine
