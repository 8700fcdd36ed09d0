// Ollama's API (/api/*) on a real tiny model: liveness and version, the model listings and
// /api/show, /api/chat and /api/generate streamed (NDJSON checked byte-wise) and not, options,
// format, think, tools (forced through the tool_choice extension) and their round trip, the
// refused fields, the load-only requests, Ollama's error shape; embeddings on the BERT model.
#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/server/fixture.h"
#include "tests/support/json_schema_check.h"

namespace ggufd::test {
namespace {

using nlohmann::json;

const json kOllamaWeatherTool = json::parse(R"({"type": "function", "function": {"name": "get_weather",
  "description": "Current weather", "parameters": {"type": "object", "additionalProperties": false,
  "properties": {"city": {"type": "string", "maxLength": 12}}, "required": ["city"]}}})");

class Ollama : public EditedServerTest<Ollama> {
 public:
  static void edit(server::ServiceOptions& o) {
    o.model.engine.n_ctx = 1024;
    o.model.engine.n_slots = 2;
  }

 protected:
  static HttpReply post(const std::string& target, const json& body) { return post_json(port(), target, body); }
};

// The lines of an NDJSON body, checked byte-wise: every line ends with '\n' and is one complete
// JSON object; nothing follows the last line.
std::vector<json> ollama_ndjson_lines(const std::string& body) {
  std::vector<json> out;
  size_t at = 0;
  while (at < body.size()) {
    const size_t nl = body.find('\n', at);
    EXPECT_NE(nl, std::string::npos) << "a line without its newline: " << body.substr(at);
    if (nl == std::string::npos) break;
    const json j = json::parse(body.substr(at, nl - at), nullptr, false);
    EXPECT_TRUE(j.is_object()) << "not one JSON object: " << body.substr(at, nl - at);
    out.push_back(j);
    at = nl + 1;
  }
  return out;
}

void expect_ollama_error(const HttpReply& r, int status, const std::string& mentions) {
  EXPECT_EQ(r.status, status) << r.body;
  const json j = json::parse(r.body, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.body;
  ASSERT_TRUE(j.contains("error") && j["error"].is_string()) << r.body;
  EXPECT_NE(j["error"].get<std::string>().find(mentions), std::string::npos) << r.body;
  EXPECT_EQ(j.size(), 1u) << r.body;
}

void expect_ollama_final(const json& j, const std::string& reason) {
  EXPECT_EQ(j["done"], true) << j.dump();
  EXPECT_EQ(j["done_reason"], reason) << j.dump();
  for (const char* k : {"total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration", "eval_count",
                        "eval_duration"}) {
    EXPECT_TRUE(j.contains(k) && j[k].is_number_integer() && j[k].get<int64_t>() >= 0) << k << ": " << j.dump();
  }
  EXPECT_GT(j["prompt_eval_count"].get<int64_t>(), 0) << j.dump();
  EXPECT_LE(j["prompt_eval_duration"].get<int64_t>(), j["total_duration"].get<int64_t>()) << j.dump();
}

TEST_F(Ollama, RootAndVersion) {
  const HttpReply root = http_request(port(), "GET", "/");
  EXPECT_EQ(root.status, 200);
  EXPECT_EQ(root.body, "ggufd is running");
  const HttpReply head = http_request(port(), "HEAD", "/");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.body, "");
  const json v = http_request(port(), "GET", "/api/version").json();
  ASSERT_TRUE(v["version"].is_string()) << v.dump();
  const std::string version = v["version"];
  EXPECT_EQ(version, GGUFD_VERSION);
  EXPECT_EQ(std::count(version.begin(), version.end(), '.'), 2) << version;
  EXPECT_EQ(version.find_first_not_of("0123456789."), std::string::npos) << version;
}

