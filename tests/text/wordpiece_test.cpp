// WordPiece ("bert") tokenization: the Unicode lookups it rests on, its normalization and split
// rules on a small hand-made vocabulary, hostile input, and ids that llama.cpp gave for the shared
// synthetic BERT model (which skip when ../shared is absent).
#include "engine/text/tokenizer/wordpiece.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "engine/text/tokenizer/tokenizer.h"
#include "engine/text/tokenizer/unicode_props.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "tests/support/shared.h"

namespace {

using engine::Tokenizer;
namespace unicode = engine::tokenizer::unicode;
using Ids = std::vector<int32_t>;

// ---- Unicode lookups ----

TEST(UnicodeProps, Lowercase) {
  EXPECT_EQ(unicode::lowercase('A'), uint32_t{'a'});
  EXPECT_EQ(unicode::lowercase('z'), uint32_t{'z'});
  EXPECT_EQ(unicode::lowercase('['), uint32_t{'['});
  EXPECT_EQ(unicode::lowercase(0xC9), 0xE9u);      // É -> é
  EXPECT_EQ(unicode::lowercase(0xD7), 0xD7u);      // × has none (between À..Ö and Ø..Þ)
  EXPECT_EQ(unicode::lowercase(0x100), 0x101u);    // Ā -> ā (stride-2 range)
  EXPECT_EQ(unicode::lowercase(0x101), 0x101u);
  EXPECT_EQ(unicode::lowercase(0x130), 0x69u);     // İ -> i (simple mapping, not "i̇")
  EXPECT_EQ(unicode::lowercase(0x1C5), 0x1C6u);    // ǅ (titlecase) -> ǆ
  EXPECT_EQ(unicode::lowercase(0x3A3), 0x3C3u);    // Σ -> σ
  EXPECT_EQ(unicode::lowercase(0x41E), 0x43Eu);    // О -> о
  EXPECT_EQ(unicode::lowercase(0x2126), 0x3C9u);   // Ω (ohm sign) -> ω
  EXPECT_EQ(unicode::lowercase(0xFF21), 0xFF41u);  // Ａ -> ａ
  EXPECT_EQ(unicode::lowercase(0x10400), 0x10428u);
  EXPECT_EQ(unicode::lowercase(0x4E2D), 0x4E2Du);
  EXPECT_EQ(unicode::lowercase(0x110000), 0x110000u);
  EXPECT_EQ(unicode::lowercase(0xFFFFFFFF), 0xFFFFFFFFu);
}

TEST(UnicodeProps, NfdBase) {
  EXPECT_EQ(unicode::nfd_base('e'), uint32_t{'e'});
  EXPECT_EQ(unicode::nfd_base(0xE9), uint32_t{'e'});    // é
  EXPECT_EQ(unicode::nfd_base(0xC5), uint32_t{'A'});    // Å
  EXPECT_EQ(unicode::nfd_base(0xC6), 0xC6u);            // Æ does not decompose
  EXPECT_EQ(unicode::nfd_base(0x1E69), uint32_t{'s'});  // ṩ: two marks
  EXPECT_EQ(unicode::nfd_base(0x2126), 0x3A9u);         // ohm sign -> Ω (singleton)
  EXPECT_EQ(unicode::nfd_base(0xAC00), 0x1100u);        // 가 -> leading jamo ᄀ
  EXPECT_EQ(unicode::nfd_base(0xD7A3), 0x1112u);        // last Hangul syllable
  EXPECT_EQ(unicode::nfd_base(0xFB01), 0xFB01u);        // ﬁ: compatibility only
  EXPECT_EQ(unicode::nfd_base(0x4E2D), 0x4E2Du);
  EXPECT_EQ(unicode::nfd_base(0x110000), 0x110000u);
}

TEST(UnicodeProps, CategoryFlags) {
  EXPECT_EQ(unicode::code_point_flags('a'), unicode::kLetter);
  EXPECT_EQ(unicode::code_point_flags('7'), unicode::kNumber);
  EXPECT_EQ(unicode::code_point_flags(' '), unicode::kSeparator | unicode::kWhitespace);
  EXPECT_EQ(unicode::code_point_flags('\t'), unicode::kControl | unicode::kWhitespace);
  EXPECT_EQ(unicode::code_point_flags(0x1C), unicode::kControl);  // not White_Space
  EXPECT_EQ(unicode::code_point_flags(0x85), unicode::kControl | unicode::kWhitespace);
  EXPECT_EQ(unicode::code_point_flags(0x3000), unicode::kSeparator | unicode::kWhitespace);
  EXPECT_EQ(unicode::code_point_flags('!'), unicode::kPunctuation);
  EXPECT_EQ(unicode::code_point_flags('$'), unicode::kSymbol);
  EXPECT_EQ(unicode::code_point_flags(0x20AC), unicode::kSymbol);  // €
  EXPECT_EQ(unicode::code_point_flags(0x301), unicode::kMark);     // combining acute
  EXPECT_EQ(unicode::code_point_flags(0x200B), unicode::kControl);  // zero width space (Cf)
  EXPECT_EQ(unicode::code_point_flags(0xE000), unicode::kControl);  // private use
  EXPECT_EQ(unicode::code_point_flags(0xD800), unicode::kControl);  // surrogate
  EXPECT_EQ(unicode::code_point_flags(0x378), unicode::kUndefined);
  EXPECT_EQ(unicode::code_point_flags(0x4E2D), unicode::kLetter);
  EXPECT_EQ(unicode::code_point_flags(0x10FFFF), unicode::kUndefined);
  EXPECT_EQ(unicode::code_point_flags(0x110000), unicode::kUndefined);
}

TEST(UnicodeProps, EveryCodePointHasExactlyOneCategory) {
  for (uint32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    const unsigned category = unicode::code_point_flags(cp) & 0xFF;
    ASSERT_TRUE(category != 0 && (category & (category - 1)) == 0) << std::hex << cp;
  }
}

TEST(WordPieceChars, CjkIdeographs) {
  EXPECT_TRUE(engine::tokenizer::is_cjk_ideograph(0x4E2D));
  EXPECT_TRUE(engine::tokenizer::is_cjk_ideograph(0xF900));
  EXPECT_TRUE(engine::tokenizer::is_cjk_ideograph(0x2B920));
  EXPECT_FALSE(engine::tokenizer::is_cjk_ideograph(0x2B820));  // as the reference
  EXPECT_FALSE(engine::tokenizer::is_cjk_ideograph(0x3042));   // hiragana
  EXPECT_FALSE(engine::tokenizer::is_cjk_ideograph(0xAC00));   // hangul
}

// ---- A small hand-made vocabulary ----

// Word starts carry "▁", continuation pieces are bare (as llama.cpp's converter stores them).
const std::vector<std::string> kTokens = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",                                  // 0..4
    "\xE2\x96\x81hello", "\xE2\x96\x81world", "\xE2\x96\x81hel", "lo",             // 5..8
    "\xE2\x96\x81!", "\xE2\x96\x81,", "\xE2\x96\x81" "cafe", "\xE2\x96\x81\xE4\xB8\xAD",  // 9..12 中
    "\xE2\x96\x81\xE6\x96\x87", "\xE2\x96\x81un", "aff", "able", "\xE2\x96\x81" "a",  // 13..17 文
    "\xE2\x96\x81$", "\xE2\x96\x81\xCF\x89", "s", "\xE2\x96\x81naive", "\xE2\x96\x81" "e",  // 18..22 ω
    "\xE2\x96\x81" "Hello", "\xE2\x96\x81" "caf\xC3\xA9",                          // 23..24 café
};

