// /v1/embeddings over HTTP: a BERT encoder (the shared synth-bert, CLS pooling) and a generation
// model given --pooling; every input shape, the encodings, dimensions, normalization, limits, and
// what each kind of model refuses.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/server/fixture.h"
#include "tests/support/vectors.h"

namespace ggufd::test {
namespace {

using ggufd::test::cosine;

using nlohmann::json;

constexpr const char* kBert = "models/synth/synth-bert-Q8_0.gguf";

double norm(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += static_cast<double>(x) * x;
  return std::sqrt(s);
}

std::vector<float> decode_base64_floats(const std::string& s) {
  auto value = [](char c) -> uint32_t {
    if (c >= 'A' && c <= 'Z') return static_cast<uint32_t>(c - 'A');
    if (c >= 'a' && c <= 'z') return static_cast<uint32_t>(c - 'a' + 26);
    if (c >= '0' && c <= '9') return static_cast<uint32_t>(c - '0' + 52);
    return c == '+' ? 62u : 63u;
  };
  std::string bytes;
  for (size_t i = 0; i + 3 < s.size(); i += 4) {
    const uint32_t n = value(s[i]) << 18 | value(s[i + 1]) << 12 | (s[i + 2] == '=' ? 0 : value(s[i + 2]) << 6) |
                       (s[i + 3] == '=' ? 0 : value(s[i + 3]));
    bytes += static_cast<char>(n >> 16);
    if (s[i + 2] != '=') bytes += static_cast<char>((n >> 8) & 255);
    if (s[i + 3] != '=') bytes += static_cast<char>(n & 255);
  }
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

class BertEmbeddings : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(shared_path(kBert))) return;
    server::ServiceOptions o = test_options(kBert);
    o.model.alias = "bert";
    running_ = new RunningService(std::move(o));
  }
  static void TearDownTestSuite() {
    delete running_;
    running_ = nullptr;
  }
  void SetUp() override {
    GGUFD_REQUIRE_SHARED(kBert);
    ASSERT_NE(running_, nullptr);
    ASSERT_TRUE(running_->ready()) << running_->service().load_error();
  }
  static HttpReply post(const std::string& path, const json& body) {
    return http_request(running_->port(), "POST", path, body.dump());
  }
  static std::vector<std::vector<float>> vectors(const HttpReply& r) {
    std::vector<std::vector<float>> out;
    const json j = r.json();
    for (const json& d : j.at("data")) out.push_back(d.at("embedding").get<std::vector<float>>());
    return out;
  }
  static inline RunningService* running_ = nullptr;
};

TEST_F(BertEmbeddings, MatchReferenceVectorsNormalized) {
  std::ifstream in(shared_path("golden/embeddings/synth-bert-Q8_0.json"));
  const json cases = json::parse(in).at("cases");
  json texts = json::array();
  for (const json& c : cases) texts.push_back(c.at("prompt"));
  const HttpReply r = post("/v1/embeddings", {{"model", "bert"}, {"input", texts}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = r.json();
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["model"], "bert");
  const std::vector<std::vector<float>> v = vectors(r);
  ASSERT_EQ(v.size(), cases.size());
  int64_t tokens = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(j["data"][i]["object"], "embedding");
    EXPECT_EQ(j["data"][i]["index"], i);
    EXPECT_NEAR(norm(v[i]), 1.0, 1e-5);
    EXPECT_GE(cosine(v[i], cases[i].at("embedding").get<std::vector<float>>()), 0.999) << i;
    tokens += static_cast<int64_t>(cases[i].at("tokens").size());
  }
  EXPECT_EQ(j["usage"]["prompt_tokens"], tokens);
  EXPECT_EQ(j["usage"]["total_tokens"], tokens);
  // the same inputs as token arrays: the same vectors
  json ids = json::array();
  for (const json& c : cases) ids.push_back(c.at("tokens"));
  const std::vector<std::vector<float>> w = vectors(post("/v1/embeddings", {{"input", ids}}));
  ASSERT_EQ(w.size(), v.size());
  for (size_t i = 0; i < v.size(); ++i) EXPECT_GE(cosine(v[i], w[i]), 0.999999);
  // one token array, one string
  EXPECT_EQ(vectors(post("/v1/embeddings", {{"input", cases[0].at("tokens")}})).size(), 1u);
  EXPECT_GE(cosine(vectors(post("/v1/embeddings", {{"input", cases[1].at("prompt")}}))[0], v[1]), 0.999999);
}

