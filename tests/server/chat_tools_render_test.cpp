// The shared tool-calling template cases (../shared/templates/tools) through the server's own
// path: the request's messages and tools as a client sends them (arguments as JSON strings, null
// content), template_messages() and render_chat(), byte for byte as Jinja2 rendered them.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "engine/text/chat_template.h"
#include "engine/text/tokenizer/tokenizer.h"
#include "gguf/file.h"
#include "server/api/api_error.h"
#include "server/api/app.h"
#include "server/api/chat_prompt.h"
#include "server/api/tool_request.h"
#include "tests/support/shared.h"
#include "tests/support/template_cases.h"

namespace ggufd::test {
namespace {

using ojson = nlohmann::ordered_json;

TEST(ChatToolsRender, SharedCasesRenderThroughTheRequestPath) {
  GGUFD_REQUIRE_SHARED("templates/tools");
  GGUFD_REQUIRE_SHARED("models/stories260K.gguf");
  // stories260K's vocabulary: BOS <s> and EOS </s>, as the cases were rendered with
  const engine::Tokenizer tok = engine::Tokenizer::from_gguf(gguf::File::open(shared_path("models/stories260K.gguf")));
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(shared_path("templates/tools"))) {
    if (entry.path().extension() != ".json") continue;
    const ojson spec = ojson::parse(read_file(entry.path()));
    const std::string source = read_file(entry.path().parent_path() / spec["template"].get<std::string>());
    const engine::ChatTemplate tmpl = engine::ChatTemplate::parse(source);
    server::App app;
    app.tokenizer = &tok;
    app.chat_template = &tmpl;
    const std::string now = spec["now"];
    app.template_clock = [now] { return parse_time(now); };
    app.chat_features = server::detect_chat_features(app);
    if (!engine::tools::template_renders_tools(app.chat_features.syntax)) continue;  // generic: our own prompt
    for (const ojson& c : spec["cases"]) {
      ASSERT_EQ(c["bos_token"], "<s>");
      ASSERT_TRUE(c["add_generation_prompt"].get<bool>());
      const std::string where = entry.path().filename().string() + " / " + c["name"].get<std::string>();
      const server::ToolRequest tools = server::parse_tool_request(ojson{{"tools", c["tools"]}});
      const ojson messages = server::template_messages(c["messages"], tools, app.chat_features);
      try {
        const std::string text = server::render_chat(app, messages, nullptr, &tools.tools_json).text;
        ASSERT_TRUE(c.contains("expected")) << where << " rendered, but Jinja2 raised";
        EXPECT_EQ(text, c["expected"].get<std::string>()) << where;
      } catch (const server::ApiError& e) {
        ASSERT_TRUE(c.contains("expected_error")) << where << ": " << e.what();
        EXPECT_EQ(e.status(), 400);
        EXPECT_EQ(std::string(e.what()), c["expected_error"].get<std::string>()) << where;
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 18);
}

}  // namespace
}  // namespace ggufd::test
