// Pooled embeddings against llama.cpp's (../shared/golden/embeddings, see the golden README):
// a BERT encoder with CLS pooling and a qwen3 decoder with last-token pooling, one sequence at a
// time and all of them in one batch. Compared by cosine similarity.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/model/encoder.h"
#include "engine/model/forward.h"
#include "engine/model/model.h"
#include "engine/model/pooling.h"
#include "tests/support/shared.h"

namespace engine {
namespace {

using ggufd::test::shared_path;

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

struct Case {
  std::vector<int32_t> tokens;
  std::vector<float> embedding;
};

std::vector<Case> load_cases(const std::string& relative) {
  std::ifstream in(shared_path(relative));
  const nlohmann::json j = nlohmann::json::parse(in);
  std::vector<Case> cases;
  for (const auto& c : j.at("cases")) cases.push_back({c.at("tokens").get<std::vector<int32_t>>(), c.at("embedding").get<std::vector<float>>()});
  return cases;
}

Pooler pooler_of(const Model& model, const Case& c) {
  const HParams& hp = model.hparams();
  return Pooler(hp.pooling, rank_pools_last(hp), hp.n_embd, static_cast<int64_t>(c.tokens.size()));
}

// Pools the hidden states a pass left for `cases` (every flagged token, in batch order).
template <class Pass>
std::vector<std::vector<float>> pool_all(const Model& model, const std::vector<Case>& cases, const Pass& pass,
                                         const Batch& batch) {
  std::vector<std::vector<float>> out;
  int64_t row = 0;
  for (const Case& c : cases) {
    Pooler pooler = pooler_of(model, c);
    for (size_t p = 0; p < c.tokens.size(); ++p) {
      if (pooler.wants(static_cast<int64_t>(p))) pooler.add(static_cast<int64_t>(p), pass.hidden(row++));
    }
    out.push_back(pooler.finish());
  }
  EXPECT_EQ(row, batch.n_hidden());
  return out;
}

// The batch of `cases` as sequences 0, 1, ..., flagging what the model's pooling needs.
Batch batch_of(const Model& model, const std::vector<Case>& cases) {
  Batch batch;
  for (size_t s = 0; s < cases.size(); ++s) {
    const Pooler pooler = pooler_of(model, cases[s]);
    for (size_t p = 0; p < cases[s].tokens.size(); ++p) {
      batch.add(cases[s].tokens[p], static_cast<SeqId>(s), static_cast<int32_t>(p), false, pooler.wants(static_cast<int64_t>(p)));
    }
  }
  return batch;
}

void expect_close(const std::vector<std::vector<float>>& ours, const std::vector<Case>& cases, double min_cosine) {
  ASSERT_EQ(ours.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    ASSERT_EQ(ours[i].size(), cases[i].embedding.size());
    EXPECT_GE(cosine(ours[i], cases[i].embedding), min_cosine) << "case " << i;
  }
}

TEST(EmbeddingGolden, BertClsPooling) {
  GGUFD_REQUIRE_SHARED("models/synth/synth-bert-Q8_0.gguf");
  const Model model = Model::load(shared_path("models/synth/synth-bert-Q8_0.gguf"));
  ASSERT_EQ(model.hparams().pooling, PoolingType::kCls);
  ASSERT_FALSE(model.hparams().causal);
  const std::vector<Case> cases = load_cases("golden/embeddings/synth-bert-Q8_0.json");
  ThreadPool pool(2);
  Encoder encoder(model);
  // all four sequences in one pass
  const Batch all = batch_of(model, cases);
  encoder.eval(all, pool);
  expect_close(pool_all(model, cases, encoder, all), cases, 0.999);
  // one at a time: the same vectors
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::vector<Case> one{cases[i]};
    const Batch b = batch_of(model, one);
    encoder.eval(b, pool);
    expect_close(pool_all(model, one, encoder, b), one, 0.999);
  }
}

TEST(EmbeddingGolden, Qwen3LastTokenPooling) {
  GGUFD_REQUIRE_SHARED("models/synth/synth-qwen3emb-F32.gguf");
  const Model model = Model::load(shared_path("models/synth/synth-qwen3emb-F32.gguf"));
  ASSERT_EQ(model.hparams().pooling, PoolingType::kLast);
  const std::vector<Case> cases = load_cases("golden/embeddings/synth-qwen3emb-F32.json");
  ThreadPool pool(2);
  KvCache cache(model.hparams(), 1024, KvType::kF16);
  Forward forward(model, 256);
  const Batch all = batch_of(model, cases);
  forward.eval(all, cache, pool);
  expect_close(pool_all(model, cases, forward, all), cases, 0.9999);
}

TEST(EmbeddingGolden, EncoderRefusesPartialSequences) {
  GGUFD_REQUIRE_SHARED("models/synth/synth-bert-Q8_0.gguf");
  const Model model = Model::load(shared_path("models/synth/synth-bert-Q8_0.gguf"));
  ThreadPool pool(1);
  Encoder encoder(model);
  Batch b;
  b.add(101, 0, 1, false, true);  // starts at position 1
  EXPECT_THROW(encoder.eval(b, pool), std::invalid_argument);
  b.clear();
  b.add(1000000, 0, 0, false, true);
  EXPECT_THROW(encoder.eval(b, pool), std::invalid_argument);
}

}  // namespace
}  // namespace engine
