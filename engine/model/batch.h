// A batch of tokens for one forward pass.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/model/kv_cache.h"

namespace engine {

// Tokens to evaluate together, each with its sequence, its position in that sequence and whether
// its logits are wanted. A batch may mix a prompt's many positions (prefill) with single tokens of
// other sequences (decode). Plain data; no invariants beyond equal lengths, kept by add().
struct Batch {
  std::vector<int32_t> tokens;
  std::vector<SeqId> seq;
  std::vector<int32_t> pos;
  std::vector<uint8_t> logits;  // 1: compute this token's logits

  void add(int32_t token, SeqId s, int32_t p, bool want_logits) {
    tokens.push_back(token);
    seq.push_back(s);
    pos.push_back(p);
    logits.push_back(want_logits ? 1 : 0);
  }
  void clear() {
    tokens.clear();
    seq.clear();
    pos.clear();
    logits.clear();
  }
  int64_t size() const { return static_cast<int64_t>(tokens.size()); }
  int64_t n_outputs() const {
    int64_t n = 0;
    for (uint8_t l : logits) n += l;
    return n;
  }
};

}  // namespace engine
