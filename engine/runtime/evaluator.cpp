#include "engine/runtime/evaluator.h"

namespace engine {

ModelEvaluator::ModelEvaluator(const Model& model, int64_t n_cells, KvType kv_type, int64_t max_batch,
                               int n_threads)
    : pool_(thread_count(n_threads)), cache_(model.hparams(), n_cells, kv_type), forward_(model, max_batch, n_cells) {}

BatchEvaluator::CacheUse ModelEvaluator::cache_use() const {
  return {cache_.n_cells() - cache_.n_free(), cache_.n_cells(), cache_.bytes()};
}

}  // namespace engine
