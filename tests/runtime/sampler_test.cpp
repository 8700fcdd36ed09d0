#include <algorithm>
// Sampler: each stage of the pipeline, determinism by seed, log-probabilities, and speed.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <random>
#include <vector>

#include "engine/runtime/sampler.h"

namespace engine {
namespace {

std::vector<float> random_logits(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, 3.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(gen);
  return v;
}

// How often each token is drawn in `n` samples from the same logits.
std::vector<int> histogram(const SamplingParams& p, const std::vector<float>& logits, int n) {
  Sampler s(p, static_cast<int64_t>(logits.size()));
  std::vector<int> h(logits.size(), 0);
  for (int i = 0; i < n; ++i) ++h[static_cast<size_t>(s.sample(logits.data()).id)];
  return h;
}

TEST(Sampler, GreedyTakesTheArgmax) {
  const std::vector<float> logits = {0.1f, 2.0f, -1.0f, 1.9f};
  Sampler s(SamplingParams{.temperature = 0.0f}, 4);
  EXPECT_EQ(s.sample(logits.data()).id, 1);
}

TEST(Sampler, LogitBiasShiftsTheChoice) {
  const std::vector<float> logits = {0.1f, 2.0f, -1.0f, 1.9f};
  Sampler s(SamplingParams{.temperature = 0.0f, .logit_bias = {{2, 5.0f}}}, 4);
  EXPECT_EQ(s.sample(logits.data()).id, 2);
  EXPECT_THROW(Sampler(SamplingParams{.logit_bias = {{4, 1.0f}}}, 4), std::invalid_argument);
}

TEST(Sampler, TemperatureOneFollowsTheSoftmax) {
  const std::vector<float> logits = {0.0f, std::log(3.0f)};  // p = 0.25, 0.75
  const std::vector<int> h = histogram(SamplingParams{.seed = 1}, logits, 20000);
  EXPECT_NEAR(h[1] / 20000.0, 0.75, 0.015);
}

TEST(Sampler, TopKTopPMinPTruncate) {
  // p ~ 0.6, 0.3, 0.07, 0.03
  const std::vector<float> logits = {std::log(0.6f), std::log(0.3f), std::log(0.07f), std::log(0.03f)};
  auto h = histogram(SamplingParams{.top_k = 2, .seed = 3}, logits, 4000);
  EXPECT_EQ(h[2] + h[3], 0);
  EXPECT_NEAR(h[0] / 4000.0, 2.0 / 3.0, 0.03);
  h = histogram(SamplingParams{.top_p = 0.5f, .seed = 3}, logits, 1000);
  EXPECT_EQ(h[0], 1000);
  h = histogram(SamplingParams{.top_p = 0.85f, .seed = 3}, logits, 4000);
  EXPECT_EQ(h[2] + h[3], 0);
  EXPECT_GT(h[1], 0);
  h = histogram(SamplingParams{.min_p = 0.1f, .seed = 3}, logits, 4000);  // keeps p >= 0.06
  EXPECT_EQ(h[3], 0);
  EXPECT_GT(h[2], 0);
}

TEST(Sampler, SameSeedSameTokensDifferentSeedDifferentTokens) {
  const std::vector<float> logits = random_logits(1000, 7);
  auto run = [&](uint64_t seed) {
    Sampler s(SamplingParams{.temperature = 1.5f, .seed = seed}, 1000);
    std::vector<int32_t> out;
    for (int i = 0; i < 50; ++i) out.push_back(s.sample(logits.data()).id);
    return out;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
}

TEST(Sampler, RepetitionPresenceFrequencyPenalties) {
  const std::vector<float> logits = {2.0f, 1.9f, -1.0f};
  Sampler rep(SamplingParams{.temperature = 0.0f, .repeat_penalty = 1.1f}, 3);
  rep.accept(0);  // 2.0 / 1.1 < 1.9
  EXPECT_EQ(rep.sample(logits.data()).id, 1);

  Sampler presence(SamplingParams{.temperature = 0.0f, .presence_penalty = 0.2f}, 3);
  presence.accept(0);
  presence.accept(0);
  EXPECT_EQ(presence.sample(logits.data()).id, 1);

  Sampler freq(SamplingParams{.temperature = 0.0f, .frequency_penalty = 0.06f}, 3);
  freq.accept(0);
  EXPECT_EQ(freq.sample(logits.data()).id, 0) << "one occurrence: 2.0 - 0.06 > 1.9";
  freq.accept(1);
  freq.accept(0);  // with the sample above: token 0 three times, token 1 once
  EXPECT_EQ(freq.sample(logits.data()).id, 1) << "2.0 - 3 * 0.06 = 1.82 < 1.9 - 0.06 = 1.84";
}

TEST(Sampler, PenaltyWindowForgetsOldTokens) {
  const std::vector<float> logits = {2.0f, 1.9f, -1.0f};
  Sampler s(SamplingParams{.temperature = 0.0f, .repeat_penalty = 2.0f, .penalty_last_n = 2}, 3);
  s.accept(0);
  s.accept(2);
  s.accept(2);  // token 0 has left the window
  EXPECT_EQ(s.sample(logits.data()).id, 0);
}

TEST(Sampler, LogprobsOfChosenTokenAndAlternatives) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 0.0f};
  Sampler s(SamplingParams{.temperature = 0.0f, .logprobs = true, .n_logprobs = 3}, 4);
  const Sampled r = s.sample(logits.data());
  double z = 0;
  for (float l : logits) z += std::exp(l);
  EXPECT_EQ(r.id, 1);
  EXPECT_NEAR(r.logprob, 3.0 - std::log(z), 1e-5);
  ASSERT_EQ(r.top.size(), 3u);
  EXPECT_EQ(r.top[0].id, 1);
  EXPECT_EQ(r.top[1].id, 2);
  EXPECT_EQ(r.top[2].id, 0);
  EXPECT_NEAR(r.top[1].logprob, 2.0 - std::log(z), 1e-5);
}

TEST(Sampler, RejectsBadParameters) {
  EXPECT_THROW(Sampler(SamplingParams{.top_p = -0.1f}, 4), std::invalid_argument);
  EXPECT_THROW(Sampler(SamplingParams{.top_p = NAN}, 4), std::invalid_argument);
  EXPECT_THROW(Sampler(SamplingParams{.temperature = INFINITY}, 4), std::invalid_argument);
  EXPECT_THROW(Sampler(SamplingParams{.min_p = 1.5f}, 4), std::invalid_argument);
  EXPECT_THROW(Sampler(SamplingParams{.top_k = -1}, 4), std::invalid_argument);
  EXPECT_THROW(Sampler(SamplingParams{.repeat_penalty = 0.0f}, 4), std::invalid_argument);
}

// The one set of rules (sampling_rules.h) names the field that breaks it.
TEST(Sampler, CheckSamplingNamesTheField) {
  EXPECT_FALSE(check_sampling(SamplingParams{}, 4));
  EXPECT_FALSE(check_sampling(SamplingParams{.top_p = 0.0f}, 4)) << "top_p 0: the most likely token only";
  const auto e = check_sampling(SamplingParams{.top_p = 1.5f}, 4);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->field, "top_p");
  EXPECT_EQ(e->message, "top_p must be between 0 and 1, found 1.5");
  EXPECT_EQ(check_sampling(SamplingParams{.temperature = 2.5f}, 4)->field, "temperature");
  EXPECT_EQ(check_sampling(SamplingParams{.penalty_last_n = -2}, 4)->field, "penalty_last_n");
  EXPECT_EQ(check_sampling(SamplingParams{.logit_bias = {{1, 150.0f}}}, 4)->field, "logit_bias");
  EXPECT_FALSE(check_sampling(SamplingParams{.logit_bias = {{1, -INFINITY}}}, 4)) << "a ban";
  EXPECT_EQ(check_sampling(SamplingParams{.n_logprobs = 21}, 4)->field, "n_logprobs");
}

