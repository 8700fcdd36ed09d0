// POST /v1/responses (OpenAI's Responses API) on a real tiny model: the response object, its
// streamed events, function calls and their round trip, structured output, the bounded store
// behind previous_response_id / GET / DELETE, input_tokens, and what Codex CLI sends.
#include <nlohmann/json.hpp>

#include <set>
#include <thread>

#include "server/api/openai_responses/response_store.h"
#include "tests/server/fixture.h"
#include "tests/server/sse_events.h"
#include "tests/support/json_schema_check.h"

namespace ggufd::test {
namespace {

using nlohmann::json;

const json kWeatherFunction = json::parse(R"({"type": "function", "name": "get_weather", "description": "Current weather",
  "parameters": {"type": "object", "additionalProperties": false,
  "properties": {"city": {"type": "string", "maxLength": 12}}, "required": ["city"]}, "strict": true})");

// A service with room for tool prompts (stories260K: the generic tool format).
class Responses : public testing::Test {
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
  static HttpReply create(const json& body) { return post_json(port(), "/v1/responses", body); }

  static inline RunningService* service_ = nullptr;
};

// The output items of a response of one type.
std::vector<json> items(const json& response, const std::string& type) {
  std::vector<json> out;
  for (const json& item : response["output"]) {
    if (item["type"] == type) out.push_back(item);
  }
  return out;
}

TEST_F(Responses, CreateReturnsTheResponseObject) {
  const HttpReply r = create({{"input", "Once upon a time"}, {"max_output_tokens", 8}, {"temperature", 0}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = r.json();
  EXPECT_EQ(j["object"], "response");
  EXPECT_EQ(j["id"].get<std::string>().rfind("resp_", 0), 0u);
  EXPECT_TRUE(j["created_at"].is_number_integer());
  EXPECT_EQ(j["model"], "stories");
  EXPECT_TRUE(j["status"] == "completed" || j["status"] == "incomplete") << j.dump();
  if (j["status"] == "incomplete") {
    EXPECT_EQ(j["incomplete_details"]["reason"], "max_output_tokens");
  }
  const std::vector<json> messages = items(j, "message");
  ASSERT_EQ(messages.size(), 1u) << j.dump();
  EXPECT_EQ(messages[0]["role"], "assistant");
  EXPECT_EQ(messages[0]["id"].get<std::string>().rfind("msg_", 0), 0u);
  EXPECT_EQ(messages[0]["content"][0]["type"], "output_text");
  EXPECT_TRUE(messages[0]["content"][0]["text"].is_string());
  const json& u = j["usage"];
  EXPECT_GT(u["input_tokens"].get<int>(), 0);
  EXPECT_LE(u["output_tokens"].get<int>(), 8);
  EXPECT_EQ(u["total_tokens"], u["input_tokens"].get<int>() + u["output_tokens"].get<int>());
  EXPECT_TRUE(u["input_tokens_details"]["cached_tokens"].is_number_integer());
  EXPECT_EQ(u["output_tokens_details"]["reasoning_tokens"], 0);
  EXPECT_EQ(j["max_output_tokens"], 8);  // the request's fields are echoed
}

TEST_F(Responses, StreamedEventsBuildTheSameResponse) {
  const HttpReply r = create({{"input", "Once upon a time"}, {"max_output_tokens", 12}, {"temperature", 0}, {"stream", true}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers.at("content-type"), "text/event-stream");
  const std::vector<SseEvent> ev = sse_events(r.body);
  ASSERT_GE(ev.size(), 4u) << r.body;
  for (size_t i = 0; i < ev.size(); ++i) {
    EXPECT_EQ(ev[i].name, ev[i].data["type"].get<std::string>()) << r.body;
    EXPECT_EQ(ev[i].data["sequence_number"], i) << r.body;
  }
  EXPECT_EQ(ev[0].name, "response.created");
  EXPECT_EQ(ev[0].data["response"]["status"], "in_progress");
  EXPECT_EQ(ev[1].name, "response.in_progress");
  const SseEvent& last = ev.back();
  ASSERT_EQ(last.name, "response.completed");  // with status incomplete too (what Codex CLI reads)
  std::string deltas, done;
  std::vector<std::string> names;
  for (const SseEvent& e : ev) {
    names.push_back(e.name);
    if (e.name == "response.output_text.delta") deltas += e.data["delta"].get<std::string>();
    if (e.name == "response.output_text.done") done = e.data["text"];
  }
  EXPECT_EQ(deltas, done);
  const json& final_response = last.data["response"];
  ASSERT_EQ(items(final_response, "message").size(), 1u) << final_response.dump();
  EXPECT_EQ(items(final_response, "message")[0]["content"][0]["text"], done);
  EXPECT_TRUE(final_response["usage"]["output_tokens"].is_number_integer());
  // the order of a message item's events
  const std::vector<std::string> order = {"response.output_item.added", "response.content_part.added",
                                          "response.output_text.done", "response.content_part.done",
                                          "response.output_item.done"};
  size_t at = 0;
  for (const std::string& n : names) {
    if (at < order.size() && n == order[at]) ++at;
  }
  EXPECT_EQ(at, order.size()) << r.body;
  // unstreamed with the same seed gives the same text
  const json same = create({{"input", "Once upon a time"}, {"max_output_tokens", 12}, {"temperature", 0}}).json();
  EXPECT_EQ(items(same, "message")[0]["content"][0]["text"], done);
}

TEST_F(Responses, ForcedFunctionCallAndItsRoundTrip) {
  const json body = {{"input", "Weather in Paris?"}, {"tools", {kWeatherFunction}}, {"tool_choice", "required"},
                     {"max_output_tokens", 200}};
  const json j = create(body).json();
  const std::vector<json> calls = items(j, "function_call");
  ASSERT_EQ(calls.size(), 1u) << j.dump();
  const json& call = calls[0];
  EXPECT_EQ(call["name"], "get_weather");
  EXPECT_EQ(call["call_id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(call["id"].get<std::string>().rfind("fc_", 0), 0u);
  const json args = json::parse(call["arguments"].get<std::string>());
  EXPECT_EQ(test_support::schema_violation(args, kWeatherFunction["parameters"]), "") << args.dump();
  EXPECT_EQ(j["status"], "completed");

  // the call and its output handed back as input items
  json input = json::array({{{"role", "user"}, {"content", "Weather in Paris?"}}});
  input.push_back(call);
  input.push_back({{"type", "function_call_output"}, {"call_id", call["call_id"]}, {"output", "sunny, 21 C"}});
  const HttpReply next = create({{"input", input}, {"tools", {kWeatherFunction}}, {"max_output_tokens", 8}});
  ASSERT_EQ(next.status, 200) << next.body;
  EXPECT_GT(next.json()["usage"]["input_tokens"].get<int>(), j["usage"]["input_tokens"].get<int>());

  // streamed: the call's events
  json streamed = body;
  streamed["stream"] = true;
  const HttpReply s = create(streamed);
  std::string args_delta, args_done;
  for (const SseEvent& e : sse_events(s.body)) {
    if (e.name == "response.function_call_arguments.delta") args_delta += e.data["delta"].get<std::string>();
    if (e.name == "response.function_call_arguments.done") args_done = e.data["arguments"];
  }
  EXPECT_FALSE(args_done.empty()) << s.body;
  EXPECT_EQ(args_delta, args_done);
}

TEST_F(Responses, JsonSchemaFormatConstrainsTheText) {
  const json schema = json::parse(R"({"type": "object", "additionalProperties": false,
    "properties": {"name": {"type": "string", "maxLength": 10}}, "required": ["name"]})");
  const json j = create({{"input", "Invent a name"}, {"max_output_tokens", 60},
                         {"text", {{"format", {{"type", "json_schema"}, {"name", "n"}, {"schema", schema}, {"strict", true}}}}}})
                     .json();
  ASSERT_EQ(items(j, "message").size(), 1u) << j.dump();
  const json value = json::parse(items(j, "message")[0]["content"][0]["text"].get<std::string>(), nullptr, false);
  ASSERT_FALSE(value.is_discarded()) << j.dump();
  EXPECT_EQ(test_support::schema_violation(value, schema), "");
}

TEST_F(Responses, StoreContinuesAConversationAndForgetsOnDelete) {
  const json first = create({{"input", "Tell me a story"}, {"max_output_tokens", 6}}).json();
  const std::string id = first["id"];
  const HttpReply got = http_request(port(), "GET", "/v1/responses/" + id);
  ASSERT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(got.json()["id"], id);
  EXPECT_EQ(got.json()["output"], first["output"]);

  const HttpReply next = create({{"input", "And then?"}, {"previous_response_id", id}, {"max_output_tokens", 6}});
  ASSERT_EQ(next.status, 200) << next.body;
  EXPECT_EQ(next.json()["previous_response_id"], id);
  // the earlier turn (input and output) is part of the prompt
  EXPECT_GT(next.json()["usage"]["input_tokens"].get<int>(), first["usage"]["input_tokens"].get<int>() + 2);

  const HttpReply deleted = http_request(port(), "DELETE", "/v1/responses/" + id);
  ASSERT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_EQ(deleted.json()["deleted"], true);
  const HttpReply gone = http_request(port(), "GET", "/v1/responses/" + id);
  EXPECT_EQ(gone.status, 404);
  EXPECT_NE(gone.json()["error"]["message"].get<std::string>().find(id), std::string::npos) << gone.body;
  const HttpReply orphan = create({{"input", "x"}, {"previous_response_id", id}});
  EXPECT_EQ(orphan.status, 404) << orphan.body;
  EXPECT_EQ(orphan.json()["error"]["param"], "previous_response_id");

  // store: false keeps nothing
  const json unstored = create({{"input", "x"}, {"store", false}, {"max_output_tokens", 2}}).json();
  EXPECT_EQ(http_request(port(), "GET", "/v1/responses/" + unstored["id"].get<std::string>()).status, 404);
}

TEST_F(Responses, InputTokensCountsThePrompt) {
  const json body = {{"input", "Tell me a story"}, {"instructions", "Be brief."}, {"tools", {kWeatherFunction}}};
  const HttpReply count = post_json(port(), "/v1/responses/input_tokens", body);
  ASSERT_EQ(count.status, 200) << count.body;
  EXPECT_EQ(count.json()["object"], "response.input_tokens");
  json run = body;
  run["max_output_tokens"] = 1;
  EXPECT_EQ(count.json()["input_tokens"], create(run).json()["usage"]["input_tokens"]);
}

// What Codex CLI 0.171 sends: every field accepted, the tools it cannot use named, not refused.
TEST_F(Responses, CodexRequestIsAccepted) {
  const json body = json::parse(R"({
    "model": "gpt-5-codex", "instructions": "You are Codex.", "stream": true, "store": false,
    "tool_choice": "auto", "parallel_tool_calls": false, "reasoning": {"effort": "medium", "summary": "auto"},
    "include": ["reasoning.encrypted_content"], "prompt_cache_key": "0198-abc",
    "client_metadata": {"x-codex-turn": "1"}, "text": {"verbosity": "medium"},
    "input": [
      {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions>...</permissions>"}]},
      {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context/>"}]},
      {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "say hi"}]}],
    "tools": [
      {"type": "function", "name": "shell", "description": "Runs a command", "strict": false,
       "parameters": {"type": "object", "properties": {"command": {"type": "array", "items": {"type": "string"}}},
                      "required": ["command"], "additionalProperties": false}},
      {"type": "namespace", "name": "mcp", "description": "MCP tools", "tools": []},
      {"type": "web_search", "external_web_access": false},
      {"type": "custom", "name": "apply_patch", "description": "patch", "format": {"type": "grammar", "syntax": "lark", "definition": "start: x"}}]
  })");
  json limited = body;
  limited["max_output_tokens"] = 16;
  const HttpReply r = create(limited);
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string ignored = r.headers.count("x-ggufd-ignored-fields") ? r.headers.at("x-ggufd-ignored-fields") : "";
  EXPECT_NE(ignored.find("tools:namespace"), std::string::npos) << ignored;
  EXPECT_NE(ignored.find("tools:web_search"), std::string::npos) << ignored;
  EXPECT_NE(ignored.find("tools:custom"), std::string::npos) << ignored;
  const std::vector<SseEvent> ev = sse_events(r.body);
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev.back().name, "response.completed") << r.body;
  EXPECT_EQ(ev.back().data["response"]["store"], false);
}

TEST_F(Responses, UnsupportedInputIsA400NamingIt) {
  const json body = {{"input", {{{"role", "user"}, {"content", {{{"type", "input_image"}, {"image_url", "http://x/y.png"}}}}}}}};
  const HttpReply r = create(body);
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.json()["error"]["message"].get<std::string>().find("input[0].content[0]"), std::string::npos) << r.body;
  EXPECT_NE(r.json()["error"]["message"].get<std::string>().find("remote images"), std::string::npos) << r.body;
  const HttpReply file = create({{"input", {{{"role", "user"}, {"content", {{{"type", "input_file"}, {"file_id", "f"}}}}}}}});
  EXPECT_EQ(file.status, 400);
  EXPECT_NE(file.body.find("input_file"), std::string::npos) << file.body;
  EXPECT_EQ(create({{"input", 5}}).status, 400);
  // only an empty developer message: nothing to answer once it is left out (was a 500)
  EXPECT_EQ(create({{"input", {{{"role", "developer"}, {"content", ""}}}}}).status, 400);
  EXPECT_EQ(create(json::object()).status, 400);
  EXPECT_EQ(create({{"input", "x"}, {"tool_choice", {{"type", "function"}, {"name", "nope"}}}}).status, 400);
  EXPECT_EQ(create({{"input", "x"}, {"background", true}}).status, 400);
}

TEST_F(Responses, StreamedPromptOverTheContextFailsInTheStream) {
  std::string long_input;
  for (int i = 0; i < 1500; ++i) long_input += "story time ";
  const HttpReply r = create({{"input", long_input}, {"stream", true}});
  ASSERT_EQ(r.status, 200) << r.body.substr(0, 300);
  const std::vector<SseEvent> ev = sse_events(r.body);
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev.front().name, "response.created");
  EXPECT_EQ(ev.back().name, "response.failed");
  EXPECT_EQ(ev.back().data["response"]["error"]["code"], "context_length_exceeded");
  // unstreamed: a 400 with the same code
  const HttpReply plain = create({{"input", long_input}});
  EXPECT_EQ(plain.status, 400);
  EXPECT_EQ(plain.json()["error"]["code"], "context_length_exceeded");
}

TEST(ResponseStore, BoundedByCountBytesAndAge) {
  auto entry = [](size_t text_bytes) {
    auto r = std::make_shared<server::StoredResponse>();
    r->object = {{"x", std::string(text_bytes, 'a')}};
    return r;
  };
  server::ResponseStore by_count({2, size_t{1} << 20, std::chrono::seconds(3600)});
  by_count.put("a", entry(1));
  by_count.put("b", entry(1));
  by_count.put("c", entry(1));
  EXPECT_EQ(by_count.get("a"), nullptr);
  EXPECT_NE(by_count.get("b"), nullptr);
  EXPECT_NE(by_count.get("c"), nullptr);

  server::ResponseStore by_bytes({100, 1000, std::chrono::seconds(3600)});
  by_bytes.put("a", entry(400));
  by_bytes.put("b", entry(400));
  by_bytes.put("c", entry(400));  // over 1000: a goes
  EXPECT_EQ(by_bytes.get("a"), nullptr);
  EXPECT_NE(by_bytes.get("c"), nullptr);
  by_bytes.put("huge", entry(5000));  // larger than the bound: not kept, nothing dropped for it
  EXPECT_EQ(by_bytes.get("huge"), nullptr);
  EXPECT_NE(by_bytes.get("c"), nullptr);

  server::ResponseStore by_age({100, 1000, std::chrono::seconds(0)});
  by_age.put("a", entry(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(by_age.get("a"), nullptr);
  EXPECT_TRUE(by_bytes.erase("c"));
  EXPECT_FALSE(by_bytes.erase("c"));
}

}  // namespace
}  // namespace ggufd::test
