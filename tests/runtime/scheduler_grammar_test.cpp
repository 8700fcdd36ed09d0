// Constrained decoding in the scheduler: a request's grammar masks its logits, the end token
// comes only when the grammar is complete, and neighbours without a grammar are untouched.
// Uses a fake evaluator over a 26-letter vocabulary that always favours the next letter.
#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <mutex>

#include "engine/model/batch.h"
#include "engine/runtime/scheduler.h"
#include "engine/text/grammar/gbnf.h"
#include "engine/text/grammar/token_masks.h"
#include "engine/text/tokenizer/tokenizer.h"
#include "gguf/file.h"
#include "gguf/writer.h"

namespace engine {
namespace {

using namespace std::chrono_literals;
constexpr int32_t kLetters = 26;
constexpr int32_t kEos = kLetters;

Tokenizer letters() {
  static std::vector<uint8_t> bytes;
  gguf::Writer w;
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (char c = 'a'; c <= 'z'; ++c) tokens.emplace_back(1, c), types.push_back(1);
  tokens.emplace_back("<eos>");
  types.push_back(3);
  w.set("tokenizer.ggml.model", gguf::OwnedValue::string("gpt2"));
  w.set("tokenizer.ggml.pre", gguf::OwnedValue::string("default"));
  w.set("tokenizer.ggml.tokens", gguf::OwnedValue::string_array(tokens));
  w.set("tokenizer.ggml.token_type", gguf::OwnedValue::i32_array(types));
  w.set("tokenizer.ggml.merges", gguf::OwnedValue::string_array({}));
  w.set("tokenizer.ggml.eos_token_id", gguf::OwnedValue::u32(kEos));
  bytes = w.to_bytes();
  return Tokenizer::from_gguf(gguf::File::parse(bytes));
}

// Logits favour the letter after the last token (4) over the one after that (2); EOS never.
class NextLetter : public BatchEvaluator {
 public:
  int64_t n_vocab() const override { return kLetters + 1; }
  void eval(const Batch& batch) override {
    rows_.clear();
    for (int64_t i = 0; i < batch.size(); ++i) {
      if (!batch.logits[i]) continue;
      std::vector<float> row(static_cast<size_t>(n_vocab()), 0.0f);
      row[static_cast<size_t>((batch.tokens[i] + 1) % kLetters)] = 4.0f;
      row[static_cast<size_t>((batch.tokens[i] + 2) % kLetters)] = 2.0f;
      rows_.push_back(std::move(row));
    }
  }
  const float* logits(int64_t i) const override { return rows_[static_cast<size_t>(i)].data(); }
  int32_t truncate(SeqId, int32_t) override { return 0; }  // keeps nothing: every prompt is evaluated
  CacheUse cache_use() const override { return {0, 1024, 0}; }

 private:
  std::vector<std::vector<float>> rows_;
};

class Sink : public TokenSink {
 public:
  void on_token(TokenEvent&& e) override {
    std::lock_guard lock(mu_);
    text_ += e.text;
    if (e.token >= 0) logprobs_.push_back(e.logprob);
  }
  void on_finish(FinishReason r, const Usage&, const std::string& error) override {
    std::lock_guard lock(mu_);
    reason_ = r;
    error_ = error;
    done_ = true;
    cv_.notify_all();
  }
  bool cancelled() const override { return false; }
  FinishReason wait() {
    std::unique_lock lock(mu_);
    EXPECT_TRUE(cv_.wait_for(lock, 30s, [&] { return done_; }));
    return reason_;
  }
  std::string text() {
    std::lock_guard lock(mu_);
    return text_;
  }
  std::vector<float> logprobs() {
    std::lock_guard lock(mu_);
    return logprobs_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::string text_, error_;
  std::vector<float> logprobs_;
  FinishReason reason_ = FinishReason::kError;
  bool done_ = false;
};

class SchedulerGrammar : public testing::Test {
 protected:
  std::shared_ptr<const grammar::CompiledGrammar> compile(const char* gbnf) {
    return std::make_shared<grammar::CompiledGrammar>(grammar::parse_gbnf(gbnf), grammar::TokenVocab::from_tokenizer(tok_));
  }
  GenerationRequest request(std::shared_ptr<Sink> sink, int64_t max_tokens,
                            std::shared_ptr<const grammar::CompiledGrammar> g) {
    GenerationRequest r;
    r.prompt = {0, 1, 2};  // "abc": unconstrained, the fake goes on "defg..."
    r.sampling.temperature = 0.0f;
    r.max_tokens = max_tokens;
    r.grammar = std::move(g);
    r.sink = std::move(sink);
    return r;
  }

