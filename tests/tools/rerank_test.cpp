// /v1/rerank against llama-server's scores (tests/data/reference/rerank-bert.json): the synthetic
// BERT cross-encoder is made here with `ggufd synth`'s library, from the seed the reference names,
// served, and every document scored and ordered as llama.cpp does.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/server/fixture.h"
#include "tools/synth/synth.h"

namespace ggufd::test {
namespace {

using nlohmann::json;

json reference() {
  std::ifstream in(std::string(GGUFD_TEST_DATA_DIR) + "/reference/rerank-bert.json");
  return json::parse(in);
}

void check_type(const std::string& type, double tolerance) {
  GGUFD_REQUIRE_SHARED("tokenizer/ggml-vocab-bert-bge.gguf");
  const json ref = reference();
  engine::synth::Options o;
  o.shape = *engine::synth::find_shape("bert-rerank");
  o.type = *engine::synth::find_file_type(type);
  o.seed = 18;
  o.vocab_from = shared_path("tokenizer/ggml-vocab-bert-bge.gguf");
  const std::string path = (std::filesystem::temp_directory_path() / ("ggufd-rerank-" + type + "-" +
                                                                        std::to_string(::getpid()) + ".gguf")).string();
  engine::synth::write_model(o, path);
  {
    server::ServiceOptions so = test_options();
    so.model_path = path;
    so.alias = "ranker";
    RunningService service(so);
    ASSERT_TRUE(service.ready()) << service.service().load_error();
    const json models = http_request(service.port(), "GET", "/v1/models").json();
    EXPECT_EQ(models["data"][0]["capabilities"], json::array({"rerank"}));
    const json& sets = ref.at("sets");
    const json& scores = ref.at("models").at(type).at("relevance_scores");
    for (size_t s = 0; s < sets.size(); ++s) {
      json docs = json::array();
      int64_t tokens = 0;
      for (const json& d : sets[s].at("documents")) {
        docs.push_back(d.at("text"));
        tokens += 2 + static_cast<int64_t>(sets[s].at("query_tokens").size() + d.at("tokens").size());  // [CLS] q [SEP] d
      }
      const HttpReply r = http_request(service.port(), "POST", s % 2 ? "/rerank" : "/v1/rerank",
                                       json{{"query", sets[s].at("query")}, {"documents", docs}, {"return_documents", true}}.dump());
      ASSERT_EQ(r.status, 200) << r.body;
      const json j = r.json();
      EXPECT_EQ(j["usage"]["prompt_tokens"], tokens) << "set " << s;
      ASSERT_EQ(j["results"].size(), docs.size());
      double last = INFINITY;
      for (const json& res : j["results"]) {
        const auto i = res["index"].get<size_t>();
        const double score = res["relevance_score"].get<double>();
        EXPECT_NEAR(score, scores[s][i].get<double>(), tolerance) << "set " << s << " document " << i;
        EXPECT_LE(score, last);
        last = score;
        EXPECT_EQ(res["document"]["text"], docs[i]);
      }
      const HttpReply top = http_request(service.port(), "POST", "/v1/rerank",
                                         json{{"query", sets[s].at("query")}, {"documents", docs}, {"top_n", 1}}.dump());
      ASSERT_EQ(top.json()["results"].size(), 1u);
      EXPECT_EQ(top.json()["results"][0]["index"], j["results"][0]["index"]);
      EXPECT_FALSE(top.json()["results"][0].contains("document"));
    }
    // a reranker gives no embeddings and does not generate
    EXPECT_EQ(http_request(service.port(), "POST", "/v1/embeddings", json{{"input", "a"}}.dump()).status, 400);
    EXPECT_EQ(http_request(service.port(), "POST", "/v1/completions", json{{"prompt", "a"}}.dump()).status, 400);
    EXPECT_EQ(http_request(service.port(), "POST", "/v1/rerank", json{{"query", "a"}, {"documents", {1}}}.dump()).status, 400);
    EXPECT_EQ(http_request(service.port(), "POST", "/v1/rerank", json{{"documents", {"a"}}}.dump()).status, 400);
  }
  std::filesystem::remove(path);
}

// The head's scores differ from llama.cpp's by float rounding (F32) and by the activations'
// rounding to 8 bits in llama.cpp's Q8_0 products (ours keep them in f32 here).
TEST(Rerank, MatchesLlamaServerF32) { check_type("F32", 2e-3); }
TEST(Rerank, MatchesLlamaServerQ8_0) { check_type("Q8_0", 2e-2); }

}  // namespace
}  // namespace ggufd::test
