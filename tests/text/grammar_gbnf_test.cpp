// GBNF (llama.cpp's grammar format) compiled to a Grammar: the example grammars, syntax, errors.
#include "engine/text/grammar/gbnf.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "engine/text/grammar/matcher.h"
#include "engine/text/tokenizer/utf8.h"

namespace engine::grammar {
namespace {

// Example grammars from llama.cpp, grammars/{json,arithmetic,list,chess,japanese,c}.gbnf
// (https://github.com/ggml-org/llama.cpp, MIT License, Copyright (c) 2023-2024 The ggml authors).
const char* const kJson = R"gbnf(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
)gbnf";

const char* const kArithmetic = R"gbnf(root  ::= (expr "=" ws term "\n")+
expr  ::= term ([-+*/] term)*
term  ::= ident | num | "(" ws expr ")" ws
ident ::= [a-z] [a-z0-9_]* ws
num   ::= [0-9]+ ws
ws    ::= [ \t\n]*
)gbnf";

const char* const kList = R"gbnf(root ::= item+

# Excludes various line break characters
item ::= "- " [^\r\n\x0b\x0c\x85\u2028\u2029]+ "\n"
)gbnf";

const char* const kChess = R"gbnf(root    ::= "1. " move " " move "\n" ([1-9] [0-9]? ". " move " " move "\n")+
move    ::= (pawn | nonpawn | castle) [+#]?
nonpawn ::= [NBKQR] [a-h]? [1-8]? "x"? [a-h] [1-8]
pawn    ::= ([a-h] "x")? [a-h] [1-8] ("=" [NBKQR])?
castle  ::= "O-O" "-O"?
)gbnf";

const char* const kJapanese = R"gbnf(# A probably incorrect grammar for Japanese
root        ::= jp-char+ ([ \t\n] jp-char+)*
jp-char     ::= hiragana | katakana | punctuation | cjk
hiragana    ::= [ぁ-ゟ]
katakana    ::= [ァ-ヿ]
punctuation ::= [、-〾]
cjk         ::= [一-鿿]
)gbnf";

const char* const kC = R"gbnf(root ::= (declaration)*

declaration ::= dataType identifier "(" parameter? ")" "{" statement* "}"

dataType  ::= "int" ws | "float" ws | "char" ws
identifier ::= [a-zA-Z_] [a-zA-Z_0-9]*

parameter ::= dataType identifier

statement ::=
    ( dataType identifier ws "=" ws expression ";" ) |
    ( identifier ws "=" ws expression ";" ) |
    ( identifier ws "(" argList? ")" ";" ) |
    ( "return" ws expression ";" ) |
    ( "while" "(" condition ")" "{" statement* "}" ) |
    ( "for" "(" forInit ";" ws condition ";" ws forUpdate ")" "{" statement* "}" ) |
    ( "if" "(" condition ")" "{" statement* "}" ("else" "{" statement* "}")? ) |
    ( singleLineComment ) |
    ( multiLineComment )

forInit ::= dataType identifier ws "=" ws expression | identifier ws "=" ws expression
forUpdate ::= identifier ws "=" ws expression

condition ::= expression relationOperator expression
relationOperator ::= ("<=" | "<" | "==" | "!=" | ">=" | ">")

expression ::= term (("+" | "-") term)*
term ::= factor(("*" | "/") factor)*

factor ::= identifier | number | unaryTerm | funcCall | parenExpression
unaryTerm ::= "-" factor
funcCall ::= identifier "(" argList? ")"
parenExpression ::= "(" ws expression ws ")"

argList ::= expression ("," ws expression)*

number ::= [0-9]+

singleLineComment ::= "//" [^\n]* "\n"
multiLineComment ::= "/*" ( [^*] | ("*" [^/]) )* "*/"

ws ::= ([ \t\n]+)
)gbnf";

