#include "engine/runtime/evaluator.h"

#include <stdexcept>

#include "engine/model/pooling.h"

namespace engine {

ModelEvaluator::ModelEvaluator(const Model& model, int64_t n_cells, int64_t n_seq, KvType kv_type,
                               int64_t max_batch, int n_threads)
    : model_(model),
      pool_(thread_count(n_threads)),
      cache_(model.hparams(), n_cells, kv_type, KvCache::window_cells(model.hparams(), n_cells, n_seq, max_batch)),
      forward_(model, max_batch, n_cells / n_seq) {}

BatchEvaluator::CacheUse ModelEvaluator::cache_use() const {
  return {cache_.n_cells() - cache_.n_free(), cache_.n_cells(), cache_.n_window_cells(), cache_.bytes(),
          cache_.bytes_without_window()};
}

std::vector<float> ModelEvaluator::classify(std::vector<float> pooled) const {
  return engine::classify(model_, std::move(pooled));
}

const float* BatchEvaluator::hidden(int64_t) const {
  throw std::logic_error("this evaluator keeps no hidden states");
}

EncoderEvaluator::EncoderEvaluator(const Model& model, int n_threads)
    : model_(model), pool_(thread_count(n_threads)), encoder_(model) {}

const float* EncoderEvaluator::logits(int64_t) const {
  throw std::logic_error("an encoder computes no logits");
}

std::vector<float> EncoderEvaluator::classify(std::vector<float> pooled) const {
  return engine::classify(model_, std::move(pooled));
}

}  // namespace engine
