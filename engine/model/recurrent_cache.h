// The recurrent state of hybrid stacks' Gated DeltaNet layers, per sequence, beside the KV cache's
// attention rows (KvCache owns one for a hybrid model).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/model/model.h"

namespace engine {

using SeqId = int32_t;

// Per sequence and Gated DeltaNet layer, the state of the chunked delta rule
// (kernels/delta_rule.h): chunks are the aligned runs of kChunk positions [c, c + kChunk), and
// a sequence of length L is in chunk c0 = floor(L / kChunk) * kChunk. Kept:
//   - the delta-rule matrices at the start of chunk c0 and of the chunk before it (two buffers,
//     the chunk at c in buffer (c / kChunk) % 2),
//   - per position of those two chunks: each key head's k, each value head's new value d and
//     log-decay G (a ring of 2 kChunk rows),
//   - the conv's inputs of the last 2 kChunk + d_conv - 1 positions (a ring).
// A token's output is computed from its chunk's start state and the rows before it in its chunk,
// so it is the same however the sequence was cut into batches (speculative decoding, prefix
// reuse and batching give the bits of a plain run), and the state can go back to any position
// of the two chunks: truncate() is exact there. Further back, a snapshot is needed.
//
// Snapshots: the state at a chunk boundary (the matrices and the conv's last inputs), captured
// by the forward pass as a sequence crosses the boundary, into a fixed pool (n_snapshots, least
// recently used reused first). The prefix cache claims the ones at its blocks' ends and restores
// them into sequences that attach those blocks. A captured snapshot not claimed is dropped when
// its sequence goes back before it.
//
// Ownership: owns its buffers (sequences' slabs allocated on first use, at most max_seqs of them,
// and reused; snapshots allocated up front). Thread-safety: none for the bookkeeping; the forward
// pass writes distinct heads' rows from many threads.
class RecurrentCache {
 public:
  static constexpr int32_t kChunk = 32;  // positions per chunk; equal to the prefix cache's block

  // One sequence's state in one Gated DeltaNet layer (views into its slab).
  struct LayerState {
    float* s[2];    // (n_v_heads, d_state, d_state) each: the state at a chunk start
    float* log_k;   // (2 kChunk, n_k_heads, d_state) position p at row p % (2 kChunk)
    float* log_d;   // (2 kChunk, n_v_heads, d_state)
    float* log_G;   // (2 kChunk, n_v_heads)
    float* raw;     // (raw_rows(), conv_channels) the conv's inputs, position p at row p % raw_rows()
  };
  // A snapshot's place in the pool; gen tells a reused slot from the snapshot it held.
  struct SnapshotRef {
    int32_t slot = -1;
    uint64_t gen = 0;
  };

  // max_seqs: sequences held at once (further ones throw std::runtime_error); n_snapshots: the
  // pool (0: no snapshots).
  RecurrentCache(const HParams& hp, int64_t max_seqs, int64_t n_snapshots);

  static size_t seq_bytes(const HParams& hp);       // one sequence's slab
  static size_t snapshot_bytes(const HParams& hp);  // one snapshot
  size_t bytes() const;                             // slabs allocated so far + the snapshot pool
  int64_t n_snapshots() const { return static_cast<int64_t>(snaps_.size()); }
  size_t snapshot_size() const { return static_cast<size_t>(n_rec_) * snap_layer_floats_ * sizeof(float); }
  size_t seq_size() const { return static_cast<size_t>(n_rec_) * layer_floats_ * sizeof(float); }
  int64_t raw_rows() const { return 2 * kChunk + ssm_.d_conv - 1; }
  // Allocates slabs for n sequences now (so the memory is taken at start-up).
  void reserve(int64_t n);

  // Positions the sequence's state has taken in (0: none, or an unknown sequence).
  int32_t length(SeqId seq) const;
  // Goes back to length p: returns p when the state can (p within the last two chunks, or
  // p >= length), else -1 and the sequence is dropped.
  int32_t truncate(SeqId seq, int32_t p);
  void free_sequence(SeqId seq);
  void clear();

  // The forward pass. prepare(): the sequence's slab (a new sequence starts zeroed), before its
  // tokens are evaluated. layer(): its views in Gated DeltaNet layer r (0-based among them).
  // advance(): after a batch's layers, its state has taken in positions up to `length`.
  void prepare(SeqId seq);
  LayerState layer(SeqId seq, int64_t r);
  void advance(SeqId seq, int32_t length);

  // Snapshots. capture(): a slot for the state of seq at boundary pos (a multiple of kChunk), to
  // be written layer by layer (snapshot_layer) by the pass that crosses it; -1 when there is no
  // pool. commit(): all its layers are written. claim(): the committed snapshot of seq at pos,
  // now owned by the caller (kept until release(), or until evicted: valid() then says false);
  // {-1} when there is none. restore(): seq (which must hold nothing) takes the snapshot's state,
  // length its position; false when the snapshot is gone.
  int32_t capture(SeqId seq, int32_t pos);
  LayerState snapshot_layer(int32_t slot, int64_t r);  // s[0] and raw (d_conv - 1 rows) only
  void commit(int32_t slot);
  // Frees slots captured but never committed (a pass that failed); called before a pass captures.
  void drop_uncommitted();
  SnapshotRef claim(SeqId seq, int32_t pos);
  bool valid(SnapshotRef ref) const;
  void release(SnapshotRef ref);
  bool restore(SeqId seq, SnapshotRef ref);
  // The disk cache (PrefixStore): a valid snapshot's memory (snapshot_size() bytes; empty when
  // not valid), and a claimed snapshot of the state at boundary pos made from such bytes ({-1}
  // when there is no pool or every slot is being written).
  std::span<const uint8_t> snapshot_memory(SnapshotRef ref) const;
  SnapshotRef adopt(int32_t pos, std::span<const uint8_t> bytes);

 private:
  struct Seq {
    int32_t slab = -1;
    int32_t length = 0;
    bool prev_valid = false;  // the chunk before the current one is still held
  };
  struct Snap {
    uint64_t gen = 0;
    uint64_t used = 0;        // least recently used is reused first
    SeqId seq = -1;           // the sequence that captured it (unclaimed)
    int32_t pos = -1;
    bool committed = false;
    bool claimed = false;
    bool in_use() const { return pos >= 0; }
  };
  void drop_snapshots(SeqId seq, int32_t from);  // unclaimed ones of seq at positions > from
  void free_snapshot(Snap& s);

  DeltaNetParams ssm_;
  int64_t n_rec_;  // Gated DeltaNet layers
  int64_t max_seqs_;
  size_t layer_floats_, snap_layer_floats_;
  std::vector<std::unique_ptr<float[]>> slabs_;
  std::vector<int32_t> free_slabs_;
  std::unordered_map<SeqId, Seq> seqs_;
  std::unique_ptr<float[]> snap_data_;
  std::vector<Snap> snaps_;
  uint64_t tick_ = 0;
};

}  // namespace engine
