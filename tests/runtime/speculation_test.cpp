// Speculative decoding on the scheduler's fake evaluator (no model): the output with drafts --
// right, wrong, random, broken -- is what plain decoding gives, token for token (greedy and
// seeded sampling alike), with the same logprobs, stops, limits and grammars; the sampled
// distribution is the model's (a chi-square test); rejected drafts leave neither the KV cache
// nor the shared prefix blocks; a draft model's vocabulary must be the model's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/runtime/draft_model.h"
#include "engine/runtime/scheduler.h"
#include "engine/runtime/speculation.h"
#include "engine/text/grammar/gbnf.h"
#include "engine/text/grammar/token_masks.h"
#include "tests/runtime/scheduler_fakes.h"

namespace engine {
namespace {

using namespace engine::test;

// Proposes whatever `rule` says for each slot (counting the calls).
class RuleDrafter : public DraftSource {
 public:
  using Rule = std::function<std::vector<int32_t>(std::span<const int32_t> tokens, int32_t max)>;
  explicit RuleDrafter(Rule rule) : rule_(std::move(rule)) {}
  void propose(std::span<DraftSlot> slots) override {
    for (DraftSlot& s : slots) {
      EXPECT_GE(s.max, 1);
      s.draft = rule_(s.tokens, s.max);
      ++proposals;
    }
  }
  int64_t proposals = 0;

