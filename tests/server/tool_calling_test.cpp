// Tool calling and reasoning over HTTP on a real tiny model (stories260K): forced calls are valid
// calls of offered functions, streamed and unstreamed alike, with the model's template (Qwen3:
// <tool_call>) or without one (the generic envelope); reasoning is split from the answer; bad
// tool requests are 400s naming the field.
#include <nlohmann/json.hpp>

#include "tests/server/template_services.h"
#include "tests/support/json_schema_check.h"

namespace ggufd::test {
namespace {

using nlohmann::json;

const json kWeather = json::parse(R"({"type": "function", "function": {"name": "get_weather",
  "description": "Current weather in a city", "parameters": {"type": "object", "additionalProperties": false,
  "properties": {"city": {"type": "string", "maxLength": 12}, "unit": {"enum": ["celsius", "fahrenheit"]}},
  "required": ["city"]}}})");
const json kSearch = json::parse(R"({"type": "function", "function": {"name": "search",
  "parameters": {"type": "object", "properties": {"q": {"type": "string", "maxLength": 8}}, "required": ["q"]}}})");


// Services with the generic syntax (stories260K has no template: ChatML) and with Qwen3's.
class ToolCalling : public testing::TestWithParam<const char*> {
 protected:
  static void SetUpTestSuite() { services_.start({"", shared_path("templates/Qwen-Qwen3-0.6B.jinja")}); }
  static void TearDownTestSuite() { services_.stop(); }
  size_t which() const { return std::string(GetParam()) == "generic" ? 0 : 1; }
  void SetUp() override { services_.expect_ready(which()); }
  RunningService& service() const { return services_.at(which()); }
  uint16_t port() const { return service().port(); }
  json chat(json body) const { return post_json(port(), "/v1/chat/completions", body).json(); }

  static inline TemplateServices services_;
};

// The calls of a reply, checked: offered functions, arguments that validate, no content beside
// them, OpenAI's call ids.
json checked_calls(const json& reply) {
  const json calls = ggufd::test::checked_calls(reply, {kWeather, kSearch});
  if (!reply.contains("choices")) return calls;
  EXPECT_TRUE(reply["choices"][0]["message"]["content"].is_null()) << reply.dump();
  for (const json& call : calls) {
    EXPECT_EQ(call["type"], "function");
    EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u) << call.dump();
  }
  return calls;
}

// A streamed reply's calls, reassembled as the openai client does (by index; id and name from the
// first delta, argument fragments appended), and its finish_reason.
json streamed_calls(const HttpReply& r, std::string& finish) {
  json calls = json::array();
  for (const std::string& e : r.events()) {
    if (e == "[DONE]") break;
    const json chunk = json::parse(e);
    for (const json& c : chunk["choices"]) {
      if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
      for (const json& d : c["delta"].value("tool_calls", json::array())) {
        const size_t i = d["index"];
        if (i == calls.size()) calls.push_back({{"function", {{"name", ""}, {"arguments", ""}}}});
        json& call = calls[i];
        if (d.contains("id")) call["id"] = d["id"];
        if (d.contains("function") && d["function"].contains("name")) call["function"]["name"] = d["function"]["name"];
        if (d.contains("function") && d["function"].contains("arguments")) {
          call["function"]["arguments"] = call["function"]["arguments"].get<std::string>() +
                                          d["function"]["arguments"].get<std::string>();
        }
      }
    }
  }
  return calls;
}

TEST_P(ToolCalling, RequiredGivesValidCallsStreamedOrNot) {
  json body = {{"messages", one_user_message("Weather in Oslo?")}, {"tools", {kWeather, kSearch}}, {"tool_choice", "required"},
               {"parallel_tool_calls", false}, {"max_tokens", 400}, {"temperature", 0}};
  const json calls = checked_calls(chat(body));
  ASSERT_EQ(calls.size(), 1u);
  body["stream"] = true;
  std::string finish;
  const json streamed = streamed_calls(post_json(port(), "/v1/chat/completions", body), finish);
  EXPECT_EQ(finish, "tool_calls");
  ASSERT_EQ(streamed.size(), 1u);
  EXPECT_EQ(streamed[0]["function"], calls[0]["function"]) << "the same call, streamed or not";
}

