// The scheduler on a deterministic fake evaluator (no model): admission, chunked prefill, prefix
// reuse, cancellation, timeouts, n > 1, queue limits, failure isolation, prompt scoring and
// constrained decoding.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "engine/runtime/evaluator.h"
#include "engine/runtime/scheduler.h"
#include "engine/text/grammar/gbnf.h"
#include "engine/text/grammar/token_masks.h"
#include "engine/text/tokenizer/tokenizer.h"
#include "tests/runtime/scheduler_fakes.h"

namespace engine {
namespace {

using namespace std::chrono_literals;
using namespace engine::test;

class SchedulerTest : public testing::Test {
 protected:
  void start(SchedulerOptions o = {.n_slots = 2, .n_ctx = 64, .max_queue = 2, .prefill_chunk = 4, .n_threads = 1}) {
    scheduler_ = std::make_unique<Scheduler>(fake_, tokenizer_, o);
  }
  void TearDown() override { scheduler_.reset(); }

  // Prompt "abc" (tokens 0 1 2) and greedy sampling: generates "defg..." deterministically.
  static GenerationRequest request(std::shared_ptr<TokenSink> sink, int64_t max_tokens,
                                   std::vector<int32_t> prompt = {0, 1, 2}) {
    GenerationRequest r;
    r.prompt = std::move(prompt);
    r.sampling.temperature = 0.0f;
    r.max_tokens = max_tokens;
    r.sink = std::move(sink);
    return r;
  }

  Tokenizer tokenizer_ = letters_tokenizer();
  FakeEvaluator fake_;
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_F(SchedulerTest, GeneratesDeterministicallyAndStopsAtTheLimitOrEos) {
  start();
  auto sink = std::make_shared<RecordingSink>();
  ASSERT_EQ(scheduler_->submit(request(sink, 5)), SubmitStatus::kAccepted);
  EXPECT_EQ(sink->wait(), FinishReason::kLength);
  EXPECT_EQ(sink->text(), "defgh");
  EXPECT_EQ(sink->usage().completion_tokens, 5);
  EXPECT_EQ(sink->usage().prompt_tokens, 3);

  fake_.eos_after = 5;  // "f" is followed by EOS
  auto eos = std::make_shared<RecordingSink>();
  ASSERT_EQ(scheduler_->submit(request(eos, 50)), SubmitStatus::kAccepted);
  EXPECT_EQ(eos->wait(), FinishReason::kStop);
  EXPECT_EQ(eos->text(), "def");
}

TEST_F(SchedulerTest, LongPromptsArePrefilledInChunksBesideRunningDecodes) {
  start();
  auto first = std::make_shared<RecordingSink>();
  ASSERT_EQ(scheduler_->submit(request(first, 30)), SubmitStatus::kAccepted);
  auto second = std::make_shared<RecordingSink>();
  std::vector<int32_t> long_prompt(10);
  for (int i = 0; i < 10; ++i) long_prompt[static_cast<size_t>(i)] = i;
  ASSERT_EQ(scheduler_->submit(request(second, 3, long_prompt)), SubmitStatus::kAccepted);
  EXPECT_EQ(second->wait(), FinishReason::kLength);
  EXPECT_EQ(second->text(), "klm");
  EXPECT_EQ(first->wait(), FinishReason::kLength);
  for (int64_t size : fake_.sizes()) EXPECT_LE(size, 4 + 2) << "prefill chunk 4 plus one decode token per slot";
}

TEST_F(SchedulerTest, ReusesTheCachedPrefixOfTheSameSlot) {
  start({.n_slots = 1, .n_ctx = 64, .max_queue = 2, .prefill_chunk = 16, .n_threads = 1});
  auto a = std::make_shared<RecordingSink>();
  ASSERT_EQ(scheduler_->submit(request(a, 2, {0, 1, 2, 3, 4, 5})), SubmitStatus::kAccepted);
  a->wait();
  auto b = std::make_shared<RecordingSink>();
  ASSERT_EQ(scheduler_->submit(request(b, 2, {0, 1, 2, 3, 9})), SubmitStatus::kAccepted);
  b->wait();
  EXPECT_EQ(b->usage().cached_tokens, 4);
  EXPECT_EQ(b->text(), "kl");
}

// An evaluator that keeps less than asked (a sliding-window ring): the slot starts over from
// position 0 (the fake throws on any other position) and reports no cached tokens.
TEST_F(SchedulerTest, StartsOverWhenTheEvaluatorCannotKeepThePrefix) {
  start({.n_slots = 1, .n_ctx = 64, .max_queue = 2, .prefill_chunk = 16, .n_threads = 1});
  fake_.max_rewind = 1;
  auto a = std::make_shared<RecordingSink>();
  ASSERT_EQ(scheduler_->submit(request(a, 2, {0, 1, 2, 3, 4, 5})), SubmitStatus::kAccepted);
  a->wait();
  auto b = std::make_shared<RecordingSink>();
  ASSERT_EQ(scheduler_->submit(request(b, 2, {0, 1, 2, 3, 9})), SubmitStatus::kAccepted);
  EXPECT_EQ(b->wait(), FinishReason::kLength);
  EXPECT_EQ(b->usage().cached_tokens, 0);
  EXPECT_EQ(b->text(), "kl");
  // Within what it can keep the prefix is reused: b's prompt and first generated token.
  auto c = std::make_shared<RecordingSink>();
  ASSERT_EQ(scheduler_->submit(request(c, 2, {0, 1, 2, 3, 9, 10, 11})), SubmitStatus::kAccepted);
  c->wait();
  EXPECT_EQ(c->usage().cached_tokens, 6);
}

TEST_F(SchedulerTest, CancelledAndTimedOutRequestsEnd) {
  start();
  auto cancelled = std::make_shared<RecordingSink>(-1, 3);
  ASSERT_EQ(scheduler_->submit(request(cancelled, 50)), SubmitStatus::kAccepted);
  EXPECT_EQ(cancelled->wait(), FinishReason::kCancelled);
  EXPECT_GE(cancelled->usage().completion_tokens, 3);
  EXPECT_LT(cancelled->usage().completion_tokens, 50);

  auto late = std::make_shared<RecordingSink>();
  GenerationRequest r = request(late, 50);
  r.deadline = std::chrono::steady_clock::now() - 1ms;
  ASSERT_EQ(scheduler_->submit(std::move(r)), SubmitStatus::kAccepted);
  EXPECT_EQ(late->wait(), FinishReason::kTimeout);
  EXPECT_EQ(late->error(), "request deadline exceeded");
}

// A RecordingSink whose generated tokens wait until open() is called: holds the scheduler's
// thread so that nothing finishes (and frees room) before the test has looked.
class GatedSink : public RecordingSink {
 public:
  void on_token(TokenEvent&& event) override {
    {
      std::unique_lock lock(gate_mu_);
      gate_cv_.wait_for(lock, 30s, [&] { return open_; });
    }
    RecordingSink::on_token(std::move(event));
  }
  void open() {
    std::lock_guard lock(gate_mu_);
    open_ = true;
    gate_cv_.notify_all();
  }

