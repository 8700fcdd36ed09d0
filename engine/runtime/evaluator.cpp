#include "engine/runtime/evaluator.h"

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>

#include "engine/model/pooling.h"

namespace engine {

ModelEvaluator::CacheShape ModelEvaluator::cache_shape(const HParams& hp, int64_t n_ctx, int64_t n_seq, KvType type,
                                                      int64_t max_batch, int64_t prefix_cache_bytes, bool nextn) {
  CacheShape s;
  const int64_t base = n_seq * n_ctx;  // the sequences never hold more
  s.window = KvCache::window_cells(hp, base, n_seq, max_batch);
  if (prefix_cache_bytes > 0 && s.window == 0) {
    // hybrid stacks: half the bytes for snapshots of the recurrent state, at most one per block
    const auto snap = static_cast<int64_t>(RecurrentCache::snapshot_bytes(hp));
    int64_t cell_budget = prefix_cache_bytes;
    if (snap > 0) {
      s.snapshots = prefix_cache_bytes / 2 / snap;
      cell_budget -= s.snapshots * snap;
    }
    // whole blocks of `cell_budget` worth of cells, within 2^31 - 1 cells in all
    const auto cell = static_cast<int64_t>(KvCache::cell_bytes_for(hp, type, nextn));
    const int64_t n = std::min(cell > 0 ? cell_budget / cell : 0, std::max<int64_t>(0, INT32_MAX - base));
    s.reserved = n / PrefixCache::kBlockTokens * PrefixCache::kBlockTokens;
    s.snapshots = std::min(s.snapshots, (base + s.reserved) / PrefixCache::kBlockTokens);
    s.share = true;
  }
  s.cells = base + s.reserved;
  return s;
}

ModelEvaluator::ModelEvaluator(const Model& model, int64_t n_ctx, int64_t n_seq, KvType kv_type,
                               int64_t max_batch, std::shared_ptr<ComputeShare> compute, int64_t prefix_cache_bytes,
                               const PrefixStoreOptions& store, bool nextn)
    : model_(model),
      compute_(std::move(compute)),
      shape_(cache_shape(model.hparams(), n_ctx, n_seq, kv_type, max_batch, prefix_cache_bytes, nextn)),
      cache_(model.hparams(), shape_.cells, kv_type, shape_.window, nextn),
      forward_(model, max_batch, n_ctx) {
  cache_.reserve_recurrent(n_seq, shape_.snapshots);  // (hybrid stacks: their states, now)
  // Cached blocks live in the reserved cells and in whatever the sequences leave free.
  if (shape_.share) prefix_.emplace(cache_, shape_.reserved);
  if (!store.dir.empty()) {
    if (!prefix_) {
      if (store.warn) store.warn("prefix cache: --cache-dir unused: this model shares no prefixes (" +
                                 std::string(prefix_cache_bytes <= 0 ? "--cache-ram 0" : "its sliding-window layers keep a ring") + ")");
    } else {
      store_.emplace(store, PrefixStore::fingerprint(model, kv_type, nextn));
      prefix_->set_store(&*store_);
    }
  }
}

void ModelEvaluator::eval(const Batch& batch) {
  // Each token takes at most one new full-pool cell; evicting unused cached blocks always finds
  // them, since the sequences never hold more than n_seq * n_ctx cells.
  if (prefix_) prefix_->make_room(batch.size());
  forward_.eval(batch, cache_, compute_->pool());
}

void ModelEvaluator::eval_nextn(const Batch& batch, const float* h) {
  if (prefix_) prefix_->make_room(batch.size());  // (its tokens take cells, as eval()'s)
  forward_.eval_nextn(batch, h, cache_, compute_->pool());
}

int32_t ModelEvaluator::share_prefix(SeqId seq, const std::vector<int32_t>& tokens, int32_t have, int32_t n_max) {
  return prefix_ ? prefix_->attach(seq, tokens, have, n_max) : 0;
}

void ModelEvaluator::publish_prefix(SeqId seq, const std::vector<int32_t>& tokens) {
  if (prefix_) prefix_->publish(seq, tokens);
}

BatchEvaluator::CacheUse ModelEvaluator::cache_use() const {
  CacheUse u{cache_.n_cells() - cache_.n_free(), cache_.n_cells(), cache_.n_window_cells(), cache_.bytes(),
             cache_.bytes_without_window(), {}, 0, 0};
  if (const RecurrentCache* rc = cache_.recurrent()) {
    u.recurrent_bytes = rc->bytes() - static_cast<size_t>(rc->n_snapshots()) * rc->snapshot_size();
    u.recurrent_seq_bytes = rc->seq_size();
  }
  if (prefix_) u.prefix = prefix_->stats();
  return u;
}

std::vector<float> ModelEvaluator::classify(std::vector<float> pooled) const {
  return engine::classify(model_, std::move(pooled));
}

const float* BatchEvaluator::hidden(int64_t) const {
  throw std::logic_error("this evaluator keeps no hidden states");
}

EncoderEvaluator::EncoderEvaluator(const Model& model, std::shared_ptr<ComputeShare> compute)
    : model_(model), compute_(std::move(compute)), encoder_(model) {}

const float* EncoderEvaluator::logits(int64_t) const {
  throw std::logic_error("an encoder computes no logits");
}

std::vector<float> EncoderEvaluator::classify(std::vector<float> pooled) const {
  return engine::classify(model_, std::move(pooled));
}

}  // namespace engine
