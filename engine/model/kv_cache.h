// The key/value cache shared by all sequences being generated.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/kernels/flash_attn.h"
#include "engine/model/model.h"
#include "engine/model/recurrent_cache.h"

namespace engine {

// kQ8_0: ggml's Q8_0 blocks (an f16 scale and 32 int8 per 32 elements, 34 bytes): a little more
// than half the memory of f16; needs head sizes that are multiples of 32.
enum class KvType { kF16, kF32, kQ8_0 };

// The element types as settings spell them ("f16", "f32", "q8_0"), in enum order.
const std::vector<std::string>& kv_type_names();
const std::string& kv_type_name(KvType type);
// The type spelled `name`; std::invalid_argument naming the accepted ones otherwise.
KvType kv_type_from_name(const std::string& name);

// Fixed-capacity storage for the K and V rows of every layer, cell by cell, shared by many
// independent sequences.
//
// A cell holds one token: per layer, its K row (k_dim(il)) and V row (v_dim(il)); a layer that
// reuses another's K/V (HParams::kv_layer) has no rows of its own, it reads that layer's. A
// sequence maps its
// positions to cells. A sequence exists while it has cells: cell_for() creates or extends it,
// truncate() drops its positions >= p, free_sequence() drops it entirely. The forward pass reads
// only the cells a sequence's positions map to, so sequences never see one another's tokens.
//
// Cells are reference counted, so that sequences with a common prefix may share its cells (the
// prefix cache, engine/runtime/prefix_cache.h, is the other holder): a cell is held once by each
// sequence position mapped to it and once per retain(). attach() maps a sequence's next positions
// to cells someone already holds; adopt() swaps a sequence's own cells for such cells. A cell
// becomes free (and is reused) only when nothing holds it. A shared cell is never written:
// cell_for() refuses to hand out a cell held more than once, so whoever shares a cell must only
// share cells whose K/V are complete. Only the full pool shares: a cache with a window pool
// refuses attach() and adopt() (a ring keeps each sequence's last positions only).
//
// Two pools of cells. The full pool holds every cached position of a sequence. Built with window
// cells, the cache keeps sliding-window layers (HParams::swa_layer) in a second, smaller pool
// that holds only each sequence's last positions -- a ring per sequence: slide_window() frees
// the cells no later token can attend to. A model without such layers, or a cache built without
// window cells, keeps every layer in the full pool.
//
// Hybrid stacks (HParams::recurrent_layer): only the attention layers keep rows; each sequence's
// Gated DeltaNet state is in recurrent() beside them (created with the cache, one state per
// sequence, up to n_cells sequences, no snapshots until reserve_recurrent()). truncate() goes back
// only as far as that state can (RecurrentCache::truncate), else drops the sequence.
//
// NextN / MTP (a cache built with nextn, for `--spec mtp`): each cell also holds the K/V rows of
// the NextN block (layer n_layer, full pool), which the forward pass computes for every token it
// evaluates, so they are shared, published, truncated and rolled back with the stack's rows. And
// per sequence, the stack's final hidden states (after the output norm) of its last evaluated
// positions (at most kKeptHidden), which the NextN block reads for the position after each:
// truncate() drops those at dropped positions.
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
  enum class Pool : uint8_t { kFull, kWindow };

  // Positions a sequence keeps in the window pool beyond what its next token attends to, so a
  // new request may re-evaluate that many of a slot's last tokens and still reuse the slot's
  // prefix (chat templates re-render the end of the previous turn).
  static constexpr int32_t kWindowSlack = 64;

  // Hidden states kept per sequence (nextn): as many positions as a step can roll back, + 1.
  static constexpr int32_t kKeptHidden = kWindowSlack + 1;

  // n_window_cells 0: no window pool. nextn: rows for the NextN block too (std::invalid_argument
  // when the model has none). Throws std::invalid_argument for a bad size, or kQ8_0 with a head
  // size that is not a multiple of 32.
  KvCache(const HParams& hp, int64_t n_cells, KvType type = KvType::kF16, int64_t n_window_cells = 0,
          bool nextn = false);

  // The window pool for n_seq sequences evaluated at most max_batch tokens at a time: each keeps
  // n_swa - 1 + kWindowSlack positions between batches, plus one batch in flight. 0 when the model
  // has no sliding-window layer or the pool would not be smaller than n_cells.
  static int64_t window_cells(const HParams& hp, int64_t n_cells, int64_t n_seq, int64_t max_batch);