  Tokenizer tok_ = letters();
  NextLetter eval_;
  Scheduler scheduler_{eval_, tok_, {.n_slots = 3, .n_ctx = 64, .max_queue = 4, .prefill_chunk = 8, .n_threads = 1}};
};

TEST_F(SchedulerGrammar, GrammarSteersAndEndsGenerationWhileANeighbourRunsFree) {
  const auto g = compile(R"(root ::= "x" [a-c] [a-c] "zz")");
  auto constrained = std::make_shared<Sink>(), free = std::make_shared<Sink>();
  std::vector<GenerationRequest> both;
  both.push_back(request(constrained, 50, g));
  both.push_back(request(free, 5, nullptr));
  ASSERT_EQ(scheduler_.submit_all(std::move(both)), SubmitStatus::kAccepted);
  // "x" is forced; among a-c all logits tie at 0 after x (ties: lowest id), then "b" follows "a".
  EXPECT_EQ(constrained->wait(), FinishReason::kStop);
  EXPECT_EQ(constrained->text(), "xabzz");
  EXPECT_EQ(free->wait(), FinishReason::kLength);
  EXPECT_EQ(free->text(), "defgh");
}

TEST_F(SchedulerGrammar, EachChoiceHasItsOwnStateAndLogprobsAreConstrained) {
  const auto g = compile(R"(root ::= [x-z] [a-z]*)");
  std::vector<std::shared_ptr<Sink>> sinks;
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < 3; ++i) {
    sinks.push_back(std::make_shared<Sink>());
    GenerationRequest r = request(sinks.back(), 4, g);
    r.sampling.temperature = 1.0f;
    r.sampling.seed = static_cast<uint64_t>(i);
    r.sampling.logprobs = true;
    reqs.push_back(std::move(r));
  }
  ASSERT_EQ(scheduler_.submit_all(std::move(reqs)), SubmitStatus::kAccepted);
  for (auto& s : sinks) {
    EXPECT_EQ(s->wait(), FinishReason::kLength);  // [a-z]* never completes: cut at max_tokens
    const std::string t = s->text();
    ASSERT_EQ(t.size(), 4u);
    EXPECT_TRUE(t[0] >= 'x' && t[0] <= 'z') << t;
    // The first token's logprob is under the constrained distribution: over x, y, z only (all
    // logits 0 after "c", the fake favours d and e, which are masked): log(1/3).
    EXPECT_NEAR(s->logprobs().at(0), std::log(1.0f / 3.0f), 1e-4) << t;
  }
}

TEST_F(SchedulerGrammar, TheEndTokenOnlyWhenComplete) {
  // "q" then optionally more q's: complete after the first, so EOS becomes possible, but the fake
  // never favours it; the limit ends it. With "ignore_eos" the grammar still ends the request.
  const auto g = compile(R"(root ::= "q" "r"?)");
  auto s = std::make_shared<Sink>();
  GenerationRequest r = request(s, 10, g);
  r.ignore_eos = true;
  ASSERT_EQ(scheduler_.submit(std::move(r)), SubmitStatus::kAccepted);
  EXPECT_EQ(s->wait(), FinishReason::kStop);
  EXPECT_EQ(s->text(), "qr");  // after q the fake favours r (4) over EOS (0)
}

}  // namespace
}  // namespace engine