TEST_P(ToolCalling, ANamedFunctionIsTheOneCalled) {
  for (int seed = 1; seed <= 2; ++seed) {
    const json calls = checked_calls(chat({{"messages", one_user_message("Find cats")},
                                           {"tools", {kWeather, kSearch}},
                                           {"tool_choice", {{"type", "function"}, {"function", {{"name", "search"}}}}},
                                           {"max_tokens", 1200}, {"seed", seed}}));
    for (const json& c : calls) EXPECT_EQ(c["function"]["name"], "search");
  }
}

TEST_P(ToolCalling, NoneAndAutoNeverCallUnofferedFunctions) {
  const json none = chat({{"messages", one_user_message("Hi")}, {"tools", {kWeather}}, {"tool_choice", "none"}, {"max_tokens", 20}});
  ASSERT_TRUE(none.contains("choices")) << none.dump();
  EXPECT_FALSE(none["choices"][0]["message"].contains("tool_calls"));
  EXPECT_TRUE(none["choices"][0]["message"]["content"].is_string());
  for (int seed = 1; seed <= 3; ++seed) {
    const json r = chat({{"messages", one_user_message("Hi")}, {"tools", {kWeather}}, {"max_tokens", 60}, {"seed", seed}});
    ASSERT_TRUE(r.contains("choices")) << r.dump();
    for (const json& c : r["choices"][0]["message"].value("tool_calls", json::array())) {
      EXPECT_EQ(c["function"]["name"], "get_weather");
    }
  }
}

TEST_P(ToolCalling, ARoundTripRendersCallsAndResults) {
  const json history = {
      {{"role", "user"}, {"content", "Weather in Oslo?"}},
      {{"role", "assistant"}, {"content", nullptr},
       {"tool_calls", {{{"id", "call_1"}, {"type", "function"},
                        {"function", {{"name", "get_weather"}, {"arguments", "{\"city\": \"Oslo\"}"}}}}}}},
      {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "{\"temp\": 3}"}}};
  const json with = chat({{"messages", history}, {"tools", {kWeather}}, {"max_tokens", 8}});
  ASSERT_TRUE(with.contains("choices")) << with.dump();
  const json without = chat({{"messages", one_user_message("Weather in Oslo?")}, {"tools", {kWeather}}, {"max_tokens", 8}});
  EXPECT_GT(with["usage"]["prompt_tokens"].get<int>(), without["usage"]["prompt_tokens"].get<int>() + 10)
      << "the call and its result are in the prompt";
  // the same history without tools renders too (a final answer after the tools ran)
  EXPECT_TRUE(chat({{"messages", history}, {"max_tokens", 4}}).contains("choices"));
}

TEST_P(ToolCalling, BadToolRequestsAre400sNamingTheField) {
  const json msgs = one_user_message("x");
  struct Case {
    json body;
    std::string param, says;
  };
  const Case cases[] = {
      {{{"messages", msgs}, {"tools", "get_weather"}}, "tools", "must be an array"},
      {{{"messages", msgs}, {"tools", {{{"type", "function"}}}}}, "tools", "tools[0]"},
      {{{"messages", msgs}, {"tools", {{{"type", "function"}, {"function", {{"name", "a b"}}}}}}}, "tools", ".name"},
      {{{"messages", msgs}, {"tools", {kWeather, kWeather}}}, "tools", "offered twice"},
      {{{"messages", msgs}, {"tools", {kWeather}}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "rm"}}}}}},
       "tool_choice", "not among the request's tools"},
      {{{"messages", msgs}, {"tool_choice", "required"}}, "tool_choice", "offers no tools"},
      {{{"messages", msgs}, {"tools", {kWeather}}, {"tool_choice", "sometimes"}}, "tool_choice", "must be"},
      {{{"messages", msgs}, {"tools", {kWeather}}, {"parallel_tool_calls", "yes"}}, "parallel_tool_calls", "boolean"},
      {{{"messages", {{{"role", "assistant"}, {"tool_calls", {{{"function", {{"name", "f"}, {"arguments", "{oops"}}}}}}}}}},
       "messages", "arguments must be a JSON object"},
      {{{"messages", msgs}, {"reasoning_effort", "extreme"}}, "reasoning_effort", "one of"},
  };
  for (const Case& c : cases) {
    const HttpReply r = post_json(port(), "/v1/chat/completions", c.body);
    EXPECT_EQ(r.status, 400) << c.body.dump() << " -> " << r.body;
    const json e = r.json();
    EXPECT_EQ(e["error"]["param"], c.param) << r.body;
    EXPECT_NE(e["error"]["message"].get<std::string>().find(c.says), std::string::npos) << r.body;
  }
}

