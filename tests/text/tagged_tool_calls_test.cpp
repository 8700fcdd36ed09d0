// The tag-based tool-call syntaxes of 2026's models: Qwen3.5 / Qwen3-Coder's XML and Gemma 4's
// notation. Detection from their templates, calls read out of streamed output whatever the cuts
// (and out of broken or hostile output: never a crash, never a call to an unknown function),
// Gemma 4's thought channel, and grammars that take exactly the valid forms.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

#include "engine/text/grammar/matcher.h"
#include "engine/text/grammar/token_masks.h"
#include "engine/text/reasoning.h"
#include "engine/text/tools/answer_parser.h"
#include "engine/text/tools/tagged_calls.h"
#include "engine/text/tools/tool_grammar.h"
#include "tests/support/grammar_walk.h"
#include "tests/support/template_cases.h"
#include "tests/support/tool_parse.h"

namespace engine::tools::tagged_test {  // named: the unity build puts test files together
namespace {

using ojson = nlohmann::ordered_json;

std::vector<ToolDef> tools() {
  ToolDef w{"get_weather", "Weather in a city", ojson::parse(R"({"type": "object", "properties": {
      "city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]})")};
  ToolDef s{"settings", "", ojson::parse(R"({"type": "object", "properties": {
      "level": {"type": "integer"}, "ratio": {"type": "number"}, "on": {"type": "boolean"},
      "tags": {"type": "array", "items": {"type": "string"}}, "limits": {"type": "object"},
      "note": {"type": ["string", "null"]}}, "required": ["level"]})")};
  return {w, s};
}
std::vector<std::string> names() { return {"get_weather", "settings"}; }

using Parsed = ggufd::test::ParsedCalls;

Parsed parse_pieces(ToolSyntax syntax, const std::vector<std::string>& pieces) {
  ToolCallParser p(syntax, names(), tools());
  return ggufd::test::feed(p, pieces);
}

// Parses `text` whole, byte by byte and cut in two at every byte; all must agree exactly.
Parsed parse_every_way(ToolSyntax syntax, const std::string& text) {
  return ggufd::test::parse_every_way([&] { return ToolCallParser(syntax, names(), tools()); }, text);
}

std::string repo_template(const std::string& name) {
  return ggufd::test::read_file(std::string(GGUFD_TEST_DATA_DIR) + "/templates/" + name + ".jinja");
}

TEST(TaggedToolSyntax, DetectedFromTheTemplates) {
  for (const char* name : {"Qwen-Qwen3.5-4B", "Qwen-Qwen3-Coder"}) {
    const std::string src = repo_template(name);
    ASSERT_FALSE(src.empty()) << name;
    EXPECT_EQ(detect_tool_syntax(src, false), ToolSyntax::kQwenXml) << name;
  }
  EXPECT_TRUE(template_thinks(repo_template("Qwen-Qwen3.5-4B")));
  EXPECT_EQ(template_think_tags(repo_template("Qwen-Qwen3.5-4B")).open, "<think>");
  EXPECT_FALSE(template_thinks(repo_template("Qwen-Qwen3-Coder")));
  for (const char* name : {"google-gemma-4-31B-it", "google-gemma-4-31B-it-interleaved"}) {
    const std::string src = repo_template(name);
    ASSERT_FALSE(src.empty()) << name;
    EXPECT_EQ(detect_tool_syntax(src, false), ToolSyntax::kGemma4) << name;
    EXPECT_TRUE(template_thinks(src)) << name;
    EXPECT_EQ(template_think_tags(src).open, "<|channel>thought") << name;
  }
  EXPECT_EQ(detect_tool_syntax("{{ tools }}<tool_call>{{ x | tojson }}</tool_call>", false), ToolSyntax::kHermes);
  EXPECT_EQ(tool_syntax_name(ToolSyntax::kQwenXml), std::string("qwen_xml"));
  EXPECT_EQ(tool_syntax_name(ToolSyntax::kGemma4), std::string("gemma4"));
}

// ---- Qwen XML ----

const std::string kXmlWeather = "<tool_call>\n<function=get_weather>\n<parameter=city>\nNew York\n</parameter>\n"
                                "</function>\n</tool_call>";

TEST(QwenXmlCalls, ACallAndTheTextAroundIt) {
  const Parsed p = parse_every_way(ToolSyntax::kQwenXml, "Let me check.\n\n" + kXmlWeather + "\n" + kXmlWeather + "\n");
  EXPECT_EQ(p.content, "Let me check.\n\n");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"New York"})");
}

