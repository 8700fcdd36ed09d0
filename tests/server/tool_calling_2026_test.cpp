// Tool calling over HTTP with 2026's templates on a real tiny model (stories260K): Qwen3.5's XML
// calls, Gemma 4's notation and LFM2.5's Python list of calls. Forced calls are valid calls of offered functions, streamed and
// unstreamed alike; calls and reasoning are read out of output a grammar dictates; a round trip of
// calls and results renders.
#include <nlohmann/json.hpp>

#include "tests/server/template_services.h"
#include "tests/support/json_schema_check.h"
#include "tests/support/template_cases.h"

namespace ggufd::test::tools2026 {  // named: the unity build puts test files together
namespace {

using nlohmann::json;

// Closed choices only: the grammars bound them, so that a forced answer of a random model ends.
const json kWeather = json::parse(R"({"type": "function", "function": {"name": "get_weather",
  "description": "Current weather in a city", "parameters": {"type": "object", "properties": {
  "city": {"type": "string", "enum": ["Oslo", "Rome"]}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
  "hourly": {"type": "boolean"}}, "required": ["city", "hourly"]}}})");
const json kSearch = json::parse(R"({"type": "function", "function": {"name": "search",
  "parameters": {"type": "object", "properties": {"q": {"type": "string", "enum": ["cats", "dogs"]}}, "required": ["q"]}}})");

class ToolCalling2026 : public testing::TestWithParam<const char*> {
 protected:
  static void SetUpTestSuite() {
    const std::string dir = std::string(GGUFD_TEST_DATA_DIR) + "/templates/";
    services_.start({dir + "Qwen-Qwen3.5-4B.jinja", dir + "google-gemma-4-31B-it.jinja", dir + "LiquidAI-LFM2.5-8B-A1B.jinja"});
  }
  static void TearDownTestSuite() { services_.stop(); }
  size_t which() const {
    const std::string p = GetParam();
    return p == "qwen35" ? 0 : p == "gemma4" ? 1 : 2;
  }
  // The text of `which()`'s template: Qwen3.5's, Gemma 4's or LFM2.5's.
  std::string pick(std::string qwen, std::string gemma, std::string lfm2) const {
    return which() == 0 ? qwen : which() == 1 ? gemma : lfm2;
  }
  void SetUp() override { services_.expect_ready(which()); }
  RunningService& service() const { return services_.at(which()); }
  uint16_t port() const { return service().port(); }
  json chat(json body) const { return post_json(port(), "/v1/chat/completions", body).json(); }

  static inline TemplateServices services_;
};

json checked_calls(const json& reply) { return ggufd::test::checked_calls(reply, {kWeather, kSearch}); }

// A streamed reply's calls (by index, argument fragments appended), reasoning, content and finish.
struct Streamed {
  json calls = json::array();
  std::string reasoning, content, finish;
};
Streamed read_stream(const HttpReply& r) {
  Streamed s;
  for (const std::string& e : r.events()) {
    if (e == "[DONE]") break;
    const json chunk = json::parse(e);
    for (const json& c : chunk["choices"]) {
      if (!c["finish_reason"].is_null()) s.finish = c["finish_reason"];
      const json& d = c["delta"];
      s.reasoning += d.value("reasoning_content", "");
      if (d.contains("content") && d["content"].is_string()) s.content += d["content"].get<std::string>();
      for (const json& t : d.value("tool_calls", json::array())) {
        const size_t i = t["index"];
        if (i == s.calls.size()) s.calls.push_back({{"function", {{"name", ""}, {"arguments", ""}}}});
        json& f = s.calls[i]["function"];
        if (t["function"].contains("name")) f["name"] = t["function"]["name"];
        if (t["function"].contains("arguments")) f["arguments"] = f["arguments"].get<std::string>() + t["function"]["arguments"].get<std::string>();
      }
    }
  }
  return s;
}

TEST_P(ToolCalling2026, RequiredGivesValidCallsStreamedOrNot) {
  json body = {{"messages", one_user_message("Weather in Oslo?")}, {"tools", {kWeather, kSearch}},
               {"tool_choice", "required"}, {"parallel_tool_calls", false}, {"reasoning_effort", "none"},
               {"max_tokens", 300}, {"temperature", 0}};
  const json calls = checked_calls(chat(body));
  ASSERT_EQ(calls.size(), 1u);
  body["stream"] = true;
  const Streamed s = read_stream(post_json(port(), "/v1/chat/completions", body));
  EXPECT_EQ(s.finish, "tool_calls");
  ASSERT_EQ(s.calls.size(), 1u);
  EXPECT_EQ(s.calls[0]["function"], calls[0]["function"]) << "the same call, streamed or not";
}