TEST_F(BertEmbeddings, Base64DimensionsAndNormalization) {
  const std::vector<float> plain = vectors(post("/v1/embeddings", {{"input", "Hello world!"}}))[0];
  const HttpReply b = post("/v1/embeddings", {{"input", "Hello world!"}, {"encoding_format", "base64"}});
  ASSERT_EQ(b.status, 200) << b.body;
  EXPECT_EQ(decode_base64_floats(b.json()["data"][0]["embedding"].get<std::string>()), plain);
  const std::vector<float> cut = vectors(post("/v1/embeddings", {{"input", "Hello world!"}, {"dimensions", 16}}))[0];
  ASSERT_EQ(cut.size(), 16u);
  EXPECT_NEAR(norm(cut), 1.0, 1e-5);
  EXPECT_GE(cosine(cut, std::vector<float>(plain.begin(), plain.begin() + 16)), 0.99999);
  const std::vector<float> raw = vectors(post("/v1/embeddings", {{"input", "Hello world!"}, {"normalize", false}}))[0];
  EXPECT_GT(norm(raw), 2.0);  // the pooled state itself
  EXPECT_GE(cosine(raw, plain), 0.99999);
  EXPECT_EQ(vectors(post("/v1/embeddings", {{"input", "Hello world!"}, {"embd_normalize", -1}}))[0], raw);
}

TEST_F(BertEmbeddings, RefusesWhatItCannotDo) {
  auto expect_400 = [](const HttpReply& r, const std::string& param) {
    EXPECT_EQ(r.status, 400) << r.body;
    const json j = r.json();
    EXPECT_EQ(j["error"]["type"], "invalid_request_error") << r.body;
    if (!param.empty()) {
      EXPECT_EQ(j["error"]["param"], param) << r.body;
    }
  };
  expect_400(post("/v1/embeddings", json::object()), "input");
  expect_400(post("/v1/embeddings", {{"input", ""}}), "input");
  expect_400(post("/v1/embeddings", {{"input", json::array()}}), "input");
  expect_400(post("/v1/embeddings", {{"input", {1, 2, 999999}}}), "input");
  expect_400(post("/v1/embeddings", {{"input", {"a", 3}}}), "input");
  expect_400(post("/v1/embeddings", {{"input", 7}}), "input");
  expect_400(post("/v1/embeddings", {{"input", "a"}, {"encoding_format", "int8"}}), "encoding_format");
  expect_400(post("/v1/embeddings", {{"input", "a"}, {"dimensions", 0}}), "dimensions");
  expect_400(post("/v1/embeddings", {{"input", "a"}, {"dimensions", 100000}}), "dimensions");
  json many = json::array();
  for (int i = 0; i < 2049; ++i) many.push_back("x");
  expect_400(post("/v1/embeddings", {{"input", many}}), "input");
  // longer than the context (256 here): a 400, or cut with truncate
  std::string long_text;
  for (int i = 0; i < 400; ++i) long_text += "cat ";
  const HttpReply too_long = post("/v1/embeddings", {{"input", long_text}});
  expect_400(too_long, "input");
  EXPECT_NE(too_long.json()["error"]["message"].get<std::string>().find("truncate"), std::string::npos);
  const HttpReply cut = post("/v1/embeddings", {{"input", long_text}, {"truncate", true}});
  ASSERT_EQ(cut.status, 200) << cut.body;
  EXPECT_EQ(cut.json()["usage"]["prompt_tokens"], 256);
  // an encoder does not generate, and this one does not rank
  expect_400(post("/v1/completions", {{"prompt", "hi"}}), "");
  expect_400(post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "hi"}}}}}), "");
  expect_400(post("/v1/rerank", {{"query", "a"}, {"documents", {"b"}}}), "");
}