TEST(QwenXmlCalls, ValuesAreConvertedByTheSchemasTypes) {
  // as Qwen3.5's template renders a call: strings raw, booleans as Python does, the rest as JSON
  const std::string text = "<tool_call>\n<function=settings>\n<parameter=level>\n3\n</parameter>\n"
                           "<parameter=ratio>\n0.25\n</parameter>\n<parameter=on>\nTrue\n</parameter>\n"
                           "<parameter=tags>\n[\"a\", \"b c\"]\n</parameter>\n<parameter=limits>\n{\"max\": 10}\n</parameter>\n"
                           "<parameter=note>\nline one\nline \"two\"\n</parameter>\n<parameter=extra>\n42\n</parameter>\n"
                           "</function>\n</tool_call>";
  const Parsed p = parse_every_way(ToolSyntax::kQwenXml, text);
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, R"({"level":3,"ratio":0.25,"on":true,"tags":["a","b c"],"limits":{"max":10},)"
                                  R"("note":"line one\nline \"two\"","extra":"42"})")
      << "a parameter the schema does not list stays text";
  // a number that is not one stays the model's text (the client sees what it wrote)
  const Parsed bad = parse_every_way(ToolSyntax::kQwenXml,
                                     "<tool_call>\n<function=settings>\n<parameter=level>\nthree\n</parameter>\n"
                                     "<parameter=limits>\n{\"max\": \n</parameter>\n</function>\n</tool_call>");
  ASSERT_EQ(bad.calls.size(), 1u);
  EXPECT_EQ(bad.calls[0].arguments, R"({"level":"three","limits":"{\"max\": "})");
}

TEST(QwenXmlCalls, SeveralFunctionsInOneSectionAndNoParameters) {
  const Parsed p = parse_every_way(ToolSyntax::kQwenXml,
                                   "<tool_call>\n<function=settings>\n</function>\n<function=get_weather>\n"
                                   "<parameter=city>\n\n</parameter>\n</function>\n</tool_call>");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].arguments, "{}");
  EXPECT_EQ(p.calls[1].arguments, R"({"city":""})");
  EXPECT_EQ(p.content, "");
}

TEST(QwenXmlCalls, CutOffAndMissingClosingTags) {
  // the answer ends after </function>: a call
  Parsed p = parse_every_way(ToolSyntax::kQwenXml, "<tool_call>\n<function=get_weather>\n<parameter=city>\nRome\n"
                                                   "</parameter>\n</function>\n</tool");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.content, "");
  // cut inside a value, a name, a tag: dropped, never content
  for (const std::string cut : {"<tool_call>\n<function=get_weather>\n<parameter=city>\nRo",
                                "<tool_call>\n<function=get_wea", "<tool_call>\n<function=get_weather>\n<para",
                                "<tool_call>\n<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n</func"}) {
    p = parse_every_way(ToolSyntax::kQwenXml, "Sure. " + cut);
    EXPECT_TRUE(p.calls.empty()) << cut;
    EXPECT_EQ(p.content, "Sure. ") << cut;
  }
}

TEST(QwenXmlCalls, BrokenOrHostileOutputIsContent) {
  const std::vector<std::string> texts = {
      "<tool_call>\n<function=rm_rf>\n<parameter=path>\n/\n</parameter>\n</function>\n</tool_call>",  // not offered
      "<tool_call>\nhello</tool_call> there",
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>",  // Hermes JSON: not this syntax
      "<tool_call>\n<function=get_weather>\n<parameter=city>\na\n</parameter>\n<parameter=city>\nb\n</parameter>\n"
      "</function>\n</tool_call>",  // a parameter twice
      "<tool_call>\n<function=get\nweather>\n</function>\n</tool_call>",
      "<tool_call>\n<function=get_weather>\nstray text</function>\n</tool_call>",
      "<tool_call>\n<function=get_weather>\n</function>\n</tool_call2>",
      "<tool_call>\n<function=" + std::string(300, 'x') + ">\n</function>\n</tool_call>",
      "<tool_call>\n<function=>\n</function>\n</tool_call>",
  };
  for (const std::string& t : texts) {
    const Parsed p = parse_every_way(ToolSyntax::kQwenXml, t);
    EXPECT_TRUE(p.calls.empty()) << t;
    EXPECT_EQ(p.content, t) << "the text is kept as it was";
  }
}

// ---- Gemma 4 ----

