#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace engine {

namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void check(bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(std::string("sampling: ") + what);
}

}  // namespace

Sampler::Sampler(const SamplingParams& params, int64_t n_vocab)
    : params_(params), n_vocab_(n_vocab) {
  check(n_vocab > 0, "empty vocabulary");
  check(std::isfinite(params.temperature), "temperature must be a finite number");
  check(params.top_k >= 0, "top_k must be >= 0");
  check(params.top_p > 0.0f && params.top_p <= 1.0f, "top_p must be in (0, 1]");
  check(params.min_p >= 0.0f && params.min_p <= 1.0f, "min_p must be in [0, 1]");
  check(params.repeat_penalty > 0.0f, "repeat_penalty must be > 0");
  check(params.penalty_last_n >= -1, "penalty_last_n must be >= -1");
  check(params.n_logprobs >= 0, "n_logprobs must be >= 0");
  for (const auto& [id, bias] : params.logit_bias) {
    check(id >= 0 && id < n_vocab, "logit_bias names a token outside the vocabulary");
    (void)bias;
  }
  uint64_t s = params.seed;
  for (uint64_t& r : rng_) r = splitmix64(s);
  cand_.resize(static_cast<size_t>(n_vocab));
  counts_.assign(static_cast<size_t>(n_vocab), 0);
}

void Sampler::accept(int32_t token) {
  if (token < 0 || token >= n_vocab_ || params_.penalty_last_n == 0) return;
  recent_.push_back(token);
  ++counts_[static_cast<size_t>(token)];
  if (params_.penalty_last_n > 0 && recent_.size() > static_cast<size_t>(params_.penalty_last_n)) {
    --counts_[static_cast<size_t>(recent_.front())];
    recent_.pop_front();
  }
}

Sampled Sampler::sample(const float* logits) {
  for (int64_t i = 0; i < n_vocab_; ++i) {
    cand_[static_cast<size_t>(i)] = {static_cast<int32_t>(i), logits[i]};
  }
  for (const auto& [id, bias] : params_.logit_bias) cand_[static_cast<size_t>(id)].logit += bias;
  apply_penalties();

  int32_t id;
  if (params_.temperature <= 0.0f) {
    id = std::max_element(cand_.begin(), cand_.end(), [](const Candidate& a, const Candidate& b) {
           return a.logit < b.logit;
         })->id;
  } else {
    id = draw();
  }
  Sampled out{id, 0.0f, {}};
  if (params_.logprobs) fill_logprobs(logits, id, out);
  accept(id);
  return out;
}

void Sampler::apply_penalties() {
  const SamplingParams& p = params_;
  if (p.repeat_penalty == 1.0f && p.presence_penalty == 0.0f && p.frequency_penalty == 0.0f) return;
  // Each distinct recent token once: mark it done by negating its count, then restore.
  for (int32_t t : recent_) {
    int32_t& c = counts_[static_cast<size_t>(t)];
    if (c <= 0) continue;
    float& l = cand_[static_cast<size_t>(t)].logit;
    l = l <= 0.0f ? l * p.repeat_penalty : l / p.repeat_penalty;
    l -= static_cast<float>(c) * p.frequency_penalty + p.presence_penalty;
    c = -c;
  }
  for (int32_t t : recent_) counts_[static_cast<size_t>(t)] = std::abs(counts_[static_cast<size_t>(t)]);
}

// temperature -> top_k -> top_p -> min_p -> draw, over cand_ (all n_vocab candidates).
int32_t Sampler::draw() {
  const auto by_logit = [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  auto first = cand_.begin();
  size_t n = cand_.size();
  bool sorted = false;  // whether cand_[0, n) is ordered best first
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < n) {
    n = static_cast<size_t>(params_.top_k);
    std::partial_sort(first, first + static_cast<std::ptrdiff_t>(n), cand_.end(), by_logit);
    sorted = true;
  }
  // weight(c) = exp((logit - max) / T), proportional to the tempered probability
  const float inv_t = 1.0f / params_.temperature;
  float max = -INFINITY;
  for (size_t i = 0; i < n; ++i) max = std::max(max, cand_[i].logit);
  auto weight = [&](const Candidate& c) { return std::exp((c.logit - max) * inv_t); };

  if (params_.top_p < 1.0f) {
    double total = 0.0;
    for (size_t i = 0; i < n; ++i) total += weight(cand_[i]);
    // Sort only as much as needed: grow the sorted prefix until it holds top_p of the mass.
    size_t k = sorted ? n : std::min<size_t>(n, 64);
    for (;;) {
      if (!sorted) {
        std::partial_sort(first, first + static_cast<std::ptrdiff_t>(k),
                          first + static_cast<std::ptrdiff_t>(n), by_logit);
      }
      double cum = 0.0;
      size_t m = 0;
      while (m < k && cum < params_.top_p * total) cum += weight(cand_[m++]);
      if (cum >= params_.top_p * total || k == n) {
        n = std::max<size_t>(m, 1);
        break;
      }
      k = std::min(n, k * 8);
    }
    sorted = true;
  }
  if (params_.min_p > 0.0f) {  // p / p_max = weight
    const auto keep = [&](const Candidate& c) { return weight(c) >= params_.min_p; };
    n = static_cast<size_t>(std::partition(first, first + static_cast<std::ptrdiff_t>(n), keep) - first);
    n = std::max<size_t>(n, 1);  // the best candidate always passes (weight 1)
  }
  double total = 0.0;
  for (size_t i = 0; i < n; ++i) total += weight(cand_[i]);
  double r = next_unit() * total;
  for (size_t i = 0; i < n; ++i) {
    r -= weight(cand_[i]);
    if (r < 0.0) return cand_[i].id;
  }
  return cand_[n - 1].id;  // rounding left r >= 0 after the last candidate
}

void Sampler::fill_logprobs(const float* logits, int32_t id, Sampled& out) {
  float max = -INFINITY;
  for (int64_t i = 0; i < n_vocab_; ++i) max = std::max(max, logits[i]);
  double sum = 0.0;
  for (int64_t i = 0; i < n_vocab_; ++i) sum += std::exp(static_cast<double>(logits[i] - max));
  const float lse = max + static_cast<float>(std::log(sum));
  out.logprob = logits[id] - lse;
  const size_t k = std::min(static_cast<size_t>(params_.n_logprobs), static_cast<size_t>(n_vocab_));
  if (k == 0) return;
  for (int64_t i = 0; i < n_vocab_; ++i) {
    cand_[static_cast<size_t>(i)] = {static_cast<int32_t>(i), logits[i]};
  }
  std::partial_sort(cand_.begin(), cand_.begin() + static_cast<std::ptrdiff_t>(k), cand_.end(),
                    [](const Candidate& a, const Candidate& b) {
                      return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
                    });
  out.top.reserve(k);
  for (size_t i = 0; i < k; ++i) out.top.push_back({cand_[i].id, cand_[i].logit - lse});
}

uint64_t Sampler::next_u64() {  // xoshiro256**
  const uint64_t result = rotl(rng_[1] * 5, 7) * 9;
  const uint64_t t = rng_[1] << 17;
  rng_[2] ^= rng_[0];
  rng_[3] ^= rng_[1];
  rng_[1] ^= rng_[2];
  rng_[0] ^= rng_[3];
  rng_[2] ^= t;
  rng_[3] = rotl(rng_[3], 45);
  return result;
}

double Sampler::next_unit() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

}  // namespace engine
