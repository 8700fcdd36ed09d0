// /v1/embeddings over HTTP against llama.cpp's pooled vectors for the encoders ggufd made references
// for (tests/data/reference/embeddings-*.json, the model rebuilt with `ggufd synth`'s library):
// nomic-bert, jina-bert-v2. The server normalizes, so vectors are compared by cosine; the tokens by
// count.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/server/fixture.h"
#include "tests/support/synth_reference.h"
#include "tests/support/vectors.h"

namespace ggufd::test {
namespace {

using ggufd::test::cosine;

using nlohmann::json;

// `model`: what the metadata endpoint's "model" says of it (a subset).
void check_encoder(const std::string& reference, const std::string& type, double min_cosine, const json& model_info) {
  const json ref = read_reference(reference);
  GGUFD_REQUIRE_SHARED(ref.at("synth").at("vocab_from").get<std::string>());
  const SynthReferenceModel model(ref, type);
  server::ServiceOptions so = test_options();
  so.model.path = model.path();
  so.model.alias = "encoder";
  so.model.engine.n_ctx = 512;
  RunningService service(so);
  ASSERT_TRUE(service.ready()) << service.service().load_error();
  const json models = http_request(service.port(), "GET", "/v1/models").json();
  EXPECT_EQ(models["data"][0]["capabilities"], json::array({"embeddings"}));
  EXPECT_EQ(models["data"][0]["pooling"], "mean");
  EXPECT_EQ(models["data"][0]["n_embd"], 128);
  EXPECT_EQ(models["data"][0]["architecture"], model_info.at("architecture"));

  const json& cases = ref.at("models").at(type).at("cases");
  json input = json::array();
  int64_t tokens = 0;
  for (const json& c : cases) {
    input.push_back(c.at("prompt"));
    tokens += static_cast<int64_t>(c.at("tokens").size());
  }
  const HttpReply r = http_request(service.port(), "POST", "/v1/embeddings", json{{"input", input}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = r.json();
  EXPECT_EQ(j["usage"]["prompt_tokens"], tokens);
  ASSERT_EQ(j["data"].size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto got = j["data"][i]["embedding"].get<std::vector<float>>();
    const auto want = cases[i].at("embedding").get<std::vector<float>>();
    ASSERT_EQ(got.size(), want.size());
    EXPECT_GE(cosine(got, want), min_cosine) << "case " << i;
    double norm = 0;
    for (float x : got) norm += static_cast<double>(x) * x;
    EXPECT_NEAR(std::sqrt(norm), 1.0, 1e-5);
  }
  // the token ids llama.cpp used give the same vector as the text
  const HttpReply ids = http_request(service.port(), "POST", "/v1/embeddings", json{{"input", cases[0].at("tokens")}}.dump());
  ASSERT_EQ(ids.status, 200) << ids.body;
  EXPECT_GE(cosine(ids.json()["data"][0]["embedding"].get<std::vector<float>>(),
                   cases[0].at("embedding").get<std::vector<float>>()),
            min_cosine);
  // an encoder neither generates nor reranks
  EXPECT_EQ(http_request(service.port(), "POST", "/v1/completions", json{{"prompt", "a"}}.dump()).status, 400);
  EXPECT_EQ(http_request(service.port(), "POST", "/v1/rerank", json{{"query", "a"}, {"documents", {"b"}}}.dump()).status, 400);
  // the metadata endpoint describes the architecture as ggufd reads it
  const json meta = http_request(service.port(), "GET", "/v1/models/encoder/metadata").json();
  for (const auto& [key, value] : model_info.items()) EXPECT_EQ(meta["model"][key], value) << key;
}

const json kNomic = {{"architecture", "nomic-bert"}, {"rope", "neox, base 1000"}, {"ffn", "silu gated"},
                     {"attention", "bidirectional (encoder)"}};
const json kJina = {{"architecture", "jina-bert-v2"}, {"positions", "alibi, max bias 8"},
                    {"ffn", "gelu (tanh) gated"}, {"attention", "bidirectional (encoder)"}};

TEST(EmbeddingsReference, NomicBertF32) { check_encoder("embeddings-nomic-bert.json", "F32", 0.9999, kNomic); }
TEST(EmbeddingsReference, NomicBertQ8_0) { check_encoder("embeddings-nomic-bert.json", "Q8_0", 0.999, kNomic); }
TEST(EmbeddingsReference, JinaBertV2F32) { check_encoder("embeddings-jina-bert-v2.json", "F32", 0.9999, kJina); }
TEST(EmbeddingsReference, JinaBertV2Q8_0) { check_encoder("embeddings-jina-bert-v2.json", "Q8_0", 0.999, kJina); }

}  // namespace
}  // namespace ggufd::test
