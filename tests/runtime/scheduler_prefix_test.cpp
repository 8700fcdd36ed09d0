// The scheduler with prefixes shared across slots, on the fake evaluator given real cache
// bookkeeping (a KvCache and a PrefixCache, as ModelEvaluator has): another slot starts after the
// blocks one slot computed, a conversation's next turn after the previous reply, and a cache with
// no room beyond the slots' own evicts instead of failing.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/model/kv_cache.h"
#include "engine/runtime/prefix_cache.h"
#include "engine/runtime/scheduler.h"
#include "tests/runtime/scheduler_fakes.h"

namespace engine {
namespace {

using namespace engine::test;

constexpr int32_t kPrefixBlock = PrefixCache::kBlockTokens;

// The fake's logits, with the cells a forward pass would take from a KvCache shared through a
// PrefixCache; counts the tokens evaluated per sequence.
class SharingFakeEvaluator : public FakeEvaluator {
 public:
  explicit SharingFakeEvaluator(int64_t n_cells) : kv_(one_head_hparams(), n_cells), prefix_(kv_) {}

  void eval(const Batch& batch) override {
    prefix_.make_room(batch.size());
    FakeEvaluator::eval(batch);  // checks each token comes at its sequence's next position
    std::lock_guard lock(mu_);
    for (int64_t i = 0; i < batch.size(); ++i) {
      kv_.cell_for(batch.seq[static_cast<size_t>(i)], batch.pos[static_cast<size_t>(i)]);
      ++evaluated_[batch.seq[static_cast<size_t>(i)]];
    }
  }
  int32_t truncate(SeqId seq, int32_t n_keep) override {
    std::lock_guard lock(mu_);
    cached[seq] = kv_.truncate(seq, n_keep);
    return FakeEvaluator::truncate(seq, cached[seq]);
  }
  int32_t prefix_block() const override { return kPrefixBlock; }
  int32_t share_prefix(SeqId seq, const std::vector<int32_t>& tokens, int32_t have, int32_t n_max) override {
    std::lock_guard lock(mu_);
    const int32_t n = prefix_.attach(seq, tokens, have, n_max);
    if (n > 0) cached[seq] = n;
    return n;
  }
  void publish_prefix(SeqId seq, const std::vector<int32_t>& tokens) override {
    std::lock_guard lock(mu_);
    prefix_.publish(seq, tokens);
  }
  CacheUse cache_use() const override {
    std::lock_guard lock(mu_);
    CacheUse u{kv_.n_cells() - kv_.n_free(), kv_.n_cells(), 0, 0, 0, prefix_.stats()};
    return u;
  }

  int64_t evaluated(SeqId seq) {
    std::lock_guard lock(mu_);
    return evaluated_[seq];
  }
  int64_t total_evaluated() {
    std::lock_guard lock(mu_);
    int64_t n = 0;
    for (const auto& [seq, count] : evaluated_) n += count;
    return n;
  }

 private:
  mutable std::mutex mu_;
  KvCache kv_;
  PrefixCache prefix_;
  std::map<SeqId, int64_t> evaluated_;
};

// n letters from `first` on, each the one after the last but for a jump every 7: what the fake
// would never generate itself.
std::vector<int32_t> letters(size_t n, int32_t first) {
  std::vector<int32_t> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = static_cast<int32_t>((first + static_cast<int32_t>(i) + static_cast<int32_t>(i / 7) * 3) % kLetters);
  return t;
}

GenerationRequest request(std::shared_ptr<TokenSink> sink, int64_t max_tokens, std::vector<int32_t> prompt) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0.0f;
  r.max_tokens = max_tokens;
  r.sink = std::move(sink);
  return r;
}

// Takes a millisecond per token and is cancelled when told: keeps a slot busy while a test needs
// it (the fake alone would finish a request in microseconds).
class HoldingSink : public RecordingSink {
 public:
  void on_token(TokenEvent&& event) override {
    std::this_thread::sleep_for(1ms);
    RecordingSink::on_token(std::move(event));
  }
  bool cancelled() const override { return released_ || RecordingSink::cancelled(); }
  void release() { released_ = true; }

  // Waits (at most 30 s) for the first token.
  void wait_for_a_token() {
    for (int i = 0; i < 30000 && events().empty(); ++i) std::this_thread::sleep_for(1ms);
    ASSERT_FALSE(events().empty());
  }