INSTANTIATE_TEST_SUITE_P(Syntax, ToolCalling, testing::Values("generic", "qwen3"));

// Reasoning and calls read out of output that a GBNF grammar dictates, on the Qwen3 template.
class Reasoning : public ToolCalling {};

TEST_P(Reasoning, ThinkBlocksAndCallsAreSplitStreamedOrNot) {
  const std::string call = "<tool_call>\\n{\\\"name\\\": \\\"search\\\", \\\"arguments\\\": {\\\"q\\\": \\\"cats\\\"}}\\n</tool_call>";
  json body = {{"messages", one_user_message("x")}, {"tools", {kSearch}}, {"max_tokens", 200},
               {"grammar", "root ::= \"<think>\\nI should search.\\n</think>\\n\\nOK. " + call + "\""}};
  const json r = chat(body);
  ASSERT_TRUE(r.contains("choices")) << r.dump();
  const json& m = r["choices"][0]["message"];
  EXPECT_EQ(m["reasoning_content"], "I should search.");
  EXPECT_EQ(m["reasoning"], "I should search.");
  EXPECT_EQ(m["content"], "OK. ");
  ASSERT_EQ(m["tool_calls"].size(), 1u) << m.dump();
  EXPECT_EQ(m["tool_calls"][0]["function"]["arguments"], "{\"q\":\"cats\"}");
  EXPECT_EQ(r["choices"][0]["finish_reason"], "tool_calls");
  body["stream"] = true;
  std::string reasoning, content, finish;
  const HttpReply streamed = post_json(port(), "/v1/chat/completions", body);
  for (const std::string& e : streamed.events()) {
    if (e == "[DONE]") break;
    const json chunk = json::parse(e);
    const json& d = chunk["choices"][0]["delta"];
    reasoning += d.value("reasoning_content", "");
    content += d.value("content", "");
  }
  EXPECT_EQ(reasoning, "I should search.");
  EXPECT_EQ(content, "OK. ");
  EXPECT_EQ(streamed_calls(streamed, finish).size(), 1u);
  EXPECT_EQ(finish, "tool_calls");
}

TEST_P(Reasoning, EffortNoneTurnsThinkingOff) {
  // Qwen3's template closes an empty think block in the prompt when enable_thinking is false
  const json on = chat({{"messages", one_user_message("x")}, {"max_tokens", 1}});
  const json off = chat({{"messages", one_user_message("x")}, {"max_tokens", 1}, {"reasoning_effort", "none"}});
  const json kw = chat({{"messages", one_user_message("x")}, {"max_tokens", 1}, {"chat_template_kwargs", {{"enable_thinking", false}}}});
  ASSERT_TRUE(on.contains("usage") && off.contains("usage")) << off.dump();
  EXPECT_GT(off["usage"]["prompt_tokens"].get<int>(), on["usage"]["prompt_tokens"].get<int>());
  EXPECT_EQ(off["usage"]["prompt_tokens"], kw["usage"]["prompt_tokens"]);
}

INSTANTIATE_TEST_SUITE_P(Qwen3, Reasoning, testing::Values("qwen3"));

}  // namespace
}  // namespace ggufd::test
