// Tool calling in the text layer: which syntax a template uses, reading calls (and reasoning) out
// of streamed output whatever the cuts, and grammars that force or follow calls.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "engine/text/grammar/matcher.h"
#include "engine/text/grammar/token_masks.h"
#include "engine/text/reasoning.h"
#include "engine/text/tools/answer_parser.h"
#include "engine/text/tools/tool_grammar.h"
#include "tests/support/grammar_walk.h"
#include "tests/support/shared.h"
#include "tests/support/tool_parse.h"

namespace engine::tools {
namespace {

using ojson = nlohmann::ordered_json;

std::vector<std::string> names() { return {"get_weather", "search"}; }

std::vector<ToolDef> weather_tools() {
  ToolDef w{"get_weather", "Weather in a city", ojson::parse(R"({"type": "object", "properties": {
      "city": {"type": "string", "maxLength": 12}, "unit": {"enum": ["c", "f"]}}, "required": ["city"]})")};
  ToolDef s{"search", "", ojson::parse(R"({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]})")};
  return {w, s};
}

using Parsed = ggufd::test::ParsedCalls;

Parsed parse_pieces(ToolSyntax syntax, const std::vector<std::string>& pieces) {
  ToolCallParser p(syntax, names());
  return ggufd::test::feed(p, pieces);
}

// Parses `text` whole, byte by byte and at every single cut; all must agree.
Parsed parse_every_way(ToolSyntax syntax, const std::string& text) {
  return ggufd::test::parse_every_way([&] { return ToolCallParser(syntax, names()); }, text);
}

TEST(ToolSyntax, DetectedFromTheSharedTemplates) {
  GGUFD_REQUIRE_SHARED("templates");
  const auto read = [](const std::string& name) {
    std::ifstream in(ggufd::test::shared_path("templates/" + name + ".jinja"));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  EXPECT_EQ(detect_tool_syntax(read("Qwen-Qwen2.5-7B-Instruct"), false), ToolSyntax::kHermes);
  EXPECT_EQ(detect_tool_syntax(read("Qwen-Qwen3-0.6B"), false), ToolSyntax::kHermes);
  EXPECT_EQ(detect_tool_syntax(read("meta-llama-Llama-3.1-8B-Instruct"), false), ToolSyntax::kLlama3);
  EXPECT_EQ(detect_tool_syntax(read("meta-llama-Llama-3.2-3B-Instruct"), false), ToolSyntax::kLlama3);
  EXPECT_EQ(detect_tool_syntax(read("mistralai-Mistral-Nemo-Instruct-2407"), false), ToolSyntax::kMistral);
  EXPECT_EQ(detect_tool_syntax(read("ibm-granite-granite-3.3-2B-Instruct"), false), ToolSyntax::kGranite);
  EXPECT_EQ(detect_tool_syntax(read("HuggingFaceTB-SmolLM3-3B"), false), ToolSyntax::kGeneric) << "knows no tools";
  EXPECT_EQ(detect_tool_syntax(read("google-gemma-2-2b-it"), false), ToolSyntax::kGeneric);
  EXPECT_EQ(detect_tool_syntax("anything", true), ToolSyntax::kHarmony);
}

// gpt-oss's template says harmony as clearly as its vocabulary: read with or without the vocabulary
// (`ggufd template --template`, or the template served with another model), it is harmony.
TEST(ToolSyntax, HarmonyDetectedFromTheTemplateToo) {
  std::ifstream in(std::string(GGUFD_TEST_DATA_DIR) + "/templates/openai-gpt-oss-120b.jinja");
  std::stringstream ss;
  ss << in.rdbuf();
  ASSERT_FALSE(ss.str().empty());
  EXPECT_EQ(detect_tool_syntax(ss.str(), false), ToolSyntax::kHarmony);
  EXPECT_EQ(detect_tool_syntax(ss.str(), true), ToolSyntax::kHarmony);
  // the markers without any tools: nothing for tools to go through
  EXPECT_EQ(detect_tool_syntax("<|start|>{{ m }}<|channel|>final<|message|>", false), ToolSyntax::kGeneric);
  EXPECT_EQ(detect_tool_syntax("{{ tools }}<|start|>user<|message|>", false), ToolSyntax::kGeneric) << "no channels";
}

TEST(ToolCallParser, HermesCallsAndTheTextAroundThem) {
  const Parsed p = parse_every_way(ToolSyntax::kHermes,
                                   "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                                   "{\"city\": \"Paris\", \"unit\": \"c\"}}\n</tool_call>\n<tool_call>\n"
                                   "{\"name\": \"search\", \"arguments\": {\"q\": \"a</tool_call>b\"}}\n</tool_call>");
  EXPECT_EQ(p.content, "Let me check.\n") << "the separator between calls is not content";
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Paris","unit":"c"})") << "compact, in the order written";
  EXPECT_EQ(p.calls[1].arguments, R"({"q":"a</tool_call>b"})") << "a marker inside a string is text";
}

TEST(ToolCallParser, UnknownFunctionsAndBrokenJsonStayContent) {
  const std::string unknown = "<tool_call>\n{\"name\": \"rm_rf\", \"arguments\": {}}\n</tool_call>";
  Parsed p = parse_every_way(ToolSyntax::kHermes, unknown);
  EXPECT_TRUE(p.calls.empty());
  EXPECT_EQ(p.content, unknown);
  const std::string broken = "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": }}\n</tool_call> after";
  p = parse_every_way(ToolSyntax::kHermes, broken);
  EXPECT_TRUE(p.calls.empty());
  EXPECT_EQ(p.content, broken);
  const std::string cut = "Hm. <tool_call>\n{\"name\": \"search\", \"argu";  // max_tokens ran out
  p = parse_every_way(ToolSyntax::kHermes, cut);
  EXPECT_TRUE(p.calls.empty());
  EXPECT_EQ(p.content, "Hm. ") << "a call cut off is dropped, not shown as text";
  const std::string arguments_not_object = "<tool_call>{\"name\": \"search\", \"arguments\": [1]}</tool_call>";
  EXPECT_TRUE(parse_every_way(ToolSyntax::kHermes, arguments_not_object).calls.empty());
}

