// JSON Schema `pattern` regular expressions compiled to grammars: what they accept, as plain text
// and as the inside of a JSON string literal, and what they refuse.
#include "engine/text/grammar/regex.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>

#include "engine/text/grammar/matcher.h"

namespace engine::grammar {
namespace {

std::shared_ptr<const Grammar> compile(std::string_view pattern, bool json = false) {
  GrammarBuilder b;
  const uint32_t root = b.rule("root");
  b.define(root, regex_to_expr(pattern, json));
  return b.build(root);
}

bool accepts(std::string_view pattern, std::string_view text) { return matches(compile(pattern), text); }
bool accepts_json(std::string_view pattern, std::string_view text) { return matches(compile(pattern, true), text); }

// The error of compiling `pattern` ("" if it compiles), with its offset.
struct Refusal {
  std::string message;
  size_t offset = std::string::npos;
};
Refusal refusal(std::string_view pattern) {
  try {
    compile(pattern);
  } catch (const GrammarError& e) {
    return {e.what(), e.offset()};
  }
  return {};
}

TEST(GrammarRegex, AnchoredPatternMatchesExactly) {
  EXPECT_TRUE(accepts("^abc$", "abc"));
  EXPECT_FALSE(accepts("^abc$", "abcd"));
  EXPECT_FALSE(accepts("^abc$", "xabc"));
  EXPECT_FALSE(accepts("^abc$", "ab"));
  EXPECT_TRUE(accepts("^$", ""));
  EXPECT_FALSE(accepts("^$", "a"));
}

TEST(GrammarRegex, UnanchoredPatternMayBeSurroundedByAnything) {
  EXPECT_TRUE(accepts("abc", "abc"));
  EXPECT_TRUE(accepts("abc", "xx abc\nyy"));
  EXPECT_FALSE(accepts("abc", "ab c"));
  EXPECT_TRUE(accepts("^abc", "abc and more"));
  EXPECT_FALSE(accepts("^abc", "xabc"));
  EXPECT_TRUE(accepts("abc$", "more abc"));
  EXPECT_FALSE(accepts("abc$", "abcx"));
  EXPECT_TRUE(accepts("", ""));
  EXPECT_TRUE(accepts("", "anything\n at all"));
}

TEST(GrammarRegex, EachTopLevelAlternativeHasItsOwnAnchors) {
  EXPECT_TRUE(accepts("^a$|^b$", "a"));
  EXPECT_TRUE(accepts("^a$|^b$", "b"));
  EXPECT_FALSE(accepts("^a$|^b$", "ab"));
  EXPECT_TRUE(accepts("^a|b$", "ax"));
  EXPECT_TRUE(accepts("^a|b$", "xb"));
  EXPECT_FALSE(accepts("^a|b$", "xa"));
}

TEST(GrammarRegex, Classes) {
  EXPECT_TRUE(accepts("^[a-c]+$", "abcba"));
  EXPECT_FALSE(accepts("^[a-c]+$", "abd"));
  EXPECT_TRUE(accepts("^[-a]+$", "-a-"));
  EXPECT_TRUE(accepts("^[a-]+$", "-a-"));
  EXPECT_TRUE(accepts("^[\\w-.]+$", "a-b.c_9"));  // a class escape next to `-`: a literal `-`
  EXPECT_FALSE(accepts("^[\\w-.]+$", "a,b"));
  EXPECT_TRUE(accepts("^[\\]\\\\]+$", "]\\"));
  EXPECT_TRUE(accepts("^[\\b]$", "\b"));  // backspace inside a class
  EXPECT_TRUE(accepts("^[.]$", "."));
  EXPECT_FALSE(accepts("^[.]$", "a"));
  EXPECT_THROW(accepts("^[]$", ""), GrammarError);  // the empty class: no string matches
  EXPECT_TRUE(accepts("^[^]$", "\n"));
  EXPECT_TRUE(accepts("^[\\x41-\\x43\\u00e9]+$", "AC\xC3\xA9"));
}

TEST(GrammarRegex, NegatedClasses) {
  EXPECT_TRUE(accepts("^[^a]$", "b"));
  EXPECT_TRUE(accepts("^[^a]$", "\n"));
  EXPECT_TRUE(accepts("^[^a]$", "\xE2\x82\xAC"));  // €
  EXPECT_FALSE(accepts("^[^a]$", "a"));
  EXPECT_FALSE(accepts("^[^a-z0-9]$", "q"));
  EXPECT_FALSE(accepts("^[^\\d]$", "5"));
  EXPECT_TRUE(accepts("^[^\\d]$", "x"));
}

TEST(GrammarRegex, Dot) {
  EXPECT_TRUE(accepts("^.$", "a"));
  EXPECT_TRUE(accepts("^.$", "\xF0\x9F\x98\x80"));  // U+1F600
  EXPECT_FALSE(accepts("^.$", "\n"));
  EXPECT_FALSE(accepts("^.$", "\r"));
  EXPECT_FALSE(accepts("^.$", "\xE2\x80\xA8"));  // U+2028
  EXPECT_FALSE(accepts("^.$", "ab"));
  EXPECT_TRUE(accepts("^a.c$", "a\tc"));
}

TEST(GrammarRegex, ClassEscapes) {
  EXPECT_TRUE(accepts("^\\d+$", "0123456789"));
  EXPECT_FALSE(accepts("^\\d$", "a"));
  EXPECT_FALSE(accepts("^\\d$", "\xD9\xA3"));  // Arabic-Indic three: \d is ASCII only
  EXPECT_TRUE(accepts("^\\D$", "a"));
  EXPECT_TRUE(accepts("^\\w+$", "az_AZ09"));
  EXPECT_FALSE(accepts("^\\w$", "-"));
  EXPECT_FALSE(accepts("^\\w$", "\xC3\xA9"));
  EXPECT_TRUE(accepts("^\\W$", "\xC3\xA9"));
  EXPECT_TRUE(accepts("^\\s+$", " \t\n\r\v\f\xC2\xA0\xE3\x80\x80\xEF\xBB\xBF"));
  EXPECT_FALSE(accepts("^\\s$", "a"));
  EXPECT_TRUE(accepts("^\\S$", "a"));
  EXPECT_FALSE(accepts("^\\S$", " "));
  EXPECT_TRUE(accepts("^[\\s\\d]+$", " 1 2"));
}

TEST(GrammarRegex, CharacterEscapes) {
  EXPECT_TRUE(accepts("^\\t\\n\\r\\f\\v\\0$", std::string("\t\n\r\f\v\0", 6)));
  EXPECT_TRUE(accepts("^\\x41\\u0042\\u{43}\\u{1F600}$", "ABC\xF0\x9F\x98\x80"));
  EXPECT_TRUE(accepts("^\\uD83D\\uDE00$", "\xF0\x9F\x98\x80"));  // a surrogate pair is one character
  EXPECT_TRUE(accepts("^\\cJ$", "\n"));
  EXPECT_TRUE(accepts("^\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$\\/\\-\\\\$", ".*+?()[]{}|^$/-\\"));
  EXPECT_FALSE(accepts("^\\.$", "a"));
}

TEST(GrammarRegex, Quantifiers) {
  EXPECT_TRUE(accepts("^a*$", ""));
  EXPECT_TRUE(accepts("^a*$", "aaaa"));
  EXPECT_FALSE(accepts("^a+$", ""));
  EXPECT_TRUE(accepts("^a+$", "aaa"));
  EXPECT_TRUE(accepts("^ab?c$", "ac"));
  EXPECT_TRUE(accepts("^ab?c$", "abc"));
  EXPECT_FALSE(accepts("^ab?c$", "abbc"));
  EXPECT_TRUE(accepts("^a{3}$", "aaa"));
  EXPECT_FALSE(accepts("^a{3}$", "aa"));
  EXPECT_FALSE(accepts("^a{3}$", "aaaa"));
  EXPECT_TRUE(accepts("^a{2,}$", "aaaaaa"));
  EXPECT_FALSE(accepts("^a{2,}$", "a"));
  EXPECT_TRUE(accepts("^a{1,3}$", "aaa"));
  EXPECT_FALSE(accepts("^a{1,3}$", "aaaa"));
  EXPECT_TRUE(accepts("^a{0}$", ""));
  EXPECT_TRUE(accepts("^(ab){2}$", "abab"));
  EXPECT_FALSE(accepts("^(ab){2}$", "ab"));
}

TEST(GrammarRegex, LazyQuantifiersMatchTheSameLanguage) {
  EXPECT_TRUE(accepts("^a*?b+?c??d{1,2}?$", "aabbdd"));
  EXPECT_TRUE(accepts("^a*?b+?c??d{1,2}?$", "bcd"));
  EXPECT_FALSE(accepts("^a*?b+?c??d{1,2}?$", "ad"));
}

TEST(GrammarRegex, BracesThatAreNotAQuantifierAreLiteral) {
  EXPECT_TRUE(accepts("^a{,3}$", "a{,3}"));
  EXPECT_TRUE(accepts("^{x}$", "{x}"));
  EXPECT_TRUE(accepts("^a{1$", "a{1"));
  EXPECT_TRUE(accepts("^]}$", "]}"));
}

TEST(GrammarRegex, RepeatedNullableGroupsCompile) {
  // A star over something that may be empty would be a left-recursive rule; it is rewritten.
  EXPECT_TRUE(accepts("^(a?b?)*$", "abbab"));
  EXPECT_FALSE(accepts("^(a?b?)*$", "abc"));
  EXPECT_TRUE(accepts("^(a*)+$", ""));
  EXPECT_TRUE(accepts("^(a*)+$", "aaa"));
  EXPECT_TRUE(accepts("^(|x)*$", "xx"));
  EXPECT_TRUE(accepts("^()*$", ""));
  EXPECT_TRUE(accepts("^(a?){2,}$", "aaaaa"));
  EXPECT_TRUE(accepts("^((a?b?)*c?)*$", "bcac"));
  EXPECT_TRUE(accepts("^(a?){0,3}$", "aaa"));
  EXPECT_FALSE(accepts("^(a?){0,3}$", "aaaa"));
  // x{0} contributes nothing to the loop (found by comparing with V8)
  EXPECT_FALSE(accepts("^(a{0}b?)*$", "a"));
  EXPECT_TRUE(accepts("^(a{0}b?)*$", "bb"));
  EXPECT_TRUE(accepts("^(a{0})*$", ""));
  EXPECT_FALSE(accepts("^(a{0})*$", "a"));
}

TEST(GrammarRegex, AlternationAndGroups) {
  EXPECT_TRUE(accepts("^(cat|dog)s?$", "dogs"));
  EXPECT_TRUE(accepts("^(cat|dog)s?$", "cat"));
  EXPECT_FALSE(accepts("^(cat|dog)s?$", "cow"));
  EXPECT_TRUE(accepts("^(?:a|b|)c$", "c"));
  EXPECT_TRUE(accepts("^(?<year>\\d{4})-(?<month>\\d{2})$", "2024-05"));
  EXPECT_FALSE(accepts("^(?<year>\\d{4})-(?<month>\\d{2})$", "2024-5"));
  EXPECT_TRUE(accepts("^((((a))))$", "a"));
  EXPECT_TRUE(accepts("^x(a|b(c|d))*y$", "xabcabdy"));
}

TEST(GrammarRegex, Unicode) {
  EXPECT_TRUE(accepts("^é+$", "\xC3\xA9\xC3\xA9"));
  EXPECT_TRUE(accepts("^[α-ω]+$", "\xCE\xBB\xCE\xBC"));  // λμ
  EXPECT_FALSE(accepts("^[α-ω]+$", "a"));
  EXPECT_TRUE(accepts("^[😀-😂]$", "\xF0\x9F\x98\x81"));
  EXPECT_TRUE(accepts("^日本$", "日本"));
  EXPECT_TRUE(accepts("^[^日]$", "本"));
  EXPECT_FALSE(accepts("^[^日]$", "日"));
}

TEST(GrammarRegex, RealWorldPatterns) {
  const char* email = "^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$";
  EXPECT_TRUE(accepts(email, "jane.doe@example.com"));
  EXPECT_FALSE(accepts(email, "jane doe@example.com"));
  EXPECT_FALSE(accepts(email, "jane@example"));
  EXPECT_FALSE(accepts(email, "jane@@example.com"));

  EXPECT_TRUE(accepts("^\\d{3}-\\d{4}$", "555-1234"));
  EXPECT_FALSE(accepts("^\\d{3}-\\d{4}$", "5551234"));
  EXPECT_FALSE(accepts("^\\d{3}-\\d{4}$", "555-12345"));

  EXPECT_TRUE(accepts("^[A-Z]{2,3}$", "US"));
  EXPECT_TRUE(accepts("^[A-Z]{2,3}$", "USA"));
  EXPECT_FALSE(accepts("^[A-Z]{2,3}$", "U"));
  EXPECT_FALSE(accepts("^[A-Z]{2,3}$", "usa"));

  const char* uuid = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";
  EXPECT_TRUE(accepts(uuid, "123e4567-e89b-12d3-A456-426614174000"));
  EXPECT_FALSE(accepts(uuid, "123e4567-e89b-12d3-a456-42661417400"));
  EXPECT_FALSE(accepts(uuid, "123e4567e89b12d3a456426614174000"));

  const char* number = "^(\\+|-)?\\d+(\\.\\d+)?$";
  for (const char* ok : {"1", "+12", "-0.5", "3.14159"}) EXPECT_TRUE(accepts(number, ok)) << ok;
  for (const char* bad : {"", "+", "1.", ".5", "1.2.3", "--1"}) EXPECT_FALSE(accepts(number, bad)) << bad;
}

TEST(GrammarRegex, JsonEscapedQuoteAndBackslash) {
  EXPECT_TRUE(accepts_json("^[a\"]+$", "a\\\"a"));
  EXPECT_TRUE(accepts_json("^[a\"]+$", "\\u0022a"));
  EXPECT_FALSE(accepts_json("^[a\"]+$", "a\"a"));
  EXPECT_TRUE(accepts_json("^.+$", "\\\\"));
  EXPECT_TRUE(accepts_json("^.+$", "\\u005c\\u005C"));
  EXPECT_FALSE(accepts_json("^.+$", "\\"));
  EXPECT_FALSE(accepts_json("^.+$", "\\x"));
  EXPECT_TRUE(accepts_json("^\\\\d$", "\\\\d"));  // the pattern \\d: a backslash, then d
  EXPECT_FALSE(accepts_json("^\\\\d$", "\\d"));
}

TEST(GrammarRegex, JsonEscapedControlCharacters) {
  EXPECT_TRUE(accepts_json("^\\n$", "\\n"));
  EXPECT_TRUE(accepts_json("^\\n$", "\\u000a"));
  EXPECT_TRUE(accepts_json("^\\n$", "\\u000A"));
  EXPECT_FALSE(accepts_json("^\\n$", "\n"));
  EXPECT_FALSE(accepts_json("^\\n$", "\\t"));
  EXPECT_TRUE(accepts_json("^\\s+$", " \\t\\n\\r\\f\\u000b"));
  EXPECT_TRUE(accepts_json("^\\x01$", "\\u0001"));
  EXPECT_FALSE(accepts_json("^\\x01$", "\x01"));
  EXPECT_TRUE(accepts_json("^\\x1f$", "\\u001F"));
  EXPECT_TRUE(accepts_json("^\\x08$", "\\b"));
  // `.` excludes \n and \r in every spelling, but not the other controls
  EXPECT_FALSE(accepts_json("^.$", "\\n"));
  EXPECT_FALSE(accepts_json("^.$", "\\u000d"));
  EXPECT_TRUE(accepts_json("^.$", "\\t"));
  EXPECT_TRUE(accepts_json("^.$", "\\u0000"));
}

TEST(GrammarRegex, JsonEscapedNegatedClassAndUnanchoredEnds) {
  EXPECT_TRUE(accepts_json("^[^a]+$", "b\\\"\\\\\\n\xC3\xA9"));
  EXPECT_FALSE(accepts_json("^[^a]+$", "ba"));
  EXPECT_FALSE(accepts_json("^[^a]+$", "\""));
  EXPECT_TRUE(accepts_json("x", "\\\"x\\n"));
  EXPECT_FALSE(accepts_json("x", "\"x"));
  EXPECT_TRUE(accepts_json("^[^\"\\\\]*$", "plain text"));
  EXPECT_FALSE(accepts_json("^[^\"\\\\]*$", "a\\\"b"));
}

TEST(GrammarRegex, PlainModeTakesCharactersAsThemselves) {
  EXPECT_TRUE(accepts("^[a\"]+$", "a\"a"));
  EXPECT_FALSE(accepts("^[a\"]+$", "a\\\"a"));
  EXPECT_TRUE(accepts("^.$", "\\"));
}

TEST(GrammarRegex, RefusalsNameTheConstructAndItsOffset) {
  struct Case {
    const char* pattern;
    const char* construct;
    size_t offset;
  };
  const Case cases[] = {
      {"abc(?=d)", "lookahead (?=", 3},
      {"a(?!b)", "negative lookahead (?!", 1},
      {"(?<=a)b", "lookbehind (?<=", 0},
      {"(?<!a)b", "negative lookbehind (?<!", 0},
      {"(a)\\1", "backreference \\1", 3},
      {"(?<n>a)\\k<n>", "backreference \\k", 7},
      {"a\\bc", "word boundary \\b", 1},
      {"a\\B", "word boundary \\B", 1},
      {"(?i)abc", "inline flag (?i", 0},
      {"a(?i:b)", "inline flag (?i", 1},
      {"\\p{L}", "unicode property escape \\p", 0},
      {"x\\P{L}", "unicode property escape \\P", 1},
      {"a^b", "anchor ^", 1},
      {"a$b", "anchor $", 1},
      {"(^a)", "anchor ^", 1},
      {"(a$)", "anchor $", 2},
      {"a{10001}", "repetition count above 10000", 1},
      {"a{1,99999999999999999999}", "repetition count above 10000", 1},
      {"\\01", "octal escape", 0},
  };
  for (const Case& c : cases) {
    const Refusal r = refusal(c.pattern);
    EXPECT_NE(r.message.find(c.construct), std::string::npos) << c.pattern << ": " << r.message;
    EXPECT_NE(r.message.find("at offset " + std::to_string(c.offset) + " is not supported"), std::string::npos)
        << c.pattern << ": " << r.message;
    EXPECT_EQ(r.offset, c.offset) << c.pattern;
  }
  const Refusal r = refusal("abc(?=d)");
  EXPECT_EQ(r.message, "pattern: lookahead (?= at offset 3 is not supported");
}

TEST(GrammarRegex, MalformedPatternsAreErrorsWithOffsets) {
  struct Case {
    const char* pattern;
    const char* what;
    size_t offset;
  };
  const Case cases[] = {
      {"(ab", "unterminated group", 0},
      {"ab)", "unmatched )", 2},
      {"[ab", "unterminated character class", 0},
      {"x[^", "unterminated character class", 1},
      {"*a", "nothing to repeat", 0},
      {"a**", "nothing to repeat", 2},
      {"a|+", "nothing to repeat", 2},
      {"({2})", "nothing to repeat", 1},
      {"a{3,2}", "out of order", 1},
      {"[z-a]", "range out of order", 1},
      {"ab\\", "\\ at the end", 2},
      {"\\xZZ", "hexadecimal", 0},
      {"\\u12", "hexadecimal", 0},
      {"\\u{110000}", "above U+10FFFF", 0},
      {"\\u{}", "\\u{}", 0},
      {"a\\uD800", "lone surrogate", 1},
      {"\\q", "unknown escape \\q", 0},
      {"(?<>a)", "group name", 0},
      {"(?<a", "group name", 0},
      {"\\c1", "\\c", 0},
  };
  for (const Case& c : cases) {
    const Refusal r = refusal(c.pattern);
    EXPECT_NE(r.message.find(c.what), std::string::npos) << c.pattern << ": " << r.message;
    EXPECT_NE(r.message.find("at offset " + std::to_string(c.offset)), std::string::npos) << c.pattern << ": " << r.message;
    EXPECT_EQ(r.offset, c.offset) << c.pattern;
  }
  EXPECT_NE(refusal("a\xFF").message.find("UTF-8"), std::string::npos);
}

TEST(GrammarRegex, NestingDepthIsLimited) {
  const std::string ok = "^" + std::string(64, '(') + "a" + std::string(64, ')') + "$";
  EXPECT_TRUE(accepts(ok, "a"));
  const std::string deep = std::string(65, '(') + "a" + std::string(65, ')');
  const Refusal r = refusal(deep);
  EXPECT_NE(r.message.find("nested deeper than 64"), std::string::npos) << r.message;
  EXPECT_EQ(r.offset, 64u);
  const std::string very_deep(100000, '(');
  EXPECT_EQ(refusal(very_deep).offset, 64u);
}

TEST(GrammarRegex, ClassMembersAreLimited) {
  // Building a class costs a sort per member: a pattern may have 4096 members in all.
  std::string many = "^[";
  for (int i = 0; i < 4096; ++i) many += i % 2 ? "\\u4E00" : "\\x00";
  many += "]$";
  EXPECT_TRUE(accepts(many, "\xE4\xB8\x80"));  // U+4E00
  const Refusal r = refusal("[" + std::string(4097, 'a') + "]");
  EXPECT_NE(r.message.find("more than 4096 class members"), std::string::npos) << r.message;
  EXPECT_EQ(r.offset, 4097u);
  EXPECT_EQ(refusal("[" + std::string(2048, 'a') + "]x[" + std::string(2049, 'b') + "]").offset, 4100u);  // the 4097th member in all
}

TEST(GrammarRegex, HostileInputsFailCleanly) {
  // Each either compiles or throws GrammarError; none crashes or hangs.
  const std::string inputs[] = {
      std::string(100000, 'a'),
      std::string(50000, '|'),
      "(a{10000}){10000}",
      "((a{0,100}){0,100}){0,100}",
      "[" + std::string(10000, '-') + "]",
      "\\u{" + std::string(1000, 'F') + "}",
      "a{" + std::string(1000, '9') + "}",
      "(?<" + std::string(1000, 'n') + ">x)",
      std::string("(((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((x"),
      "^(a*)*(b?)*(c|)*(d*e*)+$",
      std::string("\0\0(\0)", 5),
  };
  for (const std::string& p : inputs) {
    try {
      compile(p);
      compile(p, true);
    } catch (const GrammarError&) {
    }
  }
  SUCCEED();
}

TEST(GrammarRegex, LongInputsStayWithinTheMatcherLimits) {
  std::string pairs;
  for (int i = 0; i < 5000; ++i) pairs += i % 2 ? "ab" : "cd";
  EXPECT_TRUE(accepts("^(ab|cd)*$", pairs));
  EXPECT_FALSE(accepts("^(ab|cd)*$", pairs + "a"));
  EXPECT_TRUE(accepts("x[0-9]+y", std::string(5000, '.') + "x123y" + std::string(5000, '.')));
  EXPECT_TRUE(accepts_json("x[0-9]+y", std::string(5000, '.') + "x123y\\n" + std::string(5000, '.')));
  EXPECT_TRUE(accepts_json("^.*$", std::string(3000, 'q') + "\\t\\\"" + std::string(3000, 'r')));
  EXPECT_TRUE(accepts("^a{10000}$", std::string(10000, 'a')));
  EXPECT_FALSE(accepts("^a{10000}$", std::string(9999, 'a')));
}

}  // namespace
}  // namespace engine::grammar
