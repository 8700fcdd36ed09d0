// JSON Schemas whose constraints combine (bounds with exclusive ends and multipleOf, lengths with
// a format or pattern), wide alternations (long enums, many patterns), and the liveness rules:
// no grammar state is a dead end, an empty schema is refused naming its keywords, and a grammar is
// cut to what the vocabulary can write.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "engine/text/grammar/json_schema.h"
#include "engine/text/grammar/token_masks.h"
#include "tests/support/grammar_walk.h"
#include "tests/support/json_schema_check.h"

namespace engine::grammar {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

std::shared_ptr<const Grammar> grammar_of(const std::string& schema) { return json_schema_grammar(ojson::parse(schema)); }

// Random walks through the schema's grammar: none dead-ends, every complete one validates.
void expect_walks_validate(const std::string& schema_text, int walks = 200, size_t max_len = 200) {
  SCOPED_TRACE(schema_text);
  const auto g = grammar_of(schema_text);
  const json schema = json::parse(schema_text);
  std::mt19937 rng(7);
  int complete = 0;
  for (int i = 0; i < walks; ++i) {
    const test_support::Walk w = test_support::random_walk(g, rng, max_len);
    ASSERT_FALSE(w.dead_end) << "dead end after " << w.text;
    if (!w.complete) continue;
    ++complete;
    json value;
    ASSERT_NO_THROW(value = json::parse(w.text)) << w.text;
    EXPECT_EQ(test_support::schema_violation(value, schema), "") << w.text;
  }
  EXPECT_GT(complete, walks / 4);
}

// The GrammarError's message, or "" when the schema compiles.
std::string schema_refusal(const std::string& schema) {
  try {
    grammar_of(schema);
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "";
}

TEST(GrammarSchemaCombined, ExclusiveUnitIntervalBesideAnInteger) {
  // Answered HTTP 500 once: after "1" the grammar allowed nothing.
  expect_walks_validate(R"({"type":"object","properties":{"n":{"type":"integer"},
      "x":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1}},"required":["n","x"]})");
  const auto g = grammar_of(R"({"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1})");
  EXPECT_TRUE(matches(g, "0.5"));
  EXPECT_FALSE(matches(g, "0"));
  EXPECT_FALSE(matches(g, "1"));
  EXPECT_FALSE(test_support::dead_end(g, "-.0123456789", 12));
}

TEST(GrammarSchemaCombined, NarrowNegativeAndEqualBounds) {
  expect_walks_validate(R"({"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1e-9})");
  expect_walks_validate(R"({"type":"number","exclusiveMinimum":-2.5,"exclusiveMaximum":-2.4})");
  expect_walks_validate(R"({"type":"integer","exclusiveMinimum":-3,"exclusiveMaximum":-1})");
  expect_walks_validate(R"({"type":"number","minimum":5,"maximum":5})");
  expect_walks_validate(R"({"type":"integer","minimum":-7,"maximum":-7})");
  const auto g = grammar_of(R"({"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1e-9})");
  EXPECT_TRUE(matches(g, "0.0000000001"));
  EXPECT_FALSE(matches(g, "0.000000001"));
}

TEST(GrammarSchemaCombined, EmptySchemasAreRefusedNamingTheirKeywords) {
  std::string why = schema_refusal(R"({"type":"number","exclusiveMinimum":1,"exclusiveMaximum":1})");
  EXPECT_NE(why.find("'exclusiveMinimum' 1"), std::string::npos) << why;
  EXPECT_NE(why.find("'exclusiveMaximum' 1"), std::string::npos) << why;
  why = schema_refusal(R"({"type":"object","properties":{"x":{"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":1}},
                    "required":["x"]})");
  EXPECT_NE(why.find("#/properties/x: no integer satisfies"), std::string::npos) << why;
  why = schema_refusal(R"({"type":"integer","minimum":1,"maximum":4,"multipleOf":5})");
  EXPECT_NE(why.find("'multipleOf' 5"), std::string::npos) << why;
  why = schema_refusal(R"({"type":"string","format":"email","maxLength":4})");
  EXPECT_NE(why.find("format 'email'"), std::string::npos) << why;
  EXPECT_NE(why.find("'maxLength' 4"), std::string::npos) << why;
  // An impossible property that is not required is left out, not refused.
  EXPECT_EQ(schema_refusal(R"({"type":"object","properties":{"x":{"type":"integer","minimum":2,"maximum":1},
                        "y":{"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":1}}})"),
            "");
  const auto g = grammar_of(R"({"type":"object","properties":{"y":{"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":1}}})");
  EXPECT_TRUE(matches(g, "{}"));
  EXPECT_FALSE(test_support::dead_end(g, "{}\"y:0123456789", 8));
}

