// The seam between the scheduler and a model: "evaluate this batch". The scheduler decides what
// runs; an evaluator runs it. ModelEvaluator is the real one; tests drive the scheduler with a
// deterministic fake that needs no model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/kernels/thread_pool.h"
#include "engine/model/batch.h"
#include "engine/model/forward.h"
#include "engine/model/encoder.h"
#include "engine/model/kv_cache.h"

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
  // (n_embd(),). classify(): rank pooling's head over a pooled state. Evaluators without
  // embeddings (test fakes) keep these defaults: no hidden states.
  virtual bool encoder() const { return false; }
  virtual int64_t n_embd() const { return 0; }
  virtual const float* hidden(int64_t i) const;
  virtual std::vector<float> classify(std::vector<float> pooled) const { return pooled; }

  struct CacheUse {
    int64_t cells_used = 0;
    int64_t cells_total = 0;
    int64_t window_cells = 0;  // cells of the sliding-window ring (0: none)
    size_t bytes = 0;
    size_t bytes_without_window = 0;  // what the cache would take with every layer in full cells
  };
  virtual CacheUse cache_use() const = 0;
};

// A Model's forward pass over a KV cache of `n_cells` cells, on its own compute threads. A model
// with sliding-window layers keeps them in a ring sized for n_seq sequences (KvCache::window_cells).
// Ownership: borrows the Model (which must outlive it); owns the cache, scratch and threads.
class ModelEvaluator final : public BatchEvaluator {
 public:
  // n_threads 0: one per physical core.
  ModelEvaluator(const Model& model, int64_t n_cells, int64_t n_seq, KvType kv_type, int64_t max_batch,
                 int n_threads);

  int64_t n_vocab() const override { return forward_.n_vocab(); }
  void eval(const Batch& batch) override { forward_.eval(batch, cache_, pool_); }
  const float* logits(int64_t i) const override { return forward_.logits(i); }
  int32_t truncate(SeqId seq, int32_t n_keep) override { return cache_.truncate(seq, n_keep); }
  CacheUse cache_use() const override;
  int64_t n_embd() const override { return model_.hparams().n_embd; }
  const float* hidden(int64_t i) const override { return forward_.hidden(i); }
  std::vector<float> classify(std::vector<float> pooled) const override;

 private:
  const Model& model_;
  ThreadPool pool_;
  KvCache cache_;
  Forward forward_;
};

// An encoder Model (bert) on its own compute threads: whole sequences per batch, no cache, hidden
// states only (logits() is never valid: an encoder has no output head).
// Ownership: borrows the Model (which must outlive it); owns the scratch and threads.
class EncoderEvaluator final : public BatchEvaluator {
 public:
  EncoderEvaluator(const Model& model, int n_threads);

  int64_t n_vocab() const override { return model_.hparams().n_vocab; }
  void eval(const Batch& batch) override { encoder_.eval(batch, pool_); }
  const float* logits(int64_t i) const override;
  int32_t truncate(SeqId, int32_t) override { return 0; }
  CacheUse cache_use() const override { return {}; }
  bool encoder() const override { return true; }
  int64_t n_embd() const override { return model_.hparams().n_embd; }
  const float* hidden(int64_t i) const override { return encoder_.hidden(i); }
  std::vector<float> classify(std::vector<float> pooled) const override;

 private:
  const Model& model_;
  ThreadPool pool_;
  Encoder encoder_;
};

}  // namespace engine