  KvType type() const { return type_; }
  kernels::KvElem elem() const { return elem_; }  // how the kernels read the rows
  // Bytes of a whole K / V row of a cell in layer il, and where K/V head h starts in it.
  size_t k_row_bytes(int64_t il) const { return layers_[static_cast<size_t>(il)].k_bytes; }
  size_t v_row_bytes(int64_t il) const { return layers_[static_cast<size_t>(il)].v_bytes; }
  size_t k_head_offset(int64_t il, int64_t h) const {
    return kernels::kv_bytes(elem_, h * layers_[static_cast<size_t>(il)].head_k);
  }
  size_t v_head_offset(int64_t il, int64_t h) const {
    return kernels::kv_bytes(elem_, h * layers_[static_cast<size_t>(il)].head_v);
  }
  int64_t n_cells() const { return full_.n_cells; }
  int64_t n_window_cells() const { return window_.n_cells; }
  int64_t n_free() const { return static_cast<int64_t>(full_.free.size()); }
  // Memory of one full-pool cell over all layers (K and V rows).
  size_t cell_bytes() const { return cell_bytes_; }
  // The same for a cache of `type` for hp, before building one.
  static size_t cell_bytes_for(const HParams& hp, KvType type, bool nextn = false);
  // Whether cells hold the NextN block's rows (layer hp.n_layer).
  bool nextn() const { return n_embd_ > 0; }
  // The pool holding a layer's rows.
  Pool pool(int64_t layer) const { return layers_[static_cast<size_t>(layer)].pool; }
  // Memory of the K and V arrays.
  size_t bytes() const { return bytes_; }
  // Hybrid stacks: the Gated DeltaNet layers' state (null for other models).
  RecurrentCache* recurrent() { return recurrent_.get(); }
  const RecurrentCache* recurrent() const { return recurrent_.get(); }
  // Hybrid stacks: n_seqs sequences' states allocated now, and a pool of n_snapshots snapshots.
  // Only before any sequence holds positions (std::logic_error otherwise); no-op for other models.
  void reserve_recurrent(int64_t n_seqs, int64_t n_snapshots);
  // What a cache of the same size without a window pool would take.
  size_t bytes_without_window() const;

  // The cell to write (seq, pos)'s K/V to in `pool`: the existing one, or a free cell now
  // assigned to it. Throws std::runtime_error when the pool is full, std::logic_error when the
  // existing cell is shared (held more than once: it must not change).
  int32_t cell_for(SeqId seq, int32_t pos, Pool pool = Pool::kFull);

  // Sharing (full pool only). attach(): seq's next positions, from seq_length(seq) on, map to
  // `cells`, each already held (by a sequence or retain()) and holding complete K/V.
  // adopt(): seq's positions pos0.. (which it has) map to `cells` instead of their own cells,
  // which must hold the same K/V (the same tokens at the same positions). Both throw
  // std::logic_error on a cache with a window pool, a free cell, or (adopt) a missing position.
  void attach(SeqId seq, std::span<const int32_t> cells);
  void adopt(SeqId seq, int32_t pos0, std::span<const int32_t> cells);
  // Holds / lets go of a full-pool cell beyond the sequences' positions. retain() throws
  // std::logic_error for a free cell; release() of a cell held only once frees it.
  void retain(int32_t cell);
  void release(int32_t cell);
  // How many holders a full-pool cell has (0: free).
  int32_t refs(int32_t cell) const { return full_.refs[static_cast<size_t>(cell)]; }

  bool has_sequence(SeqId seq) const { return full_.seqs.count(seq) != 0; }
  // One past the highest cached position of seq (0 when it has none).
  int32_t seq_length(SeqId seq) const;
  // seq's cells in `pool` ordered by position (empty when it has none). Invalidated by
  // cell_for(), truncate() and slide_window().
  const std::vector<Entry>& entries(SeqId seq, Pool pool = Pool::kFull) const;

  // After seq's tokens before next_pos are stored: frees its window cells that no token at
  // next_pos or later attends to, but for kWindowSlack more.
  void slide_window(SeqId seq, int32_t next_pos);

  // NextN: the stack's final hidden states (n, n_embd) of seq's positions pos0.., just evaluated:
  // they continue what seq keeps (its last kept position is pos0 - 1), else replace it; only the
  // last kKeptHidden are kept. hidden(): the state kept for (seq, pos), null when none.
  void keep_hidden(SeqId seq, int32_t pos0, const float* rows, int64_t n);
  const float* hidden(SeqId seq, int32_t pos) const;

