// Helpers of the runtime tests that drive a ModelEvaluator on a real model directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/model/batch.h"
#include "engine/runtime/evaluator.h"

namespace engine::test {

// n tokens after BOS (id 1), spread over the vocabulary; `salt` gives another sequence.
inline std::vector<int32_t> spread_tokens(size_t n, int64_t n_vocab, int32_t salt = 0) {
  std::vector<int32_t> t(n);
  for (size_t i = 0; i < n; ++i) {
    t[i] = static_cast<int32_t>((i * 7919 + 13 + static_cast<size_t>(salt) * 101) % static_cast<size_t>(n_vocab - 3)) + 3;
  }
  t[0] = 1;
  return t;
}

// Evaluates tokens [from, size) of `t` as sequence seq in one batch; returns the logits of every one of them.
inline std::vector<float> eval_tokens(ModelEvaluator& ev, SeqId seq, const std::vector<int32_t>& t, size_t from) {
  Batch b;
  for (size_t i = from; i < t.size(); ++i) b.add(t[i], seq, static_cast<int32_t>(i), true);
  ev.eval(b);
  std::vector<float> out;
  for (int64_t i = 0; i < b.size(); ++i) out.insert(out.end(), ev.logits(i), ev.logits(i) + ev.n_vocab());
  return out;
}

}  // namespace engine::test