// The message of the GrammarError that parsing `text` throws ("" if it parses).
std::string error_of(std::string_view text, GrammarLimits limits = {}) {
  try {
    parse_gbnf(text, limits);
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "";
}

size_t error_offset(std::string_view text) {
  try {
    parse_gbnf(text);
  } catch (const GrammarError& e) {
    return e.offset();
  }
  return 0;
}

void expect_language(std::string_view gbnf, const std::vector<std::string>& yes, const std::vector<std::string>& no) {
  const auto g = parse_gbnf(gbnf);
  for (const std::string& s : yes) EXPECT_TRUE(matches(g, s)) << "should match: " << s;
  for (const std::string& s : no) EXPECT_FALSE(matches(g, s)) << "should not match: " << s;
}

TEST(Gbnf, JsonExample) {
  expect_language(kJson,
                  {"{}", R"({"a": 1})", "{\n  \"a\": [1, 2.5, -3e12, \"x\\n\\u00e9\", true, null],\n  \"b\": {}\n}",
                   R"({"k":"日本"})", R"({"a": -0.5E+1})"},
                  {"[1]", R"({"a":})", R"({"a" 1})", "{'a': 1}", R"({"a": 01})", R"({"a": "\x"})", "{\"a\": \"\x01\"}",
                   R"({"a": 1,})", "{} {}"});
}

TEST(Gbnf, ArithmeticExample) {
  expect_language(kArithmetic, {"a=1\n", "x+y*2= 3\n", "(a+b)=c\n1=2\n", "( a_1 )/b=( c )\n"},
                  {"a=1", "=1\n", "a==1\n", "A=1\n", "a=1\nb\n", ""});
}

TEST(Gbnf, ListExample) {
  expect_language(kList, {"- a\n", "- milk\n- 日本 語\n", "- x\xC2\xA0y\n"},
                  {"- \n", "- a", "* a\n", "- a\u2028b\n", "- a\rb\n", ""});
}

TEST(Gbnf, OtherExamplesParseAndMatch) {
  expect_language(kChess, {"1. e4 e5\n2. Nf3 Nc6\n", "1. d4 d5\n10. O-O-O exd8=Q#\n"},
                  {"1. e4 e5\n", "1. e9 e5\n2. a1 a2\n"});
  expect_language(kJapanese, {"ひらがな", "カタカナ 日本語、"}, {"", "abc", "日本 "});
  expect_language(kC, {"int main(){return 0;}", "int f(int x){while(x<10){x = x+1;}}", ""},
                  {"int main(){return 0}", "main(){}"});
}

TEST(Gbnf, EscapesInLiteralsAndClasses) {
  expect_language(R"(root ::= "\n\t\r\\\"\[\]\-\x41\u00e9\U0001F600")", {"\n\t\r\\\"[]-A\xC3\xA9\xF0\x9F\x98\x80"},
                  {"A"});
  expect_language(R"(root ::= [\]\[\-\\\x00-\x08]+)", {"]", "[-\\", std::string("\0\x08", 2)}, {"a", "\t"});
  expect_language(R"(root ::= [-a] [a-] [^a])", {"-a-", "aab", "a-\xC3\xA9"}, {"bab", "a-a"});
  expect_language(R"(root ::= "")", {""}, {"a"});
}

TEST(Gbnf, Repetitions) {
  expect_language(R"(root ::= "ab"{2,3})", {"abab", "ababab"}, {"ab", "abababab", ""});
  expect_language(R"(root ::= [a]{2} "-" [b]{2,} "-" [c]{,2} "-" [d]{ 1 , 2 })", {"aa-bb--d", "aa-bbbbb-cc-dd"},
                  {"a-bb--d", "aa-b--d", "aa-bb-ccc-d", "aa-bb--"});
  expect_language(R"(root ::= "x"{0} "y" | ("a" | "b")* "c"+ "d"?)", {"y", "c", "abbacc", "ccd"}, {"xy", "d", "ab"});
  expect_language(R"(root ::= "a" * "b" +)", {"b", "aabb"}, {"a"});
}