  // Drops seq's positions >= p (each lets go of its cell). When the window pool no longer holds
  // what a token at p attends to, drops the whole sequence. Returns the positions kept: p (or
  // fewer when seq had fewer), or 0.
  int32_t truncate(SeqId seq, int32_t p);
  void free_sequence(SeqId seq);
  // Every sequence and every retain() is forgotten: whoever retained cells must forget them too.
  void clear();

  // The rows of full-pool `cells` as one buffer of cells.size() * cell_bytes() (the disk prefix
  // cache): per layer that keeps rows, the cells' K rows, then their V rows. write_cells() takes
  // such a buffer back into (other) cells; the cells must not be shared.
  void read_cells(std::span<const int32_t> cells, std::span<uint8_t> out) const;
  void write_cells(std::span<const int32_t> cells, std::span<const uint8_t> in);

  // Raw rows: K (k_dim(layer)) and V (v_dim(layer)) of one cell (of the layer's pool) in one layer,
  // in type()'s layout (kernels::kv_store / kv_load); a layer's cells are k_row_bytes(layer) /
  // v_row_bytes(layer) apart. A layer that reuses another's K/V gets that layer's rows.
  void* k_row(int64_t layer, int32_t cell) { return k_.get() + k_offset(layer, cell); }
  void* v_row(int64_t layer, int32_t cell) { return v_.get() + v_offset(layer, cell); }
  const void* k_row(int64_t layer, int32_t cell) const { return k_.get() + k_offset(layer, cell); }
  const void* v_row(int64_t layer, int32_t cell) const { return v_.get() + v_offset(layer, cell); }

 private:
  // Cells and the sequences occupying them.
  struct CellPool {
    int64_t n_cells = 0;
    std::vector<int32_t> free;  // free cells, popped from the back
    std::vector<int32_t> refs;  // (n_cells,) holders of each cell; 0: in `free`
    std::unordered_map<SeqId, std::vector<Entry>> seqs;  // each sorted by pos

    int32_t cell_for(SeqId seq, int32_t pos, const char* name);
    void release(int32_t cell);
    void drop_from(SeqId seq, int32_t p);    // positions >= p
    void drop_before(SeqId seq, int32_t p);  // positions < p
    void clear();
  };

  // Where one layer's rows are: its pool, the bytes of its K / V rows, the offset of its cell 0's
  // rows in k_ / v_, its K / V head sizes (a reusing layer: those of the layer it reuses); owned:
  // the rows are its own (not another layer's, and a Gated DeltaNet layer has none).
  struct LayerRows {
    Pool pool;
    size_t k_bytes, v_bytes;
    size_t k0, v0;
    int64_t head_k, head_v;
    bool owned;
  };
  size_t k_offset(int64_t layer, int32_t cell) const {
    const LayerRows& r = layers_[static_cast<size_t>(layer)];
    return r.k0 + static_cast<size_t>(cell) * r.k_bytes;
  }
  size_t v_offset(int64_t layer, int32_t cell) const {
    const LayerRows& r = layers_[static_cast<size_t>(layer)];
    return r.v0 + static_cast<size_t>(cell) * r.v_bytes;
  }
  const CellPool& pool_ref(Pool p) const { return p == Pool::kWindow ? window_ : full_; }
  // Throws std::logic_error unless sharing is possible and `cell` is a held full-pool cell.
  void check_shareable(int32_t cell, const char* what) const;

  KvType type_;
  kernels::KvElem elem_;
  int64_t n_swa_;
  size_t cell_bytes_;
  CellPool full_, window_;
  std::vector<LayerRows> layers_;  // (n_layer,), + 1 with nextn
  size_t bytes_ = 0;
  std::unique_ptr<uint8_t[]> k_;  // per layer with rows (cells of its pool, n_head_kv * head_k(il)), in type()
  std::unique_ptr<uint8_t[]> v_;  // per layer with rows (cells of its pool, n_head_kv * head_v(il)), in type()
  std::vector<Entry> no_entries_;  // what entries() returns for an unknown sequence
  // NextN: per sequence, the hidden states of positions pos0.. (rows.size() / n_embd_ of them)
  struct KeptHidden {
    int32_t pos0 = 0;
    std::vector<float> rows;
  };
  int64_t n_embd_ = 0;  // nextn: the hidden states' width; 0: no NextN rows
  std::unordered_map<SeqId, KeptHidden> hidden_;
  const HParams* hp_;              // reserve_recurrent() only (the model outlives its caches)
  std::unique_ptr<RecurrentCache> recurrent_;
};

}  // namespace engine
