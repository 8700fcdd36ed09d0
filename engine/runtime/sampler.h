// Choosing the next token from a row of logits.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/runtime/sampling_rules.h"

namespace engine {

struct SamplingParams {
  float temperature = 1.0f;      // < kGreedyBelow: greedy (argmax after penalties and biases)
  int top_k = 0;                 // keep the k most likely tokens; 0 = all
  float top_p = 1.0f;            // keep the smallest set whose probability reaches top_p; 1 = all
  float min_p = 0.0f;            // drop tokens less likely than min_p * p(most likely); 0 = off
  float repeat_penalty = 1.0f;   // recent tokens: logit / r if positive, logit * r if negative
  float presence_penalty = 0.0f;   // recent tokens: logit -= presence
  float frequency_penalty = 0.0f;  // recent tokens: logit -= frequency * count
  int penalty_last_n = 64;       // the window of recent tokens the penalties look at; -1 = all
  std::vector<std::pair<int32_t, float>> logit_bias;  // (token, bias) added to the logit
  uint64_t seed = 0;
  bool logprobs = false;         // report the chosen token's log-probability ...
  int n_logprobs = 0;            // ... and this many most likely alternatives
};

// What a server samples with when a request sets nothing (llama-server's defaults): temperature
// 0.8, top_k 40, top_p 0.95, min_p 0.05. SamplingParams{} itself is plain sampling.
inline SamplingParams serve_sampling_defaults() {
  SamplingParams p;
  p.temperature = 0.8f;
  p.top_k = 40;
  p.top_p = 0.95f;
  p.min_p = 0.05f;
  return p;
}

// Which field of a SamplingParams breaks sampling_rules, and how ("top_p must be between 0 and 1,
// found 1.5"). `field` is the rule's name (sampling_rules::Range::name).
struct SamplingError {
  std::string field;
  std::string message;
};

// Checks every field against sampling_rules and logit_bias ids against [0, n_vocab). nullopt:
// valid. The Sampler's constructor, the HTTP request layer and the server's configuration all
// call this, so a value one accepts can never be refused by another.
std::optional<SamplingError> check_sampling(const SamplingParams& params, int64_t n_vocab);

struct TokenLogprob {
  int32_t id;
  float logprob;
};

struct Sampled {
  int32_t id;
  // With params.logprobs: log p(id) under the model (log-softmax of the raw logits, before
  // biases, penalties and truncation, as OpenAI reports them), and the n_logprobs most likely
  // tokens, best first. Otherwise 0 and empty.
  float logprob;
  std::vector<TokenLogprob> top;
};

// Log-probabilities never go below this (OpenAI's floor for "impossible"), so JSON never sees -inf.
inline constexpr float kMinLogprob = -9999.0f;

// log p(id) under softmax(logits) (n_vocab,), and the k most likely tokens, best first (ties: the
// lower id). What Sampled reports with logprobs on; also used to score prompt tokens.
Sampled logprobs_of(const float* logits, int64_t n_vocab, int32_t id, int k);

// The sampler of one sequence: a pipeline applied to each row of logits, in this order:
//   logit_bias -> repetition / presence / frequency penalties over the last penalty_last_n
//   accepted tokens -> (greedy: argmax) -> temperature -> top_k -> top_p -> min_p -> draw.
// Randomness comes from its own PRNG seeded with params.seed, so a sequence's tokens depend only
// on its seed and its logits, never on other sequences or on batching.
// Non-finite logits never reach the draw: NaN counts as -inf, +inf as the largest float, and a
// row with no finite candidate falls back to the lowest id.
// Errors: the constructor throws std::invalid_argument when check_sampling() fails.
// Ownership: owns its candidate buffer (n_vocab entries, allocated once) and history.
// Thread-safety: none; use one Sampler per sequence (different Samplers are independent).
class Sampler {
 public:
  Sampler(const SamplingParams& params, int64_t n_vocab);

  // Chooses a token from logits (n_vocab,) and accept()s it.
  Sampled sample(const float* logits);
  // Records a token for the penalties without sampling it (e.g. prompt tokens).
  void accept(int32_t token);
  const SamplingParams& params() const { return params_; }

 private:
  struct Candidate {
    int32_t id;
    float logit;
  };
  void apply_penalties();
  int32_t draw();
  uint64_t next_u64();
  double next_unit();  // uniform in [0, 1)

  SamplingParams params_;
  int64_t n_vocab_;
  uint64_t rng_[4];                // xoshiro256** state
  std::vector<Candidate> cand_;    // (n_vocab,) working set of one sample() call
  std::deque<int32_t> recent_;     // last penalty_last_n accepted tokens, oldest first
  std::vector<int32_t> counts_;    // (n_vocab,) occurrences of each token in recent_
};

}  // namespace engine
