// A batch of tokens for one forward pass.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "engine/model/kv_cache.h"

namespace engine {

// Tokens to evaluate together, each with its sequence, its position in that sequence and whether
// its logits and/or its final hidden state (embeddings) are wanted. A batch may mix a prompt's many positions (prefill) with single tokens of
// other sequences (decode). Plain data; no invariants beyond equal lengths, kept by add().
struct Batch {
  std::vector<int32_t> tokens;
  std::vector<SeqId> seq;
  std::vector<int32_t> pos;
  std::vector<uint8_t> logits;  // 1: compute this token's logits
  std::vector<uint8_t> hidden;  // 1: keep this token's final hidden state (after the output norm)
  // Rows that are not tokens (an image's, from engine/vision): per entry null for a token, else
  // n_embd floats that stand in for its embedding (unscaled; the caller keeps them alive through
  // eval). Empty when the batch has none; `tokens` then holds 0 at those entries.
  std::vector<const float*> embd;
  // Per entry the last position it attends to when that is past its own (an image's tokens that
  // see each other both ways: the image's last position); empty when every entry is causal.
  std::vector<int32_t> see;
  // Per entry its M-RoPE positions (temporal, height, width, extra) when some entry's are not
  // (pos, pos, pos, pos) as a text token's: a qwen-vl image's tokens and the text after one (set_mrope); empty when
  // every entry's are.
  std::vector<std::array<int32_t, 4>> mrope;

  void add(int32_t token, SeqId s, int32_t p, bool want_logits, bool want_hidden = false) {
    tokens.push_back(token);
    seq.push_back(s);
    pos.push_back(p);
    logits.push_back(want_logits ? 1 : 0);
    hidden.push_back(want_hidden ? 1 : 0);
    if (!embd.empty()) {
      embd.push_back(nullptr);
      see.push_back(p);
    }
    if (!mrope.empty()) mrope.push_back({p, p, p, p});
  }
  // An embedding row in place of a token, seeing up to position see_to (>= p).
  void add_row(const float* row, SeqId s, int32_t p, int32_t see_to, bool want_logits) {
    if (embd.empty()) {  // the entries so far are tokens, each seeing up to itself
      embd.assign(tokens.size(), nullptr);
      see = pos;
    }
    tokens.push_back(0);
    seq.push_back(s);
    pos.push_back(p);
    logits.push_back(want_logits ? 1 : 0);
    hidden.push_back(0);
    embd.push_back(row);
    see.push_back(see_to);
    if (!mrope.empty()) mrope.push_back({p, p, p, p});
  }
  // Entry i's M-RoPE positions.
  void set_mrope(int64_t i, const std::array<int32_t, 4>& p) {
    if (mrope.empty()) {
      mrope.reserve(pos.capacity());
      for (int32_t q : pos) mrope.push_back({q, q, q, q});
    }
    mrope[static_cast<size_t>(i)] = p;
  }
  const float* row(int64_t i) const { return static_cast<size_t>(i) < embd.size() ? embd[static_cast<size_t>(i)] : nullptr; }
  void clear() {
    embd.clear();
    see.clear();
    mrope.clear();
    tokens.clear();
    seq.clear();
    pos.clear();
    logits.clear();
    hidden.clear();
  }
  int64_t size() const { return static_cast<int64_t>(tokens.size()); }
  int64_t n_outputs() const {
    int64_t n = 0;
    for (uint8_t l : logits) n += l;
    return n;
  }
  int64_t n_hidden() const {
    int64_t n = 0;
    for (uint8_t h : hidden) n += h;
    return n;
  }
  // The hidden flag of token i (batches built without it have none).
  bool wants_hidden(int64_t i) const { return static_cast<size_t>(i) < hidden.size() && hidden[static_cast<size_t>(i)]; }
};

}  // namespace engine