TEST_P(ToolCalling2026, ANamedFunctionIsTheOneCalled) {
  for (int seed = 1; seed <= 2; ++seed) {
    const json calls = checked_calls(chat({{"messages", one_user_message("Find cats")}, {"tools", {kWeather, kSearch}},
                                           {"tool_choice", {{"type", "function"}, {"function", {{"name", "search"}}}}},
                                           {"reasoning_effort", "none"}, {"max_tokens", 300}, {"seed", seed}}));
    for (const json& c : calls) EXPECT_EQ(c["function"]["name"], "search");
  }
}

// Output in the model's syntax (dictated by a GBNF grammar): reasoning, text, then a call.
TEST_P(ToolCalling2026, ReasoningTextAndACallAreSplitStreamedOrNot) {
  const std::string output = pick("I should search.\n</think>\n\nOK. <tool_call>\n<function=search>\n"
                                  "<parameter=q>\ncats\n</parameter>\n</function>\n</tool_call>",
                                  "<|channel>thought\nI should search.<channel|>OK. <|tool_call>call:search"
                                  "{q:<|\"|>cats<|\"|>}<tool_call|>",
                                  "<think>I should search.</think>OK. <|tool_call_start|>[search(q='cats')]<|tool_call_end|>");
  json body = {{"messages", one_user_message("x")}, {"tools", {kSearch}}, {"max_tokens", 200},
               {"chat_template_kwargs", {{"enable_thinking", true}}}, {"grammar", "root ::= " + json(output).dump()}};
  const json r = chat(body);
  ASSERT_TRUE(r.contains("choices")) << r.dump();
  const json& m = r["choices"][0]["message"];
  EXPECT_EQ(m["reasoning_content"], "I should search.");
  EXPECT_EQ(m["content"], "OK. ");
  ASSERT_EQ(m["tool_calls"].size(), 1u) << m.dump();
  EXPECT_EQ(m["tool_calls"][0]["function"]["arguments"], "{\"q\":\"cats\"}");
  EXPECT_EQ(r["choices"][0]["finish_reason"], "tool_calls");
  body["stream"] = true;
  const Streamed s = read_stream(post_json(port(), "/v1/chat/completions", body));
  EXPECT_EQ(s.reasoning, "I should search.");
  EXPECT_EQ(s.content, "OK. ");
  ASSERT_EQ(s.calls.size(), 1u);
  EXPECT_EQ(s.calls[0]["function"]["arguments"], "{\"q\":\"cats\"}");
  EXPECT_EQ(s.finish, "tool_calls");
}

// A call to a function that was not offered stays text.
TEST_P(ToolCalling2026, AnUnofferedFunctionIsText) {
  const std::string output = pick("<tool_call>\n<function=rm>\n</function>\n</tool_call>",
                                  "<|tool_call>call:rm{}<tool_call|>", "<|tool_call_start|>[rm()]<|tool_call_end|>");
  const json r = chat({{"messages", one_user_message("x")}, {"tools", {kSearch}}, {"max_tokens", 100},
                       {"reasoning_effort", "none"}, {"grammar", "root ::= " + json(output).dump()}});
  ASSERT_TRUE(r.contains("choices")) << r.dump();
  EXPECT_FALSE(r["choices"][0]["message"].contains("tool_calls"));
  EXPECT_EQ(r["choices"][0]["message"]["content"], output);
}

TEST_P(ToolCalling2026, ARoundTripRendersCallsAndResults) {
  const json history = {
      {{"role", "user"}, {"content", "Weather in Oslo?"}},
      {{"role", "assistant"}, {"content", nullptr}, {"reasoning_content", "Look it up."},
       {"tool_calls", {{{"id", "call_1"}, {"type", "function"},
                        {"function", {{"name", "get_weather"}, {"arguments", "{\"city\": \"Oslo\", \"hourly\": true}"}}}}}}},
      {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "{\"temp\": 3}"}}};
  const json with = chat({{"messages", history}, {"tools", {kWeather}}, {"max_tokens", 8}});
  ASSERT_TRUE(with.contains("choices")) << with.dump();
  const json without = chat({{"messages", one_user_message("Weather in Oslo?")}, {"tools", {kWeather}}, {"max_tokens", 8}});
  EXPECT_GT(with["usage"]["prompt_tokens"].get<int>(), without["usage"]["prompt_tokens"].get<int>() + 10);
}

INSTANTIATE_TEST_SUITE_P(Templates, ToolCalling2026, testing::Values("qwen35", "gemma4", "lfm25"));

}  // namespace
}  // namespace ggufd::test::tools2026
