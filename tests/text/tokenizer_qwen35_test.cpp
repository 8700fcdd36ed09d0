// The qwen35 pre-tokenizer (Qwen3.5's tokenizer.json regex, as llama.cpp b10108's llama-vocab.cpp
// names it) against llama.cpp's own splits of its ggml-vocab-qwen35 test inputs
// (tests/data/reference/qwen35-pretokenizer.json; its README says how they were made).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/text/tokenizer/pre_tokenizer.h"

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

}  // namespace
