// The seam between the scheduler and a model: "evaluate this batch". The scheduler decides what
// runs; an evaluator runs it. ModelEvaluator is the real one; tests drive the scheduler with a
// deterministic fake that needs no model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "engine/kernels/thread_pool.h"
#include "engine/runtime/compute_share.h"
#include "engine/model/batch.h"
#include "engine/model/forward.h"
#include "engine/model/encoder.h"
#include "engine/model/kv_cache.h"
#include "engine/model/pooling.h"
#include "engine/runtime/prefix_cache.h"

namespace engine {

// Evaluates batches of tokens of many sequences, each against its own cached positions, and keeps
// (and forgets) those positions. Thread-safety: none; the scheduler's thread calls it.
class BatchEvaluator {
 public:
  virtual ~BatchEvaluator() = default;

  virtual int64_t n_vocab() const = 0;
  // Evaluates `batch` (each token at its sequence's next position); afterwards logits(i) is the
  // i-th flagged token's row (n_vocab,). Throws when it cannot: the positions the batch's
  // sequences have cached are then unknown, and the scheduler drops them.
  virtual void eval(const Batch& batch) = 0;
  virtual const float* logits(int64_t i) const = 0;
  // Forgets sequence `seq`'s cached positions >= n_keep; returns how many it kept: n_keep, fewer
  // when it had fewer, or 0 when the rest cannot be continued (a sliding-window ring that has
  // already dropped what a token at n_keep attends to).
  virtual int32_t truncate(SeqId seq, int32_t n_keep) = 0;

  // Embeddings. encoder(): sequences come whole in one batch and nothing is cached (truncate
  // keeps nothing). hidden(i): the i-th token flagged in batch.hidden, its final hidden state
  // (n_embd(),). classify(): rank pooling's head over a pooled state; rank_pools_last(): rank
  // pooling reads the last token, not the first (engine::rank_pools_last). Evaluators without
  // embeddings (test fakes) keep these defaults: no hidden states.
  virtual bool encoder() const { return false; }
  virtual bool rank_pools_last() const { return false; }
  virtual int64_t n_embd() const { return 0; }
  virtual const float* hidden(int64_t i) const;
  virtual std::vector<float> classify(std::vector<float> pooled) const { return pooled; }

  // Prefix sharing across sequences (see PrefixCache). Evaluators without it (encoders, test
  // fakes, models with a sliding-window ring) keep these defaults: nothing is shared.
  // prefix_block(): tokens per shared block; 0: no sharing.
  virtual int32_t prefix_block() const { return 0; }
  // Sequence seq holds `have` positions, the start of `tokens`: when the shared blocks that begin
  // `tokens` (at most n_max tokens of them) cover more, seq's positions become theirs. Returns
  // the positions attached, 0 when seq is left as it was.
  virtual int32_t share_prefix(SeqId seq, const std::vector<int32_t>& tokens, int32_t have, int32_t n_max) {
    (void)seq, (void)tokens, (void)have, (void)n_max;
    return 0;
  }
  // seq holds the K/V of `tokens` at positions 0, 1, ...: its complete blocks become shared.
  virtual void publish_prefix(SeqId seq, const std::vector<int32_t>& tokens) { (void)seq, (void)tokens; }

  struct CacheUse {
    int64_t cells_used = 0;
    int64_t cells_total = 0;
    int64_t window_cells = 0;  // cells of the sliding-window ring (0: none)
    size_t bytes = 0;
    size_t bytes_without_window = 0;  // what the cache would take with every layer in full cells
    PrefixCacheStats prefix;   // block_tokens 0: no prefix sharing
    size_t recurrent_bytes = 0;      // hybrid stacks: the sequences' Gated DeltaNet states (0: none)
    size_t recurrent_seq_bytes = 0;  //   one sequence's
  };
  virtual CacheUse cache_use() const = 0;
  // Positions a sequence can always go back from its end (truncate): a hybrid stack's recurrent
  // state only within its last chunks (RecurrentCache). Speculation drafts no more than that.
  virtual int32_t rollback_limit() const { return INT32_MAX; }
};

// A Model's forward pass over a KV cache for n_seq sequences of up to n_ctx positions, on its own
// compute threads. A model with sliding-window layers keeps them in a ring sized for n_seq
// sequences (KvCache::window_cells).
// With prefix_cache_bytes > 0 and every layer in the full pool (no ring), sequences share prompt
// prefixes through a PrefixCache, and the KV cache gets that many bytes' worth of cells more
// (whole blocks, within 2^31 cells in all) so cached blocks survive while every sequence is at
// its longest. With a ring (gemma2/3, gpt-oss at long contexts) nothing is shared: each sequence
// keeps only its own prefix (BatchEvaluator::truncate). A hybrid stack's cache holds n_seq
// recurrent states, and with prefix sharing half of prefix_cache_bytes goes to snapshots of them
// at block ends (RecurrentCache), the other half to cells. With a store directory
// (PrefixStoreOptions::dir) and sharing, the cached blocks are also kept on disk (PrefixStore).
// With nextn (a model with NextN / MTP layers, `--spec mtp`), the cache holds the NextN block's
// rows too and every pass computes them (Forward::eval_nextn, KvCache's NextN rows).
// Ownership: borrows the Model (which must outlive it); owns the cache, scratch, store and threads.
class ModelEvaluator final : public BatchEvaluator {
 public:
  // `compute`: the threads it runs on (ComputeShare::make(n) for its own; shared with other models'
  // evaluators, the caller takes turns).
  ModelEvaluator(const Model& model, int64_t n_ctx, int64_t n_seq, KvType kv_type, int64_t max_batch,
                 std::shared_ptr<ComputeShare> compute, int64_t prefix_cache_bytes = 0, const PrefixStoreOptions& store = {},
                 bool nextn = false);

