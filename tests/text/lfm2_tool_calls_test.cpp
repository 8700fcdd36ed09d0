// LFM2 / LFM2.5's tool calls (kLfm2): a Python list of calls between <|tool_call_start|> and
// <|tool_call_end|>. Detection from the three templates, calls read out of streamed output whatever
// the cuts (the templates' own rendering of calls reads back into the arguments it was made from),
// broken or hostile output kept as text, reasoning in <think>, and a grammar that takes exactly
// calls of the schema, whose random generations always parse.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "engine/text/grammar/matcher.h"
#include "engine/text/grammar/token_masks.h"
#include "engine/text/reasoning.h"
#include "engine/text/tools/answer_parser.h"
#include "engine/text/tools/python_calls.h"
#include "engine/text/tools/tool_grammar.h"
#include "tests/support/grammar_walk.h"
#include "tests/support/template_cases.h"
#include "tests/support/tool_parse.h"

namespace engine::tools::lfm2_test {  // named: the unity build puts test files together
namespace {

using ojson = nlohmann::ordered_json;
using Parsed = ggufd::test::ParsedCalls;

const std::string kDir = std::string(GGUFD_TEST_DATA_DIR) + "/templates/";
const std::vector<std::string> kTemplates = {"LiquidAI-LFM2-8B-A1B", "LiquidAI-LFM2.5-8B-A1B", "LiquidAI-LFM2.5-Instruct"};

std::vector<ToolDef> tools() {
  ToolDef w{"get_weather", "Weather in a city", ojson::parse(R"({"type": "object", "properties": {
      "city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]})")};
  ToolDef s{"settings", "", ojson::parse(R"({"type": "object", "properties": {
      "level": {"type": "integer"}, "ratio": {"type": "number"}, "on": {"type": "boolean"},
      "tags": {"type": "array", "items": {"type": "string"}}, "limits": {"type": "object"},
      "note": {"type": ["string", "null"]}}, "required": ["level"]})")};
  return {w, s};
}
std::vector<std::string> names() { return {"get_weather", "settings", "apply_settings", "search_web"}; }

Parsed parse_every_way(const std::string& text) {
  return ggufd::test::parse_every_way([] { return ToolCallParser(ToolSyntax::kLfm2, names(), tools()); }, text);
}

TEST(Lfm2ToolSyntax, DetectedFromTheTemplates) {
  for (const std::string& name : kTemplates) {
    const std::string src = ggufd::test::read_file(kDir + name + ".jinja");
    ASSERT_FALSE(src.empty()) << name;
    EXPECT_EQ(detect_tool_syntax(src, false), ToolSyntax::kLfm2) << name;
  }
  // <think> blocks where the template writes them (LFM2.5-8B-A1B); the others only cut them off
  EXPECT_TRUE(template_thinks(ggufd::test::read_file(kDir + "LiquidAI-LFM2.5-8B-A1B.jinja")));
  EXPECT_FALSE(template_thinks(ggufd::test::read_file(kDir + "LiquidAI-LFM2-8B-A1B.jinja")));
  EXPECT_EQ(tool_syntax_name(ToolSyntax::kLfm2), std::string("lfm2"));
  EXPECT_EQ(call_markers(ToolSyntax::kLfm2).at(0).text, "<|tool_call_start|>");
  EXPECT_EQ(syntax_texts(ToolSyntax::kLfm2), (std::vector<std::string>{"<|tool_call_start|>", "<|tool_call_end|>"}));
}

// Every call LFM2.5-8B-A1B's template rendered in the tool cases (Jinja2's text: strings in single
// quotes and unescaped, lists as Python writes them, dicts as JSON) reads back into the arguments
// the case's messages gave.
TEST(Lfm2Calls, TheTemplatesRenderingReadsBackIntoTheArguments) {
  const ojson spec = ojson::parse(ggufd::test::read_file(kDir + "tools/LiquidAI-LFM2.5-8B-A1B.json"));
  int checked = 0;
  for (const ojson& c : spec["cases"]) {
    const std::string text = c["expected"];
    size_t from = 0;
    for (const ojson& m : c["messages"]) {
      if (!m.contains("tool_calls")) continue;
      const size_t open = text.find("<|tool_call_start|>", from);
      const size_t close = text.find("<|tool_call_end|>", open);
      ASSERT_NE(close, std::string::npos) << c["name"];
      const Parsed p = parse_every_way(text.substr(open, close + 17 - open));
      EXPECT_EQ(p.content, "") << c["name"];
      ASSERT_EQ(p.calls.size(), m["tool_calls"].size()) << c["name"];
      for (size_t i = 0; i < p.calls.size(); ++i) {
        const ojson& f = m["tool_calls"][i]["function"];
        EXPECT_EQ(p.calls[i].name, f["name"].get<std::string>());
        EXPECT_EQ(nlohmann::json::parse(p.calls[i].arguments), nlohmann::json::parse(f["arguments"].get<std::string>()));
        ++checked;
      }
      from = close;
    }
  }
  EXPECT_GE(checked, 8);  // the thirteen cases' calls
}

TEST(Lfm2Calls, TextAroundCallsAndParallelCalls) {
  const Parsed p = parse_every_way("Let me check. <|tool_call_start|>[get_weather(city=\"Paris\", unit='c'), "
                                   "settings(level=-2, ratio=1.5e3, on=true, note=null)]<|tool_call_end|>\nDone.");
  EXPECT_EQ(p.content, "Let me check. Done.");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Paris","unit":"c"})");
  EXPECT_EQ(p.calls[1].arguments, R"({"level":-2,"ratio":1500.0,"on":true,"note":null})");
}