 private:
  Rule rule_;
};

// The fake's greedy chain after the last token: always what greedy decoding samples (n of them).
std::vector<int32_t> greedy_chain(std::span<const int32_t> tokens, int32_t n) {
  std::vector<int32_t> d;
  for (int32_t i = 1; i <= n; ++i) d.push_back((tokens.back() + i) % kLetters);
  return d;
}

// What one request got: its events, end and usage.
struct Outcome {
  std::vector<TokenEvent> events;
  FinishReason reason;
  Usage usage;
  std::string error;
  std::string text;
};

// Runs `requests` (all at once, `n_slots` slots) on a fresh fake; the outcomes in order.
struct Result {
  std::vector<Outcome> outcomes;
  SchedulerStats stats;
  int32_t max_pos = -1;
  std::map<SeqId, int32_t> cached;  // the fake's cached positions afterwards
};

using Requests = std::function<std::vector<GenerationRequest>()>;

Result run(const Requests& make, SpecMode mode, DraftSource* drafter = nullptr, int draft_max = 6,
        int64_t n_ctx = 128, int n_slots = 4, int32_t eos_after = -1) {
  FakeEvaluator fake;
  fake.eos_after = eos_after;
  const Tokenizer tokenizer = letters_tokenizer();
  SchedulerOptions o{.n_slots = n_slots, .n_ctx = n_ctx, .max_queue = 10000, .prefill_chunk = 8, .n_threads = 1};
  o.spec = mode;
  o.draft_max = draft_max;
  Result r;
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  {
    Scheduler scheduler(fake, tokenizer, o, drafter);
    std::vector<GenerationRequest> reqs = make();
    for (GenerationRequest& q : reqs) {
      sinks.push_back(std::make_shared<RecordingSink>());
      q.sink = sinks.back();
      EXPECT_EQ(scheduler.submit(std::move(q)), SubmitStatus::kAccepted);
    }
    for (auto& s : sinks) r.outcomes.push_back({{}, s->wait(), s->usage(), s->error(), s->text()});
    r.stats = scheduler.stats();
  }
  for (size_t i = 0; i < sinks.size(); ++i) r.outcomes[i].events = sinks[i]->events();
  r.max_pos = fake.max_pos;
  r.cached = fake.cached;
  return r;
}

void expect_same(const Result& plain, const Result& spec) {
  ASSERT_EQ(plain.outcomes.size(), spec.outcomes.size());
  for (size_t i = 0; i < plain.outcomes.size(); ++i) {
    const Outcome& a = plain.outcomes[i];
    const Outcome& b = spec.outcomes[i];
    EXPECT_EQ(a.text, b.text) << "request " << i;
    EXPECT_EQ(a.reason, b.reason) << "request " << i;
    EXPECT_EQ(a.error, b.error) << "request " << i;
    EXPECT_EQ(a.usage.completion_tokens, b.usage.completion_tokens) << "request " << i;
    ASSERT_EQ(a.events.size(), b.events.size()) << "request " << i;
    for (size_t e = 0; e < a.events.size(); ++e) {
      EXPECT_EQ(a.events[e].token, b.events[e].token) << "request " << i << " event " << e;
      EXPECT_EQ(a.events[e].text, b.events[e].text) << "request " << i << " event " << e;
      EXPECT_EQ(a.events[e].logprob, b.events[e].logprob) << "request " << i << " event " << e;
      ASSERT_EQ(a.events[e].top.size(), b.events[e].top.size());
      for (size_t t = 0; t < a.events[e].top.size(); ++t) {
        EXPECT_EQ(a.events[e].top[t].id, b.events[e].top[t].id);
        EXPECT_EQ(a.events[e].top[t].logprob, b.events[e].top[t].logprob);
      }
    }
  }
}

GenerationRequest greedy(std::vector<int32_t> prompt, int64_t max_tokens) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0.0f;
  r.max_tokens = max_tokens;
  return r;
}

std::vector<int32_t> alphabet() {
  std::vector<int32_t> t(kLetters);
  for (int32_t i = 0; i < kLetters; ++i) t[static_cast<size_t>(i)] = i;
  return t;
}

std::shared_ptr<const grammar::CompiledGrammar> compile(const char* gbnf) {
  static const Tokenizer tokenizer = letters_tokenizer();
  return std::make_shared<grammar::CompiledGrammar>(grammar::parse_gbnf(gbnf),
                                                    grammar::TokenVocab::from_tokenizer(tokenizer));
}

// Greedy requests that end every way there is: max_tokens, stop strings, the context, the grammar;
// with logprobs, a lazy grammar, ignore_eos, penalties.
std::vector<GenerationRequest> greedy_mix() {
  std::vector<GenerationRequest> v;
  v.push_back(greedy(alphabet(), 60));                     // the alphabet again and again
  v.push_back(greedy({0, 1, 2}, 40));
  v.back().stop = {"stu"};                                 // a stop string inside the copies
  v.push_back(greedy({0, 1, 2, 0, 1, 2}, 3));               // max_tokens before most drafts fit
  v.push_back(greedy(alphabet(), -1));                     // until the context is full
  v.push_back(greedy({4, 5}, 20));
  v.back().sampling.logprobs = true;
  v.back().sampling.n_logprobs = 3;
  v.push_back(greedy({0, 1, 2}, 30));
  v.back().grammar = compile(R"(root ::= "de" [a-z] [a-z] "q" [a-z]*)");  // rejects the fake's drafts at q
  v.push_back(greedy({0, 1, 2}, 30));
  v.back().grammar = compile(R"(root ::= "gh" [x-z]+ "q")");
  v.back().grammar_triggers = {"g"};                        // free until "g", then the grammar
  v.push_back(greedy({0, 1, 2}, 12));
  v.back().sampling.repeat_penalty = 3.0f;                  // the penalties see each accepted draft
  v.back().sampling.presence_penalty = 1.5f;
  v.back().sampling.penalty_last_n = 30;
  return v;
}

TEST(Speculation, GreedyOutputIsPlainDecodingsWhateverTheDrafts) {
  const Result plain = run(greedy_mix, SpecMode::kNone);
  ASSERT_EQ(plain.stats.spec.draft_tokens, 0);
  ASSERT_EQ(plain.outcomes[1].reason, FinishReason::kStop);
  ASSERT_EQ(plain.outcomes[3].reason, FinishReason::kLength);
  ASSERT_EQ(plain.outcomes[5].reason, FinishReason::kLength);

  const Result ngram = run(greedy_mix, SpecMode::kNgram);
  expect_same(plain, ngram);
  EXPECT_GT(ngram.stats.spec.accepted_tokens, 100) << "the alphabet's copies are drafted";
  EXPECT_EQ(ngram.stats.spec.mode, SpecMode::kNgram);

  RuleDrafter right(greedy_chain);
  const Result all_right = run(greedy_mix, SpecMode::kDraft, &right);
  expect_same(plain, all_right);
  EXPECT_GT(all_right.stats.spec.accepted_tokens, 150);

  RuleDrafter wrong([](std::span<const int32_t> t, int32_t max) {
    return std::vector<int32_t>(static_cast<size_t>(max), (t.back() + 5) % kLetters);
  });
  const Result all_wrong = run(greedy_mix, SpecMode::kDraft, &wrong);
  expect_same(plain, all_wrong);
  EXPECT_GT(all_wrong.stats.spec.draft_tokens, 100);
  EXPECT_EQ(all_wrong.stats.spec.accepted_tokens, 0);

  std::mt19937 rng(7);
  RuleDrafter mixed([&](std::span<const int32_t> t, int32_t max) {
    std::vector<int32_t> d = greedy_chain(t, max);
    d.resize(static_cast<size_t>(std::uniform_int_distribution<int32_t>(1, max)(rng)));
    if (rng() % 2 == 0) d.back() = static_cast<int32_t>(rng() % (kLetters + 1));  // maybe wrong, maybe EOS
    return d;
  });
  const Result some = run(greedy_mix, SpecMode::kDraft, &mixed);
  expect_same(plain, some);
  EXPECT_GT(some.stats.spec.accepted_tokens, 0);
  EXPECT_LT(some.stats.spec.accepted_tokens, some.stats.spec.draft_tokens);
}

TEST(Speculation, DraftsEndingInEosAndStopsEndTheRequestAsPlainDecodingDoes) {
  // "u" is followed by the end: drafts run past it, and greedy copies of a stop string too
  const auto make = [] {
    std::vector<GenerationRequest> v;
    v.push_back(greedy({0, 1, 2}, 50));
    v.push_back(greedy(alphabet(), 50));
    v.back().ignore_eos = true;  // the end token is output and generation goes on
    return v;
  };
  const Result plain = run(make, SpecMode::kNone, nullptr, 6, 128, 4, /*eos_after=*/20);
  ASSERT_EQ(plain.outcomes[0].reason, FinishReason::kStop);
  ASSERT_EQ(plain.outcomes[0].text, "defghijklmnopqrstu");
  RuleDrafter right([](std::span<const int32_t> t, int32_t max) {
    std::vector<int32_t> d;  // the truth, with the end after "u"
    for (int32_t last = t.back(); static_cast<int32_t>(d.size()) < max;) {
      last = last == 20 ? kEos : (last + 1) % kLetters;
      d.push_back(last);
    }
    return d;
  });
  expect_same(plain, run(make, SpecMode::kDraft, &right, 6, 128, 4, 20));
  expect_same(plain, run(make, SpecMode::kNgram, nullptr, 6, 128, 4, 20));
}

// Seeded sampling draws one number per emitted token, drafts or not: the same tokens.
std::vector<GenerationRequest> sampled_mix() {
  std::vector<GenerationRequest> v;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    GenerationRequest r = greedy(seed % 2 ? alphabet() : std::vector<int32_t>{0, 1, 2}, 25);
    r.sampling.temperature = 0.5f + 0.1f * static_cast<float>(seed % 10);
    r.sampling.seed = seed;
    r.sampling.logprobs = true;
    r.sampling.n_logprobs = 2;
    if (seed % 3 == 0) r.sampling.top_k = 2;
    if (seed % 4 == 0) r.sampling.top_p = 0.8f;
    if (seed % 5 == 0) r.sampling.min_p = 0.1f;
    if (seed % 6 == 0) r.sampling.frequency_penalty = 0.7f;
    if (seed % 7 == 0) r.sampling.logit_bias = {{7, 3.0f}, {kEos, -INFINITY}};
    if (seed % 8 == 0) r.stop = {"xy"};
    if (seed % 9 == 0) r.grammar = compile(R"(root ::= [a-m]+)");
    v.push_back(std::move(r));
  }
  return v;
}