 private:
  std::atomic<bool> released_{false};
};

// The fake's greedy continuation of a prompt ending in `last`: the letters after it.
std::string continuation(int32_t last, int n) {
  std::string s;
  for (int i = 1; i <= n; ++i) s += static_cast<char>('a' + (last + i) % kLetters);
  return s;
}

class SchedulerPrefixTest : public testing::Test {
 protected:
  // Two slots of n_ctx over `ev`, which the fixture keeps until the scheduler is gone.
  template <class Evaluator>
  Evaluator& start(std::unique_ptr<Evaluator> ev, int64_t n_ctx = 256) {
    Evaluator& e = *ev;
    evaluator_ = std::move(ev);
    scheduler_ = std::make_unique<Scheduler>(
        e, tokenizer_, SchedulerOptions{.n_slots = 2, .n_ctx = n_ctx, .max_queue = 4, .prefill_chunk = 64, .n_threads = 1});
    return e;
  }
  void TearDown() override { scheduler_.reset(); }

  // a generates on slot 0 (until its context is full or b is done); meanwhile b goes to slot 1.
  // Returns b's sink.
  std::shared_ptr<RecordingSink> two_slots(const std::vector<int32_t>& a_prompt, const std::vector<int32_t>& b_prompt) {
    auto a = std::make_shared<HoldingSink>();
    EXPECT_EQ(scheduler_->submit(request(a, -1, a_prompt)), SubmitStatus::kAccepted);
    a->wait_for_a_token();
    auto b = std::make_shared<RecordingSink>();
    EXPECT_EQ(scheduler_->submit(request(b, 3, b_prompt)), SubmitStatus::kAccepted);
    EXPECT_EQ(b->wait(), FinishReason::kLength);
    a->release();
    EXPECT_EQ(a->wait(), FinishReason::kCancelled) << "a ran all along";
    return b;
  }

