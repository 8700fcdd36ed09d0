// Property tests of JSON Schema grammars over many generated schemas (tests/support/schema_gen.h):
//  - soundness: every complete random constrained generation parses as JSON and validates against
//    its schema (tests/support/json_schema_check.h), on a real 151k-token vocabulary;
//  - completeness: valid example instances of each schema are accepted by its grammar.
#include <gtest/gtest.h>

#include <random>
#include <regex>

#include "engine/text/grammar/json_schema.h"
#include "engine/text/grammar/token_masks.h"
#include "engine/text/tokenizer/tokenizer.h"
#include "gguf/file.h"
#include "tests/support/json_schema_check.h"
#include "tests/support/schema_gen.h"
#include "tests/support/sanitized.h"
#include "tests/support/shared.h"

namespace engine::grammar {
namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

std::shared_ptr<const Grammar> grammar_of(const json& schema) { return json_schema_grammar(ojson::parse(schema.dump())); }

// A constrained generation that picks uniformly among the allowed tokens, but half of the time
// among the short ones (so strings end and walks finish). Returns true with the text when the
// grammar completed within max_steps.
bool generate(const std::shared_ptr<const CompiledGrammar>& cg, std::mt19937& rng, int max_steps, std::string& text) {
  TokenConstraint c(cg);
  const auto& eog = cg->vocab().eog_ids();
  text.clear();
  for (int step = 0; step < max_steps; ++step) {
    std::vector<int32_t> all, short_ones;
    bool can_end = false;
    const TokenBits& bits = c.allowed();
    for (size_t w = 0; w < bits.size(); ++w) {
      for (uint64_t x = bits[w]; x; x &= x - 1) {
        const auto id = static_cast<int32_t>(w * 64 + __builtin_ctzll(x));
        if (std::find(eog.begin(), eog.end(), id) != eog.end()) {
          can_end = true;
          continue;
        }
        all.push_back(id);
        if (cg->vocab().bytes(id).size() <= 2) short_ones.push_back(id);
      }
    }
    if (can_end && (all.empty() || rng() % 3 == 0)) return true;
    if (all.empty()) return false;
    const auto& from = !short_ones.empty() && rng() % 2 ? short_ones : all;
    const int32_t id = from[rng() % from.size()];
    if (!c.accept(id)) return false;
    text += cg->vocab().bytes(id);
    if (c.complete()) return true;
  }
  return false;
}

TEST(GrammarSchemaProperty, GeneratedOutputValidatesOnARealVocabulary) {
  GGUFD_REQUIRE_SHARED("tokenizer/ggml-vocab-qwen3.gguf");
  const gguf::File file = gguf::File::open(ggufd::test::shared_path("tokenizer/ggml-vocab-qwen3.gguf"));
  const auto vocab = TokenVocab::from_tokenizer(Tokenizer::from_gguf(file));
  int completed = 0;
  const uint32_t seeds = ggufd::test::kSanitized ? 10 : 40;  // a grammar per seed on 151,669 tokens
  for (uint32_t seed = 0; seed < seeds; ++seed) {
    std::mt19937 rng(seed);
    const json schema = test_support::random_schema(rng, 3);
    SCOPED_TRACE("seed " + std::to_string(seed) + " schema " + schema.dump());
    const auto cg = std::make_shared<CompiledGrammar>(grammar_of(schema), vocab);
    std::string text;
    if (!generate(cg, rng, 400, text)) continue;
    ++completed;
    json value;
    ASSERT_NO_THROW(value = json::parse(text)) << text;
    EXPECT_EQ(test_support::schema_violation(value, schema), "") << text;
  }
  // most walks finish; the rest hit the step bound in a long string
  EXPECT_GE(completed, static_cast<int>(seeds / 2));
}

TEST(GrammarSchemaProperty, ExampleInstancesAreAccepted) {
  int checked = 0;
  for (uint32_t seed = 0; seed < 300; ++seed) {
    std::mt19937 rng(seed);
    const json schema = test_support::random_schema(rng, 3);
    const auto g = grammar_of(schema);
    for (int k = 0; k < 3; ++k) {
      const json example = test_support::example_instance(schema, rng);
      const std::string text = example.dump();
      // Exponent forms (bounded numbers are written without one): 4.6e-10 for a number in (0, 1e-9).
      if (std::regex_search(text, std::regex("[0-9][eE][-+]?[0-9]"))) continue;
      ASSERT_EQ(test_support::schema_violation(example, schema), "");
      EXPECT_TRUE(matches(g, text)) << "seed " << seed << " schema " << schema.dump() << "\ninstance " << text;
      ++checked;
    }
  }
  EXPECT_GT(checked, 800);
}

}  // namespace
}  // namespace engine::grammar