TEST_F(Ollama, TagsPsAndShow) {
  const json tags = http_request(port(), "GET", "/api/tags").json();
  ASSERT_EQ(tags["models"].size(), 1u) << tags.dump();
  const json& m = tags["models"][0];
  EXPECT_EQ(m["name"], "stories");
  EXPECT_EQ(m["model"], "stories");
  EXPECT_GT(m["size"].get<int64_t>(), 0);
  EXPECT_EQ(m["digest"].get<std::string>().size(), 64u);
  EXPECT_EQ(m["modified_at"].get<std::string>().back(), 'Z');
  EXPECT_EQ(m["details"]["format"], "gguf");
  EXPECT_EQ(m["details"]["family"], "llama");
  EXPECT_EQ(m["details"]["families"], json::array({"llama"}));
  EXPECT_FALSE(m["details"]["parameter_size"].get<std::string>().empty());
  EXPECT_EQ(m["details"]["quantization_level"], "F32");  // no general.file_type: the tensors' type

  const json ps = http_request(port(), "GET", "/api/ps").json();
  ASSERT_EQ(ps["models"].size(), 1u) << ps.dump();
  EXPECT_EQ(ps["models"][0]["context_length"], 1024);
  EXPECT_EQ(ps["models"][0]["size_vram"], 0);
  EXPECT_EQ(ps["models"][0]["digest"], m["digest"]);
  EXPECT_TRUE(ps["models"][0]["expires_at"].is_string());

  const json show = post("/api/show", {{"model", "stories"}}).json();
  EXPECT_EQ(show["details"], m["details"]);
  EXPECT_EQ(show["model_info"]["general.architecture"], "llama");
  EXPECT_TRUE(show["model_info"]["tokenizer.ggml.tokens"].is_null()) << "arrays only when verbose";
  EXPECT_GT(show["model_info"]["general.parameter_count"].get<int64_t>(), 0);
  EXPECT_EQ(show["capabilities"], json::array({"completion", "tools"}));
  EXPECT_NE(show["modelfile"].get<std::string>().find("FROM "), std::string::npos);
  EXPECT_NE(show["parameters"].get<std::string>().find("num_ctx 1024"), std::string::npos) << show["parameters"];
  const json verbose = post("/api/show", {{"name", "any-name"}, {"verbose", true}}).json();
  EXPECT_TRUE(verbose["model_info"]["tokenizer.ggml.tokens"].is_array());
  expect_ollama_error(post("/api/show", json::object()), 400, "model");
}