TEST(Speculation, SeededSamplingGivesTheSameTokensWithOrWithoutDrafts) {
  const Result plain = run(sampled_mix, SpecMode::kNone, nullptr, 6, 128, 8);
  const Result ngram = run(sampled_mix, SpecMode::kNgram, nullptr, 6, 128, 8);
  expect_same(plain, ngram);
  RuleDrafter right(greedy_chain);
  const Result chain = run(sampled_mix, SpecMode::kDraft, &right, 6, 128, 8);
  expect_same(plain, chain);
  EXPECT_GT(chain.stats.spec.accepted_tokens, 50);
  EXPECT_LT(chain.stats.spec.accepted_tokens, chain.stats.spec.draft_tokens) << "sampling rejects some";
}

// The upper regularized gamma function Q(a, x) for the chi-square p-value (continued fraction for
// x > a + 1, series otherwise; Numerical Recipes' method).
double chi_square_p(double chi2, double df) {
  const double a = df / 2, x = chi2 / 2;
  const double lg = std::lgamma(a);
  if (x < a + 1) {
    double sum = 1 / a, term = sum;
    for (int n = 1; n < 1000; ++n) {
      term *= x / (a + n);
      sum += term;
    }
    return 1 - sum * std::exp(-x + a * std::log(x) - lg);
  }
  double b = x + 1 - a, c = 1e300, d = 1 / b, h = d;
  for (int i = 1; i < 1000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    c = b + an / c;
    d = 1 / d;
    h *= d * c;
  }
  return std::exp(-x + a * std::log(x) - lg) * h;
}

