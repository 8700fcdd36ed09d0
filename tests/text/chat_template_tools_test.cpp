// engine::ChatTemplate on tool-calling conversations: every case in ../shared/templates/tools and
// tests/data/templates/tools renders byte for byte as Jinja2 did (or raises the same message), given the messages the way
// servers hand them to templates.
#include <gtest/gtest.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/text/chat_template.h"
#include "tests/support/shared.h"
#include "tests/support/template_cases.h"

namespace {

using engine::ChatInput;
using engine::ChatTemplate;
using engine::TemplateRaise;
using Json = nlohmann::ordered_json;

// An OpenAI client's message as a server hands it to a template: `content: null` becomes "" and
// each tool call's function.arguments (a JSON string) becomes the object it encodes, keys in the
// order sent, and earlier reasoning goes under both names templates read (reasoning_content,
// thinking: LFM2.5).
Json as_template_message(Json message) {
  if (message.contains("content") && message["content"].is_null()) message["content"] = "";
  if (message.contains("reasoning_content") && !message.contains("thinking")) message["thinking"] = message["reasoning_content"];
  if (message.contains("thinking") && !message.contains("reasoning_content")) message["reasoning_content"] = message["thinking"];
  if (message.contains("tool_calls")) {
    for (Json& call : message["tool_calls"]) {
      Json& arguments = call["function"]["arguments"];
      if (arguments.is_string()) arguments = Json::parse(arguments.get<std::string>());
    }
  }
  return message;
}

ChatInput input_of(const Json& c, const std::tm& now) {
  Json messages = Json::array();
  for (const Json& m : c.at("messages")) messages.push_back(as_template_message(m));
  ChatInput input;
  input.messages = ggufd::test::to_value(messages);
  if (c.contains("tools")) input.tools = ggufd::test::to_value(c.at("tools"));
  if (c.contains("variables")) input.extra_variables = ggufd::test::to_value(c.at("variables"));
  input.add_generation_prompt = c.at("add_generation_prompt").get<bool>();
  input.bos_token = c.at("bos_token").get<std::string>();
  input.eos_token = c.at("eos_token").get<std::string>();
  input.clock = [now] { return now; };
  return input;
}

// Renders one case file's cases; returns how many there were.
int check_case_file(const std::filesystem::path& file) {
  const Json spec = Json::parse(ggufd::test::read_file(file));
  SCOPED_TRACE(file.filename().string());
  const std::string template_name = spec.at("template").get<std::string>();  // relative to file
  const ChatTemplate tmpl =
      ChatTemplate::parse(ggufd::test::read_file(file.parent_path() / template_name));
  const std::tm now = ggufd::test::parse_time(spec.at("now").get<std::string>());
  int cases = 0;
  for (const Json& c : spec.at("cases")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const ChatInput input = input_of(c, now);
    ++cases;
    ggufd::test::expect_case_renders(tmpl, input, c);
  }
  return cases;
}

// Renders every case file in `dir`; returns how many cases there were.
int check_case_dir(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  int cases = 0;
  for (const auto& file : files) cases += check_case_file(file);
  return cases;
}

TEST(ChatTemplateTools, AllSharedCasesRenderExactly) {
  GGUFD_REQUIRE_SHARED("templates/tools");
  EXPECT_GT(check_case_dir(ggufd::test::shared_path("templates/tools")), 0);
}

// The repository's own tool cases (tests/data/templates/tools: gpt-oss's harmony tools, Qwen3.5's
// and Qwen3-Coder's XML calls, Gemma 4's, LFM2 / LFM2.5's).
TEST(ChatTemplateTools, AllRepositoryCasesRenderExactly) {
  EXPECT_GE(check_case_dir(std::string(GGUFD_TEST_DATA_DIR) + "/templates/tools"), 11 + 7 * 13);
}

// The conversion above: null content and string arguments, key order kept.
TEST(ChatTemplateTools, MessagesAreConvertedAsServersDo) {
  const Json m = as_template_message(Json::parse(
      R"({"role": "assistant", "content": null, "tool_calls": [{"type": "function",
          "function": {"name": "f", "arguments": "{\"z\": 1, \"a\": [2]}"}}]})"));
  EXPECT_EQ(m["content"], "");
  EXPECT_EQ(m["tool_calls"][0]["function"]["arguments"].dump(), R"({"z":1,"a":[2]})");
  EXPECT_EQ(as_template_message(Json::parse(R"({"role": "assistant", "reasoning_content": "r"})"))["thinking"], "r");
}

}  // namespace
