// Scheduler on a real model (stories260K): failure isolation, atomic submission, prompt scoring.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "engine/model/model.h"
#include "engine/runtime/scheduler.h"
#include "engine/text/tokenizer/tokenizer.h"
#include "tests/support/shared.h"

namespace engine {
namespace {

constexpr const char* kStories = "models/stories260K.gguf";

// Records what the scheduler emits; optionally throws from on_token after `throw_after` tokens.
class RecordingSink : public TokenSink {
 public:
  explicit RecordingSink(int throw_after = -1) : throw_after_(throw_after) {}

  void on_token(TokenEvent&& event) override {
    std::lock_guard lock(mu_);
    if (!event.prompt && event.token >= 0 && throw_after_ >= 0 && generated_ >= throw_after_) {
      throw std::runtime_error("sink exploded");
    }
    if (!event.prompt && event.token >= 0) ++generated_;
    events_.push_back(std::move(event));
  }
  void on_finish(FinishReason reason, const Usage& usage, const std::string& error) override {
    std::lock_guard lock(mu_);
    ++finishes_;
    reason_ = reason;
    usage_ = usage;
    error_ = error;
    cv_.notify_all();
  }
  bool cancelled() const override { return false; }

  // Waits (at most 60 s) for the end; returns the finish reason.
  FinishReason wait() {
    std::unique_lock lock(mu_);
    EXPECT_TRUE(cv_.wait_for(lock, std::chrono::seconds(60), [&] { return finishes_ > 0; }));
    return reason_;
  }
  std::vector<TokenEvent> events() {
    std::lock_guard lock(mu_);
    return events_;
  }
  Usage usage() {
    std::lock_guard lock(mu_);
    return usage_;
  }
  std::string error() {
    std::lock_guard lock(mu_);
    return error_;
  }
  int finishes() {
    std::lock_guard lock(mu_);
    return finishes_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int throw_after_;
  int generated_ = 0;
  int finishes_ = 0;
  std::vector<TokenEvent> events_;
  FinishReason reason_ = FinishReason::Stop;
  Usage usage_;
  std::string error_;
};

class SchedulerTest : public testing::Test {
 protected:
  void SetUp() override {
    GGUFD_REQUIRE_SHARED(kStories);
    model_.emplace(Model::load(ggufd::test::shared_path(kStories)));
    tokenizer_.emplace(Tokenizer::from_gguf(model_->file()));
    const SchedulerOptions o{.n_slots = 2, .n_ctx = 256, .max_queue = 2, .prefill_chunk = 16, .n_threads = 1};
    scheduler_ = std::make_unique<Scheduler>(*model_, *tokenizer_, o);
  }
  void TearDown() override { scheduler_.reset(); }

  GenerationRequest request(std::shared_ptr<TokenSink> sink, int64_t max_tokens, float temperature = 0.0f) {
    GenerationRequest r;
    r.prompt = tokenizer_->encode("Once upon a time there was", true, false);
    r.sampling.temperature = temperature;
    r.max_tokens = max_tokens;
    r.ignore_eos = true;
    r.sink = std::move(sink);
    return r;
  }

