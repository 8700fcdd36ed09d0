#include "engine/runtime/sampler.h"

#include <algorithm>
#include <cassert>
#include <cfloat>
#include <cmath>
#include <cstdio>
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

std::string format_number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

// The error for `x` outside `r`, or nullopt.
std::optional<SamplingError> out_of_range(const sampling_rules::Range& r, double x) {
  if (sampling_rules::contains(r, x)) return std::nullopt;  // false for NaN
  return SamplingError{std::string(r.name), std::string(r.name) + " must be between " + format_number(r.min) +
                                                " and " + format_number(r.max) + ", found " + format_number(x)};
}

// The largest finite float for +inf, -inf for NaN: what the draw may safely see.
float finite_or_floor(float x) {
  if (x != x) return -INFINITY;
  return x == INFINITY ? FLT_MAX : x;
}

}  // namespace

std::optional<SamplingError> check_sampling(const SamplingParams& p, int64_t n_vocab) {
  namespace r = sampling_rules;
  const std::pair<const r::Range*, double> fields[] = {
      {&r::kTemperature, p.temperature},
      {&r::kTopP, p.top_p},
      {&r::kTopK, p.top_k},
      {&r::kMinP, p.min_p},
      {&r::kRepeatPenalty, p.repeat_penalty},
      {&r::kPresencePenalty, p.presence_penalty},
      {&r::kFrequencyPenalty, p.frequency_penalty},
      {&r::kPenaltyLastN, p.penalty_last_n},
      {&r::kLogprobs, p.n_logprobs},
  };
  for (const auto& [range, value] : fields) {
    if (auto e = out_of_range(*range, value)) return e;
  }
  for (const auto& [id, bias] : p.logit_bias) {
    if (id < 0 || id >= n_vocab) {
      return SamplingError{"logit_bias", "logit_bias names token " + std::to_string(id) +
                                             ", outside the vocabulary [0, " + std::to_string(n_vocab) + ")"};
    }
    // -inf is how a ban (-100) is stored; anything else must be a finite bias within the range.
    if (bias != -INFINITY) {
      if (auto e = out_of_range(r::kLogitBias, bias)) return e;
    }
  }
  if (n_vocab <= 0) return SamplingError{"n_vocab", "the vocabulary is empty"};
  return std::nullopt;
}

Sampler::Sampler(const SamplingParams& params, int64_t n_vocab)
    : params_(params), n_vocab_(n_vocab) {
  if (auto e = check_sampling(params, n_vocab)) throw std::invalid_argument("sampling: " + e->message);
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
  bool any_finite = false;
  for (Candidate& c : cand_) {
    c.logit = finite_or_floor(c.logit);
    any_finite |= c.logit != -INFINITY;
  }

  int32_t id;
  if (!any_finite) {
    id = 0;  // every token banned or NaN: nothing to weigh; the lowest id, deterministically
  } else if (params_.temperature < sampling_rules::kGreedyBelow) {
    id = std::max_element(cand_.begin(), cand_.end(), [](const Candidate& a, const Candidate& b) {
           return a.logit < b.logit;
         })->id;
  } else {
    id = draw();
  }
  Sampled out{id, 0.0f, {}};
  if (params_.logprobs) out = logprobs_of(logits, n_vocab_, id, params_.n_logprobs);
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
  assert(std::isfinite(total) && total >= 1.0);  // the best candidate weighs exactly 1
  double r = next_unit() * total;
  for (size_t i = 0; i < n; ++i) {
    r -= weight(cand_[i]);
    if (r < 0.0) return cand_[i].id;
  }
  return cand_[n - 1].id;  // rounding left r >= 0 after the last candidate
}

Sampled logprobs_of(const float* logits, int64_t n_vocab, int32_t id, int k) {
  float max = -INFINITY;
  for (int64_t i = 0; i < n_vocab; ++i) max = std::max(max, finite_or_floor(logits[i]));
  double sum = 0.0;
  if (max != -INFINITY) {
    for (int64_t i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(finite_or_floor(logits[i]) - max));
  }
  // log p = logit - lse, floored at kMinLogprob (also for the -inf of a row with no finite logit).
  const double lse = static_cast<double>(max) + std::log(sum);
  auto logprob = [&](int32_t t) {
    const double lp = static_cast<double>(finite_or_floor(logits[t])) - lse;
    return lp == lp ? static_cast<float>(std::max(lp, static_cast<double>(kMinLogprob))) : kMinLogprob;
  };
  Sampled out{id, logprob(id), {}};
  // The k best ids, best first (ties: lower id), by insertion into a sorted list of at most k.
  const size_t n_top = std::min(static_cast<size_t>(std::max(k, 0)), static_cast<size_t>(n_vocab));
  std::vector<std::pair<float, int32_t>> best;
  best.reserve(n_top + 1);
  for (int64_t i = 0; i < n_vocab && n_top > 0; ++i) {
    const float l = finite_or_floor(logits[i]);
    if (best.size() == n_top && !(l > best.back().first)) continue;
    auto pos = std::find_if(best.begin(), best.end(), [l](const auto& e) { return l > e.first; });
    best.insert(pos, {l, static_cast<int32_t>(i)});
    if (best.size() > n_top) best.pop_back();
  }
  out.top.reserve(best.size());
  for (const auto& e : best) out.top.push_back({e.second, logprob(e.second)});
  return out;
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
