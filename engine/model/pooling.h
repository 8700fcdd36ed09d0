// Pooling: a sequence's final hidden states -> one vector (an embedding, or a reranker's score).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/model/model.h"

namespace engine {

// Accumulates one sequence's hidden states, fed in position order across any number of forward
// passes, and pools them: mean: their mean; cls: position 0's; last: the last position's; rank:
// position 0's, or the last's when rank_last (qwen3: rank_pools_last), for classify().
// Thread-safety: none (one per sequence). Plain value.
class Pooler {
 public:
  // n_tokens: the sequence's length (> 0); `type` is not kNone.
  Pooler(PoolingType type, bool rank_last, int64_t n_embd, int64_t n_tokens);

  // Whether the hidden state at `pos` is needed.
  bool wants(int64_t pos) const;
  // Adds the hidden state (n_embd,) at `pos` (ignored unless wants(pos)).
  void add(int64_t pos, const float* hidden);
  // The pooled hidden state (n_embd,), not normalized.
  std::vector<float> finish() const;

 private:
  int64_t n_tokens_;
  int64_t want_pos_;         // the one position cls/last/rank use (-1: mean uses all)
  std::vector<double> sum_;  // (n_embd,) the mean's sum, or the position's state
};

// Whether rank pooling reads the model's last token rather than its first (ArchTraits::rank:
// qwen3, as llama.cpp pools Qwen3-Reranker).
bool rank_pools_last(const HParams& hp);

// Rank pooling's last step, as llama.cpp's build_pooling: the pooled state (n_embd,) through the
// model's classification head, score = cls_out @ tanh(cls @ x + cls_b) + cls_out_b (bert),
// tanh(cls @ x + cls_b) (a head of cls alone: jina-reranker), or softmax(cls_out @ x) (qwen3: its
// yes/no head, so score 0 is P(yes)). (n_cls_out,); x itself when the model has no head.
std::vector<float> classify(const Model& model, std::vector<float> x);

// Width of a pooled output: n_cls_out for rank pooling with a head, else n_embd.
int64_t pooled_size(const HParams& hp, PoolingType type);

}  // namespace engine