TEST(Lfm2Calls, ValuesOfEveryKind) {
  const Parsed p = parse_every_way(
      "<|tool_call_start|>[settings( level = 3 , tags=['it\\'s', \"say \\\"hi\\\"\", 'tab\\there', '\\u00e9\\x41\\U0001F600'],"
      " limits={'a': [1, [2, {\"b\": None}]], \"c\": False}, note='raw\nline', on=True), settings()]<|tool_call_end|>");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].arguments, "{\"level\":3,\"tags\":[\"it's\",\"say \\\"hi\\\"\",\"tab\\there\",\"\xC3\xA9" "A\xF0\x9F\x98\x80\"],"
                                  "\"limits\":{\"a\":[1,[2,{\"b\":null}]],\"c\":false},\"note\":\"raw\\nline\",\"on\":true}");
  EXPECT_EQ(p.calls[1].arguments, "{}");
  // one call without the list's brackets, and no closing tag at the end of the answer
  const Parsed q = parse_every_way("<|tool_call_start|>get_weather(city='Oslo')");
  ASSERT_EQ(q.calls.size(), 1u);
  EXPECT_EQ(q.calls[0].arguments, R"({"city":"Oslo"})");
  EXPECT_EQ(q.content, "");
}

TEST(Lfm2Calls, ACutOffListKeepsItsCompleteCalls) {
  for (const std::string cut : {"<|tool_call_start|>[get_weather(city='Oslo'), settings(level=",
                                "<|tool_call_start|>[get_weather(city='Oslo'), sett",
                                "<|tool_call_start|>[get_weather(city='Oslo'), settings(note='unterminated"}) {
    const Parsed p = parse_every_way("Sure. " + cut);
    EXPECT_EQ(p.content, "Sure. ") << cut;
    ASSERT_EQ(p.calls.size(), 1u) << cut;
    EXPECT_EQ(p.calls[0].arguments, R"({"city":"Oslo"})");
  }
  for (const std::string cut : {"<|tool_call_start|>[get_weather(city='Os", "<|tool_call_start|>[", "<|tool_call_st",
                                "<|tool_call_start|>[settings(level=Tr", "<|tool_call_start|>[settings(level=12",
                                "<|tool_call_start|>[settings(note='\\u00"}) {
    const Parsed p = parse_every_way("Sure. " + cut);
    EXPECT_TRUE(p.calls.empty()) << cut;
    EXPECT_EQ(p.content, cut.size() < 19 ? "Sure. " + cut : "Sure. ") << cut;
  }
}