TEST(Gbnf, ClassesLeaveOutSurrogates) {
  // A range across U+D800-DFFF does not let the bytes of an (invalid) encoded surrogate begin.
  const auto g = parse_gbnf(R"(root ::= [\x00-\uFFFF]+)");
  EXPECT_TRUE(matches(g, "a\uD7FF\uE000\uFFFF"));
  EXPECT_FALSE(Matcher(g).accept("\xED\xA0"));
  EXPECT_TRUE(Matcher(g).accept("\xED\x9F"));
}

TEST(Gbnf, DotIsAnyOneCodePoint) {
  expect_language("root ::= \"<\" . \">\"", {"<a>", "<\n>", "<\xC3\xA9>", "<日>", "<\xF0\x9F\x98\x80>"},
                  {"<>", "<ab>", "<日本>"});
}

TEST(Gbnf, Utf8LiteralsAndClasses) {
  expect_language(R"(root ::= "日本" [ぁ-ゟ]+ "語"?)", {"日本ひらがな", "日本あ語"},
                  {"日本", "日", "日本語", "にほん"});
}

TEST(Gbnf, LinesCommentsAndContinuations) {
  // After ::= and |, and inside parentheses, a line break does not end the rule.
  expect_language(
      "# comment\r\n\r\nroot ::= # the root\r\n  a |\r\n  \"b\" # b\r\n\r\na ::= (\"x\"\n\n  \"y\" # y\n  | \"z\")\n",
      {"xy", "z", "b"}, {"x", "a"});
  expect_language("root ::= ws \"a\"\nws ::= | \" \" | \"\\n\"", {"a", " a", "\na"}, {"  a"});
  expect_language("root ::=", {""}, {"a"});
  // A rule name may be used before its definition; names take digits and dashes.
  expect_language("root ::= x-1 X2\nx-1 ::= \"1\"\nX2 ::= \"2\"", {"12"}, {"1"});
}

TEST(Gbnf, ErrorsGiveLineAndColumn) {
  EXPECT_EQ(error_of("root ::= \"a\"\nfoo := \"b\""),
            "GBNF line 2, column 5: expected '::=' after the rule name, found ':'");
  EXPECT_EQ(error_of("root ::= \"abc"),
            "GBNF line 1, column 14: expected '\"' to end the string at line 1, "
            "column 10, found end of input");
  EXPECT_EQ(error_of("root ::= [a-"),
            "GBNF line 1, column 13: expected ']' to end the class at line 1, "
            "column 10, found end of input");
  EXPECT_EQ(
      error_of("root ::= (\"a\"\n  \"b\""),
      "GBNF line 2, column 6: expected a symbol, '|' or ')' to close the '(' at line 1, column 10, found end of input");
  EXPECT_EQ(error_of("root ::= \"日本\" )"),
            "GBNF line 1, column 15: expected a symbol, '|' or the end of the line, found ')'");
  EXPECT_EQ(error_offset("root ::= \"日本\" )"), 18u);
  EXPECT_EQ(error_of("root ::= \"a\"\n| \"b\""),
            "GBNF line 2, column 1: expected a rule name, found '|' (a rule continues on the next line only after '|' "
            "or inside parentheses)");
  EXPECT_EQ(error_of("root ::= \"\\q\""),
            "GBNF line 1, column 11: unknown escape: '\\' followed by 'q' (expected one of "
            "\\n \\r \\t \\\\ \\\" \\[ \\] \\- \\x \\u \\U)");
  EXPECT_EQ(error_of("root ::= \"\\x4\""), "GBNF line 1, column 14: expected 2 hex digits, found '\"'");
  EXPECT_EQ(error_of("root ::= [\\uD800]"), "GBNF line 1, column 11: escape \\uD800 is not a Unicode scalar value");
  EXPECT_EQ(error_of("root ::= \"\\U00110000\""),
            "GBNF line 1, column 11: escape \\U00110000 is not a Unicode scalar value");
  EXPECT_EQ(error_of("root ::= [z-a]"), "GBNF line 1, column 11: the range z-a is reversed");
  EXPECT_EQ(error_of("root ::= []"), "GBNF line 1, column 10: empty character class");
  EXPECT_EQ(error_of("root ::= [^\\x00-\\U0010FFFF]"), "GBNF line 1, column 10: the negated class matches nothing");
  EXPECT_EQ(error_of("root ::= \"a\" | *"), "GBNF line 1, column 16: expected a symbol before the quantifier '*'");
  EXPECT_EQ(error_of("root ::= \"\xFF\""), "GBNF line 1, column 11: invalid UTF-8 (byte 0xFF)");
  EXPECT_EQ(error_of("root ::= \"a\" @"),
            "GBNF line 1, column 14: expected a symbol, '|' or the end of the line, found '@'");
  EXPECT_EQ(error_of("root ::= \"a\"\nroot ::= \"b\""), "GBNF line 2, column 1: rule 'root' is defined twice");
  EXPECT_EQ(error_of("root ::= a_b"),
            "GBNF line 1, column 11: expected a symbol, '|' or the end of the line, found '_'");
}

