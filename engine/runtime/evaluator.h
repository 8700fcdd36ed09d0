// The seam between the scheduler and a model: "evaluate this batch". The scheduler decides what
// runs; an evaluator runs it. ModelEvaluator is the real one; tests drive the scheduler with a
// deterministic fake that needs no model.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/kernels/thread_pool.h"
#include "engine/model/batch.h"
#include "engine/model/forward.h"
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
  // Forgets sequence `seq`'s cached positions >= n_keep.
  virtual void truncate(SeqId seq, int32_t n_keep) = 0;

  struct CacheUse {
    int64_t cells_used = 0;
    int64_t cells_total = 0;
    size_t bytes = 0;
  };
  virtual CacheUse cache_use() const = 0;
};

// A Model's forward pass over a KV cache of `n_cells` cells, on its own compute threads.
// Ownership: borrows the Model (which must outlive it); owns the cache, scratch and threads.
class ModelEvaluator final : public BatchEvaluator {
 public:
  // n_threads 0: one per physical core.
  ModelEvaluator(const Model& model, int64_t n_cells, KvType kv_type, int64_t max_batch, int n_threads);

  int64_t n_vocab() const override { return forward_.n_vocab(); }
  void eval(const Batch& batch) override { forward_.eval(batch, cache_, pool_); }
  const float* logits(int64_t i) const override { return forward_.logits(i); }
  void truncate(SeqId seq, int32_t n_keep) override { cache_.truncate(seq, n_keep); }
  CacheUse cache_use() const override;

 private:
  ThreadPool pool_;
  KvCache cache_;
  Forward forward_;
};

}  // namespace engine