// The fake's distribution after token t at temperature 1: softmax of 4 for t + 1, 2 for t + 2,
// 0 for the 24 other letters and the end token.
double p_next(int32_t t, int32_t next) {
  const double z = std::exp(4.0) + std::exp(2.0) + 25.0;
  if (next == (t + 1) % kLetters) return std::exp(4.0) / z;
  if (next == (t + 2) % kLetters) return std::exp(2.0) / z;
  return 1.0 / z;
}

// Tokens sampled under random drafts -- the likeliest token, or any token -- follow the model's
// distribution. Prompt "abc", three tokens: t1 is sampled plainly, t2 from the row that verifies a
// draft, t3 (when that draft was t2) from the draft's own row. Chi-square over every (t2, t3)
// pair expected 5 times or more (t1 summed out), the rest pooled. The seeds are fixed, so the
// test is deterministic; p > 0.001 is checked.
TEST(Speculation, SampledTokensFollowTheModelsDistribution) {
  constexpr int kSamples = 6000;
  const auto make = [] {
    std::vector<GenerationRequest> v;
    for (uint64_t seed = 0; seed < kSamples; ++seed) {
      GenerationRequest r = greedy({0, 1, 2}, 3);
      r.sampling.temperature = 1.0f;
      r.sampling.seed = 1000 + seed;
      v.push_back(std::move(r));
    }
    return v;
  };
  std::mt19937 rng(11);
  RuleDrafter random([&](std::span<const int32_t> t, int32_t max) {
    EXPECT_EQ(max, 1) << "max_tokens 3: one draft after the first token can be used";
    const bool likely = rng() % 2 == 0;
    return std::vector<int32_t>{likely ? (t.back() + 1) % kLetters : static_cast<int32_t>(rng() % (kLetters + 1))};
  });
  const Result spec = run(make, SpecMode::kDraft, &random, 4, 128, 16);
  EXPECT_GT(spec.stats.spec.accepted_tokens, kSamples / 5);
  EXPECT_LT(spec.stats.spec.accepted_tokens, spec.stats.spec.draft_tokens);

  // Categories: (t2, t3); (kEos, -1) when t2 ended it; (-2, -2) when t1 did.
  std::map<std::pair<int32_t, int32_t>, int> counts;
  for (const Outcome& o : spec.outcomes) {
    std::vector<int32_t> t;
    for (const TokenEvent& e : o.events) {
      if (e.token >= 0) t.push_back(e.token);
    }
    if (o.reason == FinishReason::kStop) t.push_back(kEos);  // the end is no event
    ASSERT_GE(t.size(), 1u);
    if (t[0] == kEos) {
      ++counts[{-2, -2}];
    } else if (t.at(1) == kEos) {
      ++counts[{kEos, -1}];
    } else {
      ++counts[{t[1], t.at(2)}];
    }
  }
  std::map<std::pair<int32_t, int32_t>, double> expected;
  expected[{-2, -2}] = p_next(2, kEos);
  for (int32_t t1 = 0; t1 < kLetters; ++t1) {
    expected[{kEos, -1}] += p_next(2, t1) * p_next(t1, kEos);
    for (int32_t t2 = 0; t2 < kLetters; ++t2) {
      for (int32_t t3 = 0; t3 <= kLetters; ++t3) expected[{t2, t3}] += p_next(2, t1) * p_next(t1, t2) * p_next(t2, t3);
    }
  }
  double chi2 = 0, pooled_expected = 0, total = 0;
  int pooled_observed = 0, cells = 0;
  for (const auto& [key, p] : expected) {
    total += p;
    const double e = p * kSamples;
    const auto it = counts.find(key);
    const int observed = it == counts.end() ? 0 : it->second;
    if (e >= 5) {
      chi2 += (observed - e) * (observed - e) / e;
      ++cells;
    } else {
      pooled_expected += e;
      pooled_observed += observed;
    }
  }
  ASSERT_NEAR(total, 1.0, 1e-9);
  chi2 += (pooled_observed - pooled_expected) * (pooled_observed - pooled_expected) / pooled_expected;
  const double p = chi_square_p(chi2, cells);  // cells + 1 categories, one degree of freedom fewer
  EXPECT_GT(p, 0.001) << "chi-square " << chi2 << " over " << cells + 1 << " categories";
  EXPECT_GT(cells, 20);
  // And those are plain decoding's very samples.
  expect_same(run(make, SpecMode::kNone, nullptr, 4, 128, 16), spec);
}

