// POST /v1/messages (Anthropic's Messages API) on a real tiny model: the message object, its
// streamed events, tool use and its round trip, stop sequences, count_tokens, Anthropic's error
// shape and x-api-key, what Claude Code sends, and its per-request nonce dropped so that a second
// turn reuses the first one's prefix.
#include <nlohmann/json.hpp>

#include "server/api/anthropic_messages/messages_request.h"
#include "tests/server/fixture.h"
#include "tests/server/sse_events.h"
#include "tests/support/json_schema_check.h"

namespace ggufd::test {
namespace {

using nlohmann::json;

const json kWeatherTool = json::parse(R"({"name": "get_weather", "description": "Current weather",
  "input_schema": {"type": "object", "additionalProperties": false,
  "properties": {"city": {"type": "string", "maxLength": 12}}, "required": ["city"]}})");


class Messages : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(shared_path(kStories))) return;
    service_ = start_service([](server::ServiceOptions& o) {
      o.model.engine.n_ctx = 2048;
      o.model.engine.n_slots = 2;
    }).release();
  }
  static void TearDownTestSuite() {
    delete service_;
    service_ = nullptr;
  }
  void SetUp() override {
    GGUFD_REQUIRE_SHARED(kStories);
    ASSERT_NE(service_, nullptr);
    ASSERT_TRUE(service_->ready()) << service_->service().load_error();
  }
  static uint16_t port() { return service_->port(); }
  static HttpReply create(const json& body, const std::string& target = "/v1/messages") {
    return post_json(port(), target, body, {{"anthropic-version", "2023-06-01"}});
  }

  static inline RunningService* service_ = nullptr;
};

