// Attention of a chunk's tokens over the KV cache, through the tiled kernel (kernels/flash_attn.h).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/kernels/flash_attn.h"
#include "engine/kernels/thread_pool.h"
#include "engine/model/kv_cache.h"
#include "engine/model/model.h"

namespace engine {

// What one thread needs to run tiles of the tiled kernel besides their inputs: the kernel's
// scratch, the softmax state of kFlashRows rows, and the rows' pointers, positions, sinks and
// ALiBi slopes.
struct FlashWorker {
  explicit FlashWorker(const kernels::FlashParams& p);
  kernels::FlashState state() { return {m.data(), l.data(), o.data()}; }
  kernels::FlashQuery query(int n) const { return {q_rows.data(), q_pos.data(), n}; }

  std::unique_ptr<uint8_t[]> raw;
  void* scratch = nullptr;                // flash_scratch_bytes(p), 64-byte aligned inside raw
  std::vector<float> m, l, o;             // (kFlashRows,), (kFlashRows,), (kFlashRows, d_v)
  std::vector<const float*> q_rows;       // (kFlashRows,) each (d_k,)
  std::vector<float*> out_rows;           // (kFlashRows,) each (d_v,)
  std::vector<int32_t> q_pos;             // (kFlashRows,)
  std::vector<int32_t> q_see;             // (kFlashRows,) the last position each row sees
  std::vector<float> sinks;               // (kFlashRows,)
  std::vector<float> slopes;              // (kFlashRows,) ALiBi slopes (the encoder's jina-bert-v2)
};

// att[t, h] = softmax(scale * q[t, h] . K[seq_t, keys t sees]) @ V[...] for every token t of a
// chunk and every head h, with the model's soft-cap, sliding window and sinks.
//
// Work items are (sequence, K/V head, tile): a tile is up to kFlashRows query rows of one
// sequence, the GQA heads that share the K/V head times consecutive tokens, so each K/V row is
// read once per tile instead of once per head and token; items run on the pool from a shared
// counter, costliest first. A sequence with one token in the chunk (decode) and fewer K/V heads
// than threads also splits its keys into runs whose partial softmax states are merged.
// The accumulation is chosen per token by its position alone, so a token's result does not
// depend on how its sequence was cut into chunks (prefix sharing, engine/runtime/prefix_cache.h,
// relies on that: an attached prefix gives the logits of computing everything), nor on other
// sequences in the batch. With an F16 cache, tokens at positions below kF16AccumPositions take
// the f16 accumulation of llama.cpp's one-row CPU path (what it runs for decode and for batches
// of fewer than 64 tokens, and what the reference logits in ../shared/golden come from: small
// random models amplify any rounding difference); later tokens accumulate in f32 as llama.cpp's
// tiled path does for longer batches (3-4x fewer instructions per query-key pair, and more
// precise). F32 and Q8_0 caches always accumulate in f32.
//
// Ownership: borrows the HParams (must outlive it); owns its scratch. Thread-safety: none.
class Attention {
 public:
  explicit Attention(const HParams& hp);

  // F16 caches: tokens at positions below this take the f16 accumulation (see above).
  static constexpr int32_t kF16AccumPositions = 128;

  // F16 caches: tokens at positions in [begin, end) accumulate in f32, the others in f16; by
  // default [kF16AccumPositions, INT32_MAX), the rule above. Another range reproduces how one
  // sequence was cut into llama.cpp batches (tests/model/golden_test.cpp: its reference prompts
  // of 64 tokens or more ran as one tiled f32 batch, [0, n_prompt), the tokens after them one at a
  // time in f16); a token's result then depends on the range, so the prefix cache must not be used.
  void set_f32_accum_range(int32_t begin, int32_t end) {
    f32_begin_ = begin;
    f32_end_ = end;
  }

  // Groups the chunk's n tokens by sequence and reads their sequences' cache entries (every
  // pool); call once per chunk, after the tokens' cells are assigned. seq, pos: (n,). see: (n,)
  // or null: the last position each token sees when it is not its own (an image's tokens that
  // see their whole image, Batch::see); never below pos, never decreasing within a sequence.
  void prepare(int64_t n, const SeqId* seq, const int32_t* pos, const KvCache& cache, const int32_t* see = nullptr);

  // Layer il: q (n, n_head * head_k(il)) the chunk's queries -> att (n, n_head * head_v(il)), over
  // the K/V rows the cache gives layer il (another layer's, when it reuses them).
  // sinks: (n_head,) or empty.
  void run(int64_t il, const std::vector<float>& sinks, const float* q, const KvCache& cache, float* att,
           ThreadPool& pool);

 private:
  // One sequence of the chunk: its tokens (chunk indices, position order) and, per pool, its
  // cached keys: [kv_begin, kv_begin + kv_n) of cells_ / kv_pos_.
  struct Seq {
    SeqId id;
    std::vector<int32_t> tokens;   // chunk indices
    std::vector<int32_t> tok_pos;  // their positions
    std::vector<int32_t> tok_see;  // the last position each sees (= tok_pos but in non-causal spans)
    int64_t kv_begin[2];
    int64_t kv_n[2];
  };
  // A tile of one sequence's query rows against a run of its keys. Rows are numbered
  // token-major over the sequence's tokens: row i is token tokens[i / G], head kv_head * G + i % G.
  struct Item {
    int32_t seq;
    int32_t kv_head;
    int32_t row0, row1;  // [row0, row1)
    int64_t k0, k1;      // keys, indices into the sequence's run
    int32_t partial;     // -1, or this run's partial state (split decode: runs split = 0..n_split-1
    int32_t split;       //   of one tile have states partial - split .. partial - split + n_split - 1)
    int32_t n_split;
    int64_t cost;        // rows x keys: costliest items start first
    bool f16_accum;      // every row's token accumulates in f16 (f16_accum(): F16 cache, outside the f32 range)
  };
  void plan(int64_t il, const KvCache& cache, int n_threads);
  void ensure_workers(int n);
  // Fills w's row pointers, positions and sinks for the item's rows (head sizes p.d_k, p.d_v).
  void bind_rows(const Item& it, const kernels::FlashParams& p, const float* q, float* att,
                 const std::vector<float>& sinks, FlashWorker& w) const;
  size_t partial_stride() const;
  kernels::FlashState partial_state(int32_t i);

  const HParams& hp_;
  int64_t group_;  // query heads per K/V head
  kernels::FlashParams params_{};  // the largest head sizes (run() sets each layer's)
  std::vector<Seq> seqs_;
  std::vector<int32_t> cells_[2], kv_pos_[2];  // per pool: every sequence's entries, back to back
  std::vector<Item> items_;
  std::vector<int32_t> order_;    // items_ indices, costliest first
  std::vector<int32_t> leaders_;  // items_ indices of every split tile's first run
  std::vector<float> partials_;   // (n_partial, kFlashRows * (2 + d_v)): split states m, l, o
  std::vector<FlashWorker> workers_;  // one per thread
  bool f16_cache_ = false;
  bool non_causal_ = false;  // some token of the chunk sees past its own position
  int32_t f32_begin_ = kF16AccumPositions, f32_end_ = INT32_MAX;  // see set_f32_accum_range()
  bool f16_accum(int32_t pos) const { return f16_cache_ && (pos < f32_begin_ || pos >= f32_end_); }
};

}  // namespace engine