TEST(Gbnf, RepetitionErrors) {
  EXPECT_EQ(error_of("root ::= \"a\"{}"), "GBNF line 1, column 14: expected a number in the repetition, found '}'");
  EXPECT_EQ(error_of("root ::= \"a\"{,}"), "GBNF line 1, column 15: expected a number in the repetition, found '}'");
  EXPECT_EQ(error_of("root ::= \"a\"{3,2}"), "GBNF line 1, column 13: the minimum 3 exceeds the maximum 2");
  EXPECT_EQ(error_of("root ::= \"a\"{2 3}"),
            "GBNF line 1, column 16: expected ',' or '}' in the repetition, found '3'");
  EXPECT_EQ(error_of("root ::= \"a\"{2,3"),
            "GBNF line 1, column 17: expected '}' to end the repetition, found end of input");
  EXPECT_EQ(error_of("root ::= \"a\"{99999999999999999999999}"),
            "GBNF line 1, column 14: repetition count 99999999999999999999999 exceeds the limit of 10000");
  EXPECT_EQ(error_of("root ::= \"a\"{0,4294967295}"),
            "GBNF line 1, column 16: repetition count 4294967295 exceeds the limit of 10000");
  GrammarLimits small;
  small.max_repeat = 5;
  EXPECT_EQ(error_of("root ::= \"a\"{6,}", small), "GBNF line 1, column 14: repetition count 6 exceeds the limit of 5");
  EXPECT_EQ(error_of("root ::= \"a\"{2,5}", small), "");
}

TEST(Gbnf, TokenLiteralsAreRefused) {
  for (const char* text : {"root ::= <think> \"a\"", "root ::= \"a\" <[1000]>", "root ::= !<[1001]>*"}) {
    EXPECT_NE(error_of(text).find("token literals (<...>, <[id]>, !<...>) are not supported"), std::string::npos)
        << text;
  }
}

TEST(Gbnf, WholeGrammarErrors) {
  EXPECT_EQ(error_of(""), "GBNF: the grammar has no 'root' rule");
  EXPECT_EQ(error_of("# nothing\n\nitem ::= \"a\""), "GBNF: the grammar has no 'root' rule");
  EXPECT_EQ(error_of("item ::= root\n"), "GBNF line 1, column 10: rule 'root' is used but never defined");
  // An undefined rule is named at its first use, even when the root does not reach it.
  EXPECT_EQ(error_of("root ::= \"a\"\nother ::= \"b\" | (x-y \"c\")\nmore ::= x-y"),
            "GBNF line 2, column 18: rule 'x-y' is used but never defined");
  const std::string left = error_of("root ::= root \"a\" | \"b\"");
  EXPECT_EQ(left.rfind("GBNF: ", 0), 0u) << left;
  EXPECT_NE(left.find("left-recursive"), std::string::npos) << left;
  EXPECT_NE(error_of("root ::= x \"a\"\nx ::= \"b\"? y\ny ::= ws root\nws ::= [ ]*").find("left-recursive"),
            std::string::npos);
  EXPECT_EQ(error_of("root ::= (\"b\" root | \"a\")"), "");  // right recursion is fine
}