TEST(GrammarSchemaCombined, LengthWithFormat) {
  // zod's z.string().email().max(30), Pydantic's constrained EmailStr.
  const std::string email = R"({"type":"string","format":"email","maxLength":30})";
  expect_walks_validate(email);
  const auto g = grammar_of(email);
  EXPECT_TRUE(matches(g, R"("alice@example.com")"));
  EXPECT_TRUE(matches(g, R"("abcdefghijklmnopqrstuvwx@ab.cd")"));    // 30
  EXPECT_FALSE(matches(g, R"("abcdefghijklmnopqrstuvwxy@ab.cd")"));  // 31
  EXPECT_FALSE(matches(g, R"("not an email")"));
  expect_walks_validate(R"({"type":"string","format":"email","minLength":18})");
  expect_walks_validate(R"({"type":"string","format":"date-time","maxLength":24})");
  expect_walks_validate(R"({"type":"string","format":"uuid","minLength":36,"maxLength":36})");
  expect_walks_validate(R"({"type":"string","format":"hostname","minLength":3,"maxLength":12})");
  EXPECT_NE(schema_refusal(R"({"type":"string","format":"email","pattern":"^a"})").find("'pattern' and 'format'"), std::string::npos);
}

TEST(GrammarSchemaCombined, LengthWithPatternCountsEscapesAsOneCharacter) {
  const auto g = grammar_of(R"({"type":"string","pattern":"^[a-z\"\\\\]+$","maxLength":3})");
  EXPECT_TRUE(matches(g, R"("a\"\\")"));     // a " \  : three characters
  EXPECT_FALSE(matches(g, R"("a\"\\b")"));   // four
  EXPECT_FALSE(matches(g, R"("")"));         // the pattern wants one
  const auto ctl = grammar_of(R"({"type":"string","pattern":"^[\\x00-\\x1f]*$","minLength":2,"maxLength":2})");
  EXPECT_TRUE(matches(ctl, R"("\u0001\n")"));
  EXPECT_FALSE(matches(ctl, R"("\u0001")"));
  expect_walks_validate(R"({"type":"string","pattern":"^[A-Z]{3}-[0-9]+$","minLength":6,"maxLength":8})");
  expect_walks_validate(R"({"type":"string","pattern":"^(yes|no|maybe)$","maxLength":3})");
}

TEST(GrammarSchemaCombined, MultipleOf) {
  expect_walks_validate(R"({"type":"number","multipleOf":5})");  // zod's z.number().multipleOf(5)
  expect_walks_validate(R"({"type":"integer","multipleOf":5,"minimum":0,"maximum":100})");  // Pydantic's multiple_of
  expect_walks_validate(R"({"type":"integer","multipleOf":7,"exclusiveMinimum":-50,"exclusiveMaximum":50})");
  expect_walks_validate(R"({"type":"number","multipleOf":0.01,"minimum":0,"maximum":10})");
  expect_walks_validate(R"({"type":"number","multipleOf":0.25,"exclusiveMinimum":-1,"exclusiveMaximum":1})");
  const auto g = grammar_of(R"({"type":"integer","multipleOf":5})");
  EXPECT_TRUE(matches(g, "15"));
  EXPECT_TRUE(matches(g, "-1000"));
  EXPECT_TRUE(matches(g, "0"));
  EXPECT_FALSE(matches(g, "16"));
  const auto cents = grammar_of(R"({"type":"number","multipleOf":0.01})");
  EXPECT_TRUE(matches(cents, "12.34"));
  EXPECT_TRUE(matches(cents, "12.340"));
  EXPECT_FALSE(matches(cents, "12.345"));
  EXPECT_NE(schema_refusal(R"({"type":"integer","multipleOf":0})").find("greater than 0"), std::string::npos);
  EXPECT_NE(schema_refusal(R"({"type":"integer","multipleOf":1234567})").find("'multipleOf' 1234567 is not supported"), std::string::npos);
}

// An enum of 20,000 strings behind one prefix is a trie: one parse at a time, not 20,000.
TEST(GrammarSchemaCombined, LongEnumSharingAPrefixIsOneParse) {
  json values = json::array();
  char buf[32];
  for (int i = 0; i < 20000; ++i) {
    std::snprintf(buf, sizeof buf, "customer-account-%05d", i);
    values.push_back(buf);
  }
  const auto g = json_schema_grammar(ojson::parse(json{{"enum", values}}.dump()));
  Matcher m(g);
  ASSERT_TRUE(m.accept("\"customer-account-1"));
  EXPECT_LE(m.stacks().size(), 10u);  // one per next digit: the trie's branches, not 20,000 parses
  ASSERT_TRUE(m.accept("2345\""));
  EXPECT_TRUE(m.complete());
  EXPECT_FALSE(matches(g, "\"customer-account-20000\""));
  EXPECT_TRUE(matches(g, "\"customer-account-19999\""));
  // And on a vocabulary: its masks compile.
  std::vector<std::string> tokens = {"", "\"", "customer", "-", "account", "0", "1", "2", "12", "345", "\"}", "c", "u",
                                     "s", "t", "o", "m", "e", "r", "a", "n", "3", "4", "5", "6", "7", "8", "9"};
  EXPECT_NO_THROW(CompiledGrammar(g, std::make_shared<const TokenVocab>(tokens, std::vector<int32_t>{0})));
}

TEST(GrammarSchemaCombined, WideAnyOfOfPatternsIsFactored) {
  json branches = json::array();
  for (int i = 0; i < 2000; ++i) {
    branches.push_back({{"type", "string"}, {"pattern", "^ticket-[A-Z]{2}-" + std::to_string(i) + "$"}});
  }
  const auto g = json_schema_grammar(ojson::parse(json{{"anyOf", branches}}.dump()));
  Matcher m(g);
  ASSERT_TRUE(m.accept("\"ticket-AB-1"));
  EXPECT_LT(m.stacks().size(), 16u);
  EXPECT_TRUE(matches(g, "\"ticket-QZ-1999\""));
  EXPECT_FALSE(matches(g, "\"ticket-QZ-2000\""));
}

// A vocabulary that cannot write 'z': the grammar is cut to what it can write, and a schema that
// needs a 'z' is refused saying so.
TEST(GrammarSchemaCombined, GrammarIsCutToWhatTheVocabularyCanWrite) {
  const std::vector<std::string> tokens = {"", "\"", "a", "b", "ab", "zz", "{", "}"};
  auto vocab = std::make_shared<const TokenVocab>(tokens, std::vector<int32_t>{0});
  EXPECT_FALSE(vocab->writes_everything());
  EXPECT_TRUE(vocab->writable().contains('a'));
  EXPECT_FALSE(vocab->writable().contains('z'));  // only as "zz": not a character of its own
  const CompiledGrammar cut(json_schema_grammar(ojson::parse(R"({"enum":["zz","ab","az"]})")), vocab);
  EXPECT_TRUE(matches(cut.grammar(), "\"ab\""));
  EXPECT_FALSE(matches(cut.grammar(), "\"az\""));
  try {
    CompiledGrammar(json_schema_grammar(ojson::parse(R"({"const":"zoo"})")), vocab);
    FAIL() << "a grammar this vocabulary cannot write was accepted";
  } catch (const GrammarError& e) {
    EXPECT_NE(std::string(e.what()).find("vocabulary cannot write"), std::string::npos) << e.what();
  }
  // Multi-byte characters written by byte tokens in sequence count as writable.
  const std::vector<std::string> bytes = {"", "\xC3", "\xA9", "\xE2\x82", "\xAC"};
  const TokenVocab split(bytes, std::vector<int32_t>{0});
  EXPECT_TRUE(split.writable().contains(0xE9));     // é = C3 A9
  EXPECT_TRUE(split.writable().contains(0x20AC));   // € = E2 82 AC
  EXPECT_FALSE(split.writable().contains(0x20AD));  // E2 82 AD
  // Overlong forms are not the character to the matcher, so they do not make it writable: with
  // "\xC0\x80" counted as U+0000, a pattern starting with \0 left a state no token could leave
  // (found by fuzz_grammar; tests/fuzz/seeds/grammar/regex-overlong-nul).
  const std::vector<std::string> overlong = {"", "\xC0\x80", "\xE0\x81\x81", "}"};
  const TokenVocab odd(overlong, std::vector<int32_t>{0});
  EXPECT_FALSE(odd.writable().contains(0));
  EXPECT_FALSE(odd.writable().contains('A'));
  EXPECT_TRUE(odd.writable().contains('}'));
}

}  // namespace
}  // namespace engine::grammar
