// The qwen35 pre-tokenizer (Qwen3.5's tokenizer.json regex, as llama.cpp b10108's llama-vocab.cpp
// names it) against llama.cpp's own splits of its ggml-vocab-qwen35 test inputs, and the whole
// tokenizer with that pre-tokenizer on the Qwen 2/3 vocabulary against llama.cpp's ids
// (tests/data/reference/qwen35-pretokenizer.json; its README says how they were made).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/text/tokenizer/pre_tokenizer.h"
#include "engine/text/tokenizer/tokenizer.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "tests/support/shared.h"

namespace {

nlohmann::json reference() {
  std::ifstream in(std::string(GGUFD_TEST_DATA_DIR) + "/reference/qwen35-pretokenizer.json");
  return nlohmann::json::parse(in);
}

TEST(Qwen35PreTokenizer, SplitsAsLlamaCpp) {
  const auto* spec = engine::tokenizer::find_pre_tokenizer_spec("qwen35");
  ASSERT_NE(spec, nullptr);
  EXPECT_FALSE(spec->clean_spaces);
  const engine::tokenizer::PreTokenizer pre(spec->regexes);
  const nlohmann::json ref = reference();
  ASSERT_EQ(ref["cases"].size(), 50u);
  for (const auto& c : ref["cases"]) {
    const std::string input = c["input"].get<std::string>();
    std::vector<std::string_view> pieces;
    pre.split(input, pieces);
    EXPECT_EQ(std::vector<std::string>(pieces.begin(), pieces.end()), c["pieces"].get<std::vector<std::string>>())
        << "input '" << input << "'";
  }
}

// Combining marks stay inside a letter run, where qwen2's rule cuts them off (Khmer).
TEST(Qwen35PreTokenizer, MarksJoinLetterRuns) {
  const std::string khmer = "\xE1\x9E\x80\xE1\x9E\xB6\xE1\x9E\x93\xE1\x9F\x8B";  // "កាន់"
  for (const auto& [name, n] : {std::pair<const char*, size_t>{"qwen35", 1}, {"qwen2", 3}}) {
    const engine::tokenizer::PreTokenizer pre(engine::tokenizer::find_pre_tokenizer_spec(name)->regexes);
    std::vector<std::string_view> pieces;
    pre.split(khmer, pieces);
    EXPECT_EQ(pieces.size(), n) << name;
  }
}

// The Qwen 2/3 vocabulary with tokenizer.ggml.pre = qwen35 gives llama.cpp's ids.
TEST(Qwen35PreTokenizer, WholeTokenizerOnTheQwen3Vocabulary) {
  GGUFD_REQUIRE_SHARED("tokenizer/ggml-vocab-qwen3.gguf");
  const nlohmann::json ref = reference();
  if (!ref.contains("ids")) GTEST_SKIP() << "no ids in the reference";
  const gguf::File qwen3 = gguf::File::open(ggufd::test::shared_path("tokenizer/ggml-vocab-qwen3.gguf"));
  gguf::Writer w(3, false);
  for (const gguf::KeyValue& kv : qwen3.metadata()) w.set(std::string(kv.key), gguf::OwnedValue::from(kv.value));
  w.set("tokenizer.ggml.pre", gguf::OwnedValue::string("qwen35"));
  const std::vector<uint8_t> bytes = w.to_bytes();
  const engine::Tokenizer tok = engine::Tokenizer::from_gguf(gguf::File::parse(bytes, "qwen3-vocab-qwen35-pre"));
  const auto& cases = ref["cases"];
  ASSERT_EQ(ref["ids"].size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string input = cases[i]["input"].get<std::string>();
    EXPECT_EQ(tok.encode(input, false, false), ref["ids"][i].get<std::vector<int32_t>>()) << "input '" << input << "'";
  }
}

}  // namespace