 private:
  std::mutex gate_mu_;
  std::condition_variable gate_cv_;
  bool open_ = false;
};

TEST_F(SchedulerTest, ChoicesOfOneRequestAreQueuedAllOrNone) {
  start();
  std::vector<std::shared_ptr<GatedSink>> sinks;
  auto batch = [&](int n) {
    std::vector<GenerationRequest> rs;
    for (int i = 0; i < n; ++i) {
      sinks.push_back(std::make_shared<GatedSink>());
      rs.push_back(request(sinks.back(), 20));
    }
    return rs;
  };
  EXPECT_EQ(scheduler_->capacity(), 4);
  EXPECT_EQ(scheduler_->submit_all(batch(5)), SubmitStatus::kTooLarge);
  ASSERT_EQ(scheduler_->submit_all(batch(3)), SubmitStatus::kAccepted);
  // (the gates keep all three unfinished, however slowly this thread runs)
  EXPECT_EQ(scheduler_->submit_all(batch(2)), SubmitStatus::kQueueFull) << "3 + 2 > 4: none of the 2 queued";
  for (auto& s : sinks) s->open();
  for (size_t i = 5; i < 8; ++i) {
    EXPECT_EQ(sinks[i]->wait(), FinishReason::kLength);
    EXPECT_EQ(sinks[i]->text(), sinks[5]->text()) << "greedy choices of one prompt agree";
  }
  EXPECT_EQ(sinks[8]->finishes() + sinks[9]->finishes(), 0);
  EXPECT_EQ(scheduler_->submit(request(nullptr, 1, {})), SubmitStatus::kEmptyPrompt);
  EXPECT_EQ(scheduler_->submit(request(nullptr, 1, std::vector<int32_t>(64, 0))), SubmitStatus::kPromptTooLong);
  scheduler_->drain();
  EXPECT_EQ(scheduler_->submit(request(std::make_shared<RecordingSink>(), 1)), SubmitStatus::kDraining);
}

// An exception inside one request (its sink, its sampler) used to escape the scheduler thread
// and abort the process; now it ends that request with kError and the others go on.
TEST_F(SchedulerTest, AFailingRequestEndsAlone) {
  start();
  auto bad = std::make_shared<RecordingSink>(3);
  auto good = std::make_shared<RecordingSink>();
  ASSERT_EQ(scheduler_->submit(request(bad, 40)), SubmitStatus::kAccepted);
  ASSERT_EQ(scheduler_->submit(request(good, 40)), SubmitStatus::kAccepted);
  EXPECT_EQ(bad->wait(), FinishReason::kError);
  EXPECT_NE(bad->error().find("sink exploded"), std::string::npos) << bad->error();
  EXPECT_EQ(good->wait(), FinishReason::kLength);
  EXPECT_EQ(good->usage().completion_tokens, 40);

  // Parameters the sampler refuses (the HTTP layer checks them first; this is the last line).
  auto refused = std::make_shared<RecordingSink>();
  GenerationRequest r = request(refused, 5);
  r.sampling.top_p = -1.0f;
  ASSERT_EQ(scheduler_->submit(std::move(r)), SubmitStatus::kAccepted);
  EXPECT_EQ(refused->wait(), FinishReason::kError);
  EXPECT_NE(refused->error().find("top_p"), std::string::npos) << refused->error();

  // A failed evaluation fails what ran in it, and the scheduler serves on.
  fake_.fail_next = true;
  auto hit = std::make_shared<RecordingSink>();
  ASSERT_EQ(scheduler_->submit(request(hit, 5)), SubmitStatus::kAccepted);
  EXPECT_EQ(hit->wait(), FinishReason::kError);
  auto after = std::make_shared<RecordingSink>();
  ASSERT_EQ(scheduler_->submit(request(after, 5)), SubmitStatus::kAccepted);
  EXPECT_EQ(after->wait(), FinishReason::kLength) << "the scheduler still serves";
  EXPECT_EQ(after->text(), "defgh");
  EXPECT_EQ(bad->finishes() + good->finishes() + refused->finishes() + hit->finishes() + after->finishes(), 5);
}

TEST_F(SchedulerTest, MaxTokensZeroGeneratesNothing) {
  start();
  auto sink = std::make_shared<RecordingSink>();
  ASSERT_EQ(scheduler_->submit(request(sink, 0)), SubmitStatus::kAccepted);
  EXPECT_EQ(sink->wait(), FinishReason::kLength);
  EXPECT_EQ(sink->usage().completion_tokens, 0);
  EXPECT_TRUE(sink->events().empty());
  EXPECT_TRUE(fake_.sizes().empty()) << "nothing evaluated";
}

// Scoring a prompt: every token after the first gets log p(token | tokens before it), and that
// agrees with what generation reports for the same token in the same context.
TEST_F(SchedulerTest, PromptLogprobsScoreEveryTokenAfterTheFirst) {
  start();
  auto gen = std::make_shared<RecordingSink>();
  GenerationRequest g = request(gen, 3);
  g.sampling.logprobs = true;
  ASSERT_EQ(scheduler_->submit(std::move(g)), SubmitStatus::kAccepted);
  ASSERT_EQ(gen->wait(), FinishReason::kLength);
  std::vector<TokenEvent> generated;
  for (TokenEvent& e : gen->events()) {
    if (e.token >= 0) generated.push_back(e);
  }
  ASSERT_EQ(generated.size(), 3u);

  auto score = std::make_shared<RecordingSink>();
  GenerationRequest s = request(score, 0);
  for (const TokenEvent& e : generated) s.prompt.push_back(e.token);
  const std::vector<int32_t> prompt = s.prompt;
  s.prompt_logprobs = true;
  s.sampling.n_logprobs = 2;
  ASSERT_EQ(scheduler_->submit(std::move(s)), SubmitStatus::kAccepted);
  ASSERT_EQ(score->wait(), FinishReason::kLength);
  const std::vector<TokenEvent> scored = score->events();
  ASSERT_EQ(scored.size(), prompt.size() - 1);
  for (size_t i = 0; i < scored.size(); ++i) {
    EXPECT_TRUE(scored[i].prompt);
    EXPECT_EQ(scored[i].token, prompt[i + 1]);
    ASSERT_EQ(scored[i].top.size(), 2u);
    EXPECT_EQ(scored[i].top[0].id, (prompt[i] + 1) % kLetters);
  }
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_NEAR(scored[2 + k].logprob, generated[k].logprob, 1e-6) << k;  // "abc" + "def"
  }
  EXPECT_EQ(score->usage().completion_tokens, 0);
  EXPECT_EQ(score->usage().cached_tokens, 0) << "scoring evaluates the whole prompt";
}

// ---- constrained decoding: a request's grammar masks its logits ----

class SchedulerGrammarTest : public SchedulerTest {
 protected:
  void SetUp() override { start({.n_slots = 3, .n_ctx = 64, .max_queue = 4, .prefill_chunk = 8, .n_threads = 1}); }
  std::shared_ptr<const grammar::CompiledGrammar> compile(const char* gbnf) {
    return std::make_shared<grammar::CompiledGrammar>(grammar::parse_gbnf(gbnf),
                                                      grammar::TokenVocab::from_tokenizer(tokenizer_));
  }
};

TEST_F(SchedulerGrammarTest, GrammarSteersAndEndsGenerationWhileANeighbourRunsFree) {
  auto constrained = std::make_shared<RecordingSink>(), free = std::make_shared<RecordingSink>();
  std::vector<GenerationRequest> both;
  both.push_back(request(constrained, 50));
  both.back().grammar = compile(R"(root ::= "x" [a-c] [a-c] "zz")");
  both.push_back(request(free, 5));
  ASSERT_EQ(scheduler_->submit_all(std::move(both)), SubmitStatus::kAccepted);
  // "x" is forced; after it a-c all have logit 0 (ties: the lowest id), then "b" follows "a".
  EXPECT_EQ(constrained->wait(), FinishReason::kStop);
  EXPECT_EQ(constrained->text(), "xabzz");
  EXPECT_EQ(free->wait(), FinishReason::kLength);
  EXPECT_EQ(free->text(), "defgh");
}

TEST_F(SchedulerGrammarTest, EachChoiceHasItsOwnStateAndLogprobsAreConstrained) {
  const auto g = compile(R"(root ::= [x-z] [a-z]*)");
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < 3; ++i) {
    sinks.push_back(std::make_shared<RecordingSink>());
    reqs.push_back(request(sinks.back(), 4));
    reqs.back().grammar = g;
    reqs.back().sampling.temperature = 1.0f;
    reqs.back().sampling.seed = static_cast<uint64_t>(i);
    reqs.back().sampling.logprobs = true;
  }
  ASSERT_EQ(scheduler_->submit_all(std::move(reqs)), SubmitStatus::kAccepted);
  for (auto& s : sinks) {
    EXPECT_EQ(s->wait(), FinishReason::kLength);  // [a-z]* never completes: cut at max_tokens
    const std::string t = s->text();
    ASSERT_EQ(t.size(), 4u);
    EXPECT_TRUE(t[0] >= 'x' && t[0] <= 'z') << t;
    // Under the constrained distribution: after "c" the fake favours d and e, which are masked,
    // so x, y and z are equally likely: log(1/3).
    EXPECT_NEAR(s->events().at(0).logprob, std::log(1.0f / 3.0f), 1e-4) << t;
  }
}

TEST_F(SchedulerGrammarTest, TheGrammarEndsTheRequestEvenWithIgnoreEos) {
  auto s = std::make_shared<RecordingSink>();
  GenerationRequest r = request(s, 10);
  r.grammar = compile(R"(root ::= "q" "r"?)");
  r.ignore_eos = true;
  ASSERT_EQ(scheduler_->submit(std::move(r)), SubmitStatus::kAccepted);
  EXPECT_EQ(s->wait(), FinishReason::kStop);
  EXPECT_EQ(s->text(), "qr");  // after "q" the fake favours "r" (4) over the end (0)
}

TEST_F(SchedulerGrammarTest, ALazyGrammarAppliesFromItsTriggerOn) {
  // free, the fake writes "defgh"; with trigger "e" the grammar takes over at the "e"
  auto lazy = std::make_shared<RecordingSink>(), never = std::make_shared<RecordingSink>(),
       misfit = std::make_shared<RecordingSink>();
  std::vector<GenerationRequest> reqs;
  reqs.push_back(request(lazy, 10));
  reqs.back().grammar = compile(R"(root ::= "e" "zz")");
  reqs.back().grammar_triggers = {"e"};
  reqs.push_back(request(never, 5));
  reqs.back().grammar = compile(R"(root ::= "q")");
  reqs.back().grammar_triggers = {"q"};
  reqs.push_back(request(misfit, 5));
  reqs.back().grammar = compile(R"(root ::= "dx")");
  reqs.back().grammar_triggers = {"de"};  // the text from the trigger on does not fit: stays free
  ASSERT_EQ(scheduler_->submit_all(std::move(reqs)), SubmitStatus::kAccepted);
  EXPECT_EQ(lazy->wait(), FinishReason::kStop);
  EXPECT_EQ(lazy->text(), "dezz");
  EXPECT_EQ(never->wait(), FinishReason::kLength);
  EXPECT_EQ(never->text(), "defgh");
  EXPECT_EQ(misfit->wait(), FinishReason::kLength);
  EXPECT_EQ(misfit->text(), "defgh");
}

}  // namespace
}  // namespace engine