// top_p 0 (and 1e-50) used to throw on the scheduler thread and abort the server.
TEST(Sampler, TopPZeroKeepsTheMostLikelyToken) {
  const std::vector<float> logits = {0.1f, 2.0f, -1.0f, 1.9f};
  for (float top_p : {0.0f, 1e-30f}) {
    const std::vector<int> h = histogram(SamplingParams{.top_p = top_p, .seed = 9}, logits, 500);
    EXPECT_EQ(h[1], 500) << top_p;
  }
}

// 1/T overflowed for T = 1e-40: every weight NaN and always the last id. Tiny T is greedy.
TEST(Sampler, TinyTemperatureIsGreedy) {
  const std::vector<float> logits = {0.1f, 2.0f, -1.0f, 1.9f};
  for (float t : {1e-40f, 1e-30f, 1e-6f}) {
    Sampler s(SamplingParams{.temperature = t, .seed = 4}, 4);
    for (int i = 0; i < 20; ++i) EXPECT_EQ(s.sample(logits.data()).id, 1) << t;
  }
}

// NaN and infinite logits (a broken model) never reach the draw as NaN weights.
TEST(Sampler, NonFiniteLogitsAreTamed) {
  const std::vector<float> nan_row = {NAN, 1.0f, NAN, 0.5f};
  Sampler s(SamplingParams{.temperature = 1.0f, .seed = 2, .logprobs = true, .n_logprobs = 2}, 4);
  for (int i = 0; i < 50; ++i) {
    const Sampled r = s.sample(nan_row.data());
    EXPECT_TRUE(r.id == 1 || r.id == 3) << r.id;
    EXPECT_TRUE(std::isfinite(r.logprob));
  }
  const std::vector<float> inf_row = {0.0f, INFINITY, 3.0f, -INFINITY};
  Sampler g(SamplingParams{.temperature = 0.7f, .seed = 2}, 4);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(g.sample(inf_row.data()).id, 1);
  // Every token banned: nothing to weigh, the lowest id, and logprobs at the floor, not NaN.
  const std::vector<float> banned = {-INFINITY, -INFINITY, NAN, -INFINITY};
  Sampler b(SamplingParams{.temperature = 1.0f, .logprobs = true}, 4);
  const Sampled r = b.sample(banned.data());
  EXPECT_EQ(r.id, 0);
  EXPECT_EQ(r.logprob, kMinLogprob);
}

// 150k vocabulary: the truncation samplers (partial sorts) pick valid tokens inside the top-k.
// Speed is measured by benchmarks, not here.
TEST(Sampler, LargeVocabularyTruncation) {
  const int64_t n = 150000;
  const std::vector<float> logits = random_logits(n, 11);
  // No penalties: they would move tokens in and out of the top 40 as samples accumulate.
  Sampler s(SamplingParams{.temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f, .seed = 5}, n);
  std::vector<float> sorted(logits);
  std::nth_element(sorted.begin(), sorted.begin() + 39, sorted.end(), std::greater<float>());
  const float kth = sorted[39];
  for (int i = 0; i < 100; ++i) {
    const Sampled r = s.sample(logits.data());
    ASSERT_GE(r.id, 0);
    ASSERT_LT(r.id, n);
    EXPECT_GE(logits[static_cast<size_t>(r.id)], kth) << "outside the top 40";
  }
  Sampler top_p_only(SamplingParams{.top_p = 0.9f, .seed = 5}, n);
  const Sampled r = top_p_only.sample(logits.data());
  EXPECT_GE(r.id, 0);
}

}  // namespace
}  // namespace engine