TEST(Gbnf, NestingIsBounded) {
  const auto nested = [](int depth) {
    return "root ::= " + std::string(depth, '(') + "\"a\"" + std::string(depth, ')');
  };
  const auto g = parse_gbnf(nested(kMaxGbnfNesting));
  EXPECT_TRUE(matches(g, "a"));
  EXPECT_EQ(error_of(nested(kMaxGbnfNesting + 1)),
            "GBNF line 1, column 138: parentheses and quantifiers nest more than 128 deep");
  EXPECT_NE(
      error_of("root ::= " + std::string(1000000, '(')).find("parentheses and quantifiers nest more than 128 deep"),
      std::string::npos);
  // Quantifiers applied to quantified symbols nest too.
  EXPECT_NE(error_of("root ::= \"a\"" + std::string(100000, '?')).find("nest more than 128 deep"), std::string::npos);
  EXPECT_NE(error_of(nested(100) + std::string(40, '?')).find("nest more than 128 deep"), std::string::npos);
}

TEST(Gbnf, LargeInputsStayBounded) {
  // Linear in the input (a message built eagerly per group once made this quadratic).
  std::string groups = "root ::= \"a\"";
  for (int i = 0; i < 100000; ++i) groups += " (\"b\")";
  EXPECT_EQ(error_of(groups), "");
  // Every symbol, quantifier and alternative costs memory: their number is bounded.
  GrammarLimits small;
  small.max_elements = 1000;
  EXPECT_EQ(error_of("root ::= " + std::string(2000, '.'), small),
            "GBNF line 1, column 1010: the grammar has more than 1000 symbols and operators");
  EXPECT_NE(error_of("root ::= \"a\"" + std::string(2000, '|'), small).find("more than 1000 symbols"),
            std::string::npos);
  std::string quantified = "root ::=";
  for (int i = 0; i < 600; ++i) quantified += " \"a\"?";
  EXPECT_NE(error_of(quantified, small).find("more than 1000 symbols"), std::string::npos);
  // Huge repetitions are refused by the limits rather than expanded.
  std::string nested = "root ::= " + std::string(7, '(') + "\"a\"";
  for (int i = 0; i < 7; ++i) nested += "){0,10000}";
  EXPECT_EQ(error_of(nested), "GBNF: the grammar has more than 65536 rules");
  std::string many = "root ::= [";
  for (uint32_t cp = 0x100; cp < 0x100 + 2 * 5000; cp += 2) tokenizer::append_utf8(many, cp);
  EXPECT_NE(error_of(many + "]").find("the class has more than 1024 items"), std::string::npos);
  // Classes cost their size squared to build: many large ones are refused.
  std::string big = "[";
  for (uint32_t cp = 0x100; cp < 0x100 + 2 * 1000; cp += 2) tokenizer::append_utf8(big, cp);
  big += "]";
  std::string grammar = "root ::=";
  for (int i = 0; i < 20; ++i) grammar += " " + big;
  EXPECT_NE(error_of(grammar).find("character classes are too large in total"), std::string::npos);
}