TEST(Speculation, ABrokenDrafterCostsNothingButSpeed) {
  RuleDrafter throwing([](std::span<const int32_t>, int32_t) -> std::vector<int32_t> {
    throw std::runtime_error("the draft model failed");
  });
  RuleDrafter garbage([](std::span<const int32_t> t, int32_t max) {
    std::vector<int32_t> d = greedy_chain(t, max + 5);  // too many: cut to max
    d[1] = 1000;                                        // not a token: the draft ends before it
    return d;
  });
  const Result plain = run(greedy_mix, SpecMode::kNone);
  const Result thrown = run(greedy_mix, SpecMode::kDraft, &throwing);
  expect_same(plain, thrown);
  EXPECT_EQ(thrown.stats.spec.draft_tokens, 0);
  const Result cut = run(greedy_mix, SpecMode::kDraft, &garbage);
  expect_same(plain, cut);
  EXPECT_GT(cut.stats.spec.accepted_tokens, 0);
  EXPECT_EQ(cut.stats.spec.draft_tokens, garbage.proposals) << "only the first token of each went in";
}

// Drafts never go past what max_tokens and the context could use, and the rejected ones leave the
// cache: afterwards it holds the prompt and every output token but the last.
TEST(Speculation, DraftsStayWithinTheLimitsAndRejectedOnesLeaveTheCache) {
  RuleDrafter right(greedy_chain);
  const auto one = [](int64_t max_tokens) {
    return [max_tokens] {
      std::vector<GenerationRequest> v;
      v.push_back(greedy(alphabet(), max_tokens));
      return v;
    };
  };
  const Result full = run(one(-1), SpecMode::kDraft, &right, 8, 64, 1);
  EXPECT_EQ(full.outcomes[0].reason, FinishReason::kLength);
  EXPECT_EQ(full.outcomes[0].usage.completion_tokens, 64 - 26);
  EXPECT_EQ(full.max_pos, 62) << "as without drafts: the last token is never fed";
  EXPECT_EQ(full.cached.at(0), 63);

  const Result capped = run(one(10), SpecMode::kDraft, &right, 8, 64, 1);
  EXPECT_EQ(capped.outcomes[0].usage.completion_tokens, 10);
  EXPECT_EQ(capped.max_pos, 26 + 10 - 2);
  EXPECT_EQ(capped.cached.at(0), 26 + 10 - 1);

  RuleDrafter wrong([](std::span<const int32_t> t, int32_t max) {
    return std::vector<int32_t>(static_cast<size_t>(max), (t.back() + 3) % kLetters);
  });
  const Result rejected = run(one(10), SpecMode::kDraft, &wrong, 8, 64, 1);
  EXPECT_EQ(rejected.cached.at(0), 26 + 10 - 1) << "every rejected draft was dropped";
  EXPECT_GT(rejected.stats.spec.draft_tokens, 0);
}

