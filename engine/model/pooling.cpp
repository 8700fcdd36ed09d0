#include "engine/model/pooling.h"

#include <cmath>
#include <stdexcept>

#include "engine/kernels/matmul.h"
#include "engine/model/arch.h"
#include "engine/model/ops.h"

namespace engine {

namespace {

// out (m.rows,) = m @ x (m.cols,) (+ b): row by row, the head is small
void apply(const Matrix& m, const std::vector<float>& b, const float* x, float* out) {
  std::vector<float> row(static_cast<size_t>(m.cols));
  for (int64_t r = 0; r < m.rows; ++r) {
    dequantize_row(m, r, row.data());
    double acc = 0.0;
    for (int64_t c = 0; c < m.cols; ++c) acc += static_cast<double>(row[static_cast<size_t>(c)]) * x[c];
    out[r] = static_cast<float>(acc) + (b.empty() ? 0.0f : b[static_cast<size_t>(r)]);
  }
}

}  // namespace

int64_t pooled_size(const HParams& hp, PoolingType type) {
  return type == PoolingType::kRank && hp.n_cls_out > 0 ? hp.n_cls_out : hp.n_embd;
}

bool rank_pools_last(const HParams& hp) { return arch_traits(hp.arch).rank == RankHead::kLastSoftmax; }

Pooler::Pooler(PoolingType type, bool rank_last, int64_t n_embd, int64_t n_tokens)
    : n_tokens_(n_tokens), sum_(static_cast<size_t>(n_embd), 0.0) {
  if (type == PoolingType::kNone) throw std::invalid_argument("Pooler: no pooling type");
  if (n_tokens <= 0) throw std::invalid_argument("Pooler: an empty sequence has no embedding");
  const bool first = type == PoolingType::kCls || (type == PoolingType::kRank && !rank_last);
  want_pos_ = type == PoolingType::kMean ? -1 : first ? 0 : n_tokens - 1;
}

bool Pooler::wants(int64_t pos) const { return want_pos_ < 0 || pos == want_pos_; }

void Pooler::add(int64_t pos, const float* hidden) {
  if (!wants(pos)) return;
  for (size_t i = 0; i < sum_.size(); ++i) sum_[i] += hidden[i];
}

std::vector<float> Pooler::finish() const {
  const double div = want_pos_ < 0 ? static_cast<double>(n_tokens_) : 1.0;
  std::vector<float> x(sum_.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(sum_[i] / div);
  return x;
}

std::vector<float> classify(const Model& model, std::vector<float> x) {
  const HParams& hp = model.hparams();
  if (hp.n_cls_out == 0) return x;
  // h = tanh(cls @ x + cls_b)                       x (E,) -> (E,), or (n_cls_out,) with cls alone
  if (model.cls.data != nullptr) {
    std::vector<float> h(static_cast<size_t>(model.cls.rows));
    apply(model.cls, model.cls_b, x.data(), h.data());
    tanh_inplace(h.data(), static_cast<int64_t>(h.size()));
    x.swap(h);
  }
  if (model.cls_out.data == nullptr) return x;  // cls alone (jina-reranker)
  // score = cls_out @ h + cls_out_b                            (E,) -> (n_cls_out,)
  std::vector<float> out(static_cast<size_t>(hp.n_cls_out));
  apply(model.cls_out, model.cls_out_b, x.data(), out.data());
  if (rank_pools_last(hp)) softmax(out.data(), hp.n_cls_out);  // qwen3's yes/no head
  return out;
}

}  // namespace engine