  std::optional<Model> model_;
  std::optional<Tokenizer> tokenizer_;
  std::unique_ptr<Scheduler> scheduler_;
};

// An exception inside one request (its sink, its sampler) used to escape the scheduler thread
// and abort the process; now it ends that request with Error and the others go on.
TEST_F(SchedulerTest, AFailingRequestEndsAloneWithAnError) {
  auto bad = std::make_shared<RecordingSink>(3);
  auto good = std::make_shared<RecordingSink>();
  ASSERT_EQ(scheduler_->submit(request(bad, 40)), SubmitStatus::Accepted);
  ASSERT_EQ(scheduler_->submit(request(good, 40)), SubmitStatus::Accepted);
  EXPECT_EQ(bad->wait(), FinishReason::Error);
  EXPECT_NE(bad->error().find("sink exploded"), std::string::npos) << bad->error();
  EXPECT_EQ(good->wait(), FinishReason::Length);
  EXPECT_EQ(good->usage().completion_tokens, 40);

  // Parameters the sampler refuses (the HTTP layer checks them first; this is the last line).
  auto refused = std::make_shared<RecordingSink>();
  GenerationRequest r = request(refused, 5);
  r.sampling.top_p = -1.0f;
  ASSERT_EQ(scheduler_->submit(std::move(r)), SubmitStatus::Accepted);
  EXPECT_EQ(refused->wait(), FinishReason::Error);
  EXPECT_NE(refused->error().find("top_p"), std::string::npos) << refused->error();

  auto after = std::make_shared<RecordingSink>();
  ASSERT_EQ(scheduler_->submit(request(after, 5)), SubmitStatus::Accepted);
  EXPECT_EQ(after->wait(), FinishReason::Length) << "the scheduler still serves";
  EXPECT_EQ(bad->finishes() + good->finishes() + refused->finishes() + after->finishes(), 4);
}

TEST_F(SchedulerTest, SubmitAllIsAllOrNothing) {
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  auto batch = [&](int n) {
    std::vector<GenerationRequest> rs;
    for (int i = 0; i < n; ++i) {
      sinks.push_back(std::make_shared<RecordingSink>());
      rs.push_back(request(sinks.back(), 30));
    }
    return rs;
  };
  EXPECT_EQ(scheduler_->capacity(), 4);
  EXPECT_EQ(scheduler_->submit_all(batch(5)), SubmitStatus::TooLarge);
  ASSERT_EQ(scheduler_->submit_all(batch(3)), SubmitStatus::Accepted);
  EXPECT_EQ(scheduler_->submit_all(batch(2)), SubmitStatus::QueueFull) << "3 + 2 > 4: none of the 2 queued";
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(sinks[5 + i]->wait(), FinishReason::Length);
  EXPECT_EQ(sinks[8]->finishes() + sinks[9]->finishes(), 0);
}

TEST_F(SchedulerTest, MaxTokensZeroGeneratesNothing) {
  auto sink = std::make_shared<RecordingSink>();
  ASSERT_EQ(scheduler_->submit(request(sink, 0)), SubmitStatus::Accepted);
  EXPECT_EQ(sink->wait(), FinishReason::Length);
  EXPECT_EQ(sink->usage().completion_tokens, 0);
  EXPECT_TRUE(sink->events().empty());
}

// Scoring a prompt: every token after the first gets log p(token | tokens before it), and that
// agrees with what generation reports for the same token in the same context.
TEST_F(SchedulerTest, PromptLogprobsScoreEveryTokenAfterTheFirst) {
  auto gen = std::make_shared<RecordingSink>();
  GenerationRequest g = request(gen, 3);
  g.sampling.logprobs = true;
  ASSERT_EQ(scheduler_->submit(std::move(g)), SubmitStatus::Accepted);
  ASSERT_EQ(gen->wait(), FinishReason::Length);
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
  ASSERT_EQ(scheduler_->submit(std::move(s)), SubmitStatus::Accepted);
  ASSERT_EQ(score->wait(), FinishReason::Length);
  const std::vector<TokenEvent> scored = score->events();
  ASSERT_EQ(scored.size(), prompt.size() - 1);
  for (size_t i = 0; i < scored.size(); ++i) {
    EXPECT_TRUE(scored[i].prompt);
    EXPECT_EQ(scored[i].token, prompt[i + 1]);
    EXPECT_LE(scored[i].logprob, 0.0f);
    EXPECT_EQ(scored[i].top.size(), 2u);
  }
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_NEAR(scored[scored.size() - 3 + k].logprob, generated[k].logprob, 1e-3) << k;
  }
  EXPECT_EQ(score->usage().completion_tokens, 0);
  EXPECT_EQ(score->usage().cached_tokens, 0) << "scoring evaluates the whole prompt";
}

}  // namespace
}  // namespace engine
