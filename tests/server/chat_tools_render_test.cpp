// The tool-calling template cases (../shared/templates/tools, and the repository's
// tests/data/templates/tools: gpt-oss) through the server's own path: the request's messages and
// tools as a client sends them (arguments as JSON strings, null content), detect_chat_features(),
// template_messages() and render_chat(), byte for byte as Jinja2 rendered them.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/text/chat_template.h"
#include "engine/text/harmony.h"
#include "engine/text/tokenizer/tokenizer.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "server/api/api_error.h"
#include "server/api/app.h"
#include "server/api/chat_prompt.h"
#include "server/api/tool_request.h"
#include "tests/support/shared.h"
#include "tests/support/template_cases.h"

namespace ggufd::test {
namespace {

using ojson = nlohmann::ordered_json;
using engine::tools::ToolSyntax;

// One case through the request path; `where` names it in failures.
void check_case(const server::App& app, const ojson& c, const std::string& where) {
  const server::ToolRequest tools = server::parse_tool_request(ojson{{"tools", c["tools"]}});
  const ojson messages = server::template_messages(c["messages"], tools, app.chat_features);
  try {
    const ojson vars = c.contains("variables") ? c["variables"] : ojson(nullptr);
    const std::string text = server::render_chat(app, messages, vars, &tools.tools_json).text;
    ASSERT_TRUE(c.contains("expected")) << where << " rendered, but Jinja2 raised";
    EXPECT_EQ(text, c["expected"].get<std::string>()) << where;
  } catch (const server::ApiError& e) {
    ASSERT_TRUE(c.contains("expected_error")) << where << ": " << e.what();
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(std::string(e.what()), c["expected_error"].get<std::string>()) << where;
  }
}

// A client sends earlier reasoning back as reasoning_content (what ggufd answers with); the
// template reads it as thinking (gpt-oss). The case with every `thinking` renamed.
ojson with_reasoning_content(ojson c) {
  bool renamed = false;
  for (ojson& m : c["messages"]) {
    if (auto t = m.find("thinking"); t != m.end()) {
      m["reasoning_content"] = *t;
      m.erase("thinking");
      renamed = true;
    }
  }
  return renamed ? c : ojson();
}

// Every case file in `dir` whose template renders tools itself (and whose name has `only` in it),
// served with `tok`; `syntax`, if given, is what the server must detect in each. Returns the
// number of cases checked.
int check_dir(const std::filesystem::path& dir, const engine::Tokenizer& tok,
              std::optional<ToolSyntax> syntax = std::nullopt, const std::string& only = "") {
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    if (entry.path().filename().string().find(only) == std::string::npos) continue;
    const ojson spec = ojson::parse(read_file(entry.path()));
    const std::string source = read_file(entry.path().parent_path() / spec["template"].get<std::string>());
    const engine::ChatTemplate tmpl = engine::ChatTemplate::parse(source);
    server::App app;
    app.tokenizer = &tok;
    app.chat_template = &tmpl;
    const std::string now = spec["now"];
    app.template_clock = [now] { return parse_time(now); };
    app.chat_features = server::detect_chat_features(app);
    if (syntax) {
      EXPECT_EQ(app.chat_features.syntax, *syntax) << entry.path();
    }
    if (!engine::tools::template_renders_tools(app.chat_features.syntax)) continue;  // generic: our own prompt
    for (const ojson& c : spec["cases"]) {
      // the vocabulary's BOS, as the cases were rendered with
      EXPECT_EQ(c["bos_token"], tok.bos() >= 0 ? std::string(tok.token_text(tok.bos())) : "");
      EXPECT_TRUE(c["add_generation_prompt"].get<bool>());
      const std::string where = entry.path().filename().string() + " / " + c["name"].get<std::string>();
      check_case(app, c, where);
      if (const ojson renamed = with_reasoning_content(c); !renamed.is_null()) {
        check_case(app, renamed, where + " (reasoning_content)");
      }
      ++checked;
    }
  }
  return checked;
}

TEST(ChatToolsRender, SharedCasesRenderThroughTheRequestPath) {
  GGUFD_REQUIRE_SHARED("templates/tools");
  GGUFD_REQUIRE_SHARED("models/stories260K.gguf");
  // stories260K's vocabulary: BOS <s> and EOS </s>, as the cases were rendered with
  const engine::Tokenizer tok = engine::Tokenizer::from_gguf(gguf::File::open(shared_path("models/stories260K.gguf")));
  EXPECT_GE(check_dir(shared_path("templates/tools"), tok), 18);
}

// A byte-level BPE vocabulary with BOS and EOS of these texts and `controls` (control tokens too).
engine::Tokenizer control_vocab(const std::string& bos, const std::string& eos, const std::vector<std::string>& controls) {
  std::vector<std::string> tokens = {"a", "b", bos, eos};
  tokens.insert(tokens.end(), controls.begin(), controls.end());
  std::vector<int32_t> types(tokens.size(), 1);
  for (size_t i = 2; i < tokens.size(); ++i) types[i] = 3;  // control
  gguf::Writer w;
  w.set("tokenizer.ggml.model", gguf::OwnedValue::string("gpt2"));
  w.set("tokenizer.ggml.pre", gguf::OwnedValue::string("gpt-2"));
  w.set("tokenizer.ggml.tokens", gguf::OwnedValue::string_array(tokens));
  w.set("tokenizer.ggml.token_type", gguf::OwnedValue::i32_array(types));
  w.set("tokenizer.ggml.merges", gguf::OwnedValue::string_array({"a b"}));
  w.set("tokenizer.ggml.bos_token_id", gguf::OwnedValue::u32(2));
  w.set("tokenizer.ggml.eos_token_id", gguf::OwnedValue::u32(3));
  const std::vector<uint8_t> bytes = w.to_bytes();
  return engine::Tokenizer::from_gguf(gguf::File::parse(bytes));
}

// gpt-oss's BOS and EOS text, and (`harmony`) its markers.
engine::Tokenizer gpt_oss_vocab(bool harmony) {
  std::vector<std::string> markers;
  if (harmony) markers = {"<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|call|>"};
  return control_vocab("<|startoftext|>", "<|return|>", markers);
}

// gpt-oss's harmony template renders its own tools (`# Tools`, `namespace functions`), whether the
// vocabulary has harmony's markers (a gpt-oss GGUF) or not (the template given to another model):
// the syntax is read from either.
TEST(ChatToolsRender, GptOssCasesRenderThroughTheRequestPath) {
  const std::string dir = std::string(GGUFD_TEST_DATA_DIR) + "/templates/tools";
  for (bool harmony : {true, false}) {
    SCOPED_TRACE(harmony ? "harmony vocabulary" : "plain vocabulary");
    const engine::Tokenizer tok = gpt_oss_vocab(harmony);
    ASSERT_EQ(engine::HarmonyParser::applies_to(tok), harmony);
    EXPECT_GE(check_dir(dir, tok, ToolSyntax::kHarmony, "gpt-oss"), 11);
  }
}

// Qwen3.5's and Qwen3-Coder's templates (XML calls), Gemma 4's and LFM2 / LFM2.5's, each on a vocabulary with its
// BOS text and its markers as control tokens (which the server shows in the output).
TEST(ChatToolsRender, Models2026CasesRenderThroughTheRequestPath) {
  const std::string dir = std::string(GGUFD_TEST_DATA_DIR) + "/templates/tools";
  const engine::Tokenizer qwen = control_vocab("<|endoftext|>", "<|im_end|>", {"<|im_start|>"});
  EXPECT_EQ(check_dir(dir, qwen, ToolSyntax::kQwenXml, "Qwen-Qwen3"), 2 * 13);
  const engine::Tokenizer gemma = control_vocab("<bos>", "<eos>", {"<|tool_call>", "<tool_call|>", "<|\"|>",
                                                                   "<|channel>", "<channel|>", "<|turn>", "<turn|>"});
  EXPECT_EQ(check_dir(dir, gemma, ToolSyntax::kGemma4, "gemma-4"), 2 * 13);
  const engine::Tokenizer lfm2 = control_vocab("<|startoftext|>", "<|im_end|>", {"<|im_start|>", "<|tool_call_start|>",
                                                                                 "<|tool_call_end|>", "<|tool_list_start|>",
                                                                                 "<|tool_list_end|>"});
  EXPECT_EQ(check_dir(dir, lfm2, ToolSyntax::kLfm2, "LiquidAI-LFM2"), 3 * 13);
}

// The markers of the syntax and of Gemma 4's thought channel are shown in the output when they
// are control tokens of the vocabulary.
TEST(ChatToolsRender, Gemma4MarkersAndThoughtTagsAreShown) {
  const engine::Tokenizer tok = control_vocab("<bos>", "<eos>", {"<|tool_call>", "<tool_call|>", "<|\"|>", "<|channel>",
                                                                 "<channel|>", "<|tool_response>"});
  const engine::ChatTemplate tmpl = engine::ChatTemplate::parse(
      read_file(std::string(GGUFD_TEST_DATA_DIR) + "/templates/google-gemma-4-31B-it.jinja"));
  const server::ChatFeatures f = server::detect_chat_features(tmpl, &tok);
  EXPECT_EQ(f.syntax, ToolSyntax::kGemma4);
  EXPECT_TRUE(f.thinks);
  EXPECT_EQ(f.think_tags.close, "<channel|>");
  std::vector<std::string> markers, reasoning;
  for (int32_t id : f.marker_tokens) markers.emplace_back(tok.token_text(id));
  for (int32_t id : f.reasoning_tokens) reasoning.emplace_back(tok.token_text(id));
  EXPECT_EQ(markers, (std::vector<std::string>{"<|tool_call>", "<tool_call|>", "<|\"|>"})) << "<|tool_response> ends generation";
  EXPECT_EQ(reasoning, (std::vector<std::string>{"<|channel>", "<channel|>"}));
}

}  // namespace
}  // namespace ggufd::test
