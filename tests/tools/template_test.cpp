// `ggufd template`: shared and repository template cases through the command line (gpt-oss's
// tool cases included), a raise_exception error, and the command rendering every template as the
// server's request path does.
#include <gtest/gtest.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "engine/text/chat_template.h"
#include "engine/text/tokenizer/tokenizer.h"
#include "gguf/file.h"
#include "server/api/api_error.h"
#include "server/api/app.h"
#include "server/api/chat_prompt.h"
#include "server/api/tool_request.h"
#include "tests/support/run.h"
#include "tests/support/shared.h"
#include "tests/support/template_cases.h"

namespace {

using ggufd::test::run_ggufd;
using ggufd::test::shared_path;
using nlohmann::json;

json load_cases(const std::string& name) {
  std::ifstream in(shared_path("templates/" + name + ".json"));
  return json::parse(in);
}

TEST(TemplateCommand, RendersSharedCaseExactly) {
  GGUFD_REQUIRE_SHARED("templates/Qwen-Qwen2.5-7B-Instruct.json");
  const json cases = load_cases("Qwen-Qwen2.5-7B-Instruct");
  for (const json& c : cases["cases"]) {
    const json input = {{"messages", c["messages"]}, {"add_generation_prompt", c["add_generation_prompt"]},
                        {"bos_token", c["bos_token"]}, {"eos_token", c["eos_token"]}};
    const auto r = run_ggufd("template --template " + shared_path("templates/Qwen-Qwen2.5-7B-Instruct.jinja"),
                             input.dump());
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, c["expected"].get<std::string>()) << c["name"];
  }
}

TEST(TemplateCommand, RendersSharedToolCasesAsTheServerDoes) {
  GGUFD_REQUIRE_SHARED("templates/tools/Qwen-Qwen3-0.6B.json");
  std::ifstream in(shared_path("templates/tools/Qwen-Qwen3-0.6B.json"));
  const nlohmann::ordered_json cases = nlohmann::ordered_json::parse(in);
  for (const auto& c : cases["cases"]) {
    // as a client sends them: arguments as JSON strings, null content, keys in their order
    const nlohmann::ordered_json input = {{"messages", c["messages"]}, {"tools", c["tools"]},
                                          {"add_generation_prompt", true}, {"bos_token", c["bos_token"]},
                                          {"eos_token", c["eos_token"]}};
    const auto r = run_ggufd("template --template " + shared_path("templates/Qwen-Qwen3-0.6B.jinja"), input.dump());
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, c["expected"].get<std::string>()) << c["name"];
  }
}

// The stdin of `ggufd template` for a tool case: the request's fields as a client sends them.
nlohmann::ordered_json tool_case_input(const nlohmann::ordered_json& c) {
  return {{"messages", c["messages"]}, {"tools", c["tools"]}, {"add_generation_prompt", true},
          {"bos_token", c["bos_token"]}, {"eos_token", c["eos_token"]}};
}

// `text` with the cases' fixed date (strftime_now at their "now") as today's: the command renders
// with the clock.
std::string dated_today(std::string text, const std::string& now) {
  const std::string fixed = "Current date: " + now.substr(0, 10);
  const std::time_t t = std::time(nullptr);
  std::tm local{};
  localtime_r(&t, &local);
  char today[32];
  std::strftime(today, sizeof today, "Current date: %Y-%m-%d", &local);
  if (const size_t at = text.find(fixed); at != std::string::npos) text.replace(at, fixed.size(), today);
  return text;
}

// gpt-oss's own tool section (`# Tools`, `namespace functions`), found from the template alone:
// --template gives the command no vocabulary.
TEST(TemplateCommand, RendersGptOssToolCasesWithItsOwnToolSection) {
  const std::string dir = std::string(GGUFD_TEST_DATA_DIR) + "/templates/";
  std::ifstream in(dir + "tools/openai-gpt-oss-120b.json");
  const nlohmann::ordered_json cases = nlohmann::ordered_json::parse(in);
  int rendered = 0;
  for (const auto& c : cases["cases"]) {
    const auto r = run_ggufd("template --template " + dir + "openai-gpt-oss-120b.jinja", tool_case_input(c).dump());
    if (c.contains("expected_error")) {
      EXPECT_NE(r.status, 0) << c["name"];
      EXPECT_NE(r.err.find(c["expected_error"].get<std::string>()), std::string::npos) << c["name"] << ": " << r.err;
      continue;
    }
    ASSERT_EQ(r.status, 0) << c["name"] << ": " << r.err;
    EXPECT_EQ(r.out, dated_today(c["expected"].get<std::string>(), cases["now"])) << c["name"];
    EXPECT_NE(r.out.find("namespace functions {"), std::string::npos) << c["name"];
    ++rendered;
  }
  EXPECT_GE(rendered, 9);
}