// A client that goes away, or a sink that throws, ends its request at the step it is noticed
// (cancellation is polled once per step, so a step's accepted drafts may still be emitted: at
// most 1 + draft_max tokens), its drafts leave the cache, and the other requests are untouched.
TEST(Speculation, CancelledAndFailingRequestsEndAndLeaveTheOthersAlone) {
  const auto others = [] {
    std::vector<GenerationRequest> v;
    v.push_back(greedy(alphabet(), 40));
    v.push_back(greedy({0, 1, 2}, 30));
    return v;
  };
  const Result plain = run(others, SpecMode::kNone);
  FakeEvaluator fake;
  const Tokenizer tokenizer = letters_tokenizer();
  SchedulerOptions o{.n_slots = 4, .n_ctx = 128, .max_queue = 100, .prefill_chunk = 8, .n_threads = 1};
  o.spec = SpecMode::kDraft;
  o.draft_max = 6;
  RuleDrafter right(greedy_chain);
  auto gone = std::make_shared<RecordingSink>(-1, /*cancel_after=*/3);
  auto broken = std::make_shared<RecordingSink>(/*throw_after=*/4);
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  {
    Scheduler scheduler(fake, tokenizer, o, &right);
    GenerationRequest a = greedy(alphabet(), 50);
    a.sink = gone;
    GenerationRequest b = greedy(alphabet(), 50);
    b.sink = broken;
    ASSERT_EQ(scheduler.submit(std::move(a)), SubmitStatus::kAccepted);
    ASSERT_EQ(scheduler.submit(std::move(b)), SubmitStatus::kAccepted);
    for (GenerationRequest& q : others()) {
      sinks.push_back(std::make_shared<RecordingSink>());
      q.sink = sinks.back();
      ASSERT_EQ(scheduler.submit(std::move(q)), SubmitStatus::kAccepted);
    }
    EXPECT_EQ(gone->wait(), FinishReason::kCancelled);
    EXPECT_GE(gone->usage().completion_tokens, 3);
    EXPECT_LE(gone->usage().completion_tokens, 3 + 1 + 6) << "one more step at most";
    EXPECT_EQ(broken->wait(), FinishReason::kError);
    EXPECT_EQ(broken->error(), "sink exploded");
    for (size_t i = 0; i < sinks.size(); ++i) {
      EXPECT_EQ(sinks[i]->wait(), plain.outcomes[i].reason);
      EXPECT_EQ(sinks[i]->text(), plain.outcomes[i].text) << "request " << i;
    }
    EXPECT_GT(scheduler.stats().spec.accepted_tokens, 0);
  }
  EXPECT_EQ(gone->finishes(), 1);
  EXPECT_EQ(broken->finishes(), 1);
}

// The fake's logits with a prefix block of 4: records what the scheduler publishes.
class PublishingFake : public FakeEvaluator {
 public:
  int32_t prefix_block() const override { return 4; }
  void publish_prefix(SeqId seq, const std::vector<int32_t>& tokens) override {
    EXPECT_LE(tokens.size(), static_cast<size_t>(cached[seq])) << "K/V not computed";
    published.push_back(tokens);
  }
  std::vector<std::vector<int32_t>> published;
};

