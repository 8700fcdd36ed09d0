// N-gram index of one sequence for prompt-lookup drafting. See ngram_index.h.
#include "engine/runtime/ngram_index.h"

#include <algorithm>
#include <stdexcept>

namespace engine {

uint64_t NgramIndex::key(const int32_t* ngram, int n) {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < n; ++i) {
    h ^= static_cast<uint32_t>(ngram[i]);
    h *= 0xbf58476d1ce4e5b9ull;  // a multiply per token: mixes enough for a map key
    h ^= h >> 31;
  }
  return h;
}

void NgramIndex::extend(std::span<const int32_t> tokens) {
  // (only the last indexed token is checked: comparing everything would rescan the context)
  if (tokens.size() < tokens_.size() || (!tokens_.empty() && tokens[tokens_.size() - 1] != tokens_.back())) {
    throw std::invalid_argument("NgramIndex::extend: the sequence does not continue the indexed one");
  }
  for (size_t i = tokens_.size(); i < tokens.size(); ++i) {
    tokens_.push_back(tokens[i]);
    // Token i now follows each n-gram ending at i - 1.
    for (int n = kMinN; n <= kMaxN && static_cast<size_t>(n) <= i; ++n) {
      next_[n - kMinN][key(tokens_.data() + i - n, n)] = static_cast<int32_t>(i);
    }
  }
}

int64_t NgramIndex::find(int n) const {
  const int64_t len = static_cast<int64_t>(tokens_.size());
  if (len < n + 1) return -1;  // the tail and an earlier occurrence overlap at most in n - 1 tokens
  const int32_t* tail = tokens_.data() + (len - n);
  const auto& map = next_[n - kMinN];
  const auto it = map.find(key(tail, n));
  if (it == map.end()) return -1;
  const int64_t p = it->second;  // < len: the tail itself has nothing after it yet
  return std::equal(tail, tail + n, tokens_.data() + (p - n)) ? p : -1;
}

std::vector<int32_t> NgramIndex::propose(int k) const {
  std::vector<int32_t> draft;
  if (k <= 0) return draft;
  for (int n = kMaxN; n >= kMinN; --n) {
    const int64_t p = find(n);
    if (p < 0) continue;
    const int64_t len = static_cast<int64_t>(tokens_.size());
    draft.reserve(static_cast<size_t>(k));
    for (int64_t i = p; static_cast<int64_t>(draft.size()) < k; ++i) {
      // Past the sequence's end the copy continues from the proposal: p < len, so i - len < size.
      draft.push_back(i < len ? tokens_[static_cast<size_t>(i)] : draft[static_cast<size_t>(i - len)]);
    }
    break;
  }
  return draft;
}

}  // namespace engine