TEST(Lfm2Calls, BrokenOrHostileOutputIsContent) {
  const std::vector<std::string> texts = {
      "<|tool_call_start|>[rm(path='/')]<|tool_call_end|>",  // not offered
      "<|tool_call_start|>[get_weather('Oslo')]<|tool_call_end|>",  // positional
      "<|tool_call_start|>[get_weather(city='a', city='b')]<|tool_call_end|>",
      "<|tool_call_start|>[get_weather(city=Oslo)]<|tool_call_end|>",
      "<|tool_call_start|>[get_weather(city='Oslo')) garbage]<|tool_call_end|>",
      "<|tool_call_start|>[]<|tool_call_end|>",
      "<|tool_call_start|>{\"name\": \"get_weather\"}<|tool_call_end|>",
      "<|tool_call_start|>[settings(level={1: 2})]<|tool_call_end|>",
      "<|tool_call_start|>[settings(level='\\xZZ')]<|tool_call_end|>",
      "<|tool_call_start|>[settings(level=1e999x)]<|tool_call_end|>",
      "<|tool_call_start|>[settings(level=3" + std::string(3, '\0') + "0)]<|tool_call_end|>",  // (found by fuzz_answer)
      "<|tool_call_start|>[settings(level=" + std::string(70, '1') + ")]<|tool_call_end|>",  // a number past 64 characters
      "<|tool_call_start|>[settings(le vel=1)]<|tool_call_end|>",
      "<|tool_call_start|>[" + std::string(300, 'x') + "()]<|tool_call_end|>",
      "<|tool_call_start|>[settings(level=" + std::string(5000, '[') + std::string(5000, ']') + ")]<|tool_call_end|>",
  };
  for (const std::string& t : texts) {
    const Parsed p = parse_every_way(t);
    EXPECT_TRUE(p.calls.empty()) << t;
    EXPECT_EQ(p.content, t) << "the text is kept as it was";
  }
}

TEST(Lfm2Answer, ThinkBlockThenACall) {
  AnswerOptions o;
  o.reasoning = AnswerOptions::Reasoning::kThink;
  o.think_tags = template_think_tags(ggufd::test::read_file(kDir + "LiquidAI-LFM2.5-8B-A1B.jinja"));
  o.parse_calls = true;
  o.syntax = ToolSyntax::kLfm2;
  o.names = names();
  o.tools = tools();
  const std::string text = "<think>Need the weather.</think>Checking.<|tool_call_start|>[get_weather(city='Rome')]"
                           "<|tool_call_end|>";
  for (size_t step : {size_t{1}, size_t{4}, text.size()}) {
    const AnswerParser::Delta all = ggufd::test::answer_in_steps(o, text, step);
    EXPECT_EQ(all.reasoning, "Need the weather.");
    EXPECT_EQ(all.content, "Checking.");
    ASSERT_EQ(all.calls.size(), 1u);
    EXPECT_EQ(all.calls[0].arguments, R"({"city":"Rome"})");
  }
}

// ---- grammar ----
// (JSON values come compact, as in every tool grammar: grammar/json_schema.h)

std::shared_ptr<const grammar::Grammar> forced(bool parallel = true) {
  ToolGrammarOptions o;
  o.tools = tools();
  o.syntax = ToolSyntax::kLfm2;
  o.parallel = parallel;
  return tool_grammar(o).grammar;
}

std::string section(const std::string& calls) { return "<|tool_call_start|>[" + calls + "]<|tool_call_end|>"; }