Tokenizer make_tokenizer(bool set_lowercase, bool lowercase) {
  gguf::Writer writer;
  writer.set("tokenizer.ggml.model", gguf::OwnedValue::string("bert"));
  writer.set("tokenizer.ggml.tokens", gguf::OwnedValue::string_array(kTokens));
  std::vector<int32_t> types(kTokens.size(), 1);
  types[0] = types[2] = types[3] = types[4] = 3;  // control
  types[1] = 2;                                   // unknown
  writer.set("tokenizer.ggml.token_type", gguf::OwnedValue::i32_array(types));
  writer.set("tokenizer.ggml.padding_token_id", gguf::OwnedValue::u32(0));
  writer.set("tokenizer.ggml.unknown_token_id", gguf::OwnedValue::u32(1));
  writer.set("tokenizer.ggml.bos_token_id", gguf::OwnedValue::u32(2));
  writer.set("tokenizer.ggml.seperator_token_id", gguf::OwnedValue::u32(3));
  writer.set("tokenizer.ggml.mask_token_id", gguf::OwnedValue::u32(4));
  if (set_lowercase) {
    writer.set("tokenizer.ggml.normalizer.lowercase", gguf::OwnedValue::boolean(lowercase));
  }
  const std::vector<uint8_t> bytes = writer.to_bytes();
  return Tokenizer::from_gguf(gguf::File::parse(bytes));  // the Tokenizer copies what it needs
}

