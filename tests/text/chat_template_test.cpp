// engine::ChatTemplate against real models' chat templates with expected renderings
// (../shared/templates), plus the public API contract (errors, ChatML fallback, options).
#include "engine/text/chat_template.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/shared.h"
#include "tests/support/template_cases.h"

namespace {

using engine::ChatInput;
using engine::ChatTemplate;
using engine::ChatTemplateOptions;
using engine::TemplateError;
using engine::TemplateRaise;
using engine::jinja::Value;

using ggufd::test::parse_time;
using ggufd::test::read_file;
using ggufd::test::to_value;

// Every <name>.json in `dir` (../shared/templates/README.md's format): each case renders byte for
// byte as Jinja2 did, or raises the same message. Returns the number of cases.
int check_template_cases(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> case_files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") case_files.push_back(entry.path());
  }
  std::sort(case_files.begin(), case_files.end());
  int cases = 0;
  for (const auto& file : case_files) {
    const nlohmann::ordered_json spec = nlohmann::ordered_json::parse(read_file(file));
    const std::string name = spec.at("template").get<std::string>();
    SCOPED_TRACE(name);
    ChatTemplate tmpl = ChatTemplate::parse(read_file(dir / name));
    const std::tm now = parse_time(spec.at("now").get<std::string>());
    for (const auto& c : spec.at("cases")) {
      SCOPED_TRACE(c.at("name").get<std::string>());
      ChatInput input;
      input.messages = to_value(c.at("messages"));
      input.add_generation_prompt = c.at("add_generation_prompt").get<bool>();
      input.bos_token = c.at("bos_token").get<std::string>();
      input.eos_token = c.at("eos_token").get<std::string>();
      input.clock = [now] { return now; };
      ++cases;
      ggufd::test::expect_case_renders(tmpl, input, c);
    }
  }
  return cases;
}

TEST(ChatTemplateShared, AllCasesRenderExactly) {
  GGUFD_REQUIRE_SHARED("templates");
  EXPECT_GT(check_template_cases(ggufd::test::shared_path("templates")), 0);
}

// Templates ../shared lacks (gemma 3, gpt-oss harmony, Ministral 3 reasoning), with cases rendered
// by Jinja2 (tests/data/templates/render_cases.py).
TEST(ChatTemplateRepo, AllCasesRenderExactly) {
  EXPECT_GE(check_template_cases(std::string(GGUFD_TEST_DATA_DIR) + "/templates"), 19 + 27);
}

ChatInput conversation() {
  ChatInput input;
  Value messages = Value::array();
  messages.push_back(Value::object({{"role", "system"}, {"content", "Be brief."}}));
  messages.push_back(Value::object({{"role", "user"}, {"content", "Hi"}}));
  input.messages = messages;
  input.add_generation_prompt = true;
  return input;
}