void expect_anthropic_error(const HttpReply& r, int status, const std::string& type) {
  EXPECT_EQ(r.status, status) << r.body;
  const json j = json::parse(r.body, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.body;
  EXPECT_EQ(j["type"], "error") << r.body;
  EXPECT_EQ(j["error"]["type"], type) << r.body;
  EXPECT_TRUE(j["error"]["message"].is_string()) << r.body;
}

TEST_F(Messages, CreateReturnsAMessage) {
  const HttpReply r = create({{"model", "claude-x"}, {"max_tokens", 8}, {"messages", one_user_message("Tell me a story")}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = r.json();
  EXPECT_EQ(j["type"], "message");
  EXPECT_EQ(j["role"], "assistant");
  EXPECT_EQ(j["id"].get<std::string>().rfind("msg_", 0), 0u);
  EXPECT_EQ(j["model"], "stories");
  ASSERT_EQ(j["content"].size(), 1u) << j.dump();
  EXPECT_EQ(j["content"][0]["type"], "text");
  EXPECT_TRUE(j["stop_reason"] == "end_turn" || j["stop_reason"] == "max_tokens") << j.dump();
  EXPECT_TRUE(j["stop_sequence"].is_null());
  EXPECT_GT(j["usage"]["input_tokens"].get<int>() + j["usage"]["cache_read_input_tokens"].get<int>(), 0);
  EXPECT_LE(j["usage"]["output_tokens"].get<int>(), 8);
}

// A message without content leaves nothing to answer: a 400 in Anthropic's shape (was a 500).
TEST_F(Messages, NothingToAnswerIsA400) {
  const HttpReply r = create({{"max_tokens", 4}, {"system", ""}, {"messages", {{{"role", "user"}, {"content", json::array()}}}}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json()["type"], "error") << r.body;
  EXPECT_NE(r.body.find("nothing to answer"), std::string::npos) << r.body;
}

TEST_F(Messages, StreamedEventsAreNamedByTheirType) {
  const HttpReply r = create({{"max_tokens", 12}, {"temperature", 0}, {"stream", true}, {"messages", one_user_message("Once")}},
                             "/v1/messages?beta=true");
  ASSERT_EQ(r.status, 200) << r.body;
  const std::vector<SseEvent> ev = sse_events(r.body);
  ASSERT_GE(ev.size(), 5u) << r.body;
  for (const SseEvent& e : ev) EXPECT_EQ(e.name, e.data["type"].get<std::string>()) << r.body;
  EXPECT_EQ(ev.front().name, "message_start");
  EXPECT_EQ(ev.front().data["message"]["content"], json::array());
  EXPECT_EQ(ev.back().name, "message_stop");
  const SseEvent& delta = ev[ev.size() - 2];
  ASSERT_EQ(delta.name, "message_delta") << r.body;
  EXPECT_TRUE(delta.data["delta"]["stop_reason"] == "end_turn" || delta.data["delta"]["stop_reason"] == "max_tokens");
  EXPECT_TRUE(delta.data["usage"]["output_tokens"].is_number_integer());
  std::string text;
  int starts = 0, stops = 0;
  for (const SseEvent& e : ev) {
    if (e.name == "content_block_start") ++starts;
    if (e.name == "content_block_stop") ++stops;
    if (e.name == "content_block_delta" && e.data["delta"]["type"] == "text_delta") text += e.data["delta"]["text"].get<std::string>();
  }
  EXPECT_EQ(starts, stops);
  EXPECT_GE(starts, 1);
  const json same = create({{"max_tokens", 12}, {"temperature", 0}, {"messages", one_user_message("Once")}}).json();
  EXPECT_EQ(same["content"][0]["text"], text);
}

TEST_F(Messages, ForcedToolUseAndItsResult) {
  const json body = {{"max_tokens", 200}, {"tools", {kWeatherTool}},
                     {"tool_choice", {{"type", "tool"}, {"name", "get_weather"}}}, {"messages", one_user_message("Weather in Paris?")}};
  const json j = create(body).json();
  ASSERT_EQ(j["stop_reason"], "tool_use") << j.dump();
  json use;
  for (const json& b : j["content"]) {
    if (b["type"] == "tool_use") use = b;
  }
  ASSERT_TRUE(use.is_object()) << j.dump();
  EXPECT_EQ(use["name"], "get_weather");
  EXPECT_EQ(use["id"].get<std::string>().rfind("toolu_", 0), 0u);
  ASSERT_TRUE(use["input"].is_object());
  EXPECT_EQ(test_support::schema_violation(use["input"], kWeatherTool["input_schema"]), "") << use.dump();

  json messages = one_user_message("Weather in Paris?");
  messages.push_back({{"role", "assistant"}, {"content", j["content"]}});
  json result = {{"type", "tool_result"}, {"tool_use_id", use["id"]}};
  result["content"] = json::array({{{"type", "text"}, {"text", "sunny"}}});
  messages.push_back({{"role", "user"}, {"content", json::array({result})}});
  const HttpReply next = create({{"max_tokens", 8}, {"tools", {kWeatherTool}}, {"messages", messages}});
  ASSERT_EQ(next.status, 200) << next.body;

  json streamed = body;
  streamed["stream"] = true;
  const HttpReply s = create(streamed);
  std::string partial;
  for (const SseEvent& e : sse_events(s.body)) {
    if (e.name == "content_block_delta" && e.data["delta"]["type"] == "input_json_delta") {
      partial += e.data["delta"]["partial_json"].get<std::string>();
    }
  }
  const json input = json::parse(partial, nullptr, false);
  ASSERT_TRUE(input.is_object()) << s.body;
  EXPECT_EQ(test_support::schema_violation(input, kWeatherTool["input_schema"]), "");
}

TEST_F(Messages, StopSequenceIsReported) {
  // stories260K writes spaces and common letters at once
  const json j = create({{"max_tokens", 60}, {"temperature", 0}, {"stop_sequences", {" ", "e", "a", "o"}},
                         {"messages", one_user_message("Once upon a time there was")}})
                     .json();
  ASSERT_EQ(j["stop_reason"], "stop_sequence") << j.dump();
  const std::set<std::string> stops = {" ", "e", "a", "o"};
  EXPECT_EQ(stops.count(j["stop_sequence"].get<std::string>()), 1u) << j.dump();
}

TEST_F(Messages, CountTokensMatchesTheUsage) {
  const json body = {{"system", "Be brief."}, {"messages", one_user_message("Tell me a story")}, {"tools", {kWeatherTool}}};
  const HttpReply count = create(body, "/v1/messages/count_tokens");
  ASSERT_EQ(count.status, 200) << count.body;
  json run = body;
  run["max_tokens"] = 1;
  const json usage = create(run).json()["usage"];
  EXPECT_EQ(count.json()["input_tokens"].get<int>(),
            usage["input_tokens"].get<int>() + usage["cache_read_input_tokens"].get<int>());
}

TEST_F(Messages, ErrorsHaveAnthropicsShape) {
  expect_anthropic_error(create({{"messages", one_user_message("x")}}), 400, "invalid_request_error");  // no max_tokens
  expect_anthropic_error(create({{"max_tokens", 5}, {"messages", "x"}}), 400, "invalid_request_error");
  const json image = {{"max_tokens", 5}, {"messages", {{{"role", "user"}, {"content", {{{"type", "image"},
                        {"source", {{"type", "base64"}, {"media_type", "image/png"}, {"data", "AAAA"}}}}}}}}}};
  const HttpReply r = create(image);
  expect_anthropic_error(r, 400, "invalid_request_error");
  EXPECT_NE(r.body.find("image"), std::string::npos);
  expect_anthropic_error(http_request(port(), "POST", "/v1/messages", "{", {{"content-type", "application/json"}}), 400,
                         "invalid_request_error");
  expect_anthropic_error(http_request(port(), "POST", "/v1/messages", "{}", {{"content-type", "text/plain"}}), 415,
                         "invalid_request_error");
  expect_anthropic_error(create({{"max_tokens", 5}, {"tool_choice", {{"type", "tool"}, {"name", "x"}}}, {"messages", one_user_message("x")}}),
                         400, "invalid_request_error");
}

TEST(MessagesAuth, XApiKeyIsAcceptedAndRefusalsHaveAnthropicsShape) {
  GGUFD_REQUIRE_SHARED(kStories);
  auto s = start_service([](server::ServiceOptions& o) { o.http.api_keys = {"sekrit"}; });
  ASSERT_TRUE(s->ready());
  const json body = {{"max_tokens", 2}, {"messages", one_user_message("x")}};
  EXPECT_EQ(post_json(s->port(), "/v1/messages", body, {{"x-api-key", "sekrit"}}).status, 200);
  EXPECT_EQ(post_json(s->port(), "/v1/messages", body, {{"authorization", "Bearer sekrit"}}).status, 200);
  expect_anthropic_error(post_json(s->port(), "/v1/messages", body, {{"x-api-key", "wrong"}}), 401, "authentication_error");
  expect_anthropic_error(post_json(s->port(), "/v1/messages", body), 401, "authentication_error");
  // the OpenAI routes keep theirs, and take x-api-key too
  const HttpReply chat = post_json(s->port(), "/v1/chat/completions", {{"messages", one_user_message("x")}, {"max_tokens", 2}},
                                   {{"x-api-key", "sekrit"}});
  EXPECT_EQ(chat.status, 200) << chat.body;
  EXPECT_TRUE(post_json(s->port(), "/v1/chat/completions", body).json()["error"].contains("code"));
}

// What Claude Code 2.1.197 sends: all accepted; max_tokens far over the context is not refused.
TEST_F(Messages, ClaudeCodeRequestIsAccepted) {
  const json body = json::parse(R"({
    "model": "claude-sonnet-4-5", "max_tokens": 32000, "stream": true,
    "thinking": {"type": "adaptive"}, "output_config": {"effort": "high"},
    "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
    "metadata": {"user_id": "user_abc_account__session_123"},
    "system": [
      {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.197.a1b; cc_entrypoint=sdk-cli; cch=9f3e1;"},
      {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude.", "cache_control": {"type": "ephemeral"}},
      {"type": "text", "text": "Be concise.", "cache_control": {"type": "ephemeral"}}],
    "tools": [{"name": "Bash", "description": "Run a command", "input_schema": {"type": "object",
               "properties": {"command": {"type": "string"}}, "required": ["command"]}},
              {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}],
    "messages": [
      {"role": "user", "content": [{"type": "text", "text": "<system-reminder>ctx</system-reminder>"},
                                   {"type": "text", "text": "say hi", "cache_control": {"type": "ephemeral"}}]},
      {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm", "signature": "sig"},
                                        {"type": "text", "text": "hi"}]},
      {"role": "system", "content": "The user changed the mode."},
      {"role": "user", "content": "again"}]
  })");
  const HttpReply r = post_json(port(), "/v1/messages?beta=true", body,
                                {{"anthropic-version", "2023-06-01"}, {"anthropic-beta", "claude-code-20250219"}});
  ASSERT_EQ(r.status, 200) << r.body;
  const std::vector<SseEvent> ev = sse_events(r.body);
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev.back().name, "message_stop") << r.body;
  const std::string ignored = r.headers.count("x-ggufd-ignored-fields") ? r.headers.at("x-ggufd-ignored-fields") : "";
  EXPECT_NE(ignored.find("tools:web_search_20250305"), std::string::npos) << ignored;
}

TEST(BillingHeader, TheNonceBlockIsDropped) {
  using server::without_billing_header;
  EXPECT_EQ(without_billing_header("x-anthropic-billing-header: cc_version=2.1.197.a1b; cc_entrypoint=cli; cch=9f3e1;"), "");
  EXPECT_EQ(without_billing_header("x-anthropic-billing-header: cc_version=2.1.101.e51; cc_entrypoint=cli; cch=a5145;"
                                   "You are Claude Code."),
            "You are Claude Code.");
  EXPECT_EQ(without_billing_header("x-anthropic-billing-header: cch=1;\nYou are"), "You are");
  EXPECT_EQ(without_billing_header("You are Claude Code."), "You are Claude Code.");
  EXPECT_EQ(without_billing_header("x-anthropic-billing-header: garbage\nrest"), "rest");
}

// Two turns of a Claude Code session whose nonces differ: with the nonce block dropped, the second
// turn computes only what the first did not; kept (--keep-billing-header), it shares only the text
// before the nonce.
TEST(BillingHeader, TurnTwoReusesTurnOnesPrefix) {
  GGUFD_REQUIRE_SHARED(kStories);
  std::string instructions = "You are a storyteller.";
  for (int i = 0; i < 30; ++i) instructions += " Tell the story of the little dog and the cat, slowly.";
  auto turn = [&](uint16_t port, const std::string& nonce, const json& messages) {
    const json body = {{"max_tokens", 4}, {"temperature", 0},
                       {"system", {{{"type", "text"}, {"text", "x-anthropic-billing-header: cc_version=2.1.197.a1b; "
                                                             "cc_entrypoint=cli; cch=" + nonce + ";"}},
                                   {{"type", "text"}, {"text", instructions}}}},
                       {"messages", messages}};
    return post_json(port, "/v1/messages", body).json();
  };
  for (const bool keep : {false, true}) {
    auto s = start_service([keep](server::ServiceOptions& o) {
      o.model.engine.n_ctx = 2048;
      o.keep_billing_header = keep;
    });
    ASSERT_TRUE(s->ready());
    json messages = one_user_message("Once upon a time");
    const json first = turn(s->port(), "a1b2c", messages);
    ASSERT_EQ(first["type"], "message") << first.dump();
    messages.push_back({{"role", "assistant"}, {"content", first["content"]}});
    messages.push_back({{"role", "user"}, {"content", "And then?"}});
    const json second = turn(s->port(), "f9e8d", messages);
    ASSERT_EQ(second["type"], "message") << second.dump();
    const int first_prompt = first["usage"]["input_tokens"].get<int>() + first["usage"]["cache_read_input_tokens"].get<int>();
    const int reused = second["usage"]["cache_read_input_tokens"].get<int>();
    if (keep) {
      EXPECT_LT(reused, first_prompt / 4) << second.dump();  // at most the text before the nonce
    } else {
      EXPECT_GT(first_prompt, 300);
      EXPECT_GE(reused, first_prompt - 64) << second.dump();  // all but the last, partial blocks
    }
  }
}

}  // namespace
}  // namespace ggufd::test
