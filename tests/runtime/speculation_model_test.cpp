// Speculative decoding on real models (../shared): with n-gram drafts and with the model drafting
// for itself, every request -- greedy with logprobs, seeded sampling -- gets the tokens and
// logprobs plain decoding gives, on a dense llama, a quantized one, a mixture of experts and
// gemma3's sliding-window ring; the model drafting for itself at temperature 0 has every draft
// accepted; a small model of the same vocabulary drafts for a larger one; a draft model of another
// vocabulary is refused; a qwen35 file's own NextN block drafts (mtp), under --spec auto only while
// its drafts are accepted, and a model without one is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "engine/model/model.h"
#include "engine/runtime/draft_model.h"
#include "engine/runtime/scheduler.h"
#include "engine/text/tokenizer/tokenizer.h"
#include "tests/runtime/scheduler_fakes.h"
#include "tests/support/shared.h"

namespace engine {
namespace {

using ggufd::test::shared_path;
using engine::test::RecordingSink;

struct Case {
  std::string file;
  int64_t n_ctx;  // gemma3 at 2048 keeps its sliding layers in a ring
  bool ngram_hits = true;  // its continuations repeat n-grams of their context (random weights may not)
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.file; }

// Prompts that invite copying (a passage twice, then its start again), and a plain one.
std::vector<std::vector<int32_t>> prompts(const Tokenizer& tok) {
  const std::string story =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the sun. "
      "One day, she saw a big red ball in the park.";
  return {tok.encode(story + " " + story + " Once upon a time, there was", true, false),
          tok.encode("The quick brown fox jumps over the lazy dog. The quick brown", true, false),
          tok.encode("Tom and Sue went to the shop.", true, false)};
}

struct Got {
  std::vector<std::vector<TokenEvent>> events;
  std::vector<FinishReason> reasons;
  SchedulerStats stats;
};

// Every prompt greedy (logprobs, 3 alternatives) and seeded at temperature 0.8, all at once.
// n_slots 1: one sequence at a time.
// spec_auto: the server's --spec auto (slots stop drafting where drafts do not pay).
Got generate(const Model& model, const Tokenizer& tok, int64_t n_ctx, SpecMode mode, const Model* draft = nullptr,
             bool sampled = true, int n_slots = 4, bool spec_auto = false) {
  // One compute thread: on a loaded machine each barrier of a 2-thread pass may wait a time slice.
  SchedulerOptions o{.n_slots = n_slots, .n_ctx = n_ctx, .max_queue = 16, .prefill_chunk = 32, .n_threads = 1};
  o.spec = mode;
  o.spec_auto = spec_auto;
  o.draft_max = 8;
  Scheduler s(model, tok, o, draft);
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  for (const std::vector<int32_t>& p : prompts(tok)) {
    for (int temperature : sampled ? std::vector<int>{0, 8} : std::vector<int>{0}) {
      GenerationRequest r;
      r.prompt = p;
      r.max_tokens = 48;
      r.ignore_eos = true;  // (a drafted end token is verified but not counted as accepted)
      r.sampling = serve_sampling_defaults();
      r.sampling.temperature = static_cast<float>(temperature) / 10;
      r.sampling.seed = 42;
      r.sampling.logprobs = true;
      r.sampling.n_logprobs = 3;
      sinks.push_back(std::make_shared<RecordingSink>());
      r.sink = sinks.back();
      EXPECT_EQ(s.submit(std::move(r)), SubmitStatus::kAccepted);
    }
  }
  Got g;
  for (auto& sink : sinks) {
    g.reasons.push_back(sink->wait());
    EXPECT_NE(g.reasons.back(), FinishReason::kError) << sink->error();
    g.events.push_back(sink->events());
  }
  g.stats = s.stats();
  return g;
}

void expect_same(const Got& want, const Got& got) {
  ASSERT_EQ(want.events.size(), got.events.size());
  for (size_t r = 0; r < want.events.size(); ++r) {
    EXPECT_EQ(want.reasons[r], got.reasons[r]) << "request " << r;
    const std::vector<TokenEvent>& x = want.events[r];
    const std::vector<TokenEvent>& y = got.events[r];
    ASSERT_EQ(x.size(), y.size()) << "request " << r;
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(x[i].token, y[i].token) << "request " << r << " token " << i;
      EXPECT_EQ(x[i].text, y[i].text) << "request " << r << " token " << i;
      EXPECT_EQ(x[i].logprob, y[i].logprob) << "request " << r << " token " << i;
      ASSERT_EQ(x[i].top.size(), y[i].top.size());
      for (size_t k = 0; k < x[i].top.size(); ++k) {
        EXPECT_EQ(x[i].top[k].id, y[i].top[k].id) << "request " << r << " token " << i;
        EXPECT_EQ(x[i].top[k].logprob, y[i].top[k].logprob) << "request " << r << " token " << i;
      }
    }
  }
}

class SpeculativeDecoding : public ::testing::TestWithParam<Case> {};

TEST_P(SpeculativeDecoding, GivesPlainDecodingsTokensAndLogprobs) {
  const auto& [file, n_ctx, ngram_hits] = GetParam();
  GGUFD_REQUIRE_SHARED(file);
  const Model model = Model::load(shared_path(file));
  const Tokenizer tok = Tokenizer::from_gguf(model.file());
  const Got plain = generate(model, tok, n_ctx, SpecMode::kNone);
  EXPECT_EQ(plain.stats.spec.draft_tokens, 0);

  const Got ngram = generate(model, tok, n_ctx, SpecMode::kNgram);
  expect_same(plain, ngram);
  if (ngram_hits) {
    EXPECT_GT(ngram.stats.spec.accepted_tokens, 0);
  }
  std::printf("[ spec     ] %s ngram: %lld of %lld drafts accepted\n", file.c_str(),
              static_cast<long long>(ngram.stats.spec.accepted_tokens),
              static_cast<long long>(ngram.stats.spec.draft_tokens));

  // Half the requests are greedy (every draft accepted), half sample at 0.8 (random weights: a
  // flat distribution that rarely picks the draft).
  const Got self = generate(model, tok, n_ctx, SpecMode::kDraft, &model);
  expect_same(plain, self);
  EXPECT_GT(self.stats.spec.accepted_tokens, 0);
  std::printf("[ spec     ] %s drafting for itself: %lld of %lld drafts accepted\n", file.c_str(),
              static_cast<long long>(self.stats.spec.accepted_tokens),
              static_cast<long long>(self.stats.spec.draft_tokens));
}

// The model drafting for itself greedily proposes exactly what greedy decoding picks.
TEST_P(SpeculativeDecoding, TheModelAsItsOwnDraftIsAlwaysRightAtTemperatureZero) {
  const auto& [file, n_ctx, ngram_hits] = GetParam();
  GGUFD_REQUIRE_SHARED(file);
  const Model model = Model::load(shared_path(file));
  const Tokenizer tok = Tokenizer::from_gguf(model.file());
  const Got self = generate(model, tok, n_ctx, SpecMode::kDraft, &model, /*sampled=*/false);
  EXPECT_GT(self.stats.spec.draft_tokens, 50);
  EXPECT_EQ(self.stats.spec.accepted_tokens, self.stats.spec.draft_tokens);
  expect_same(generate(model, tok, n_ctx, SpecMode::kNone, nullptr, false), self);
}

INSTANTIATE_TEST_SUITE_P(Models, SpeculativeDecoding,
                         ::testing::Values(Case{"models/stories260K.gguf", 256},
                                           Case{"models/synth/synth-llama-Q8_0.gguf", 256},
                                           Case{"models/synth/synth-qwen2-Q4_K_M.gguf", 256},
                                           Case{"models/synth/synth-qwen3moe-Q8_0.gguf", 256},
                                           Case{"models/synth/synth-gemma3-Q8_0.gguf", 2048},
                                           Case{"models/synth/synth-gemma4-Q8_0.gguf", 2048},
                                           // hybrid: rejected drafts roll the recurrent state back (the
                                           // dense one's random continuations repeat no n-gram: only
                                           // drafting for itself exercises that)
                                           Case{"models/synth/synth-qwen35-Q8_0.gguf", 256, false},
                                           Case{"models/synth/synth-qwen35moe-Q8_0.gguf", 256}),
                         [](const auto& p) {
                           std::string s = p.param.file.substr(p.param.file.find_last_of('/') + 1);
                           s = s.substr(0, s.find('.'));
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

// The model's own NextN / MTP block drafts (qwen35 with nextn_predict_layers, random weights):
// the tokens and logprobs of plain decoding, one sequence at a time and several batched (the
// prompts' prefill chunks beside other slots' decode steps), and the drafts are counted.
TEST(Mtp, GivesPlainDecodingsTokensAndLogprobs) {
  const std::string file = "models/synth/synth-qwen35mtp-Q8_0.gguf";
  GGUFD_REQUIRE_SHARED(file);
  const Model model = Model::load(shared_path(file));
  const Tokenizer tok = Tokenizer::from_gguf(model.file());
  for (const int n_slots : {1, 4}) {
    const Got plain = generate(model, tok, 256, SpecMode::kNone, nullptr, true, n_slots);
    const Got mtp = generate(model, tok, 256, SpecMode::kMtp, nullptr, true, n_slots);
    expect_same(plain, mtp);
    EXPECT_EQ(mtp.stats.spec.mode, SpecMode::kMtp);
    EXPECT_GT(mtp.stats.spec.draft_tokens, 50) << n_slots << " slots";
    EXPECT_LE(mtp.stats.spec.accepted_tokens, mtp.stats.spec.draft_tokens);
    std::printf("[ spec     ] %s mtp, %lld slots: %lld of %lld drafts accepted\n", file.c_str(),
                static_cast<long long>(n_slots), static_cast<long long>(mtp.stats.spec.accepted_tokens),
                static_cast<long long>(mtp.stats.spec.draft_tokens));
  }
}

// --spec auto: random weights' NextN drafts are hardly ever accepted, so each slot stops drafting
// after its warm-up and decodes plainly, giving plain decoding's tokens and logprobs, while an
// explicit --spec mtp drafts in every step. Counted by the scheduler, not timed.
TEST(Mtp, AutoStopsDraftingWhereDraftsAreNotAccepted) {
  const std::string file = "models/synth/synth-qwen35mtp-Q8_0.gguf";
  GGUFD_REQUIRE_SHARED(file);
  const Model model = Model::load(shared_path(file));
  const Tokenizer tok = Tokenizer::from_gguf(model.file());
  const Got plain = generate(model, tok, 256, SpecMode::kNone, nullptr, false);
  const Got asked = generate(model, tok, 256, SpecMode::kMtp, nullptr, false);
  const Got automatic = generate(model, tok, 256, SpecMode::kMtp, nullptr, false, 4, true);
  expect_same(plain, asked);
  expect_same(plain, automatic);
  const SpecStats& a = asked.stats.spec;
  const SpecStats& g = automatic.stats.spec;
  std::printf("[ spec     ] %s mtp: %lld of %lld drafts accepted; auto: %lld of %lld, %lld steps paused\n",
              file.c_str(), static_cast<long long>(a.accepted_tokens), static_cast<long long>(a.draft_tokens),
              static_cast<long long>(g.accepted_tokens), static_cast<long long>(g.draft_tokens),
              static_cast<long long>(g.paused_steps));
  ASSERT_LT(a.accepted_tokens * 4, a.draft_tokens) << "random weights: few drafts accepted";
  EXPECT_FALSE(a.gated);
  EXPECT_EQ(a.paused_steps, 0);
  EXPECT_GE(a.draft_tokens, 3 * 46) << "an explicit --spec mtp drafts in every step but the last";
  EXPECT_TRUE(g.gated);
  // 3 requests of 48 tokens: 46 steps with room for a draft each, of which a warm-up of 8 drafts.
  EXPECT_GT(g.paused_steps, 3 * 16);
  EXPECT_LT(g.draft_tokens, a.draft_tokens / 2);
  if (a.accepted_tokens == 0 && g.accepted_tokens == 0) {  // one draft per step after the first
    EXPECT_EQ(g.draft_tokens + g.paused_steps, a.draft_tokens) << "each step either drafted as mtp did or paused";
  }
}

TEST(Mtp, AModelWithoutNextNLayersIsRefused) {
  const std::string file = "models/synth/synth-qwen35-Q8_0.gguf";
  GGUFD_REQUIRE_SHARED(file);
  const Model model = Model::load(shared_path(file));
  const Tokenizer tok = Tokenizer::from_gguf(model.file());
  SchedulerOptions o{.n_slots = 1, .n_ctx = 64, .max_queue = 1, .prefill_chunk = 16, .n_threads = 1};
  o.spec = SpecMode::kMtp;
  try {
    Scheduler s(model, tok, o);
    ADD_FAILURE() << "accepted --spec mtp for a model without NextN layers";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "speculative decoding with mtp needs a model with NextN / MTP layers "
                           "(nextn_predict_layers); this qwen35 model has none: use --spec ngram or a draft model");
  }
}

// Two models of one vocabulary (every synth model has stories260K's): a random-weight llama
// drafted by the trained stories260K, and the same llama in F32 drafted by its Q4_0 copy.
TEST(DraftModel, ASmallModelOfTheSameVocabularyDrafts) {
  for (const auto& [target_file, draft_file] :
       {std::pair<std::string, std::string>{"models/synth/synth-llama-Q8_0.gguf", "models/stories260K.gguf"},
        {"models/synth/synth-llama-F32.gguf", "models/synth/synth-llama-Q4_0.gguf"}}) {
    GGUFD_REQUIRE_SHARED(target_file);
    GGUFD_REQUIRE_SHARED(draft_file);
    const Model target = Model::load(shared_path(target_file));
    const Model draft = Model::load(shared_path(draft_file));
    const Tokenizer tok = Tokenizer::from_gguf(target.file());
    const Got plain = generate(target, tok, 256, SpecMode::kNone);
    const Got drafted = generate(target, tok, 256, SpecMode::kDraft, &draft);
    expect_same(plain, drafted);
    EXPECT_GT(drafted.stats.spec.draft_tokens, 0);
    std::printf("[ spec     ] %s drafted by %s: %lld of %lld drafts accepted\n", target_file.c_str(), draft_file.c_str(),
                static_cast<long long>(drafted.stats.spec.accepted_tokens),
                static_cast<long long>(drafted.stats.spec.draft_tokens));
  }
}

TEST(DraftModel, AnotherVocabularyIsRefused) {
  const std::string target_file = "models/stories260K.gguf", draft_file = "models/llama-2-tiny-random.gguf";
  GGUFD_REQUIRE_SHARED(target_file);
  GGUFD_REQUIRE_SHARED(draft_file);
  const Model target = Model::load(shared_path(target_file));
  const Model draft = Model::load(shared_path(draft_file));
  const Tokenizer tok = Tokenizer::from_gguf(target.file());
  SchedulerOptions o{.n_slots = 1, .n_ctx = 64, .max_queue = 1, .prefill_chunk = 16, .n_threads = 1};
  o.spec = SpecMode::kDraft;
  try {
    Scheduler s(target, tok, o, &draft);
    ADD_FAILURE() << "accepted a draft model of another vocabulary";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "the draft model's vocabulary has 32000 tokens, the model's 512: a draft model must "
                           "have the same vocabulary");
  }
  o.spec = SpecMode::kNgram;
  EXPECT_THROW({ Scheduler s(target, tok, o, &target); }, std::invalid_argument) << "a draft model but no draft mode";
}

}  // namespace
}  // namespace engine
