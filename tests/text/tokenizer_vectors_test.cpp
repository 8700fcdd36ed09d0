// Every vocabulary under ../shared/tokenizer against its reference vectors (.inp/.out): inputs
// tokenized without BOS/EOS and without parsing special tokens must give exactly the listed ids.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/text/tokenizer/tokenizer.h"
#include "gguf/file.h"
#include "tests/support/shared.h"

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> split_inputs(const std::string& all) {
  const std::string separator = "\n__ggml_vocab_test__\n";
  std::vector<std::string> inputs;
  size_t start = 0;
  for (size_t at; (at = all.find(separator, start)) != std::string::npos; start = at + separator.size()) {
    inputs.push_back(all.substr(start, at - start));
  }
  return inputs;
}

std::vector<std::vector<int32_t>> read_expected(const std::string& path) {
  std::vector<std::vector<int32_t>> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::istringstream ids(line);
    std::vector<int32_t> row;
    for (int32_t id; ids >> id;) row.push_back(id);
    lines.push_back(row);
  }
  return lines;
}

std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else out += static_cast<char>(c);
  }
  return out;
}

class VocabVectors : public ::testing::TestWithParam<const char*> {};

TEST_P(VocabVectors, MatchReferenceIds) {
  const std::string base = std::string("tokenizer/ggml-vocab-") + GetParam() + ".gguf";
  GGUFD_REQUIRE_SHARED(base);
  const gguf::File file = gguf::File::open(ggufd::test::shared_path(base));
  const engine::Tokenizer tok = engine::Tokenizer::from_gguf(file);
  const auto inputs = split_inputs(read_all(ggufd::test::shared_path(base + ".inp")));
  const auto expected = read_expected(ggufd::test::shared_path(base + ".out"));
  ASSERT_EQ(inputs.size(), expected.size());
  int failures = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<int32_t> ids = tok.encode(inputs[i], false, false);
    EXPECT_EQ(ids, expected[i]) << "input #" << i << ": \"" << printable(inputs[i]) << "\"";
    failures += ids != expected[i];
  }
  RecordProperty("inputs", static_cast<int>(inputs.size()));
  RecordProperty("failures", failures);
}

INSTANTIATE_TEST_SUITE_P(Shared, VocabVectors,
                         ::testing::Values("llama-spm", "llama3", "qwen3", "gpt-2", "deepseek-llm",
                                           "falcon", "mpt", "starcoder", "gemma3", "bert-bge"),
                         [](const ::testing::TestParamInfo<const char*>& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
