// Generation with Gemma 4's vocabulary (tests/data/reference/gemma4-tokenizer.json, whose
// end-of-generation set llama.cpp b10108 gave): <turn|>, <eos> and <|tool_response> end it, as
// llama-server stops on llama_vocab_is_eog; "</s>" is ordinary text there and does not.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/runtime/evaluator.h"
#include "engine/runtime/scheduler.h"
#include "engine/text/tokenizer/tokenizer.h"
#include "tests/runtime/scheduler_fakes.h"
#include "tests/support/reference_vocab.h"

// Its own namespace: the unity build puts this file beside others with their own fakes.
namespace engine::gemma4_eog_test {
namespace {

using engine::test::RecordingSink;

// Whatever the input, the k-th generated position's logits pick script[k] (the last entry from
// then on).
class ScriptedEvaluator : public BatchEvaluator {
 public:
  ScriptedEvaluator(int64_t n_vocab, std::vector<int32_t> script) : n_vocab_(n_vocab), script_(std::move(script)) {}

  int64_t n_vocab() const override { return n_vocab_; }
  void eval(const Batch& batch) override {
    rows_.clear();
    for (int64_t i = 0; i < batch.size(); ++i) {
      cached_[batch.seq[i]] = batch.pos[i] + 1;
      if (!batch.logits[i]) continue;
      std::vector<float> row(static_cast<size_t>(n_vocab_), 0.0f);
      row[static_cast<size_t>(script_[std::min(step_++, script_.size() - 1)])] = 10.0f;
      rows_.push_back(std::move(row));
    }
  }
  const float* logits(int64_t i) const override { return rows_[static_cast<size_t>(i)].data(); }
  int32_t truncate(SeqId seq, int32_t n_keep) override {
    cached_[seq] = std::min(cached_[seq], std::max(n_keep, 0));
    return cached_[seq];
  }
  CacheUse cache_use() const override { return {0, 1024, 0}; }

 private:
  int64_t n_vocab_;
  std::vector<int32_t> script_;
  size_t step_ = 0;
  std::map<SeqId, int32_t> cached_;
  std::vector<std::vector<float>> rows_;
};

struct Outcome {
  FinishReason reason;
  std::string text;
  int64_t completion_tokens;
};

// Generates (greedy, at most 6 tokens) after "Hi" with the scripted continuation "fox", then
// `token`, then "dog" forever.
Outcome generate_through(const Tokenizer& tok, int32_t token) {
  std::vector<int32_t> script = tok.encode("fox", false, false);
  script.push_back(token);
  for (int32_t id : tok.encode("dog", false, false)) script.push_back(id);
  ScriptedEvaluator eval(tok.n_vocab(), script);
  Scheduler scheduler(eval, tok, {.n_slots = 1, .n_ctx = 64, .max_queue = 1, .prefill_chunk = 16, .n_threads = 1});
  auto sink = std::make_shared<RecordingSink>();
  GenerationRequest r;
  r.prompt = tok.encode("Hi", true, false);
  r.sampling.temperature = 0.0f;
  r.max_tokens = 6;
  r.sink = sink;
  EXPECT_EQ(scheduler.submit(std::move(r)), SubmitStatus::kAccepted);
  const FinishReason reason = sink->wait();
  return {reason, sink->text(), sink->usage().completion_tokens};
}

TEST(Gemma4Generation, EndOfGenerationTokensStopIt) {
  const Tokenizer tok = ggufd::test::reference_tokenizer(ggufd::test::read_reference("gemma4-tokenizer.json"));
  const int64_t fox = static_cast<int64_t>(tok.encode("fox", false, false).size());
  for (const char* text : {"<turn|>", "<eos>", "<|tool_response>"}) {
    const int32_t id = tok.find_token(text);
    ASSERT_GE(id, 0) << text;
    const Outcome o = generate_through(tok, id);
    EXPECT_EQ(o.reason, FinishReason::kStop) << text;
    EXPECT_EQ(o.text, "fox") << text;
    EXPECT_EQ(o.completion_tokens, fox) << text;
  }
}

TEST(Gemma4Generation, EndOfSentenceMarkerIsText) {
  const Tokenizer tok = ggufd::test::reference_tokenizer(ggufd::test::read_reference("gemma4-tokenizer.json"));
  const Outcome o = generate_through(tok, tok.find_token("</s>"));
  EXPECT_EQ(o.reason, FinishReason::kLength);
  EXPECT_EQ(o.text.rfind("fox</s>dog", 0), 0u) << o.text;
}

}  // namespace
}  // namespace engine::gemma4_eog_test