TEST(Lfm2ToolGrammar, TakesCallsOfTheSchemaOnly) {
  const auto g = forced();
  const std::string weather = "get_weather(city='New \\'York\\'', unit='f')";
  for (const std::string& ok : {weather, std::string("get_weather(city=\"Oslo\")"), weather + ", " + weather,
                               std::string("settings(level=-3, ratio=2.5e-3, on=True, tags=[\"a\"], limits={\"k\":[1]}, "
                                           "note=None)"),
                               std::string("settings(level=1, on=false, note='x')")}) {
    EXPECT_TRUE(grammar::matches(g, section(ok))) << ok;
  }
  EXPECT_FALSE(grammar::matches(forced(false), section(weather + ", " + weather)));
  for (const std::string bad : {"get_weather(unit='f')", "get_weather(city='a', unit='k')", "get_weather(city=Oslo)",
                                "get_weather(city='a', town='b')", "settings(level=1.5)", "settings(on=True)",
                                "settings(level='1')", "delete()", ""}) {
    EXPECT_FALSE(grammar::matches(g, section(bad))) << bad;
  }
  EXPECT_FALSE(grammar::matches(g, "Sure. " + section(weather)));
  ToolGrammarOptions o;
  o.tools = {ToolDef{"free", "", ojson::object()}};
  o.syntax = ToolSyntax::kLfm2;
  o.lazy = true;
  const ToolGrammar lazy = tool_grammar(o);
  EXPECT_EQ(lazy.triggers, std::vector<std::string>{"<|tool_call_start|>"});
  EXPECT_TRUE(grammar::matches(lazy.grammar, section("free(a=1,b_c={\"d\":[]}, e='x', f=None)")));
  EXPECT_TRUE(grammar::matches(lazy.grammar, section("free()")));
  EXPECT_FALSE(grammar::matches(lazy.grammar, section("free(1)")));
}

// Random generations under the forced grammar on a small vocabulary always parse into calls whose
// arguments hold the required parameters: the grammar and the parser agree.
TEST(Lfm2ToolGrammar, RandomGenerationsAlwaysParseIntoValidCalls) {
  std::vector<std::string> vocab;
  for (int c = 32; c < 127; ++c) vocab.emplace_back(1, static_cast<char>(c));
  for (const char* piece : {"\n", "<|tool_call_start|>", "<|tool_call_end|>", "get_weather", "settings", "city=",
                            "level=", "True", "None", "é", "\\u00e9"}) {
    vocab.emplace_back(piece);
  }
  std::vector<int32_t> closers;
  for (const std::string piece : {"'", "\"", ")", "]"}) {
    closers.push_back(static_cast<int32_t>(std::find(vocab.begin(), vocab.end(), piece) - vocab.begin()));
  }
  const int32_t eos = static_cast<int32_t>(vocab.size());
  vocab.emplace_back();
  auto tv = std::make_shared<const grammar::TokenVocab>(vocab, std::vector<int32_t>{eos});
  auto cg = std::make_shared<const grammar::CompiledGrammar>(forced(), tv);
  std::mt19937 rng(29);
  int finished = 0;
  for (int run = 0; run < 30; ++run) {
    const test_support::TokenWalk w = test_support::random_token_walk(cg, vocab, eos, rng, closers);
    ASSERT_EQ(w.error, "");
    if (!w.ended) continue;  // cut, as max_tokens would
    ++finished;
    ToolCallParser parser(ToolSyntax::kLfm2, names(), tools());
    const Parsed p = ggufd::test::feed(parser, {w.text});
    ASSERT_FALSE(p.calls.empty()) << w.text;
    EXPECT_EQ(p.content, "") << w.text;
    for (const ToolCall& call : p.calls) {
      const ojson args = ojson::parse(call.arguments);
      EXPECT_TRUE(args.contains(call.name == "get_weather" ? "city" : "level")) << w.text;
      if (call.name == "settings") {
        EXPECT_TRUE(args["level"].is_number()) << w.text;
      }
    }
  }
  EXPECT_GT(finished, 0);
}

}  // namespace
}  // namespace engine::tools::lfm2_test