TEST_F(BertEmbeddings, ModelsSayWhatTheModelIs) {
  const json m = http_request(running_->port(), "GET", "/v1/models").json()["data"][0];
  EXPECT_EQ(m["capabilities"], json::array({"embeddings"}));
  EXPECT_EQ(m["pooling"], "cls");
  EXPECT_EQ(m["n_embd"], 128);
  EXPECT_EQ(m["architecture"], "bert");
  EXPECT_EQ(http_request(running_->port(), "GET", "/props").json()["capabilities"], json::array({"embeddings"}));
  EXPECT_EQ(http_request(running_->port(), "GET", "/v1/models/bert/metadata").json()["pooling"], "cls");
}

TEST_F(BertEmbeddings, ConcurrentRequestsShareTheModelAndGetTheirOwnVectors) {
  const std::vector<std::string> texts = {"a cat sits on the mat", "Hello world!", "the quick brown fox", "unrelated"};
  std::vector<std::vector<float>> alone;
  for (const std::string& t : texts) alone.push_back(vectors(post("/v1/embeddings", {{"input", t}}))[0]);
  const std::string before = http_request(running_->port(), "GET", "/metrics").body;
  std::vector<std::thread> clients;
  std::vector<std::vector<std::vector<float>>> got(8);
  for (size_t c = 0; c < got.size(); ++c) {
    clients.emplace_back([&, c] {
      json input = json::array();
      for (size_t i = 0; i < 12; ++i) input.push_back(texts[(c + i) % texts.size()]);
      got[c] = vectors(post("/v1/embeddings", {{"input", input}}));
    });
  }
  for (std::thread& t : clients) t.join();
  for (size_t c = 0; c < got.size(); ++c) {
    ASSERT_EQ(got[c].size(), 12u);
    for (size_t i = 0; i < 12; ++i) EXPECT_GE(cosine(got[c][i], alone[(c + i) % texts.size()]), 0.99999);
  }
  const std::string after = http_request(running_->port(), "GET", "/metrics").body;
  EXPECT_NE(after.find("ggufd_embedding_inputs_total"), std::string::npos);
  EXPECT_NE(before, after);
}

TEST(GenerationModelEmbeddings, OnlyWithPooling) {
  GGUFD_REQUIRE_SHARED(kStories);
  {
    auto plain = start_service();
    ASSERT_TRUE(plain->ready());
    const HttpReply r = http_request(plain->port(), "POST", "/v1/embeddings", json{{"input", "hi"}}.dump());
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_NE(r.body.find("--pooling"), std::string::npos) << r.body;
    EXPECT_EQ(http_request(plain->port(), "GET", "/v1/models").json()["data"][0]["capabilities"],
              json::array({"completion", "chat"}));
  }
  auto pooled = start_service([](server::ServiceOptions& o) { o.model.pooling = "mean"; });
  ASSERT_TRUE(pooled->ready()) << pooled->service().load_error();
  const HttpReply e = http_request(pooled->port(), "POST", "/v1/embeddings", json{{"input", {"hi", "there"}}}.dump());
  ASSERT_EQ(e.status, 200) << e.body;
  EXPECT_EQ(e.json()["data"].size(), 2u);
  EXPECT_EQ(e.json()["data"][0]["embedding"].size(), 64u);  // stories260K's n_embd
  const HttpReply c = http_request(pooled->port(), "POST", "/v1/completions", json{{"prompt", "Once"}, {"max_tokens", 3}}.dump());
  EXPECT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(http_request(pooled->port(), "GET", "/v1/models").json()["data"][0]["capabilities"],
            json::array({"completion", "chat", "embeddings"}));
  // rank pooling needs a classification head, which llama has none of (as in llama.cpp)
  auto ranker = start_service([](server::ServiceOptions& o) { o.model.pooling = "rank"; });
  EXPECT_FALSE(ranker->ready());
  EXPECT_NE(ranker->service().load_error().find("architecture llama has no classification head"), std::string::npos)
      << ranker->service().load_error();
}

}  // namespace
}  // namespace ggufd::test