// reasoning_effort and chat_template_kwargs reach the template as in a chat request.
TEST(TemplateCommand, ReasoningEffortAndKwargsAreTemplateVariables) {
  const std::string tmpl = std::string(GGUFD_TEST_DATA_DIR) + "/templates/openai-gpt-oss-120b.jinja";
  const nlohmann::json messages = {{{"role", "user"}, {"content", "Hi"}}};
  auto r = run_ggufd("template --template " + tmpl, nlohmann::json{{"messages", messages}, {"reasoning_effort", "high"}}.dump());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("Reasoning: high\n"), std::string::npos) << r.out;
  r = run_ggufd("template --template " + tmpl, nlohmann::json{{"messages", messages}, {"reasoning_effort", "minimal"}}.dump());
  EXPECT_NE(r.out.find("Reasoning: low\n"), std::string::npos) << r.out;
  r = run_ggufd("template --template " + tmpl,
                nlohmann::json{{"messages", messages}, {"chat_template_kwargs", {{"model_identity", "You are Bob."}}}}.dump());
  EXPECT_EQ(r.out.rfind("<|start|>system<|message|>You are Bob.\n", 0), 0u) << r.out;
  r = run_ggufd("template --template " + tmpl, nlohmann::json{{"messages", messages}, {"reasoning_effort", "max"}}.dump());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("'reasoning_effort' must be one of"), std::string::npos) << r.err;
}

// For every template (../shared's and the repository's) and every tool case of Qwen3's file,
// `ggufd template --template` prints what a chat request would render: the same tool syntax
// (its own tool section, or the generic prompt), system messages merged where the template
// refuses them, the same errors.
TEST(TemplateCommand, RendersEveryTemplateAsTheServerDoes) {
  GGUFD_REQUIRE_SHARED("templates/tools/Qwen-Qwen3-0.6B.json");
  GGUFD_REQUIRE_SHARED("models/stories260K.gguf");
  // BOS <s>, EOS </s>: what the cases say
  const engine::Tokenizer tok = engine::Tokenizer::from_gguf(gguf::File::open(shared_path("models/stories260K.gguf")));
  std::ifstream in(shared_path("templates/tools/Qwen-Qwen3-0.6B.json"));
  const nlohmann::ordered_json cases = nlohmann::ordered_json::parse(in);
  std::vector<std::filesystem::path> templates;
  for (const std::string& dir : {shared_path("templates"), std::string(GGUFD_TEST_DATA_DIR) + "/templates"}) {
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (e.path().extension() == ".jinja") templates.push_back(e.path());
    }
  }
  std::sort(templates.begin(), templates.end());
  ASSERT_GE(templates.size(), 13u);
  for (const auto& path : templates) {
    const engine::ChatTemplate tmpl = engine::ChatTemplate::parse(ggufd::test::read_file(path));
    server::App app;
    app.tokenizer = &tok;
    app.chat_template = &tmpl;
    app.chat_features = server::detect_chat_features(app);
    for (const auto& c : cases["cases"]) {
      const std::string where = path.filename().string() + " / " + c["name"].get<std::string>();
      std::string server_text, server_error;
      try {
        const server::ToolRequest tools = server::parse_tool_request(nlohmann::ordered_json{{"tools", c["tools"]}});
        const bool own = engine::tools::template_renders_tools(app.chat_features.syntax);
        server_text = server::render_chat(app, server::template_messages(c["messages"], tools, app.chat_features), nullptr,
                                          own ? &tools.tools_json : nullptr).text;
      } catch (const server::ApiError& e) {
        server_error = e.what();
      }
      const auto r = run_ggufd("template --template " + path.string(), tool_case_input(c).dump());
      if (!server_error.empty()) {
        EXPECT_NE(r.status, 0) << where << ": the server refuses (" << server_error << "), the command printed " << r.out;
        continue;
      }
      ASSERT_EQ(r.status, 0) << where << ": " << r.err;
      EXPECT_EQ(r.out, server_text) << where;  // (strftime_now: both render with today's date)
    }
  }
}

TEST(TemplateCommand, RaiseExceptionExitsNonZeroWithTheMessage) {
  GGUFD_REQUIRE_SHARED("templates/google-gemma-2-2b-it.json");
  const json cases = load_cases("google-gemma-2-2b-it");
  const json& c = cases["cases"][0];
  ASSERT_TRUE(c.contains("expected_error"));
  const json input = {{"messages", c["messages"]}, {"add_generation_prompt", true}};
  const auto r = run_ggufd("template --template " + shared_path("templates/google-gemma-2-2b-it.jinja"),
                           input.dump());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find(c["expected_error"].get<std::string>()), std::string::npos) << r.err;
}

TEST(TemplateCommand, ModelWithoutTemplateUsesChatML) {
  GGUFD_REQUIRE_SHARED("models/stories260K.gguf");
  const json input = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"add_generation_prompt", true}};
  const auto r = run_ggufd("template -m " + shared_path("models/stories260K.gguf"), input.dump());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

}  // namespace
