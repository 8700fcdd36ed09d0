// Metadata endpoints, tokenization, metrics, and the error paths of the HTTP layer.
#include <nlohmann/json.hpp>

#include "tests/server/fixture.h"

namespace ggufd::test {
namespace {

using nlohmann::json;

class Endpoints : public ServerTest {};

void expect_error_shape(const HttpReply& r, int status, const std::string& param = "") {
  EXPECT_EQ(r.status, status) << r.body;
  const json j = json::parse(r.body, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.body;
  ASSERT_TRUE(j.contains("error")) << r.body;
  EXPECT_TRUE(j["error"]["message"].is_string());
  EXPECT_TRUE(j["error"]["type"].is_string());
  EXPECT_TRUE(j["error"].contains("param"));
  EXPECT_TRUE(j["error"].contains("code"));
  if (!param.empty()) {
    EXPECT_EQ(j["error"]["param"], param) << r.body;
  }
}

TEST_F(Endpoints, HealthIsOk) {
  const HttpReply r = http_request(port(), "GET", "/health");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.json()["status"], "ok");
}

TEST_F(Endpoints, ModelsListAndObject) {
  const json list = http_request(port(), "GET", "/v1/models").json();
  EXPECT_EQ(list["object"], "list");
  ASSERT_EQ(list["data"].size(), 1u);
  EXPECT_EQ(list["data"][0]["id"], "stories");
  EXPECT_EQ(list["data"][0]["object"], "model");
  EXPECT_TRUE(list["data"][0]["created"].is_number_integer());
  EXPECT_EQ(list["data"][0]["owned_by"], "ggufd");
  const HttpReply one = http_request(port(), "GET", "/v1/models/stories");
  EXPECT_EQ(one.status, 200);
  EXPECT_EQ(one.json()["id"], "stories");
  const HttpReply missing = http_request(port(), "GET", "/v1/models/gpt-4");
  expect_error_shape(missing, 404);
  EXPECT_EQ(missing.json()["error"]["code"], "model_not_found");
}

TEST_F(Endpoints, MetadataSummarizesUnlessFull) {
  const HttpReply r = http_request(port(), "GET", "/v1/models/stories/metadata");
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = r.json();
  EXPECT_EQ(j["header"]["version"], 3);
  EXPECT_EQ(j["metadata"]["general.architecture"], "llama");
  EXPECT_EQ(j["metadata"]["tokenizer.ggml.tokens"]["length"], 512);
  EXPECT_EQ(j["tensors"].size(), 48u);
  EXPECT_EQ(j["tensors"][0]["type"], "F32");
  const json full = http_request(port(), "GET", "/v1/models/stories/metadata?full=true").json();
  EXPECT_EQ(full["metadata"]["tokenizer.ggml.tokens"].size(), 512u);
  expect_error_shape(http_request(port(), "GET", "/v1/models/nope/metadata"), 404);
}

TEST_F(Endpoints, PropsReportSettings) {
  const json j = http_request(port(), "GET", "/props").json();
  EXPECT_EQ(j["n_ctx"], 256);
  EXPECT_EQ(j["total_slots"], 4);
  EXPECT_EQ(j["chat_template_source"], "chatml (fallback)");
  EXPECT_TRUE(j["chat_template"].get<std::string>().find("im_start") != std::string::npos);
  EXPECT_TRUE(j["cpu_features"].is_string());
  EXPECT_TRUE(j["default_generation_settings"]["sampling"]["temperature"].is_number());
}

TEST_F(Endpoints, TokenizeAndDetokenizeRoundTrip) {
  const HttpReply t = post_json(port(), "/tokenize", {{"content", "Once upon a time"}});
  ASSERT_EQ(t.status, 200) << t.body;
  const json tokens = t.json()["tokens"];
  ASSERT_FALSE(tokens.empty());
  const HttpReply d = post_json(port(), "/detokenize", {{"tokens", tokens}});
  ASSERT_EQ(d.status, 200) << d.body;
  EXPECT_EQ(d.json()["content"], "Once upon a time");
  const json pieces = post_json(port(), "/tokenize", {{"content", "Once"}, {"with_pieces", true}}).json();
  EXPECT_TRUE(pieces["tokens"][0].contains("piece"));
  expect_error_shape(post_json(port(), "/detokenize", {{"tokens", {1, 99999}}}), 400, "tokens");
  expect_error_shape(post_json(port(), "/tokenize", {{"content", 5}}), 400, "content");
}

TEST_F(Endpoints, MetricsInPrometheusFormat) {
  http_request(port(), "GET", "/health");
  const HttpReply r = http_request(port(), "GET", "/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.headers.at("content-type").find("text/plain"), std::string::npos);
  EXPECT_NE(r.body.find("# TYPE ggufd_requests_total counter"), std::string::npos);
  EXPECT_NE(r.body.find("ggufd_requests_total{endpoint=\"/health\",status=\"200\"}"), std::string::npos);
  EXPECT_NE(r.body.find("ggufd_time_to_first_token_seconds_bucket{model=\"stories\",le=\"+Inf\"}"), std::string::npos);
  EXPECT_NE(r.body.find("ggufd_slots_total{model=\"stories\"} 4"), std::string::npos);
  // 4 slots x 256, and the prefix cache's cells: stories260K's take 640 bytes (5 layers x (32 + 32)
  // f16), whole blocks of 32
  const int64_t prefix_cells = test_options().model.engine.prefix_cache_bytes / 640 / 32 * 32;
  EXPECT_NE(r.body.find("ggufd_kv_cache_total_cells{model=\"stories\"} " + std::to_string(1024 + prefix_cells) + "\n"), std::string::npos);
  EXPECT_NE(r.body.find("# TYPE ggufd_prefix_cache_hit_tokens_total counter"), std::string::npos);
  EXPECT_NE(r.body.find("# TYPE ggufd_prefix_cache_blocks gauge"), std::string::npos);
}

TEST_F(Endpoints, ClientMistakesAre4xxInOpenAiShape) {
  expect_error_shape(http_request(port(), "POST", "/v1/completions", "{not json"), 400);
  expect_error_shape(http_request(port(), "POST", "/v1/completions", "[1,2]"), 400);
  expect_error_shape(post_json(port(), "/v1/completions", {{"prompt", "a"}, {"temperature", "hot"}}), 400,
                     "temperature");
  expect_error_shape(post_json(port(), "/v1/completions", {{"prompt", "a"}, {"temperature", 7}}), 400,
                     "temperature");
  expect_error_shape(post_json(port(), "/v1/completions", {{"prompt", "a"}, {"suffix", "b"}}), 400, "suffix");
  expect_error_shape(post_json(port(), "/v1/completions", {{"max_tokens", 3}}), 400, "prompt");
  expect_error_shape(post_json(port(), "/v1/completions", {{"prompt", "a"}, {"n", 99}}), 400, "n");
  expect_error_shape(post_json(port(), "/v1/completions", {{"prompt", "a"}, {"logit_bias", {{"x", 1}}}}), 400,
                     "logit_bias");
  expect_error_shape(post_json(port(), "/v1/chat/completions", {{"messages", "hi"}}), 400, "messages");
  expect_error_shape(post_json(port(), "/v1/chat/completions", {{"messages", {{{"role", "wizard"}, {"content", "x"}}}}}),
                     400, "messages");
  expect_error_shape(post_json(port(), "/v1/chat/completions",
                               {{"messages", {{{"role", "user"}, {"content", "x"}}}},
                                {"response_format", {{"type", "xml"}}}}),
                     400, "response_format");
  expect_error_shape(post_json(port(), "/v1/chat/completions",
                               {{"messages", {{{"role", "user"}, {"content", "x"}}}},
                                {"tools", {{{"type", "function"}}}}}),
                     400, "tools");
  expect_error_shape(http_request(port(), "GET", "/v1/nothing"), 404);
  expect_error_shape(http_request(port(), "GET", "/v1/completions"), 405);
}

TEST_F(Endpoints, PromptLongerThanContextIsRefused) {
  std::vector<int> ids(300, 100);
  const HttpReply r = post_json(port(), "/v1/completions", {{"prompt", ids}, {"max_tokens", 1}});
  expect_error_shape(r, 400);
  EXPECT_EQ(r.json()["error"]["code"], "context_length_exceeded");
  std::string text;
  for (int i = 0; i < 300; ++i) text += "Once upon a time ";
  const HttpReply chat = post_json(port(), "/v1/chat/completions",
                                   {{"messages", {{{"role", "user"}, {"content", text}}}}});
  EXPECT_EQ(chat.json()["error"]["code"], "context_length_exceeded");
}

TEST_F(Endpoints, OversizedBodyIs413BeforeItIsRead) {
  const std::string reply = raw_exchange(
      port(), "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              "Content-Length: 9437184\r\n\r\n{}");
  EXPECT_EQ(reply.rfind("HTTP/1.1 413", 0), 0u) << reply;
  EXPECT_NE(reply.find("\"error\""), std::string::npos) << reply;
}

TEST_F(Endpoints, MalformedHttpIs400) {
  const std::string reply = raw_exchange(port(), "BLAH\r\n\r\n");
  EXPECT_EQ(reply.rfind("HTTP/1.1 400", 0), 0u) << reply;
}

// --ollama-listen: a second port with the same routes, keys and limits.
TEST(SecondListener, ServesTheSameRoutesWithTheSameKeys) {
  GGUFD_REQUIRE_SHARED(kStories);
  auto s = start_service([](server::ServiceOptions& o) {
    o.second_host = "127.0.0.1";
    o.second_port = 0;
    o.http.api_keys = {"k"};
  });
  ASSERT_TRUE(s->ready());
  const uint16_t second = s->service().second_port();
  ASSERT_NE(second, 0);
  ASSERT_NE(second, s->port());
  const std::map<std::string, std::string> auth = {{"Authorization", "Bearer k"}};
  EXPECT_EQ(http_request(second, "GET", "/v1/models").status, 401);
  const HttpReply listed = http_request(second, "GET", "/v1/models", "", auth);
  ASSERT_EQ(listed.status, 200);
  EXPECT_EQ(listed.json()["data"].size(), 1u);
  const HttpReply done = post_json(second, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 2}}, auth);
  EXPECT_EQ(done.status, 200) << done.body;
}

}  // namespace
}  // namespace ggufd::test
