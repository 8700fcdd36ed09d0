// Prompt-lookup drafting: the tokens that followed the last earlier occurrence of a sequence's tail.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace engine {

// An index of one sequence's n-grams (n = kMinN..kMaxN): for each, the position right after its
// most recent occurrence that has something after it. propose() looks up the sequence's own last
// n tokens, longest n first, and returns what followed them the last time: in code edits, RAG
// answers and JSON the model copies from its context, and such a copy is exactly what it will
// generate again. A continuation that runs into the sequence's end goes on with the proposal
// itself (a repeating loop is proposed whole).
//
// n from 4 down to 2: a 4-token match is nearly always the start of a copy, a 2-token one often
// is (a repeated identifier and its punctuation); a single token matches almost anywhere in a
// long context and proposes mostly rejected drafts, each costing a row of the batch.
//
// Cost: extend() hashes kMaxN - kMinN + 1 n-grams per new token (never the whole sequence again);
// propose() does one lookup per n and checks the match token by token, so a hash collision never
// proposes from the wrong place. Memory: the sequence's tokens once, plus a map entry per distinct
// n-gram.
// Ownership: plain value; owns its copy of the tokens. Thread-safety: none.
class NgramIndex {
 public:
  static constexpr int kMinN = 2;
  static constexpr int kMaxN = 4;

  // The sequence so far, which only ever grows: `tokens` must start with everything indexed
  // before (std::invalid_argument for a shorter one or another last indexed token; the rest is
  // not compared); what is new is indexed now.
  void extend(std::span<const int32_t> tokens);
  // Up to `k` tokens to follow the sequence; empty when its tail occurred nowhere before.
  std::vector<int32_t> propose(int k) const;
  size_t size() const { return tokens_.size(); }

 private:
  static uint64_t key(const int32_t* ngram, int n);
  // The position after the latest earlier occurrence of the last n tokens, or -1.
  int64_t find(int n) const;

  std::vector<int32_t> tokens_;
  // Per n (index n - kMinN): n-gram key -> the position of the token after its latest occurrence.
  std::unordered_map<uint64_t, int32_t> next_[kMaxN - kMinN + 1];
};

}  // namespace engine