  int64_t n_vocab() const override { return forward_.n_vocab(); }
  void eval(const Batch& batch) override;
  const float* logits(int64_t i) const override { return forward_.logits(i); }
  int32_t truncate(SeqId seq, int32_t n_keep) override { return cache_.truncate(seq, n_keep); }
  int32_t prefix_block() const override { return prefix_ ? PrefixCache::kBlockTokens : 0; }
  int32_t rollback_limit() const override { return cache_.recurrent() ? RecurrentCache::kChunk : INT32_MAX; }
  int32_t share_prefix(SeqId seq, const std::vector<int32_t>& tokens, int32_t have, int32_t n_max) override;
  void publish_prefix(SeqId seq, const std::vector<int32_t>& tokens) override;
  CacheUse cache_use() const override;
  int64_t n_embd() const override { return model_.hparams().n_embd; }
  const float* hidden(int64_t i) const override { return forward_.hidden(i); }
  std::vector<float> classify(std::vector<float> pooled) const override;
  bool rank_pools_last() const override { return engine::rank_pools_last(model_.hparams()); }
  // The compute threads (a draft model runs on them too, between this evaluator's passes).
  ThreadPool& pool() { return compute_->pool(); }
  // NextN drafting (built with nextn), between passes: the stack's final hidden state kept for
  // (seq, pos) (null when none), and a NextN pass (Forward::eval_nextn: logits(i) and
  // nextn_hidden(i) are then its rows; the sequences must be truncated back before eval()).
  const float* kept_hidden(SeqId seq, int32_t pos) const { return cache_.hidden(seq, pos); }
  void eval_nextn(const Batch& batch, const float* h);
  const float* nextn_hidden(int64_t i) const { return forward_.hidden(i); }

 private:
  // The KV cache's cells: n_seq * n_ctx plus `reserved` for the prefix cache when it `share`s;
  // `window` cells of the sliding-window ring (0: none).
  struct CacheShape {
    int64_t cells = 0, window = 0, reserved = 0, snapshots = 0;
    bool share = false;
  };
  static CacheShape cache_shape(const HParams& hp, int64_t n_ctx, int64_t n_seq, KvType type, int64_t max_batch,
                                int64_t prefix_cache_bytes, bool nextn);

  const Model& model_;
  std::shared_ptr<ComputeShare> compute_;
  const CacheShape shape_;
  KvCache cache_;
  std::optional<PrefixStore> store_;
  std::optional<PrefixCache> prefix_;  // after cache_ and store_: destroyed first
  Forward forward_;
};

// An encoder Model (bert, nomic-bert) on its own compute threads: whole sequences per batch, no cache, hidden
// states only (logits() is never valid: an encoder has no output head).
// Ownership: borrows the Model (which must outlive it); owns the scratch and threads.
class EncoderEvaluator final : public BatchEvaluator {
 public:
  EncoderEvaluator(const Model& model, std::shared_ptr<ComputeShare> compute);

  int64_t n_vocab() const override { return model_.hparams().n_vocab; }
  void eval(const Batch& batch) override { encoder_.eval(batch, compute_->pool()); }
  const float* logits(int64_t i) const override;
  int32_t truncate(SeqId, int32_t) override { return 0; }
  CacheUse cache_use() const override { return {}; }
  bool encoder() const override { return true; }
  int64_t n_embd() const override { return model_.hparams().n_embd; }
  const float* hidden(int64_t i) const override { return encoder_.hidden(i); }
  std::vector<float> classify(std::vector<float> pooled) const override;

 private:
  const Model& model_;
  std::shared_ptr<ComputeShare> compute_;
  Encoder encoder_;
};

}  // namespace engine