// Found fuzzing (tests/fuzz/fuzz_grammar.cpp): ambiguous nullable alternatives reach the same
// stacks along exponentially many paths, and the matcher's expansion walked every one (2^40 here:
// forever). It then refused such grammars past a step budget; now a rule-reference state already
// expanded for the current character is not expanded again, so they simply match.
TEST(Gbnf, AmbiguousNullableAlternativesExpandEachStateOnce) {
  // Identical alternatives are merged when the grammar is built, so these are one parse.
  std::string same_pairs = "root ::=";
  for (int i = 0; i < 40; ++i) same_pairs += " (\"\" | \"\")";
  EXPECT_TRUE(matches(parse_gbnf(same_pairs + " \"x\""), "x"));
  // Different alternatives that both match nothing: 2^40 ways to reach "x".
  std::string pairs = "root ::=";
  for (int i = 0; i < 40; ++i) pairs += " (\"\" | \"a\"?)";
  const auto g_pairs = parse_gbnf(pairs + " \"x\"");
  EXPECT_TRUE(matches(g_pairs, "x"));
  EXPECT_TRUE(matches(g_pairs, std::string(40, 'a') + "x"));
  EXPECT_FALSE(matches(g_pairs, std::string(41, 'a') + "x"));
  std::string chain = "root ::= r1 \"x\"\n";
  for (int i = 1; i < 40; ++i) chain += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + " | r" + std::to_string(i + 1) + "?\n";
  chain += "r40 ::= \"\"\n";
  const auto g_chain = parse_gbnf(chain);
  EXPECT_TRUE(matches(g_chain, "x"));
  EXPECT_FALSE(matches(g_chain, "ax"));
  // 800 live parses, each reached by hundreds of paths at every character (the CI fuzzer's
  // timeout had half of this): they all stay alive, and the count is exact.
  std::string optional = "root ::=";
  for (int i = 0; i < 4; ++i) optional += " (\"a\"?){200}";
  const auto g = parse_gbnf(optional + " \"b\"");
  EXPECT_TRUE(matches(g, "b"));
  EXPECT_TRUE(matches(g, std::string(800, 'a') + "b"));
  EXPECT_FALSE(matches(g, std::string(801, 'a') + "b"));
  Matcher m(g);
  ASSERT_TRUE(m.accept("aaaa"));
  EXPECT_EQ(m.stacks().size(), 796u + 1u);  // an "a" at any of the positions 5..800, or the "b"
  // More distinct parses than kMaxStacks are still refused, at once.
  std::string too_many = "root ::=";
  for (int i = 0; i < 6; ++i) too_many += " (\"a\"?){200}";
  EXPECT_THROW(Matcher{parse_gbnf(too_many + " \"b\"")}, GrammarError);
}

// Found fuzzing: which rules are nullable was a fixpoint of passes over all rules, one pass per
// link of a chain r1 ::= r2, r2 ::= r3, ..., rn ::= "" (65k rules, a 1 MB request: 7 s of CPU in
// a release build). Now linear.
TEST(Gbnf, LongNullableChainsCompileInLinearTime) {
  const int n = 60000;
  std::string text = "root ::= r1 \"x\"\n";
  for (int i = 1; i < n; ++i) text += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + "\n";
  text += "r" + std::to_string(n) + " ::= \"\"\n";
  const auto t0 = std::chrono::steady_clock::now();
  const auto g = parse_gbnf(text);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 5.0);  // about 0.05 s (0.6 s under ASan); quadratic, it was 6 s (80 s)
  EXPECT_TRUE(matches(g, "x"));
  EXPECT_FALSE(matches(g, ""));
  // Nullable through a longer alternative, found late: still left recursion when it loops.
  EXPECT_NE(error_of("root ::= a \"x\"\na ::= b c a | \"y\"\nb ::= c\nc ::= \"\"").find("left-recursive"),
            std::string::npos);
}

// Random token soup: every outcome is a Grammar or a GrammarError, never a crash or a hang.
TEST(Gbnf, RandomInputOnlyThrowsGrammarError) {
  const std::vector<std::string> pieces = {"root", " ::= ", "a",    "x-1",  " ",   "\n",    "|",  "(",    ")",
                                           "\"",   "\"b\"", "[",    "]",    "^",   "-",     "\\", "\\x4", "\\u00e9",
                                           "*",    "+",     "?",    "{",    "}",   "{2,3}", ",",  "#",    ".",
                                           "<",    "日",    "\xFF", "\r\n", "::=", "0",     "9"};
  std::mt19937 rng(12345);
  for (int round = 0; round < 3000; ++round) {
    std::string text = round % 2 ? "root ::= " : "";
    const size_t n = rng() % 24;
    for (size_t i = 0; i < n; ++i) text += pieces[rng() % pieces.size()];
    try {
      const auto g = parse_gbnf(text);
      (void)matches(g, "ab");
    } catch (const GrammarError& e) {
      const std::string what = e.what();
      ASSERT_EQ(what.rfind("GBNF", 0), 0u) << what;
      if (e.offset() != std::string::npos) {
        ASSERT_LE(e.offset(), text.size());
      }
    }
  }
}

}  // namespace
}  // namespace engine::grammar
