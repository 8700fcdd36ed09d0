// Embedding requests through the scheduler on real models (../shared): many at once, next to
// generation, pooled vectors equal to llama.cpp's (golden/embeddings).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/model/model.h"
#include "engine/runtime/scheduler.h"
#include "engine/text/tokenizer/tokenizer.h"
#include "gguf/file.h"
#include "tests/support/shared.h"
#include "tests/support/vectors.h"

namespace engine {
namespace {

using ggufd::test::cosine;

using ggufd::test::shared_path;

class EmbeddingSink : public TokenSink {
 public:
  void on_token(TokenEvent&& event) override {
    std::lock_guard lock(mu_);
    tokens_ += event.token >= 0;
  }
  void on_embedding(std::vector<float>&& pooled) override {
    std::lock_guard lock(mu_);
    ++embeddings_;
    pooled_ = std::move(pooled);
  }
  void on_finish(FinishReason reason, const Usage& usage, const std::string& error) override {
    std::lock_guard lock(mu_);
    reason_ = reason;
    usage_ = usage;
    error_ = error;
    done_ = true;
    cv_.notify_all();
  }
  bool cancelled() const override { return false; }

  void wait() {
    std::unique_lock lock(mu_);
    ASSERT_TRUE(cv_.wait_for(lock, std::chrono::seconds(30), [&] { return done_; }));
  }
  std::vector<float> pooled_;
  FinishReason reason_ = FinishReason::kError;
  Usage usage_;
  std::string error_;
  int embeddings_ = 0;
  int tokens_ = 0;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
};

// Submits every golden case at once (plus, on a decoder, a generation request beside them) and
// checks each pooled vector against llama.cpp's.
void check_golden(const std::string& model_file, const std::string& golden, double min_cosine, int n_slots) {
  const Model model = Model::load(shared_path(model_file));
  const Tokenizer tok = Tokenizer::from_gguf(model.file());
  SchedulerOptions opt;
  opt.n_slots = n_slots;
  opt.n_ctx = 256;
  opt.n_threads = 2;
  opt.prefill_chunk = 16;  // several passes per decoder prompt, several prompts per encoder pass
  Scheduler scheduler(model, tok, opt);
  std::ifstream in(shared_path(golden));
  const nlohmann::json cases = nlohmann::json::parse(in).at("cases");
  std::vector<GenerationRequest> requests;
  std::vector<std::shared_ptr<EmbeddingSink>> sinks;
  for (const auto& c : cases) {
    GenerationRequest r;
    r.prompt = c.at("tokens").get<std::vector<int32_t>>();
    r.pooling = model.hparams().pooling;
    sinks.push_back(std::make_shared<EmbeddingSink>());
    r.sink = sinks.back();
    requests.push_back(std::move(r));
  }
  auto generation = std::make_shared<EmbeddingSink>();
  if (model.hparams().causal) {
    GenerationRequest g;
    g.prompt = cases.at(0).at("tokens").get<std::vector<int32_t>>();
    g.max_tokens = 5;
    g.ignore_eos = true;
    g.sink = generation;
    ASSERT_EQ(scheduler.submit(std::move(g)), SubmitStatus::kAccepted);
  }
  ASSERT_EQ(scheduler.submit_all(std::move(requests)), SubmitStatus::kAccepted);
  for (size_t i = 0; i < sinks.size(); ++i) {
    sinks[i]->wait();
    EXPECT_EQ(sinks[i]->reason_, FinishReason::kStop) << sinks[i]->error_;
    EXPECT_EQ(sinks[i]->embeddings_, 1);
    EXPECT_EQ(sinks[i]->tokens_, 0);
    EXPECT_EQ(sinks[i]->usage_.prompt_tokens, static_cast<int64_t>(cases.at(i).at("tokens").size()));
    EXPECT_GE(cosine(sinks[i]->pooled_, cases.at(i).at("embedding").get<std::vector<float>>()), min_cosine)
        << "case " << i;
  }
  if (model.hparams().causal) {
    generation->wait();
    EXPECT_EQ(generation->tokens_, 5);
    EXPECT_EQ(generation->embeddings_, 0);
  }
}

TEST(SchedulerEmbeddings, DecoderLastTokenPoolingBesideGeneration) {
  GGUFD_REQUIRE_SHARED("models/synth/synth-qwen3emb-F32.gguf");
  check_golden("models/synth/synth-qwen3emb-F32.gguf", "golden/embeddings/synth-qwen3emb-F32.json", 0.9999, 3);
}

TEST(SchedulerEmbeddings, EncoderManyPromptsPerPass) {
  GGUFD_REQUIRE_SHARED("models/synth/synth-bert-Q8_0.gguf");
  check_golden("models/synth/synth-bert-Q8_0.gguf", "golden/embeddings/synth-bert-Q8_0.json", 0.999, 8);
}

TEST(SchedulerEmbeddings, EncoderRefusesGeneration) {
  GGUFD_REQUIRE_SHARED("models/synth/synth-bert-Q8_0.gguf");
  const Model model = Model::load(shared_path("models/synth/synth-bert-Q8_0.gguf"));
  const Tokenizer tok = Tokenizer::from_gguf(model.file());
  Scheduler scheduler(model, tok, SchedulerOptions{});
  auto sink = std::make_shared<EmbeddingSink>();
  GenerationRequest r;
  r.prompt = {101, 7592, 102};
  r.sink = sink;
  ASSERT_EQ(scheduler.submit(std::move(r)), SubmitStatus::kAccepted);
  sink->wait();
  EXPECT_EQ(sink->reason_, FinishReason::kError);
  EXPECT_NE(sink->error_.find("embeddings only"), std::string::npos) << sink->error_;
}

}  // namespace
}  // namespace engine
