// The key/value cache shared by all sequences being generated.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/model/model.h"

namespace engine {

using SeqId = int32_t;

enum class KvType { kF16, kF32 };

// Fixed-capacity storage for the K and V rows of every layer, cell by cell, shared by many
// independent sequences.
//
// A cell holds one token of one sequence: its position and, per layer, its K row (k_dim) and V
// row (v_dim). A sequence exists while it has cells: cell_for() creates or extends it, truncate()
// drops its positions >= p, free_sequence() drops it entirely; freed cells are reused. The
// forward pass only ever reads a sequence's own cells, so sequences never see one another.
//
// Ownership: owns its buffers (allocated once in the constructor, left uninitialized: a cell is
// only read after the forward pass has written it). Movable, not copyable.
// Thread-safety: none. The bookkeeping methods must not run concurrently with each other or with a
// forward pass; k_row/v_row of distinct cells may be read and written from many threads.
class KvCache {
 public:
  // One cached token of a sequence: its position and the cell holding it.
  struct Entry {
    int32_t pos;
    int32_t cell;
  };

  KvCache(const HParams& hp, int64_t n_cells, KvType type = KvType::kF16);

  KvType type() const { return type_; }
  size_t elem_bytes() const { return elem_bytes_; }  // 2 (f16) or 4 (f32)
  int64_t n_cells() const { return n_cells_; }
  int64_t n_free() const { return static_cast<int64_t>(free_.size()); }
  // Memory of the K and V arrays.
  size_t bytes() const { return static_cast<size_t>(n_layer_ * n_cells_ * (k_dim_ + v_dim_)) * elem_bytes_; }

  // The cell holding (seq, pos): the existing one, or a free cell now assigned to it.
  // Throws std::runtime_error when the cache is full.
  int32_t cell_for(SeqId seq, int32_t pos);

  bool has_sequence(SeqId seq) const { return seqs_.count(seq) != 0; }
  // One past the highest cached position of seq (0 when it has none).
  int32_t seq_length(SeqId seq) const;
  // seq's cells ordered by position (empty when it has none). Invalidated by cell_for()/truncate().
  const std::vector<Entry>& entries(SeqId seq) const;

  // Drops seq's positions >= p (p <= 0 drops the sequence).
  void truncate(SeqId seq, int32_t p);
  void free_sequence(SeqId seq);
  void clear();

  // Raw rows: K (k_dim) and V (v_dim) of one cell in one layer, f16 or f32 per type().
  void* k_row(int64_t layer, int32_t cell) { return k_.get() + row_offset(layer, cell, k_dim_); }
  void* v_row(int64_t layer, int32_t cell) { return v_.get() + row_offset(layer, cell, v_dim_); }
  const void* k_row(int64_t layer, int32_t cell) const {
    return k_.get() + row_offset(layer, cell, k_dim_);
  }
  const void* v_row(int64_t layer, int32_t cell) const {
    return v_.get() + row_offset(layer, cell, v_dim_);
  }

 private:
  size_t row_offset(int64_t layer, int32_t cell, int64_t dim) const {
    return static_cast<size_t>((layer * n_cells_ + cell) * dim) * elem_bytes_;
  }

  KvType type_;
  int64_t n_layer_, n_cells_, k_dim_, v_dim_;
  size_t elem_bytes_;
  std::unique_ptr<uint8_t[]> k_;  // (layer, cells, n_head_kv * head_dim_k), f16 or f32
  std::unique_ptr<uint8_t[]> v_;  // (layer, cells, n_head_kv * head_dim_v), f16 or f32
  std::vector<int32_t> free_;  // free cells, popped from the back
  std::unordered_map<SeqId, std::vector<Entry>> seqs_;  // each sorted by pos
  std::vector<Entry> no_entries_;  // what entries() returns for an unknown sequence
};

}  // namespace engine