TEST(Gemma4Calls, TheTemplatesNotationReadsBackIntoJson) {
  // argument_types as google-gemma-4-31B-it.jinja renders it (keys sorted, strings in <|"|>)
  const std::string text = "<|tool_call>call:settings{level:3,limits:{max:10},note:<|\"|>line one\nline \"two\"<|\"|>,"
                           "on:true,ratio:0.25,tags:[<|\"|>a<|\"|>,<|\"|>b c<|\"|>]}<tool_call|>";
  const Parsed p = parse_every_way(ToolSyntax::kGemma4, "Checking." + text + text);
  EXPECT_EQ(p.content, "Checking.");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "settings");
  EXPECT_EQ(p.calls[0].arguments,
            R"({"level":3,"limits":{"max":10},"note":"line one\nline \"two\"","on":true,"ratio":0.25,"tags":["a","b c"]})");
}

TEST(Gemma4Calls, RoundTripsThroughTheNotation) {
  std::mt19937 rng(5);
  const std::vector<std::string> words = {"a", "b c", "quote \" and \\ and {}", "é", "", "x:y", "[1]"};
  std::function<ojson(int)> random_value = [&](int depth) -> ojson {
    const int kind = std::uniform_int_distribution<int>(0, depth > 3 ? 3 : 5)(rng);
    switch (kind) {
      case 0: return words[rng() % words.size()];
      case 1: return static_cast<int>(rng() % 2000) - 1000;
      case 2: return rng() % 2 == 0;
      case 3: return nullptr;
      case 4: {
        ojson a = ojson::array();
        for (size_t n = rng() % 4; n > 0; --n) a.push_back(random_value(depth + 1));
        return a;
      }
      default: {
        ojson o = ojson::object();
        for (size_t n = rng() % 4; n > 0; --n) o["k" + std::to_string(rng() % 9)] = random_value(depth + 1);
        return o;
      }
    }
  };
  for (int i = 0; i < 300; ++i) {
    ojson args = ojson::object();
    for (size_t n = rng() % 5; n > 0; --n) args["p" + std::to_string(rng() % 7)] = random_value(0);
    const std::string text = "<|tool_call>call:settings" + gemma4_text(args) + "<tool_call|>";
    const SectionResult r = read_gemma4_section(text.substr(12), false, names());
    ASSERT_EQ(r.read, SectionRead::kDone) << text;
    ASSERT_EQ(r.calls.size(), 1u);
    // compared as unordered JSON: the notation sorts keys
    EXPECT_EQ(nlohmann::json::parse(r.calls[0].arguments), nlohmann::json::parse(args.dump())) << text;
    EXPECT_EQ(r.consumed, text.size() - 12);
  }
}

TEST(Gemma4Calls, SpacingQuotedKeysAndAMissingClosingTag) {
  Parsed p = parse_every_way(ToolSyntax::kGemma4,
                             "<|tool_call>call:get_weather{ <|\"|>city<|\"|> : <|\"|>Oslo<|\"|> , unit: <|\"|>c<|\"|> }");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Oslo","unit":"c"})");
  p = parse_every_way(ToolSyntax::kGemma4, "<|tool_call>call:settings{}<tool_call|>");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, "{}");
}

TEST(Gemma4Calls, CutOffCallsAreDroppedAndBrokenOnesAreContent) {
  for (const std::string cut : {"<|tool_call>call:get_weather{city:<|\"|>Os", "<|tool_call>call:get_weat",
                                "<|tool_call>call:settings{level:1", "<|tool_call>call:settings{tags:[1,",
                                "<|tool_call>call:get_weather{city:<|\""}) {
    const Parsed p = parse_every_way(ToolSyntax::kGemma4, "Hm. " + cut);
    EXPECT_TRUE(p.calls.empty()) << cut;
    EXPECT_EQ(p.content, "Hm. ") << cut;
  }
  const std::vector<std::string> broken = {
      "<|tool_call>call:rm{path:<|\"|>/<|\"|>}<tool_call|>",  // not offered
      "<|tool_call>call:settings{level:}<tool_call|>",
      "<|tool_call>call:settings{level:three}<tool_call|>",
      "<|tool_call>call:settings{level:1,level:2}<tool_call|>",
      "<|tool_call>call:settings{level:1]<tool_call|>",
      "<|tool_call>get_weather{city:<|\"|>x<|\"|>}<tool_call|>",
      "<|tool_call>call:settings{level:1}<tool_response|>",
      "<|tool_call>call:settings{\"level\":1}<tool_call|>",
      "<|tool_call>call:settings{level:1e999x}<tool_call|>",
      "<|tool_call>call:settings{level:" + std::string(70, '1') + "}<tool_call|>",  // past 64 characters
      "<|tool_call>call:settings{level:" + std::string(200, '[') + std::string(200, ']') + "}<tool_call|>",  // too deep
  };
  for (const std::string& t : broken) {
    const Parsed p = parse_every_way(ToolSyntax::kGemma4, t);
    EXPECT_TRUE(p.calls.empty()) << t;
    EXPECT_EQ(p.content, t);
  }
}