class WordPiece : public ::testing::Test {
 protected:
  Ids encode(const std::string& text) const { return tok_.encode(text, false, false); }
  const Tokenizer tok_ = make_tokenizer(false, false);  // no normalizer keys: uncased BERT
};

TEST_F(WordPiece, AddsClsAndSep) {
  EXPECT_EQ(tok_.encode("hello", true, false), (Ids{2, 5, 3}));
  EXPECT_EQ(tok_.encode("", true, false), (Ids{2, 3}));
  EXPECT_EQ(tok_.encode("hello [SEP] world", true, true), (Ids{2, 5, 3, 6, 3}));
}

TEST_F(WordPiece, EmptyAndBlankTextGiveNothing) {
  EXPECT_EQ(encode(""), Ids{});
  EXPECT_EQ(encode(" \t\r\n \xE3\x80\x80 "), Ids{});  // includes U+3000
  EXPECT_EQ(encode("\x01\x7F"), Ids{});               // controls only
}

TEST_F(WordPiece, LongestPiecesFirst) {
  EXPECT_EQ(encode("hello world"), (Ids{5, 6}));
  EXPECT_EQ(encode("hellolo"), (Ids{5, 8}));
  EXPECT_EQ(encode("unaffable"), (Ids{14, 15, 16}));
  EXPECT_EQ(encode("  hello\n\n\tworld  "), (Ids{5, 6}));
}

TEST_F(WordPiece, AWordWithAnUnmatchedPartIsOneUnknown) {
  EXPECT_EQ(encode("helo"), (Ids{1}));           // "▁hel" matches, "o" does not
  EXPECT_EQ(encode("hello helo world"), (Ids{5, 1, 6}));
  EXPECT_EQ(encode("zzz"), (Ids{1}));
}

TEST_F(WordPiece, LowercasesAndStripsAccents) {
  EXPECT_EQ(encode("HeLLo WORLD"), (Ids{5, 6}));
  EXPECT_EQ(encode("Caf\xC3\xA9 NA\xC3\x8FVE"), (Ids{11, 21}));  // Café NAÏVE
  EXPECT_EQ(encode("cafe\xCC\x81"), (Ids{11}));                   // e + combining acute
  EXPECT_EQ(encode("\xE2\x84\xA6"), (Ids{19}));                   // ohm sign -> Ω -> ω
}

TEST_F(WordPiece, PunctuationAsciiSymbolsAndCjkStandAlone) {
  EXPECT_EQ(encode("Hello, world!"), (Ids{5, 10, 6, 9}));
  EXPECT_EQ(encode("hello,world"), (Ids{5, 10, 6}));
  EXPECT_EQ(encode("a$a"), (Ids{17, 18, 17}));
  EXPECT_EQ(encode("a\xE2\x82\xAC" "a"), (Ids{1}));                     // € (not ASCII) stays in
  EXPECT_EQ(encode("\xE4\xB8\xAD\xE6\x96\x87"), (Ids{12, 13}));        // 中文
  EXPECT_EQ(encode("hello\xE4\xB8\xADhello"), (Ids{5, 12, 5}));
}

TEST_F(WordPiece, ControlsAndFormatCharactersVanish) {
  EXPECT_EQ(encode("hel\x01lo"), (Ids{5}));
  EXPECT_EQ(encode("hel\xE2\x80\x8Blo"), (Ids{5}));  // U+200B
  EXPECT_EQ(encode("hel\xC2\xADlo"), (Ids{5}));      // soft hyphen
  EXPECT_EQ(encode(std::string("hel\0lo", 6)), (Ids{5}));
  EXPECT_EQ(encode("hel\xEF\xBF\xBDlo"), (Ids{5}));  // U+FFFD
  EXPECT_EQ(encode("hello\xC2\xA0world"), (Ids{5, 6}));  // NBSP is whitespace
}

TEST_F(WordPiece, InvalidUtf8IsDropped) {
  EXPECT_EQ(encode("hel\xFFlo"), (Ids{5}));
  EXPECT_EQ(encode("hel\x80lo"), (Ids{5}));
  EXPECT_EQ(encode("hello \xC3"), (Ids{5}));
  EXPECT_EQ(encode("hel\xED\xA0\x80lo"), (Ids{5}));      // surrogate
  EXPECT_EQ(encode("hel\xF4\x90\x80\x80lo"), (Ids{5}));  // above U+10FFFF
  EXPECT_EQ(encode("\xC1\x81"), (Ids{17}));              // overlong "A": accepted, as the reference
}

