// Hostile and odd requests (issue 13): each once crashed the server or gave a wrong answer.
#include <future>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/server/fixture.h"
#include "tests/support/raw_connection.h"

namespace ggufd::test {
namespace {

using nlohmann::json;

class Hardening : public ServerTest {};

bool healthy(uint16_t port) { return http_request(port, "GET", "/health").status == 200; }

json chat_body(const std::string& content) { return {{"messages", {{{"role", "user"}, {"content", content}}}}}; }

// A JSON text nested `depth` levels: [[[...]]] or {"a":{"a":...}}.
std::string nested(size_t depth, bool objects, const std::string& leaf = "1") {
  std::string s;
  s.reserve(depth * 6 + leaf.size());
  for (size_t i = 0; i < depth; ++i) s += objects ? "{\"a\":" : "[";
  s += leaf;
  for (size_t i = 0; i < depth; ++i) s += objects ? "}" : "]";
  return s;
}

void expect_400(const HttpReply& r, const std::string& param = "") {
  EXPECT_EQ(r.status, 400) << r.body.substr(0, 300);
  const json j = json::parse(r.body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error")) << r.body.substr(0, 300);
  if (!param.empty()) {
    EXPECT_EQ(j["error"]["param"], param) << r.body;
  }
}

// 1. top_p 0 threw on the scheduler thread and aborted the whole process.
TEST_F(Hardening, TopPZeroAndTinyValuesAreServed) {
  for (const json& top_p : {json(0), json(1e-50), json(0.0)}) {
    const HttpReply r = post_json(port(), "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 4}, {"top_p", top_p}});
    EXPECT_EQ(r.status, 200) << top_p << ": " << r.body;
  }
  json chat = chat_body("Hi");
  chat["top_p"] = 0;
  chat["max_tokens"] = 3;
  EXPECT_EQ(post_json(port(), "/v1/chat/completions", chat).status, 200);
  expect_400(post_json(port(), "/v1/completions", {{"prompt", "Once"}, {"top_p", 1.5}}), "top_p");
  expect_400(post_json(port(), "/v1/completions", {{"prompt", "Once"}, {"repeat_last_n", -2}}), "repeat_last_n");
  EXPECT_TRUE(healthy(port()));
}

TEST(HardeningDefaults, TopPZeroAsTheServersDefault) {
  GGUFD_REQUIRE_SHARED(kStories);
  server::ServiceOptions o = test_options();
  o.model.sampling_defaults.top_p = 0.0f;  // `ggufd serve --top-p 0`
  RunningService s(o);
  ASSERT_TRUE(s.ready());
  EXPECT_EQ(post_json(s.port(), "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 4}}).status, 200);
  EXPECT_TRUE(healthy(s.port()));
}

// 2-4. Deep nesting overflowed the stack in to_jinja and in nlohmann's copy constructor.
TEST_F(Hardening, DeepNestingIsRefusedWithTheLimit) {
  const std::string deep_message = R"({"messages":[{"role":"user","content":"hi","x":)" + nested(40000, true) + "}]}";
  HttpReply r = http_request(port(), "POST", "/v1/chat/completions", deep_message);
  expect_400(r);
  EXPECT_NE(r.body.find("64 levels"), std::string::npos) << r.body;
  EXPECT_EQ(r.json()["error"]["code"], "json_too_deep");

  const std::string deep_kwargs = R"({"messages":[{"role":"user","content":"hi"}],"chat_template_kwargs":)" +
                                  nested(50000, true) + "}";
  expect_400(http_request(port(), "POST", "/v1/chat/completions", deep_kwargs));
  const std::string deep_prompt = R"({"prompt":)" + nested(200000, false) + "}";
  expect_400(http_request(port(), "POST", "/v1/completions", deep_prompt));
  const std::string deep_tokens = R"({"content":)" + nested(100000, false, "\"x\"") + "}";
  expect_400(http_request(port(), "POST", "/tokenize", deep_tokens));

  // At the limit it is an ordinary request again (the nesting is in a field the template ignores).
  const std::string ok = R"({"messages":[{"role":"user","content":"hi","x":)" + nested(60, true) +
                         R"(}],"max_tokens":2})";
  EXPECT_EQ(http_request(port(), "POST", "/v1/chat/completions", ok).status, 200);
  EXPECT_TRUE(healthy(port()));
}

// 5. max_tokens 0: invalid for chat; for completions with echo + logprobs it scores the prompt.
TEST_F(Hardening, MaxTokensZero) {
  json chat = chat_body("Hi");
  chat["max_tokens"] = 0;
  expect_400(post_json(port(), "/v1/chat/completions", chat), "max_tokens");
  chat.erase("max_tokens");
  chat["max_completion_tokens"] = 0;
  expect_400(post_json(port(), "/v1/chat/completions", chat), "max_completion_tokens");

  const json plain = post_json(port(), "/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 0}}).json();
  EXPECT_EQ(plain["choices"][0]["text"], "");
  EXPECT_EQ(plain["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(plain["usage"]["completion_tokens"], 0);

  const HttpReply scored = post_json(port(), "/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 0},
                                                                 {"echo", true}, {"logprobs", 1}});
  ASSERT_EQ(scored.status, 200) << scored.body;
  const json s = scored.json();
  EXPECT_EQ(s["choices"][0]["text"], "Once upon a time");
  EXPECT_EQ(s["usage"]["completion_tokens"], 0);
  const json& lp = s["choices"][0]["logprobs"];
  const size_t n_prompt = s["usage"]["prompt_tokens"].get<size_t>();
  ASSERT_EQ(lp["tokens"].size(), n_prompt);
  ASSERT_EQ(lp["token_logprobs"].size(), n_prompt);
  EXPECT_TRUE(lp["token_logprobs"][0].is_null()) << "nothing precedes the first token";
  for (size_t i = 1; i < n_prompt; ++i) {
    EXPECT_LE(lp["token_logprobs"][i].get<double>(), 0.0);
    EXPECT_EQ(lp["top_logprobs"][i].size(), 1u);
  }

  // The scores agree with what generation reports for the same tokens.
  const json gen = post_json(port(), "/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 3},
                                                         {"temperature", 0}, {"logprobs", 0}}).json();
  const std::string full = "Once upon a time" + gen["choices"][0]["text"].get<std::string>();
  const json again = post_json(port(), "/v1/completions", {{"prompt", full}, {"max_tokens", 0},
                                                           {"echo", true}, {"logprobs", 0}}).json();
  const json& a = again["choices"][0]["logprobs"]["token_logprobs"];
  const json& g = gen["choices"][0]["logprobs"]["token_logprobs"];
  ASSERT_GE(a.size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_NEAR(a[a.size() - 3 + k].get<double>(), g[k].get<double>(), 1e-3) << k;
  }

  // Streamed: one echo chunk carrying the prompt's logprobs, then the finish.
  const HttpReply stream = post_json(port(), "/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 0},
                                                                 {"echo", true}, {"logprobs", 1}, {"stream", true}});
  const auto events = stream.events();
  ASSERT_GE(events.size(), 3u);
  const json first = json::parse(events[0]);
  EXPECT_EQ(first["choices"][0]["text"], "Once upon a time");
  EXPECT_EQ(first["choices"][0]["logprobs"]["tokens"].size(), n_prompt);
  EXPECT_EQ(json::parse(events[1])["choices"][0]["finish_reason"], "length");
}

// 6. A request that can never fit got 429 + Retry-After forever.
TEST_F(Hardening, RequestLargerThanTheServerIs400) {
  std::vector<std::string> prompts(16, "Once");
  const HttpReply r = post_json(port(), "/v1/completions", {{"prompt", prompts}, {"n", 16}, {"max_tokens", 1}});
  expect_400(r, "n");
  const std::string message = r.json()["error"]["message"];
  EXPECT_NE(message.find("256 sequences"), std::string::npos) << message;
  EXPECT_NE(message.find("12 (4 slots + 8 queued"), std::string::npos) << message;
  EXPECT_EQ(post_json(port(), "/v1/completions", {{"prompt", {"a", "b", "c"}}, {"n", 4}, {"max_tokens", 1}}).status, 200);
}

// 7. temperature 1e-40 made every weight NaN and always picked the last vocabulary id.
TEST_F(Hardening, TinyTemperatureIsGreedy) {
  const json greedy = post_json(port(), "/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 12},
                                                            {"temperature", 0}}).json();
  const json tiny = post_json(port(), "/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 12},
                                                          {"temperature", 1e-40}}).json();
  EXPECT_EQ(tiny["choices"][0]["text"], greedy["choices"][0]["text"]);
}

// 9. Seeds at or above 2^63 were all clamped to one value; -1 means a random seed.
TEST_F(Hardening, SeedsCoverTheWholeUint64Range) {
  auto text = [&](const json& seed) {
    const HttpReply r = post_json(port(), "/v1/completions", {{"prompt", "Lily"}, {"max_tokens", 24},
                                                              {"temperature", 1.0}, {"seed", seed}});
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json()["choices"][0]["text"].get<std::string>();
  };
  const uint64_t high = uint64_t{1} << 63;
  EXPECT_NE(text(high), text(high + 1));
  EXPECT_EQ(text(high + 1), text(high + 1));
  EXPECT_EQ(text(UINT64_MAX), text(UINT64_MAX));
  (void)text(-1);
  expect_400(post_json(port(), "/v1/completions", {{"prompt", "Lily"}, {"seed", -2}}), "seed");
  expect_400(post_json(port(), "/v1/completions", {{"prompt", "Lily"}, {"seed", 1.5}}), "seed");
}

// Tokens of a request whose client left were computed too: /metrics counts them.
TEST_F(Hardening, CancelledRequestsTokensAreCounted) {
  auto generated = [&] {
    const std::string m = http_request(port(), "GET", "/metrics").body;
    const std::string key = "\nggufd_generated_tokens_total{model=\"stories\"} ";
    const size_t at = m.find(key);
    EXPECT_NE(at, std::string::npos) << m;
    return at == std::string::npos ? 0L : std::stol(m.substr(at + key.size()));
  };
  const long before = generated();
  const std::string body = json{{"prompt", "Once upon a time"}, {"max_tokens", 200}, {"ignore_eos", true},
                                {"stream", true}}.dump();
  {
    RawConnection c(port());
    c.send(post_request("/v1/completions", body));
    ASSERT_TRUE(c.read_until("data: ", std::chrono::seconds(10)));  // the stream has started
  }  // closed mid-stream
  bool freed = false;
  for (int i = 0; i < 400 && !freed; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    freed = http_request(port(), "GET", "/metrics").body.find("ggufd_slots_active{model=\"stories\"} 0\n") != std::string::npos;
  }
  ASSERT_TRUE(freed);
  EXPECT_GT(generated(), before);
}

}  // namespace
}  // namespace ggufd::test