TEST(Gemma4Answer, TheThoughtChannelThenACall) {
  AnswerOptions o;
  o.reasoning = AnswerOptions::Reasoning::kThink;
  o.think_tags = kGemma4ThoughtTags;
  o.parse_calls = true;
  o.syntax = ToolSyntax::kGemma4;
  o.names = names();
  o.tools = tools();
  const std::string text = "<|channel>thought\nNeed the weather.<channel|>Checking.<|tool_call>call:get_weather"
                           "{city:<|\"|>Rome<|\"|>}<tool_call|>";
  for (size_t step : {size_t{1}, size_t{3}, text.size()}) {
    const AnswerParser::Delta all = ggufd::test::answer_in_steps(o, text, step);
    EXPECT_EQ(all.reasoning, "Need the weather.");
    EXPECT_EQ(all.content, "Checking.");
    ASSERT_EQ(all.calls.size(), 1u);
    EXPECT_EQ(all.calls[0].arguments, R"({"city":"Rome"})");
  }
  // thinking off: the template closes an empty thought in the prompt
  EXPECT_FALSE(prompt_opens_thinking("<|turn>model\n<|channel>thought\n<channel|>", kGemma4ThoughtTags));
  EXPECT_TRUE(prompt_opens_thinking("<|turn>model\n<|channel>thought\n", kGemma4ThoughtTags));
}

// ---- grammars ----

std::shared_ptr<const grammar::Grammar> forced(ToolSyntax syntax, bool parallel = true) {
  ToolGrammarOptions o;
  o.tools = tools();
  o.syntax = syntax;
  o.parallel = parallel;
  return tool_grammar(o).grammar;
}

TEST(TaggedToolGrammar, QwenXmlTakesCallsOfTheSchemaOnly) {
  const auto g = forced(ToolSyntax::kQwenXml);
  const auto param = [](const std::string& n, const std::string& v) { return "<parameter=" + n + ">\n" + v + "\n</parameter>\n"; };
  const auto call = [](const std::string& f, const std::string& params) {
    return "<tool_call>\n<function=" + f + ">\n" + params + "</function>\n</tool_call>";
  };
  const std::string weather = call("get_weather", param("city", "New\nYork") + param("unit", "c"));
  EXPECT_TRUE(grammar::matches(g, weather));
  EXPECT_TRUE(grammar::matches(g, call("get_weather", param("city", ""))));
  EXPECT_TRUE(grammar::matches(g, call("settings", param("level", "3") + param("on", "false") + param("tags", "[\"a\"]") +
                                                       param("note", "any text"))));
  EXPECT_TRUE(grammar::matches(g, weather + "\n" + weather));
  EXPECT_FALSE(grammar::matches(forced(ToolSyntax::kQwenXml, false), weather + "\n" + weather));
  EXPECT_FALSE(grammar::matches(g, call("get_weather", param("unit", "c")))) << "city is required";
  EXPECT_FALSE(grammar::matches(g, call("get_weather", param("city", "a") + param("unit", "k")))) << "not in the enum";
  EXPECT_FALSE(grammar::matches(g, call("get_weather", param("city", "a") + param("town", "b"))));
  EXPECT_FALSE(grammar::matches(g, call("settings", param("level", "three"))));
  EXPECT_FALSE(grammar::matches(g, call("settings", param("level", "1.5")))) << "an integer";
  EXPECT_FALSE(grammar::matches(g, call("delete", param("city", "a"))));
  EXPECT_FALSE(grammar::matches(g, "Sure. " + weather));
  EXPECT_FALSE(grammar::matches(g, call("get_weather", param("city", "a\n</parameter>\nb"))));
  ToolGrammarOptions o;
  o.tools = tools();
  o.syntax = ToolSyntax::kQwenXml;
  o.lazy = true;
  const ToolGrammar lazy = tool_grammar(o);
  EXPECT_EQ(lazy.triggers, std::vector<std::string>{"<tool_call>"});
  EXPECT_TRUE(grammar::matches(lazy.grammar, "<tool_call><function=get_weather><parameter=city>Rome\n</parameter>"
                                             "</function></tool_call>"))
      << "a lazy grammar lets the model leave out the envelope's newlines";
}