TEST(ChatTemplate, ChatMLFallbackRendersChatML) {
  const ChatTemplate tmpl = ChatTemplate::parse(engine::kChatMLTemplate);
  EXPECT_EQ(tmpl.render(conversation()),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n");
  ChatInput no_prompt = conversation();
  no_prompt.add_generation_prompt = false;
  EXPECT_EQ(tmpl.render(no_prompt),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatTemplate, ChatMLFallbackTakesTextParts) {
  ChatInput input;
  Value parts = Value::array();
  parts.push_back(Value::object({{"type", "text"}, {"text", "a"}}));
  parts.push_back(Value::object({{"type", "image"}, {"url", "x"}}));
  parts.push_back(Value::object({{"type", "text"}, {"text", "b"}}));
  input.messages = Value::array({Value::object({{"role", "user"}, {"content", parts}})});
  EXPECT_EQ(ChatTemplate::parse(engine::kChatMLTemplate).render(input),
            "<|im_start|>user\nab<|im_end|>\n");
}

TEST(ChatTemplate, SyntaxErrorHasLineAndColumn) {
  try {
    ChatTemplate::parse("line one\n{% if x %}\n  {{ x + }}\n{% endif %}");
    FAIL() << "expected a syntax error";
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.line(), 3);
    EXPECT_EQ(e.column(), 10);
    EXPECT_NE(std::string(e.what()).find("line 3, column 10"), std::string::npos) << e.what();
  }
}

TEST(ChatTemplate, UnclosedBlockNamesTheExpectedTag) {
  try {
    ChatTemplate::parse("{% for m in messages %}{{ m }}");
    FAIL() << "expected a syntax error";
  } catch (const TemplateError& e) {
    EXPECT_NE(e.message().find("endfor"), std::string::npos) << e.what();
  }
}

TEST(ChatTemplate, RaiseExceptionMessageIsVerbatim) {
  const ChatTemplate tmpl = ChatTemplate::parse(
      "{% if messages[0].role == 'system' %}{{ raise_exception('No system role: ' ~ "
      "messages[0].content) }}{% endif %}");
  try {
    tmpl.render(conversation());
    FAIL() << "expected TemplateRaise";
  } catch (const TemplateRaise& e) {
    EXPECT_STREQ(e.what(), "No system role: Be brief.");
    EXPECT_EQ(e.line(), 1);
  }
}

TEST(ChatTemplate, RuntimeErrorIsTemplateErrorNotRaise) {
  const ChatTemplate tmpl = ChatTemplate::parse("{{ messages[0].content + 1 }}");
  try {
    tmpl.render(conversation());
    FAIL() << "expected TemplateError";
  } catch (const TemplateRaise&) {
    FAIL() << "a type error must not look like raise_exception";
  } catch (const TemplateError& e) {
    EXPECT_NE(e.message().find("concatenate"), std::string::npos) << e.what();
  }
}

TEST(ChatTemplate, VariablesAndTools) {
  const ChatTemplate tmpl = ChatTemplate::parse(
      "{{ bos_token }}|{{ eos_token }}|{{ tools is none }}|{{ documents is none }}|"
      "{{ enable_thinking }}|{{ tools|length if tools else 0 }}");
  ChatInput input = conversation();
  input.bos_token = "<s>";
  input.eos_token = "</s>";
  input.extra_variables = Value::object({{"enable_thinking", false}});
  EXPECT_EQ(tmpl.render(input), "<s>|</s>|False|True|False|0");
  input.tools = Value::array({Value::object({{"type", "function"}})});
  EXPECT_EQ(tmpl.render(input), "<s>|</s>|False|True|False|1");
}

// A request without tools leaves `tools` undefined, as Jinja2 sees it: not defined, not none,
// falsy, iterating nothing (Hermes-style templates loop over it unguarded).
TEST(ChatTemplate, AbsentToolsAreUndefined) {
  const ChatTemplate tmpl = ChatTemplate::parse(
      "{{ tools is defined }}|{{ tools is undefined }}|{{ tools is none }}|"
      "{% if tools %}yes{% else %}no{% endif %}|{% for t in tools %}{{ t }}{% endfor %}|"
      "{{ tools }}|{{ tools|default('none given') }}");
  ChatInput input = conversation();
  EXPECT_EQ(tmpl.render(input), "False|True|False|no|||none given");
  input.tools = Value::array({Value("t1")});
  EXPECT_EQ(tmpl.render(input), "True|False|False|yes|t1|['t1']|['t1']");
}

TEST(ChatTemplate, StrftimeNowUsesInjectedClock) {
  const ChatTemplate tmpl = ChatTemplate::parse("{{ strftime_now('%d %b %Y, %A %H:%M') }}");
  ChatInput input;
  input.clock = [] { return parse_time("2024-07-26T09:05:00"); };
  EXPECT_EQ(tmpl.render(input), "26 Jul 2024, Friday 09:05");
}

TEST(ChatTemplate, InputIsReadOnlyToTemplates) {
  const ChatTemplate tmpl = ChatTemplate::parse("{% set _ = messages.append(1) %}");
  EXPECT_THROW(tmpl.render(conversation()), TemplateError);
  const ChatTemplate copy = ChatTemplate::parse(
      "{% set m = messages|list %}{% set _ = m.append(1) %}{{ m|length }},{{ messages|length }}");
  EXPECT_EQ(copy.render(conversation()), "3,2");
}

TEST(ChatTemplate, OptionsCanDisableTrimAndLstrip) {
  engine::ChatTemplateOptions raw;
  raw.trim_blocks = false;
  raw.lstrip_blocks = false;
  const std::string src = "  {% if true %}\nx\n  {% endif %}\n";
  EXPECT_EQ(ChatTemplate::parse(src).render({}), "x\n");
  EXPECT_EQ(ChatTemplate::parse(src, raw).render({}), "  \nx\n  ");
}

TEST(ChatTemplate, LimitsStopRunawayTemplates) {
  engine::ChatTemplateOptions small;
  small.limits.max_steps = 10'000;
  const ChatTemplate loop = ChatTemplate::parse(
      "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}", small);
  EXPECT_THROW(loop.render({}), TemplateError);
  const ChatTemplate recursion =
      ChatTemplate::parse("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  EXPECT_THROW(recursion.render({}), TemplateError);
  engine::ChatTemplateOptions tiny_output;
  tiny_output.limits.max_output_bytes = 1000;
  const ChatTemplate big = ChatTemplate::parse("{{ 'x' * 5000 }}", tiny_output);
  EXPECT_THROW(big.render({}), TemplateError);
}

TEST(ChatTemplate, ConcurrentRendersShareOneTemplate) {
  const ChatTemplate tmpl = ChatTemplate::parse(engine::kChatMLTemplate);
  const ChatInput input = conversation();
  const std::string expected = tmpl.render(input);
  std::vector<std::thread> threads;
  std::vector<int> mismatches(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) mismatches[t] += tmpl.render(input) != expected;
    });
  }
  for (auto& th : threads) th.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

// ---- Limits and robustness -----------------------------------------------------------------