TEST_F(Ollama, ChatStreamsNdjson) {
  const HttpReply r = post("/api/chat", {{"model", "llama3.2"}, {"messages", one_user_message("Once upon a time")},
                                         {"options", {{"num_predict", 8}, {"temperature", 0}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers.at("content-type"), "application/x-ndjson");
  const std::vector<json> lines = ollama_ndjson_lines(r.body);
  ASSERT_GT(lines.size(), 2u) << r.body;
  std::string text;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    EXPECT_EQ(lines[i]["done"], false);
    EXPECT_EQ(lines[i]["model"], "llama3.2");
    EXPECT_EQ(lines[i]["message"]["role"], "assistant");
    text += lines[i]["message"]["content"].get<std::string>();
  }
  expect_ollama_final(lines.back(), "length");
  EXPECT_EQ(lines.back()["eval_count"], 8);
  EXPECT_EQ(lines.back()["message"]["content"], "");

  const HttpReply whole = post("/api/chat", {{"messages", one_user_message("Once upon a time")}, {"stream", false},
                                             {"options", {{"num_predict", 8}, {"temperature", 0}}}});
  ASSERT_EQ(whole.status, 200) << whole.body;
  EXPECT_EQ(whole.headers.at("content-type"), "application/json");
  const json j = whole.json();
  EXPECT_EQ(j["message"]["content"], text);
  expect_ollama_final(j, "length");
}

TEST_F(Ollama, GenerateStreamedRawAndLoadOnly) {
  const HttpReply r = post("/api/generate", {{"prompt", "Once upon a time"}, {"system", "Tell stories."},
                                             {"options", {{"num_predict", 6}, {"seed", 3}, {"stop", {"zzz"}}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  const std::vector<json> lines = ollama_ndjson_lines(r.body);
  ASSERT_GT(lines.size(), 2u) << r.body;
  EXPECT_TRUE(lines[0]["response"].is_string());
  EXPECT_FALSE(lines.back().contains("context"));
  expect_ollama_final(lines.back(), "length");

  const json raw = post("/api/generate", {{"prompt", "Once upon a time"}, {"raw", true}, {"stream", false},
                                          {"options", {{"num_predict", 4}}}}).json();
  EXPECT_TRUE(raw["response"].is_string());
  EXPECT_EQ(raw["eval_count"], 4);
  // ollama-ai-provider-v2 sends its limit at the top level
  const json top = post("/api/chat", {{"messages", one_user_message("Once")}, {"max_output_tokens", 3},
                                      {"stream", false}}).json();
  EXPECT_EQ(top["eval_count"], 3) << top.dump();

  for (const char* path : {"/api/generate", "/api/chat"}) {
    const HttpReply load = post(path, {{"model", "stories"}});
    ASSERT_EQ(load.status, 200) << load.body;
    const std::vector<json> one = ollama_ndjson_lines(load.body);
    ASSERT_EQ(one.size(), 1u) << load.body;
    EXPECT_EQ(one[0]["done"], true);
    EXPECT_EQ(one[0]["done_reason"], "load");
  }
}

TEST_F(Ollama, FormatSchemaAndJson) {
  const json schema = json::parse(R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
    "age": {"type": "integer", "minimum": 0, "maximum": 99}}, "required": ["name", "age"], "additionalProperties": false})");
  const json j = post("/api/chat", {{"messages", one_user_message("Who?")}, {"format", schema}, {"stream", false},
                                    {"options", {{"num_predict", 200}}}}).json();
  ASSERT_EQ(j["done_reason"], "stop") << j.dump();
  const json answer = json::parse(j["message"]["content"].get<std::string>());
  EXPECT_EQ(test_support::schema_violation(answer, schema), "") << answer.dump();
  const json g = post("/api/generate", {{"prompt", "Who?"}, {"format", "json"}, {"stream", false},
                                        {"options", {{"num_predict", 200}}}}).json();
  // any object: its strings may run to the limit, then the text is a cut object
  const std::string text = g["response"];
  ASSERT_FALSE(text.empty()) << g.dump();
  EXPECT_EQ(text[0], '{') << g.dump();
  if (g["done_reason"] == "stop") {
    EXPECT_TRUE(json::parse(text).is_object()) << g.dump();
  }
  expect_ollama_error(post("/api/chat", {{"messages", one_user_message("x")}, {"format", 3}}), 400, "format");
}

TEST_F(Ollama, ToolCallsWholeAndTheirRoundTrip) {
  const json body = {{"messages", one_user_message("Weather in Paris?")}, {"tools", {kOllamaWeatherTool}},
                     {"tool_choice", "required"}, {"stream", false}, {"options", {{"num_predict", 200}}}};
  const json j = post("/api/chat", body).json();
  ASSERT_TRUE(j["message"]["tool_calls"].is_array()) << j.dump();
  const json& call = j["message"]["tool_calls"][0];
  EXPECT_EQ(call["function"]["name"], "get_weather");
  ASSERT_TRUE(call["function"]["arguments"].is_object()) << call.dump();
  EXPECT_EQ(test_support::schema_violation(call["function"]["arguments"], kOllamaWeatherTool["function"]["parameters"]), "");

  json streamed = body;
  streamed.erase("stream");
  const std::vector<json> lines = ollama_ndjson_lines(post("/api/chat", streamed).body);
  int calls = 0;
  for (const json& l : lines) {
    if (l.contains("message") && l["message"].contains("tool_calls")) {
      calls += static_cast<int>(l["message"]["tool_calls"].size());
      EXPECT_TRUE(l["message"]["tool_calls"][0]["function"]["arguments"].is_object()) << l.dump();
    }
  }
  EXPECT_GE(calls, 1);

  json messages = one_user_message("Weather in Paris?");
  messages.push_back({{"role", "assistant"}, {"content", ""}, {"tool_calls", j["message"]["tool_calls"]}});
  messages.push_back({{"role", "tool"}, {"content", "sunny"}, {"tool_name", "get_weather"}});
  const HttpReply next = post("/api/chat", {{"messages", messages}, {"tools", {kOllamaWeatherTool}}, {"stream", false},
                                            {"options", {{"num_predict", 4}}}});
  ASSERT_EQ(next.status, 200) << next.body;
  EXPECT_TRUE(next.json()["message"]["content"].is_string());
}

TEST_F(Ollama, RefusedAndMalformed) {
  expect_ollama_error(post("/api/chat", {{"messages", {{{"role", "user"}, {"content", "x"}, {"images", {"aGk="}}}}}}),
                      400, "images");
  expect_ollama_error(post("/api/generate", {{"prompt", "x"}, {"images", {"aGk="}}}), 400, "images");
  expect_ollama_error(post("/api/generate", {{"prompt", "x"}, {"suffix", "y"}}), 400, "suffix");
  expect_ollama_error(post("/api/generate", {{"prompt", "x"}, {"template", "{{ .Prompt }}"}}), 400, "template");
  expect_ollama_error(post("/api/generate", {{"prompt", "x"}, {"think", true}}), 400, "thinking");
  expect_ollama_error(post("/api/generate", {{"prompt", "x"}, {"think", "very"}}), 400, "think");
  expect_ollama_error(post("/api/chat", {{"messages", "hi"}}), 400, "messages");
  // (found by fuzz_request: merging dropped the empty system message, and the empty conversation was a 500)
  expect_ollama_error(post("/api/chat", {{"messages", {{{"role", "system"}}}}}), 400, "messages");
  expect_ollama_error(post("/api/chat", {{"messages", {{{"role", "system"}, {"content", ""}}}}}), 400, "messages");
  expect_ollama_error(post("/api/chat", {{"messages", {{{"role", "robot"}, {"content", "x"}}}}}), 400, "role");
  expect_ollama_error(post("/api/chat", {{"messages", one_user_message("x")}, {"options", 5}}), 400, "options");
  expect_ollama_error(post("/api/chat", {{"messages", one_user_message("x")}, {"options", {{"temperature", "hot"}}}}),
                      400, "temperature");
  expect_ollama_error(http_request(port(), "POST", "/api/chat", "{not json"), 400, "");
  expect_ollama_error(post("/api/embed", {{"input", "x"}}), 400, "embedding");  // a generation model
  // Ollama's clients and curl -d send no JSON content type: the body is read anyway
  const HttpReply form = http_request(port(), "POST", "/api/generate",
                                      R"({"prompt": "Once", "stream": false, "options": {"num_predict": 2}})",
                                      {{"content-type", "application/x-www-form-urlencoded"}});
  EXPECT_EQ(form.status, 200) << form.body;
  // runtime options are accepted and named as ignored
  const HttpReply ctx = post("/api/generate", {{"prompt", "Once"}, {"stream", false},
                                               {"options", {{"num_predict", 2}, {"num_ctx", 8192}, {"num_gpu", 1}}}});
  ASSERT_EQ(ctx.status, 200) << ctx.body;
  EXPECT_NE(ctx.headers.at("x-ggufd-ignored-fields").find("options.num_ctx"), std::string::npos);
}

// The stories model served with a shared chat template (a path below ../shared) and 1024 tokens.
std::unique_ptr<RunningService> service_with_template(const std::string& shared_template) {
  return start_service([&shared_template](server::ServiceOptions& o) {
    std::ifstream in(shared_path(shared_template));
    std::stringstream ss;
    ss << in.rdbuf();
    o.model.chat_template = ss.str();
    o.model.chat_template_origin = "file";
    o.model.engine.n_ctx = 1024;
  });
}

// With a template that thinks (Qwen3's): capabilities say so, and think true or an effort is taken.
TEST(OllamaThinking, ThinkingTemplate) {
  GGUFD_REQUIRE_SHARED(kStories);
  GGUFD_REQUIRE_SHARED("templates/Qwen-Qwen3-0.6B.jinja");
  const auto s = service_with_template("templates/Qwen-Qwen3-0.6B.jinja");
  ASSERT_TRUE(s->ready()) << s->service().load_error();
  const json show = post_json(s->port(), "/api/show", {{"model", "stories"}}).json();
  EXPECT_EQ(show["capabilities"], json::array({"completion", "tools", "thinking"}));
  EXPECT_NE(show["template"].get<std::string>().find("enable_thinking"), std::string::npos);
  for (const json& think : {json(true), json(false), json("high")}) {
    const HttpReply r = post_json(s->port(), "/api/chat", {{"messages", one_user_message("Hi")}, {"think", think},
                                                           {"stream", false}, {"options", {{"num_predict", 4}}}});
    EXPECT_EQ(r.status, 200) << think << ": " << r.body;
    EXPECT_TRUE(r.json()["message"]["content"].is_string()) << r.body;
  }
}

// DeepSeek-R1's template opens the think block in the prompt (<｜Assistant｜><think>\n), so what
// the model writes is thinking until it closes the block: with think on, /api/chat answers it as
// message.thinking and /api/generate as thinking, streamed line by line and not, the same text;
// with think off the template closes the block at once and everything is content.
TEST(OllamaThinking, ThinkingOfATemplateThatOpensTheBlock) {
  GGUFD_REQUIRE_SHARED(kStories);
  GGUFD_REQUIRE_SHARED("templates/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja");
  const auto s = service_with_template("templates/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja");
  ASSERT_TRUE(s->ready()) << s->service().load_error();
  const json show = post_json(s->port(), "/api/show", {{"model", "stories"}}).json();
  EXPECT_NE(std::find(show["capabilities"].begin(), show["capabilities"].end(), "thinking"), show["capabilities"].end())
      << show["capabilities"];
  const json options = {{"num_predict", 8}, {"temperature", 0}};
  for (const char* route : {"/api/chat", "/api/generate"}) {
    const bool chat = std::string(route) == "/api/chat";
    json body = {{"think", true}, {"stream", false}, {"options", options}};
    if (chat) {
      body["messages"] = one_user_message("Once upon a time");
    } else {
      body["prompt"] = "Once upon a time";
    }
    const HttpReply whole = post_json(s->port(), route, body);
    ASSERT_EQ(whole.status, 200) << whole.body;
    const json w = whole.json();
    const json& out = chat ? w["message"] : w;
    const std::string thinking = out.value("thinking", "");
    EXPECT_FALSE(thinking.empty()) << route << ": " << whole.body;
    EXPECT_EQ(out[chat ? "content" : "response"], "") << whole.body;
    EXPECT_EQ(w["eval_count"], 8) << whole.body;

    body["stream"] = true;
    const HttpReply streamed = post_json(s->port(), route, body);
    ASSERT_EQ(streamed.status, 200) << streamed.body;
    std::string streamed_thinking;
    int thinking_lines = 0;
    for (const json& line : ollama_ndjson_lines(streamed.body)) {
      const json& o = chat ? line["message"] : line;
      if (o.contains("thinking")) {
        streamed_thinking += o["thinking"].get<std::string>();
        ++thinking_lines;
      }
      EXPECT_EQ(o[chat ? "content" : "response"], "") << line.dump();
    }
    EXPECT_EQ(streamed_thinking, thinking) << route;
    EXPECT_GT(thinking_lines, 1) << streamed.body;  // token by token, not at the end

    body["think"] = false;  // the template writes <think>\n</think>: the answer is content
    body["stream"] = false;
    const json off = post_json(s->port(), route, body).json();
    const json& off_out = chat ? off["message"] : off;
    EXPECT_FALSE(off_out.contains("thinking")) << off.dump();
    EXPECT_FALSE(off_out[chat ? "content" : "response"].get<std::string>().empty()) << off.dump();
  }
}

constexpr const char* kOllamaBert = "models/synth/synth-bert-Q8_0.gguf";

TEST(OllamaEmbed, EmbedAndLegacyEmbeddings) {
  GGUFD_REQUIRE_SHARED(kOllamaBert);
  server::ServiceOptions o = test_options(kOllamaBert);
  o.model.alias = "bert";
  RunningService s(std::move(o));
  ASSERT_TRUE(s.ready()) << s.service().load_error();
  const json one = post_json(s.port(), "/api/embed", {{"model", "bert"}, {"input", "The cat sat."}}).json();
  ASSERT_EQ(one["embeddings"].size(), 1u) << one.dump();
  double norm = 0;
  for (const json& x : one["embeddings"][0]) norm += x.get<double>() * x.get<double>();
  EXPECT_NEAR(norm, 1.0, 1e-4);
  EXPECT_GT(one["prompt_eval_count"].get<int64_t>(), 0);
  EXPECT_EQ(one["model"], "bert");

  const json two = post_json(s.port(), "/api/embed", {{"input", {"The cat sat.", "hello"}}, {"dimensions", 16}}).json();
  ASSERT_EQ(two["embeddings"].size(), 2u) << two.dump();
  EXPECT_EQ(two["embeddings"][1].size(), 16u);
  double cut = 0;
  for (const json& x : two["embeddings"][0]) cut += x.get<double>() * x.get<double>();
  EXPECT_NEAR(cut, 1.0, 1e-4);  // cut, then normalized again

  const json legacy = post_json(s.port(), "/api/embeddings", {{"prompt", "The cat sat."}}).json();
  ASSERT_EQ(legacy["embedding"].size(), one["embeddings"][0].size()) << legacy.dump();
  double raw = 0;
  for (const json& x : legacy["embedding"]) raw += x.get<double>() * x.get<double>();
  EXPECT_GT(raw, 0);  // not normalized, as Ollama's

  const json empty = post_json(s.port(), "/api/embed", {{"input", json::array()}}).json();
  EXPECT_EQ(empty["embeddings"], json::array());
  const HttpReply bad = post_json(s.port(), "/api/embed", {{"input", 3}});
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_TRUE(bad.json()["error"].is_string()) << bad.body;
  const HttpReply chat = post_json(s.port(), "/api/chat", {{"messages", one_user_message("x")}});
  EXPECT_EQ(chat.status, 400) << chat.body;
}

}  // namespace
}  // namespace ggufd::test