TEST(TaggedToolGrammar, Gemma4TakesCallsOfTheSchemaOnly) {
  const auto g = forced(ToolSyntax::kGemma4);
  const std::string weather = "<|tool_call>call:get_weather{city:<|\"|>Oslo, \"N\"<|\"|>,unit:<|\"|>f<|\"|>}<tool_call|>";
  EXPECT_TRUE(grammar::matches(g, weather));
  EXPECT_TRUE(grammar::matches(g, weather + weather));
  EXPECT_FALSE(grammar::matches(forced(ToolSyntax::kGemma4, false), weather + weather));
  EXPECT_TRUE(grammar::matches(g, "<|tool_call>call:settings{level:-3,ratio:2.5e-3,on:true,"
                                  "limits:{max:10,k:[<|\"|>a<|\"|>,null]}}<tool_call|>"));
  for (const std::string bad : {"<|tool_call>call:get_weather{unit:<|\"|>f<|\"|>}<tool_call|>",
                                "<|tool_call>call:get_weather{city:<|\"|>a<|\"|>,unit:<|\"|>k<|\"|>}<tool_call|>",
                                "<|tool_call>call:get_weather{city:\"a\"}<tool_call|>",
                                "<|tool_call>call:get_weather{city:<|\"|>a<|\"|>,town:<|\"|>b<|\"|>}<tool_call|>",
                                "<|tool_call>call:settings{level:1.5}<tool_call|>",
                                "<|tool_call>call:settings{on:true}<tool_call|>",
                                "<|tool_call>call:delete{}<tool_call|>", "Sure."}) {
    EXPECT_FALSE(grammar::matches(g, bad)) << bad;
  }
  ToolGrammarOptions o;
  o.tools = {ToolDef{"free", "", ojson::object()}};
  o.syntax = ToolSyntax::kGemma4;
  o.lazy = true;
  const ToolGrammar lazy = tool_grammar(o);
  EXPECT_EQ(lazy.triggers, std::vector<std::string>{"<|tool_call>"});
  EXPECT_TRUE(grammar::matches(lazy.grammar, "<|tool_call>call:free{a:1,b_c:{d:[]}}<tool_call|>"));
  EXPECT_TRUE(grammar::matches(lazy.grammar, "<|tool_call>call:free{}<tool_call|>"));
}

// Random generations under the forced grammars on a small vocabulary always parse into calls whose
// arguments hold the required parameters: the grammar and the parser agree.
TEST(TaggedToolGrammar, RandomGenerationsAlwaysParseIntoValidCalls) {
  std::vector<std::string> vocab;
  for (int c = 32; c < 127; ++c) vocab.emplace_back(1, static_cast<char>(c));
  for (const char* piece : {"\n", "<tool_call>", "</tool_call>", "<function=", "<parameter=", "</parameter>", "</function>",
                            "get_weather", "settings", "city", "level", "<|tool_call>", "<tool_call|>", "<|\"|>", "call:",
                            "true", "é"}) {
    vocab.emplace_back(piece);
  }
  std::vector<int32_t> closers;  // "\n", "</parameter>", "<|\"|>"
  for (const std::string piece : {"\n", "</parameter>", "<|\"|>"}) {
    closers.push_back(static_cast<int32_t>(std::find(vocab.begin(), vocab.end(), piece) - vocab.begin()));
  }
  const int32_t eos = static_cast<int32_t>(vocab.size());
  vocab.emplace_back();
  auto tv = std::make_shared<const grammar::TokenVocab>(vocab, std::vector<int32_t>{eos});
  std::mt19937 rng(13);
  for (ToolSyntax syntax : {ToolSyntax::kQwenXml, ToolSyntax::kGemma4}) {
    auto cg = std::make_shared<const grammar::CompiledGrammar>(forced(syntax), tv);
    int finished = 0;
    for (int run = 0; run < 20; ++run) {
      // (leaving strings sooner, so that most walks finish)
      const test_support::TokenWalk w = test_support::random_token_walk(cg, vocab, eos, rng, closers);
      ASSERT_EQ(w.error, "");
      if (!w.ended) continue;  // cut, as max_tokens would
      const std::string& text = w.text;
      ++finished;
      const Parsed p = parse_pieces(syntax, {text});
      ASSERT_FALSE(p.calls.empty()) << tool_syntax_name(syntax) << ": " << text;
      EXPECT_EQ(p.content, "") << text;
      for (const ToolCall& call : p.calls) {
        const ojson args = ojson::parse(call.arguments);
        EXPECT_TRUE(args.contains(call.name == "get_weather" ? "city" : "level")) << text;
        if (call.name == "settings") {
          EXPECT_TRUE(args["level"].is_number()) << text;  // (an integer past 64 bits reads as a double)
        }
      }
    }
    EXPECT_GT(finished, 0) << tool_syntax_name(syntax);
  }
}

}  // namespace
}  // namespace engine::tools::tagged_test
