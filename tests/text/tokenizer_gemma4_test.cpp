// The gemma4 tokenizer (tokenizer.ggml.model "gemma4": BPE over U+2581-escaped UTF-8 with <0xXX>
// byte fallback) against llama.cpp b10108: its pre-tokenizer words for ggml-vocab-gemma-4's test
// inputs, and everything libllama makes of a small Gemma-4-style vocabulary -- ids with and
// without BOS and special-token parsing, token attributes, pieces, the end-of-generation set and
// detokenized text (tests/data/reference/gemma4-*.json; the README there says how they were made).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/text/tokenizer/pre_tokenizer.h"
#include "engine/text/tokenizer/spm.h"
#include "engine/text/tokenizer/tokenizer.h"
#include "engine/text/tokenizer/utf8.h"
#include "tests/support/reference_vocab.h"

namespace {

using engine::Tokenizer;
using ggufd::test::from_hex;
using ggufd::test::read_reference;
using ggufd::test::reference_input;
using ggufd::test::reference_tokenizer;

const nlohmann::json& gemma4_reference() {
  static const nlohmann::json ref = read_reference("gemma4-tokenizer.json");
  return ref;
}

TEST(Gemma4PreTokenizer, SplitsAsLlamaCpp) {
  const auto* spec = engine::tokenizer::find_pre_tokenizer_spec("gemma4");
  ASSERT_NE(spec, nullptr);
  EXPECT_TRUE(spec->spm_style);
  const engine::tokenizer::PreTokenizer pre(spec->regexes);
  const nlohmann::json ref = read_reference("gemma4-pretokenizer.json");
  ASSERT_EQ(ref["cases"].size(), 46u);
  for (const auto& c : ref["cases"]) {
    const std::string input = c["input"].get<std::string>();
    const std::string escaped = engine::tokenizer::escape_spaces(input);
    std::vector<std::string_view> pieces;
    pre.split(escaped, pieces);
    EXPECT_EQ(std::vector<std::string>(pieces.begin(), pieces.end()), c["pieces"].get<std::vector<std::string>>())
        << "input '" << input << "'";
  }
}

TEST(Gemma4Tokenizer, LoadsAsLlamaCpp) {
  const Tokenizer tok = reference_tokenizer(gemma4_reference());
  const nlohmann::json& v = gemma4_reference()["vocab"];
  EXPECT_EQ(tok.model(), "gemma4");
  EXPECT_EQ(tok.pre_tokenizer(), "gemma4");
  EXPECT_EQ(tok.n_vocab(), v["n_vocab"].get<int32_t>());
  EXPECT_EQ(tok.bos(), v["bos"].get<int32_t>());
  EXPECT_EQ(tok.eos(), v["eos"].get<int32_t>());
  EXPECT_EQ(tok.eot(), v["eot"].get<int32_t>());
  EXPECT_TRUE(tok.add_bos()) << "the file says false; llama.cpp adds BOS for gemma4 all the same";
  EXPECT_EQ(tok.add_bos(), v["add_bos"].get<bool>());
  EXPECT_EQ(tok.add_eos(), v["add_eos"].get<bool>());
}

// Attributes (llama.cpp's bits 0-5: unknown, unused, normal, control, user-defined, byte), the
// end-of-generation flag and both pieces of every token.
TEST(Gemma4Tokenizer, EveryTokenAsLlamaCpp) {
  const Tokenizer tok = reference_tokenizer(gemma4_reference());
  const nlohmann::json& tokens = gemma4_reference()["tokens"];
  ASSERT_EQ(static_cast<int32_t>(tokens.size()), tok.n_vocab());
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    const nlohmann::json& t = tokens[static_cast<size_t>(id)];
    EXPECT_EQ(tok.vocab().attr(id) & 0x3F, t["attr"].get<int>() & 0x3F) << "token " << id;
    EXPECT_EQ(tok.is_eog(id), t["eog"].get<bool>()) << "token " << id;
    EXPECT_EQ(tok.piece(id, false), from_hex(t["piece_hex"].get<std::string>())) << "token " << id;
    EXPECT_EQ(tok.piece(id, true), from_hex(t["special_piece_hex"].get<std::string>())) << "token " << id;
  }
}