  Tokenizer tokenizer_ = letters_tokenizer();
  std::unique_ptr<BatchEvaluator> evaluator_;  // outlives scheduler_
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_F(SchedulerPrefixTest, AnotherSlotStartsAfterTheBlocksOneSlotComputed) {
  SharingFakeEvaluator& fake = start(std::make_unique<SharingFakeEvaluator>(2 * 1024 + 4 * kPrefixBlock), 1024);
  const std::vector<int32_t> a = letters(80, 0);
  std::vector<int32_t> b(a.begin(), a.begin() + 70);
  b.push_back(3);
  b.push_back(9);
  const auto sink = two_slots(a, b);
  EXPECT_EQ(sink->usage().cached_tokens, 2 * kPrefixBlock) << "two whole blocks; the third differs after token 70";
  EXPECT_EQ(fake.evaluated(1), static_cast<int64_t>(b.size()) - 2 * kPrefixBlock + 2)
      << "slot 1 computed only the rest of the prompt, and two of the three tokens it generated";
  EXPECT_EQ(sink->text(), continuation(9, 3));
  const SchedulerStats s = scheduler_->stats();
  EXPECT_EQ(s.prefix_cache.block_tokens, kPrefixBlock);
  EXPECT_EQ(s.prefix_cache.lookups, 2);
  EXPECT_EQ(s.prefix_cache.hit_tokens, 2 * kPrefixBlock);
  EXPECT_GE(s.prefix_cache.blocks, 2);
}

// The default seam shares nothing: each slot has only its own prefix.
TEST_F(SchedulerPrefixTest, WithoutSharingTheOtherSlotComputesEverything) {
  start(std::make_unique<FakeEvaluator>(), 1024);
  const std::vector<int32_t> a = letters(80, 0);
  std::vector<int32_t> b(a.begin(), a.begin() + 70);
  b.push_back(3);
  const auto sink = two_slots(a, b);
  EXPECT_EQ(sink->usage().cached_tokens, 0);
  EXPECT_EQ(sink->text(), continuation(3, 3));
  EXPECT_EQ(scheduler_->stats().prefix_cache.block_tokens, 0);
}

// Turn 1 runs on a slot that then serves something else; turn 2 (turn 1's prompt and reply, and
// more) finds both in the shared blocks.
TEST_F(SchedulerPrefixTest, AConversationsNextTurnStartsAfterThePreviousReply) {
  SharingFakeEvaluator& fake = start(std::make_unique<SharingFakeEvaluator>(2 * 256));
  const std::vector<int32_t> turn1 = letters(40, 5);
  auto first = std::make_shared<RecordingSink>();
  ASSERT_EQ(scheduler_->submit(request(first, 30, turn1)), SubmitStatus::kAccepted);
  ASSERT_EQ(first->wait(), FinishReason::kLength);
  std::vector<int32_t> turn2 = turn1;
  for (const TokenEvent& e : first->events()) {
    if (e.token >= 0) turn2.push_back(e.token);
  }
  ASSERT_EQ(turn2.size(), 70u);
  // Shares only turn 1's first token: takes the same slot, whose own copy of turn 1 is then gone.
  auto other = std::make_shared<RecordingSink>();
  ASSERT_EQ(scheduler_->submit(request(other, 2, {turn1[0], 20, 21})), SubmitStatus::kAccepted);
  ASSERT_EQ(other->wait(), FinishReason::kLength);
  EXPECT_EQ(other->usage().cached_tokens, 1);
  turn2.insert(turn2.end(), {1, 2, 3, 4, 5});
  auto second = std::make_shared<RecordingSink>();
  const int64_t before = fake.total_evaluated();
  ASSERT_EQ(scheduler_->submit(request(second, 2, turn2)), SubmitStatus::kAccepted);
  ASSERT_EQ(second->wait(), FinishReason::kLength);
  EXPECT_EQ(second->usage().cached_tokens, 2 * kPrefixBlock) << "turn 1 (40) and 24 tokens of its reply";
  EXPECT_EQ(fake.total_evaluated() - before, 75 - 2 * kPrefixBlock + 1) << "the rest, and one generated token";
  EXPECT_EQ(second->text(), continuation(5, 2));
}

// Scoring a prompt needs every position's logits: nothing is taken from the cache.
TEST_F(SchedulerPrefixTest, PromptScoringComputesEverything) {
  start(std::make_unique<SharingFakeEvaluator>(2 * 256));
  const std::vector<int32_t> p = letters(70, 2);
  auto first = std::make_shared<RecordingSink>();
  ASSERT_EQ(scheduler_->submit(request(first, 1, p)), SubmitStatus::kAccepted);
  first->wait();
  auto scored = std::make_shared<RecordingSink>();
  GenerationRequest r = request(scored, 0, p);
  r.prompt_logprobs = true;
  ASSERT_EQ(scheduler_->submit(std::move(r)), SubmitStatus::kAccepted);
  ASSERT_EQ(scored->wait(), FinishReason::kLength);
  EXPECT_EQ(scored->usage().cached_tokens, 0);
  EXPECT_EQ(scored->events().size(), p.size() - 1);
}

// No cells beyond the slots' own: cached blocks live in what the slots leave free, and are evicted
// (least recently used first) whenever a slot needs the room. Every request still runs.
TEST_F(SchedulerPrefixTest, ACacheWithoutSpareCellsEvictsInsteadOfFailing) {
  start(std::make_unique<SharingFakeEvaluator>(2 * 128), 128);
  for (int round = 0; round < 6; ++round) {
    std::vector<std::shared_ptr<RecordingSink>> sinks;
    std::vector<GenerationRequest> both;
    for (int32_t k = 0; k < 2; ++k) {
      sinks.push_back(std::make_shared<RecordingSink>());
      std::vector<int32_t> p = letters(100, (round * 2 + k) % kLetters);
      p.push_back(static_cast<int32_t>(round));
      both.push_back(request(sinks.back(), 20, p));
    }
    ASSERT_EQ(scheduler_->submit_all(std::move(both)), SubmitStatus::kAccepted);
    for (int32_t k = 0; k < 2; ++k) {
      ASSERT_EQ(sinks[static_cast<size_t>(k)]->wait(), FinishReason::kLength) << sinks[static_cast<size_t>(k)]->error();
      EXPECT_EQ(sinks[static_cast<size_t>(k)]->text(), continuation(round, 20));
    }
  }
  const SchedulerStats s = scheduler_->stats();
  EXPECT_GT(s.prefix_cache.evictions, 0);
  EXPECT_LE(s.kv_cells_used, s.kv_cells_total);
}

}  // namespace
}  // namespace engine