TEST_F(WordPiece, RandomBytesNeverThrow) {
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string text(rng() % 40, '\0');
    for (char& c : text) c = static_cast<char>(rng() % 4 == 0 ? 'a' + rng() % 3 : rng());
    Ids ids;
    ASSERT_NO_THROW(ids = tok_.encode(text, true, (i & 1) != 0));
    for (int32_t id : ids) ASSERT_TRUE(id >= 0 && id < tok_.n_vocab());
    ASSERT_NO_THROW((void)tok_.decode(ids));
  }
}

TEST_F(WordPiece, DecodeJoinsContinuationPieces) {
  EXPECT_EQ(tok_.decode(Ids{2, 5, 6, 14, 15, 16, 9, 3}), "hello world unaffable !");
  EXPECT_EQ(tok_.piece(5), " hello");
  EXPECT_EQ(tok_.piece(8), "lo");
  EXPECT_EQ(tok_.decode(Ids{8, 5}), "lo hello");
  EXPECT_EQ(tok_.decode(Ids{2, 3}, true), "[CLS][SEP]");
}

TEST(WordPieceCased, LowercaseFalseKeepsCaseAndAccents) {
  const Tokenizer tok = make_tokenizer(true, false);
  EXPECT_EQ(tok.encode("Hello hello", false, false), (Ids{23, 5}));
  EXPECT_EQ(tok.encode("HELLO", false, false), (Ids{1}));
  EXPECT_EQ(tok.encode("caf\xC3\xA9", false, false), (Ids{24}));
}

// ---- The shared synthetic BERT model, against llama.cpp ----

constexpr const char* kSynthBert = "models/synth/synth-bert-Q8_0.gguf";
constexpr const char* kGolden = "golden/embeddings/synth-bert-Q8_0.json";

Tokenizer load_synth_bert() {
  return Tokenizer::from_gguf(gguf::File::open(ggufd::test::shared_path(kSynthBert)));
}

TEST(WordPieceShared, GoldenEmbeddingPrompts) {
  GGUFD_REQUIRE_SHARED(kSynthBert);
  GGUFD_REQUIRE_SHARED(kGolden);
  const Tokenizer tok = load_synth_bert();
  std::ifstream in(ggufd::test::shared_path(kGolden));
  const nlohmann::json golden = nlohmann::json::parse(in);
  ASSERT_EQ(golden.at("cases").size(), 4u);
  for (const nlohmann::json& c : golden.at("cases")) {
    const std::string prompt = c.at("prompt");
    EXPECT_EQ(tok.encode(prompt, true, false), c.at("tokens").get<Ids>()) << prompt;
  }
}

// Ids from llama.cpp's tokenizer (llama-server /tokenize, add_special) on the same model.
TEST(WordPieceShared, MatchesReferenceOnHarderText) {
  GGUFD_REQUIRE_SHARED(kSynthBert);
  const Tokenizer tok = load_synth_bert();
  const std::pair<std::string, Ids> cases[] = {
      {"Caf\xC3\xA9 NA\xC3\x8FVE r\xC3\xA9sum\xC3\xA9", {101, 7668, 15743, 13746, 102}},
      {"\xE4\xB8\xAD\xE6\x96\x87 \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E", {101, 1746, 1861, 1864, 1876, 1950, 102}},
      {"Hello, world! (ok) $5 a-b",
       {101, 7592, 1010, 2088, 999, 1006, 7929, 1007, 1002, 1019, 1037, 1011, 1038, 102}},
      {"qzxqzx hello", {101, 1053, 2480, 2595, 4160, 2480, 2595, 7592, 102}},
      {"", {101, 102}},
      {"\xEF\xAC\x81ne \xE2\x84\xA6mega \xC4\xB0stanbul", {101, 1984, 2638, 1179, 4168, 3654, 9960, 102}},
      {"e\xCC\x81", {101, 1041, 102}},
      {"hello\xC2\xA0world\xE3\x80\x80" "again\xE2\x80\x8Bx", {101, 7592, 2088, 2153, 2595, 102}},
      {"\xF0\x9F\x99\x82 hello", {101, 100, 7592, 102}},  // 🙂: unknown
  };
  for (const auto& [text, ids] : cases) EXPECT_EQ(tok.encode(text, true, false), ids) << text;
}

TEST(WordPieceShared, DecodeGivesLowercasedText) {
  GGUFD_REQUIRE_SHARED(kSynthBert);
  const Tokenizer tok = load_synth_bert();
  EXPECT_EQ(tok.decode(tok.encode("The quick brown fox embeddings", true, false)),
            "the quick brown fox embeddings");
}

}  // namespace
