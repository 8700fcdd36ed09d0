// Pooling: a sequence's final hidden states -> one vector (an embedding, or a reranker's score).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/model/model.h"

namespace engine {

// Accumulates one sequence's hidden states, fed in position order across any number of forward
// passes, and makes its pooled output.
// mean: their mean; cls: position 0's; last: the last position's; rank: position 0's (encoders) or
// the last's (decoders) through the model's classification head (softmax over its outputs for
// decoders, as Qwen3-Reranker's yes/no head is used).
// Ownership: borrows the Model. Thread-safety: none (one per sequence).
class Pooler {
 public:
  // n_tokens: the sequence's length. `type` is not kNone.
  Pooler(const Model& model, PoolingType type, int64_t n_tokens);

  // Whether the hidden state at `pos` is needed.
  bool wants(int64_t pos) const;
  // Adds the hidden state (n_embd,) at `pos` (one wants() says yes to).
  void add(int64_t pos, const float* hidden);
  // The pooled output: (n_embd,), or (n_cls_out,) for rank pooling with a head. Not normalized.
  std::vector<float> finish() const;

 private:
  const Model& model_;
  PoolingType type_;
  int64_t n_tokens_;
  int64_t want_pos_;       // the one position cls/last/rank use (-1: mean uses all)
  std::vector<double> sum_;  // (n_embd,) the mean's sum, or the position's state
};

// Width of a pooled output: n_cls_out for rank pooling with a head, else n_embd.
int64_t pooled_size(const HParams& hp, PoolingType type);

}  // namespace engine