TEST(Speculation, OnlyAcceptedTokensArePublishedForSharing) {
  PublishingFake fake;
  const Tokenizer tokenizer = letters_tokenizer();
  std::mt19937 rng(3);
  RuleDrafter mixed([&](std::span<const int32_t> t, int32_t max) {
    std::vector<int32_t> d = greedy_chain(t, max);
    d[rng() % d.size()] = static_cast<int32_t>(rng() % kLetters);
    return d;
  });
  SchedulerOptions o{.n_slots = 1, .n_ctx = 128, .max_queue = 4, .prefill_chunk = 8, .n_threads = 1};
  o.spec = SpecMode::kDraft;
  auto sink = std::make_shared<RecordingSink>();
  {
    Scheduler scheduler(fake, tokenizer, o, &mixed);
    GenerationRequest r = greedy({0, 1, 2}, 60);
    r.sink = sink;
    ASSERT_EQ(scheduler.submit(std::move(r)), SubmitStatus::kAccepted);
    ASSERT_EQ(sink->wait(), FinishReason::kLength);
    EXPECT_GT(scheduler.stats().spec.accepted_tokens, 0);
  }
  std::vector<int32_t> truth = {0, 1, 2};
  for (const TokenEvent& e : sink->events()) truth.push_back(e.token);
  ASSERT_FALSE(fake.published.empty());
  for (const std::vector<int32_t>& p : fake.published) {
    ASSERT_LE(p.size(), truth.size());
    EXPECT_TRUE(std::equal(p.begin(), p.end(), truth.begin())) << "a rejected draft was published";
  }
  EXPECT_GE(fake.published.back().size(), 32u) << "the accepted drafts were published";
}

// A request whose drafts fail is asked for one more than its accepted run (here: one); one whose
// drafts succeed for twice as many as last time, up to draft_max.
TEST(Speculation, TheDraftLengthFollowsTheAcceptance) {
  const auto one = [] {
    std::vector<GenerationRequest> v;
    v.push_back(greedy({0, 1, 2}, 41));
    return v;
  };
  std::vector<int32_t> asked;
  RuleDrafter wrong([&](std::span<const int32_t> t, int32_t max) {
    asked.push_back(max);
    return std::vector<int32_t>(static_cast<size_t>(max), (t.back() + 5) % kLetters);
  });
  const Result failing = run(one, SpecMode::kDraft, &wrong, 16, 128, 1);
  ASSERT_EQ(asked.size(), 39u) << "every step from the second token to the 40th";
  EXPECT_EQ(asked[0], 16);
  for (size_t i = 1; i < asked.size(); ++i) EXPECT_EQ(asked[i], 1) << i;
  EXPECT_EQ(failing.stats.spec.draft_tokens, 16 + 38);

  asked.clear();
  RuleDrafter right([&](std::span<const int32_t> t, int32_t max) {
    asked.push_back(max);
    return greedy_chain(t, std::min(max, 2));  // two right, whatever the room: the cap grows
  });
  run(one, SpecMode::kDraft, &right, 16, 128, 1);
  ASSERT_GE(asked.size(), 4u);
  EXPECT_EQ(asked[0], 16);
  EXPECT_EQ(asked[1], 16) << "all accepted: doubled, within draft_max";
  RuleDrafter mixed([&](std::span<const int32_t> t, int32_t max) {
    asked.push_back(max);
    std::vector<int32_t> d = greedy_chain(t, max);
    if (max > 4) d[3] = (d[3] + 1) % kLetters;  // three right, then wrong (four of four when asked for 4)
    return d;
  });
  asked.clear();
  run(one, SpecMode::kDraft, &mixed, 16, 128, 1);
  ASSERT_GE(asked.size(), 4u);
  EXPECT_EQ(asked[0], 16);
  EXPECT_EQ(asked[1], 4) << "three accepted: one more next time";
  EXPECT_EQ(asked[2], 8) << "four of four accepted: doubled";
  EXPECT_EQ(asked[3], 4);
}

TEST(Speculation, EmbeddingsAndPromptScoringNeverDraft) {
  const auto make = [] {
    std::vector<GenerationRequest> v;
    v.push_back(greedy(alphabet(), 0));
    v.back().prompt_logprobs = true;
    v.back().sampling.n_logprobs = 1;
    return v;
  };
  const Result plain = run(make, SpecMode::kNone);
  const Result spec = run(make, SpecMode::kNgram);
  expect_same(plain, spec);
  EXPECT_EQ(spec.outcomes[0].events.size(), 25u);
  EXPECT_EQ(spec.stats.spec.draft_tokens, 0);
}

