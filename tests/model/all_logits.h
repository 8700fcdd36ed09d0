// The model tests' way to run a model: one sequence's tokens as a single batch.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/kernels/thread_pool.h"
#include "engine/model/forward.h"
#include "engine/model/model.h"

namespace engine::test {

// Every position's logits (tokens, n_vocab) of one sequence run as a single batch.
inline std::vector<float> all_logits(const Model& m, const std::vector<int32_t>& tokens) {
  ThreadPool pool(1);
  Forward fwd(m, static_cast<int64_t>(tokens.size()));
  KvCache cache(m.hparams(), static_cast<int64_t>(tokens.size()));
  Batch b;
  for (size_t i = 0; i < tokens.size(); ++i) b.add(tokens[i], 0, static_cast<int32_t>(i), true);
  fwd.eval(b, cache, pool);
  return {fwd.logits(0), fwd.logits(0) + b.size() * m.hparams().n_vocab};
}

}  // namespace engine::test