// The message of the TemplateError that parsing or rendering throws ("" if none).
std::string error_of(std::string_view source) {
  try {
    ChatTemplate::parse(source).render({});
  } catch (const TemplateError& e) {
    return e.message();
  }
  return "";
}

TEST(ChatTemplateLimits, NestingRecursionAndSize) {
  EXPECT_NE(error_of("{{ " + std::string(500, '(') + "1" + std::string(500, ')') + " }}")
                .find("nested deeper"),
            std::string::npos);
  std::string deep_blocks;
  for (int i = 0; i < 200; ++i) deep_blocks += "{% if true %}";
  EXPECT_NE(error_of(deep_blocks).find("nested deeper"), std::string::npos);
  EXPECT_NE(error_of("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}").find("deeper than"),
            std::string::npos);
  EXPECT_NE(error_of("{{ range(1000000)|length }}").find("range() is too large"),
            std::string::npos);
  EXPECT_NE(error_of("{{ 'x' * 100000000 }}").find("exceeds the limit"), std::string::npos);
  EXPECT_NE(
      error_of(
          "{% set ns = namespace(s='xx') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}"
          "{% endfor %}")
          .find("exceeds the limit"),
      std::string::npos);
}

TEST(ChatTemplateLimits, CyclesAndDeepValuesAreSafe) {
  // A list containing itself: printing hits the depth limit; the cycle is freed after the render.
  EXPECT_NE(error_of("{% set l = [] %}{% set _ = l.append(l) %}{{ l }}").find("nesting"),
            std::string::npos);
  EXPECT_EQ(ChatTemplate::parse("{% set ns = namespace() %}{% set ns.self = ns %}{{ [ns]|length }}")
                .render({}),
            "1");
  // A long chain of nested lists is destroyed without recursion.
  EXPECT_EQ(ChatTemplate::parse("{% set ns = namespace(c=[]) %}{% for i in range(50000) %}"
                                "{% set ns.c = [ns.c] %}{% endfor %}ok")
                .render({}),
            "ok");
}

std::vector<std::string> seed_templates() {
  std::vector<std::string> seeds = {
      std::string(engine::kChatMLTemplate),
      "{% for m in messages %}{{ m.role|upper }}: {{ m.content|trim }}\n{% endfor %}",
      "{% set ns = namespace(x=0) %}{% macro f(a, b=2) %}{{ a ~ b }}{% endmacro %}{{ f(1) }}",
  };
  const std::filesystem::path shared = ggufd::test::shared_path("templates");
  if (!std::filesystem::is_directory(shared) && ggufd::test::test_data_required()) {
    ADD_FAILURE() << "test data missing: " << shared << " (GGUFD_REQUIRE_TEST_DATA=1)";
  }
  if (std::filesystem::is_directory(shared)) {
    for (const auto& entry : std::filesystem::directory_iterator(shared)) {
      if (entry.path().extension() != ".jinja") continue;
      std::ifstream in(entry.path(), std::ios::binary);
      std::ostringstream s;
      s << in.rdbuf();
      seeds.push_back(s.str());
    }
  }
  return seeds;
}

// Property: no input, however malformed, does anything but render or throw TemplateError.
TEST(ChatTemplateProperty, RandomAndMutatedTemplatesNeverCrash) {
  const std::vector<std::string> seeds = seed_templates();
  static constexpr std::string_view kFragments[] = {
      "{{",     "}}",       "{%",     "%}",     "{#",    "#}",     "-",        "+",    "(",
      ")",      "[",        "]",      "{",      "}",     "'",      "\"",       "|",    ".",
      ",",      ":",        "~",      "*",      "**",    "/",      "//",       "%",    "if ",
      "for ",   "in ",      "endif",  "endfor", "set ",  "macro ", "endmacro", "loop", "namespace(",
      "range(", "messages", "tojson", " is ",   " not ", "x",      "0",        "1.5",  "\n",
      " ",      "\\",       "raw",    "endraw", "é"};
  std::mt19937 rng(1234);
  ChatInput input;
  input.messages = conversation().messages;
  input.add_generation_prompt = true;
  ChatTemplateOptions options;
  options.limits.max_steps = 200'000;
  options.limits.max_output_bytes = 1 << 20;
  int rendered = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string source;
    if (i % 3 == 0) {  // random fragments
      const size_t n = rng() % 40;
      for (size_t k = 0; k < n; ++k) source += kFragments[rng() % std::size(kFragments)];
    } else {  // a real template with a few mutations
      source = seeds[rng() % seeds.size()];
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits && !source.empty(); ++e) {
        const size_t at = rng() % source.size();
        switch (rng() % 3) {
          case 0: source.erase(at, 1 + rng() % 8); break;
          case 1: source.insert(at, kFragments[rng() % std::size(kFragments)]); break;
          default: source[at] = static_cast<char>(rng() % 256); break;
        }
      }
    }
    try {
      ChatTemplate::parse(source, options).render(input);
      ++rendered;
    } catch (const TemplateError&) {
    }
  }
  EXPECT_GT(rendered, 100);  // the mutations are not all rejected at parse time
}

}  // namespace
