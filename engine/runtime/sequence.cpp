// A request's state while a slot serves it. See sequence.h.
#include "engine/runtime/sequence.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string_view>

#include "engine/text/tokenizer/tokenizer.h"

namespace engine {

Sequence::Sequence(GenerationRequest&& r, const Tokenizer& tok, size_t cached)
    : req(std::move(r)),
      sampler(req.sampling, tok.n_vocab()),
      decoder(tok, StreamDecoder::Options{false, false, req.shown_tokens}),
      stop(req.stop) {
  const size_t window = req.sampling.penalty_last_n < 0
                            ? req.prompt.size()
                            : std::min<size_t>(req.sampling.penalty_last_n, req.prompt.size());
  for (size_t i = req.prompt.size() - window; i < req.prompt.size(); ++i) {
    if (req.prompt[i] < tok.n_vocab()) sampler.accept(req.prompt[i]);  // (not an image's positions)
  }
  usage.prompt_tokens = static_cast<int64_t>(req.prompt.size());
  usage.cached_tokens = static_cast<int64_t>(cached);
  if (req.grammar) {
    if (req.grammar_triggers.empty()) constraint.emplace(req.grammar);
    masked.resize(static_cast<size_t>(tok.n_vocab()));
  }
}

void Sequence::watch_triggers(int32_t id, const Tokenizer& tok) {
  if (!req.grammar || constraint || req.grammar_triggers.empty() || lazy_done) return;
  const bool shown = std::binary_search(req.shown_tokens.begin(), req.shown_tokens.end(), id);
  lazy_text.append(tok.piece(id, shown));
  size_t best = std::string::npos, longest = 0;
  for (const std::string& t : req.grammar_triggers) {
    best = std::min(best, lazy_text.find(t));
    longest = std::max(longest, t.size());
  }
  if (best == std::string::npos) {
    if (lazy_text.size() >= longest) lazy_text.erase(0, lazy_text.size() - (longest - 1));
    return;
  }
  lazy_done = true;
  constraint.emplace(req.grammar);
  if (!constraint->accept_text(std::string_view(lazy_text).substr(best))) constraint.reset();
  lazy_text.clear();
}

const float* Sequence::constrain(const float* logits) {
  if (!constraint) return logits;
  const grammar::TokenBits& allowed = constraint->allowed();
  bool any = false;
  for (size_t w = 0; w < allowed.size(); ++w) {
    const uint64_t bits = allowed[w];
    any |= bits != 0;
    const size_t begin = w * 64, end = std::min(masked.size(), begin + 64);
    if (bits == ~uint64_t{0} && end == begin + 64) {  // all 64 allowed (inside a string: most words)
      std::copy(logits + begin, logits + end, masked.begin() + static_cast<std::ptrdiff_t>(begin));
      continue;
    }
    std::fill(masked.begin() + static_cast<std::ptrdiff_t>(begin), masked.begin() + static_cast<std::ptrdiff_t>(end), -INFINITY);
    for (uint64_t x = bits; x != 0; x &= x - 1) {
      const size_t i = begin + static_cast<size_t>(__builtin_ctzll(x));
      if (i < end) masked[i] = logits[i];
    }
  }
  if (!any) throw std::runtime_error("the grammar allows no token here (the model's vocabulary cannot continue it)");
  return masked.data();
}

}  // namespace engine