TEST(ToolCallParser, AListCutOffKeepsItsCompleteCalls) {
  Parsed p = parse_every_way(ToolSyntax::kGeneric, R"({"tool_calls": [{"name": "search", "arguments": {"q": "a"}}, )"
                                                   R"({"name": "get_weather", "arguments": {"city": "Os)");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, R"({"q":"a"})");
  EXPECT_EQ(p.content, "");
  p = parse_every_way(ToolSyntax::kMistral, R"([TOOL_CALLS][{"name": "search", "arguments": {}}, {"name": "rm", "arguments": {}}, {)");
  EXPECT_TRUE(p.calls.empty()) << "a list naming an unoffered function is not calls";
}

TEST(ToolCallParser, AMissingClosingTagAtTheEndStillCalls) {
  const Parsed p = parse_every_way(ToolSyntax::kHermes, "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"x\"}}\n");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.content, "");
}

TEST(ToolCallParser, ArgumentsMayBeAJsonString) {
  const Parsed p = parse_every_way(ToolSyntax::kGeneric,
                                   R"({"tool_calls": [{"name": "search", "arguments": "{\"q\": \"x\"}"}]})");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, R"({"q":"x"})");
}

TEST(ToolCallParser, EverySyntax) {
  struct Case {
    ToolSyntax syntax;
    std::string text;
    size_t n_calls;
    std::string content;
  };
  const std::vector<Case> cases = {
      {ToolSyntax::kLlama3, R"({"name": "search", "parameters": {"q": "x"}})", 1, ""},
      {ToolSyntax::kLlama3, R"(<|python_tag|>{"name": "search", "parameters": {"q": "x"}})", 1, ""},
      {ToolSyntax::kLlama3, R"(Use {"name": "search"} like this)", 0, R"(Use {"name": "search"} like this)"},
      {ToolSyntax::kMistral, R"([TOOL_CALLS][{"name": "search", "arguments": {"q": "x"}, "id": "abc123XYZ"}, )"
                             R"({"name": "get_weather", "arguments": {"city": "Oslo"}}])", 2, ""},
      {ToolSyntax::kGranite, R"(<|tool_call|>[{"name": "search", "arguments": {"q": "x"}}])", 1, ""},
      {ToolSyntax::kGeneric, R"(Sure. {"tool_calls": [{"name": "search", "arguments": {"q": "x"}}]})", 1, "Sure. "},
      {ToolSyntax::kGeneric, R"({"answer": 42})", 0, R"({"answer": 42})"},
  };
  for (const Case& c : cases) {
    const Parsed p = parse_every_way(c.syntax, c.text);
    EXPECT_EQ(p.calls.size(), c.n_calls) << c.text;
    EXPECT_EQ(p.content, c.content) << c.text;
  }
}