// Gemma 4's end-of-generation tokens, and "</s>", which llama.cpp turns into ordinary text there.
TEST(Gemma4Tokenizer, EndOfGenerationSet) {
  const Tokenizer tok = reference_tokenizer(gemma4_reference());
  std::vector<int32_t> expected;
  for (const char* text : {"<eos>", "<turn|>", "<|tool_response>"}) {
    const int32_t id = tok.find_token(text);
    ASSERT_GE(id, 0) << text;
    expected.push_back(id);
  }
  EXPECT_EQ(tok.eog_ids(), expected);
  const int32_t s = tok.find_token("</s>");
  EXPECT_FALSE(tok.is_eog(s));
  EXPECT_FALSE(tok.is_control(s));
  EXPECT_EQ(tok.piece(s, false), "</s>");
}

TEST(Gemma4Tokenizer, EncodesAsLlamaCpp) {
  const Tokenizer tok = reference_tokenizer(gemma4_reference());
  const nlohmann::json& cases = gemma4_reference()["cases"];
  ASSERT_GT(cases.size(), 46u);
  for (const auto& c : cases) {
    const std::string input = reference_input(c);
    EXPECT_EQ(tok.encode(input, false, false), c["ids"].get<std::vector<int32_t>>()) << c.dump();
    EXPECT_EQ(tok.encode(input, false, true), c["ids_parse"].get<std::vector<int32_t>>()) << c.dump();
    EXPECT_EQ(tok.encode(input, true, false), c["ids_add"].get<std::vector<int32_t>>()) << c.dump();
    EXPECT_EQ(tok.encode(input, true, true), c["ids_add_parse"].get<std::vector<int32_t>>()) << c.dump();
  }
}

// decode() joins the tokens' pieces as llama.cpp's token_to_piece gives them (what llama-server
// streams). llama_detokenize also applies its clean-up of spaces before punctuation
// (clean_spaces, on for gemma4), which ggufd does not: the two agree wherever that clean-up
// changes nothing, and only there is llama_detokenize's text compared.
TEST(Gemma4Tokenizer, DecodesAsLlamaCpp) {
  const Tokenizer tok = reference_tokenizer(gemma4_reference());
  const nlohmann::json& tokens = gemma4_reference()["tokens"];
  size_t compared = 0;
  for (const auto& c : gemma4_reference()["cases"]) {
    const std::vector<int32_t> ids = c["ids_add_parse"].get<std::vector<int32_t>>();
    for (bool special : {false, true}) {
      std::string pieces;
      for (int32_t id : ids) {
        pieces += from_hex(tokens[static_cast<size_t>(id)][special ? "special_piece_hex" : "piece_hex"].get<std::string>());
      }
      const std::string decoded = tok.decode(ids, special);
      EXPECT_EQ(decoded, pieces) << c.dump();
      const std::string detok = from_hex(c[special ? "detok_unparse_hex" : "detok_hex"].get<std::string>());
      const bool cleaned = decoded.find(" ,") != std::string::npos || decoded.find(" .") != std::string::npos ||
                           decoded.find(" ?") != std::string::npos || decoded.find(" !") != std::string::npos ||
                           decoded.find(" '") != std::string::npos;
      if (!cleaned) {
        EXPECT_EQ(decoded, detok) << c.dump();
        ++compared;
      }
      engine::StreamDecoder stream(tok, {.render_special = special});
      std::string streamed;
      for (int32_t id : ids) streamed += stream.push(id);
      streamed += stream.flush();
      EXPECT_EQ(streamed, engine::tokenizer::sanitize_utf8(pieces)) << c.dump();
    }
  }
  EXPECT_GT(compared, 80u);
}

// Gemma 4's converter writes no tokenizer.ggml.pre, and llama.cpp uses gemma4's whatever the key
// says: the same ids either way.
TEST(Gemma4Tokenizer, PreTokenizerKeyIsIgnored) {
  const Tokenizer without = reference_tokenizer(gemma4_reference(), {"tokenizer.ggml.pre"});
  EXPECT_EQ(without.pre_tokenizer(), "gemma4");
  for (const auto& c : gemma4_reference()["cases"]) {
    EXPECT_EQ(without.encode(reference_input(c), true, true), c["ids_add_parse"].get<std::vector<int32_t>>())
        << c.dump();
  }
}

// BOS is always added, so a vocabulary without a BOS id is refused at load, naming the reason.
TEST(Gemma4Tokenizer, MissingBosIsRefusedAtLoad) {
  try {
    reference_tokenizer(gemma4_reference(), {"tokenizer.ggml.bos_token_id"});
    FAIL() << "loaded a gemma4 vocabulary without a BOS id";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("bos_token_id"), std::string::npos) << e.what();
  }
}

}  // namespace