TEST(Speculation, SettingsOutOfRangeAreRefused) {
  FakeEvaluator fake;
  const Tokenizer tokenizer = letters_tokenizer();
  SchedulerOptions o{.n_slots = 1, .n_ctx = 64, .max_queue = 4, .prefill_chunk = 8, .n_threads = 1};
  o.spec = SpecMode::kNgram;
  o.draft_max = 65;
  EXPECT_THROW({ Scheduler s(fake, tokenizer, o); }, std::invalid_argument);
  o.draft_max = 4;
  o.draft_min = 5;
  EXPECT_THROW({ Scheduler s(fake, tokenizer, o); }, std::invalid_argument);
  o.draft_min = 0;
  o.spec = SpecMode::kDraft;
  EXPECT_THROW({ Scheduler s(fake, tokenizer, o); }, std::invalid_argument) << "no draft source";
}

TEST(Speculation, ProposalsShorterThanDraftMinAreNotVerified) {
  RuleDrafter two([](std::span<const int32_t> t, int32_t max) { return greedy_chain(t, std::min(max, 2)); });
  FakeEvaluator fake;
  const Tokenizer tokenizer = letters_tokenizer();
  SchedulerOptions o{.n_slots = 1, .n_ctx = 64, .max_queue = 4, .prefill_chunk = 8, .n_threads = 1};
  o.spec = SpecMode::kDraft;
  o.draft_min = 3;
  Scheduler scheduler(fake, tokenizer, o, &two);
  auto sink = std::make_shared<RecordingSink>();
  GenerationRequest r = greedy({0, 1, 2}, 10);
  r.sink = sink;
  ASSERT_EQ(scheduler.submit(std::move(r)), SubmitStatus::kAccepted);
  EXPECT_EQ(sink->wait(), FinishReason::kLength);
  EXPECT_EQ(sink->text(), "defghijklm");
  EXPECT_EQ(scheduler.stats().spec.draft_tokens, 0);
}

// A byte-level BPE vocabulary of `tokens` (the last one a control token), EOS `eos`.
Tokenizer vocabulary(const std::vector<std::string>& tokens, std::vector<uint8_t>& bytes, uint32_t eos = 3) {
  gguf::Writer w;
  std::vector<int32_t> types(tokens.size(), 1);
  types.back() = 3;
  w.set("tokenizer.ggml.model", gguf::OwnedValue::string("gpt2"));
  w.set("tokenizer.ggml.pre", gguf::OwnedValue::string("default"));
  w.set("tokenizer.ggml.tokens", gguf::OwnedValue::string_array(tokens));
  w.set("tokenizer.ggml.token_type", gguf::OwnedValue::i32_array(types));
  w.set("tokenizer.ggml.merges", gguf::OwnedValue::string_array({}));
  w.set("tokenizer.ggml.eos_token_id", gguf::OwnedValue::u32(eos));
  bytes = w.to_bytes();
  return Tokenizer::from_gguf(gguf::File::parse(bytes));
}

TEST(DraftModel, VocabulariesMustMatchTokenForToken) {
  std::vector<uint8_t> a_bytes, b_bytes, c_bytes, d_bytes;
  const Tokenizer a = vocabulary({"a", "b", "c", "<eos>"}, a_bytes);
  EXPECT_NO_THROW(DraftModel::check_compatible(a, vocabulary({"a", "b", "c", "<eos>"}, b_bytes)));
  try {
    DraftModel::check_compatible(a, vocabulary({"a", "x", "c", "<eos>"}, c_bytes));
    ADD_FAILURE() << "accepted another token 1";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "token 1 is 'x' in the draft model's vocabulary and 'b' in the model's: a draft model "
                           "must have the same vocabulary");
  }
  try {
    DraftModel::check_compatible(a, vocabulary({"a", "b", "c", "<eos>", "<pad>"}, d_bytes));
    ADD_FAILURE() << "accepted another size";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "the draft model's vocabulary has 5 tokens, the model's 4: a draft model must have the "
                           "same vocabulary");
  }
  try {
    DraftModel::check_compatible(a, vocabulary({"a", "b", "c", "<eos>"}, d_bytes, 2));
    ADD_FAILURE() << "accepted another EOS";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "the draft model's EOS token is 2, the model's 3 (-1: none): a draft model must have "
                           "the same special tokens");
  }
}

}  // namespace
}  // namespace engine