// ---- reasoning ----

struct Thought {
  std::string reasoning, content;
};

Thought think_pieces(bool inside, const std::vector<std::string>& pieces) {
  ThinkParser p(inside);
  Thought out;
  auto take = [&](ThinkParser::Delta d) {
    out.reasoning += d.reasoning;
    out.content += d.content;
  };
  for (const std::string& s : pieces) take(p.push(s));
  take(p.flush());
  return out;
}

TEST(ThinkParser, SplitsTheBlockFromTheAnswerAtEveryCut) {
  const std::string text = "<think>\nStep 1. 2 < 3.\n</think>\n\nThe answer is 4.";
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    const Thought t = think_pieces(false, {text.substr(0, cut), text.substr(cut)});
    EXPECT_EQ(t.reasoning, "Step 1. 2 < 3.") << "cut at " << cut;
    EXPECT_EQ(t.content, "The answer is 4.") << "cut at " << cut;
  }
}

TEST(ThinkParser, PromptOpenedBlocksAndAnswersWithoutOne) {
  EXPECT_TRUE(prompt_opens_thinking("<|Assistant|><think>\n"));
  EXPECT_FALSE(prompt_opens_thinking("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  Thought t = think_pieces(true, {"Hmm.", "</think>", "Yes."});
  EXPECT_EQ(t.reasoning, "Hmm.");
  EXPECT_EQ(t.content, "Yes.");
  t = think_pieces(false, {"Just ", "an answer <think> here"});
  EXPECT_EQ(t.reasoning, "");
  EXPECT_EQ(t.content, "Just an answer <think> here") << "only a block that opens the output is reasoning";
  t = think_pieces(false, {"<think>cut off by max_tokens"});
  EXPECT_EQ(t.reasoning, "cut off by max_tokens");
  EXPECT_EQ(t.content, "");
}

TEST(AnswerParser, ReasoningThenACall) {
  AnswerOptions o;
  o.reasoning = AnswerOptions::Reasoning::kThink;
  o.parse_calls = true;
  o.syntax = ToolSyntax::kHermes;
  o.names = names();
  AnswerParser p(o);
  const std::string text = "<think>\nNeed the weather.\n</think>\n\n<tool_call>\n"
                           "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>";
  AnswerParser::Delta all;
  for (char c : text) {
    AnswerParser::Delta d = p.push(std::string(1, c));
    all.reasoning += d.reasoning;
    all.content += d.content;
    for (auto& call : d.calls) all.calls.push_back(call);
  }
  AnswerParser::Delta rest = p.flush();
  EXPECT_EQ(all.reasoning + rest.reasoning, "Need the weather.");
  EXPECT_EQ(all.content + rest.content, "");
  ASSERT_EQ(all.calls.size() + rest.calls.size(), 1u);
}

// ---- grammars ----

TEST(ToolGrammar, TextUntilMatchesExactlyTheTextsEndingAtTheFirstMarker) {
  std::mt19937 rng(7);
  const std::string alphabet = "</thinks>x";
  for (const std::string marker : {"</think>", "aab", "<|end|>"}) {
    grammar::GrammarBuilder b;
    const uint32_t root = b.rule("root");
    b.define(root, text_until(b, marker));
    const auto g = b.build(root);
    for (int i = 0; i < 3000; ++i) {
      std::string s;
      const int n = std::uniform_int_distribution<int>(0, 14)(rng);
      for (int k = 0; k < n; ++k) s += (alphabet + "ab|end")[std::uniform_int_distribution<size_t>(0, alphabet.size() + 5)(rng)];
      if (i % 3 == 0) s += marker;
      const size_t first = s.find(marker);
      const bool want = first != std::string::npos && first + marker.size() == s.size();
      EXPECT_EQ(grammar::matches(g, s), want) << marker << " / " << s;
    }
  }
}

TEST(ToolGrammar, ForcedGrammarsTakeValidCallsOnly) {
  ToolGrammarOptions o;
  o.tools = weather_tools();
  struct Case {
    ToolSyntax syntax;
    std::string good, bad;
  };
  const std::vector<Case> cases = {
      {ToolSyntax::kHermes, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Oslo\"}}\n</tool_call>",
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"town\":\"Oslo\"}}\n</tool_call>"},
      {ToolSyntax::kLlama3, "{\"name\": \"search\", \"parameters\": {\"q\":\"x\"}}",
       "{\"name\": \"delete\", \"parameters\": {\"q\":\"x\"}}"},
      {ToolSyntax::kMistral, "[TOOL_CALLS][{\"name\": \"search\", \"arguments\": {\"q\":\"x\"}}, {\"name\": \"get_weather\", \"arguments\": {\"city\":\"a\",\"unit\":\"f\"}}]",
       "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\":\"far too long a name\"}}]"},
      {ToolSyntax::kGranite, "<|tool_call|>[{\"name\": \"search\", \"arguments\": {\"q\":\"x\"}}]",
       "<|tool_call|>[{\"name\": \"search\", \"arguments\": {}}]"},
      {ToolSyntax::kGeneric, "{\"tool_calls\": [{\"name\": \"search\", \"arguments\": {\"q\":\"x\"}}]}",
       "{\"tool_calls\": []}"},
      {ToolSyntax::kHarmony, "<|channel|>commentary to=functions.search <|constrain|>json<|message|>{\"q\":\"x\"}",
       "<|channel|>final<|message|>hello"},
  };
  for (const Case& c : cases) {
    o.syntax = c.syntax;
    const auto g = tool_grammar(o).grammar;
    EXPECT_TRUE(grammar::matches(g, c.good)) << tool_syntax_name(c.syntax);
    EXPECT_FALSE(grammar::matches(g, c.bad)) << tool_syntax_name(c.syntax);
    EXPECT_FALSE(grammar::matches(g, "Hello")) << tool_syntax_name(c.syntax);
  }
}

TEST(ToolGrammar, ParallelOffAllowsOneCallAndLazyGrammarsStartAtTheirTrigger) {
  ToolGrammarOptions o;
  o.tools = weather_tools();
  o.syntax = ToolSyntax::kHermes;
  o.parallel = false;
  const std::string one = "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\":\"x\"}}\n</tool_call>";
  EXPECT_TRUE(grammar::matches(tool_grammar(o).grammar, one));
  EXPECT_FALSE(grammar::matches(tool_grammar(o).grammar, one + "\n" + one));
  o.parallel = true;
  EXPECT_TRUE(grammar::matches(tool_grammar(o).grammar, one + "\n" + one));
  o.lazy = true;
  const ToolGrammar lazy = tool_grammar(o);
  EXPECT_EQ(lazy.triggers, std::vector<std::string>{"<tool_call>"});
  EXPECT_TRUE(grammar::matches(lazy.grammar, "<tool_call>{\"name\":  \"search\",\n\"arguments\": {\"q\":\"x\"}}</tool_call>"))
      << "a lazy grammar lets the model space the envelope";
  o.lazy = false;
  o.think = ToolGrammarOptions::Think::kInside;
  EXPECT_TRUE(grammar::matches(tool_grammar(o).grammar, "Hmm, <b>weather</b>.\n</think>\n\n" + one));
}

TEST(ToolGrammar, UnenforceableSchemasFallBackToAnyObject) {
  ToolGrammarOptions o;
  o.tools = {ToolDef{"f", "", ojson::parse(R"({"type": "object", "not": {"required": ["a"]}})")}};
  o.syntax = ToolSyntax::kGeneric;
  const auto g = tool_grammar(o).grammar;
  EXPECT_TRUE(grammar::matches(g, R"({"tool_calls": [{"name": "f", "arguments": {"a":1}}]})"));
  // refused deep inside a $ref, beside a tool whose schema holds: the refusal's half-built rules
  // stay out of the grammar
  o.tools = {ToolDef{"f", "", ojson::parse(R"({"type": "object", "properties": {"x": {"$ref": "#/$defs/bad"}},
                                              "$defs": {"bad": {"type": "string", "if": {}}}})")},
             weather_tools()[1]};
  const auto g2 = tool_grammar(o).grammar;
  EXPECT_TRUE(grammar::matches(g2, R"({"tool_calls": [{"name": "f", "arguments": {"x":[]}}]})"));
  EXPECT_TRUE(grammar::matches(g2, R"({"tool_calls": [{"name": "search", "arguments": {"q":"a"}}]})"));
  EXPECT_FALSE(grammar::matches(g2, R"({"tool_calls": [{"name": "search", "arguments": {}}]})"));
}

// Random generations under forced grammars on a small byte vocabulary always parse into calls.
TEST(ToolGrammar, RandomGenerationsAlwaysParseIntoValidCalls) {
  std::vector<std::string> vocab;
  for (int c = 32; c < 127; ++c) vocab.emplace_back(1, static_cast<char>(c));
  for (const char* piece : {"\n", "<tool_call>", "</tool_call>", "{\"", "\":", "\"name\"", "arguments", "[TOOL_CALLS]",
                            "get_weather", "search", "\", \"", "}}", "<|tool_call|>", "tool_calls", "ab", "é"}) {
    vocab.emplace_back(piece);
  }
  const int32_t eos = static_cast<int32_t>(vocab.size());
  vocab.emplace_back();  // the end token: no bytes
  auto tv = std::make_shared<const grammar::TokenVocab>(vocab, std::vector<int32_t>{eos});
  std::mt19937 rng(11);
  for (ToolSyntax syntax : {ToolSyntax::kHermes, ToolSyntax::kMistral, ToolSyntax::kGranite, ToolSyntax::kGeneric,
                            ToolSyntax::kLlama3}) {
    ToolGrammarOptions o;
    o.tools = weather_tools();
    o.syntax = syntax;
    auto cg = std::make_shared<const grammar::CompiledGrammar>(tool_grammar(o).grammar, tv);
    for (int run = 0; run < 20; ++run) {
      const test_support::TokenWalk w = test_support::random_token_walk(cg, vocab, eos, rng);
      ASSERT_EQ(w.error, "");
      if (!w.ended) continue;  // a long string: cut, as max_tokens would
      const std::string& text = w.text;
      const Parsed p = parse_pieces(syntax, {text});
      EXPECT_FALSE(p.calls.empty()) << tool_syntax_name(syntax) << ": " << text;
      EXPECT_EQ(p.content, "") << text;
      for (const ToolCall& call : p.calls) {
        const ojson args = ojson::parse(call.arguments);
        if (call.name == "get_weather") {
          ASSERT_TRUE(args.contains("city")) << text;
          EXPECT_LE(args["city"].get<std::string>().size(), 24u) << "maxLength 12 characters";
        } else {
          EXPECT_TRUE(args.contains("q")) << text;
        }
      }
    }
  }
}

}  // namespace
}  // namespace engine::tools
