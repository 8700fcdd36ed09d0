#include "engine/runtime/evaluator.h"

namespace engine {

ModelEvaluator::ModelEvaluator(const Model& model, int64_t n_cells, int64_t n_seq, KvType kv_type,
                               int64_t max_batch, int n_threads)
    : pool_(thread_count(n_threads)),
      cache_(model.hparams(), n_cells, kv_type, KvCache::window_cells(model.hparams(), n_cells, n_seq, max_batch)),
      forward_(model, max_batch, n_cells / n_seq) {}

BatchEvaluator::CacheUse ModelEvaluator::cache_use() const {
  return {cache_.n_cells() - cache_.n_free(), cache_.n_cells(), cache_.n_window_cells(), cache_.bytes(),
          cache_.bytes_without_window()};
}

}  // namespace engine
