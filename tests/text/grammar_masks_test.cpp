// Token masks (token_masks.h): the precomputed per-position masks plus the run-time check of
// uncertain tokens must give exactly the tokens a full walk of the vocabulary accepts, at every
// step of random constrained generations; and the walks always end in text the grammar matches.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <random>

#include "engine/text/grammar/gbnf.h"
#include "engine/text/grammar/json_schema.h"
#include "engine/text/grammar/token_masks.h"
#include "engine/text/tokenizer/tokenizer.h"
#include "gguf/file.h"
#include "tests/support/shared.h"

namespace engine::grammar {
namespace {

using ojson = nlohmann::ordered_json;

// The exact mask: a full walk from the matcher's stacks, plus the end tokens when complete.
TokenBits reference_mask(const CompiledGrammar& cg, const Matcher& m) {
  TokenBits bits((static_cast<size_t>(cg.vocab().n_vocab()) + 63) / 64, 0);
  Automaton a(*cg.grammar());
  walk_vocab(a, cg.vocab(), m.stacks(), false, bits, nullptr);
  if (m.can_end()) {
    for (int32_t id : cg.vocab().eog_ids()) set_bit(bits, id);
  }
  return bits;
}

std::vector<int32_t> ids_of(const TokenBits& bits) {
  std::vector<int32_t> out;
  for (size_t w = 0; w < bits.size(); ++w) {
    for (uint64_t x = bits[w]; x; x &= x - 1) out.push_back(static_cast<int32_t>(w * 64 + __builtin_ctzll(x)));
  }
  return out;
}

// Generates up to max_steps tokens uniformly among the allowed ones, checking each step's mask
// against the reference. Returns the text; `ended` tells whether it ended on an end token.
std::string random_walk(const std::shared_ptr<const CompiledGrammar>& cg, std::mt19937& rng, int max_steps,
                        bool check, bool& ended) {
  TokenConstraint c(cg);
  Matcher m(cg->grammar());
  std::string text;
  ended = false;
  for (int step = 0; step < max_steps; ++step) {
    const TokenBits& allowed = c.allowed();
    if (check) {
      const TokenBits want = reference_mask(*cg, m);
      EXPECT_EQ(ids_of(allowed), ids_of(want)) << "step " << step << " after '" << text << "'";
      if (ids_of(allowed) != ids_of(want)) return text;
    }
    const auto ids = ids_of(allowed);
    if (ids.empty()) break;
    // Prefer continuing over ending early, so the walks reach deep states.
    int32_t id = ids[std::uniform_int_distribution<size_t>(0, ids.size() - 1)(rng)];
    const auto& eog = cg->vocab().eog_ids();
    if (std::find(eog.begin(), eog.end(), id) != eog.end()) {
      if (step > 0 && rng() % 4 == 0) {
        ended = true;
        break;
      }
      bool other = false;
      for (int32_t x : ids) other |= std::find(eog.begin(), eog.end(), x) == eog.end();
      if (!other) {
        ended = true;
        break;
      }
      while (std::find(eog.begin(), eog.end(), id) != eog.end()) id = ids[rng() % ids.size()];
    }
    EXPECT_TRUE(c.accept(id));
    EXPECT_TRUE(m.accept(cg->vocab().bytes(id)));
    text += cg->vocab().bytes(id);
    if (c.complete()) {
      ended = true;
      break;
    }
  }
  return text;
}

// A small vocabulary with multi-byte and structural tokens, split UTF-8 and byte tokens.
std::shared_ptr<const TokenVocab> small_vocab() {
  std::vector<std::string> t = {"", "{", "}", "[", "]", "\"", ":", ",", "\":", "\",", "{\"", "\"}", "a", "ab", "abc",
                                "b", "name", "age", "\"name", "\"age\":", "1", "12", "0", "-", ".", "5", "e", "true",
                                "false", "null", "\\", "\\\"", "n", "u", "00", "41", "x", " ", "é", "\xC3", "\xA9",
                                "日本", "\xE6", "\x97\xA5", "2024", "-01", "-15", "T", "Z", "10:30:00", "@", "ex.com",
                                "\"]", "[\"", "},{", "id", "\"id\":", "-0",
                                // every letter and digit on its own too: a grammar is cut to the
                                // characters a vocabulary can write alone (token_masks.h)
                                "c", "d", "f", "g", "h", "i", "j", "k", "l", "m", "o", "p", "q", "r", "s", "t", "v",
                                "w", "y", "z", "E", "2", "3", "4", "6", "7", "8", "9"};
  return std::make_shared<TokenVocab>(std::move(t), std::vector<int32_t>{0});
}

const char* kSchemas[] = {
    R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0,"maximum":120}},"required":["name","age"],"additionalProperties":false})",
    R"({"type":"array","items":{"type":"number","exclusiveMinimum":-1.5,"maximum":12.25},"minItems":1,"maxItems":4})",
    R"({"type":"object","properties":{"id":{"type":"string","format":"uuid"},"when":{"type":"string","format":"date-time"},"tags":{"type":"array","items":{"enum":["a","b","日本"]}}},"required":["id"]})",
    R"({"$defs":{"node":{"type":"object","properties":{"name":{"type":"string","maxLength":6},"children":{"type":"array","items":{"$ref":"#/$defs/node"},"maxItems":2}},"required":["name"],"additionalProperties":false}},"$ref":"#/$defs/node"})",
    R"({"type":"object","additionalProperties":{"type":["integer","null"]}})",
    R"({"anyOf":[{"type":"string","pattern":"^[a-c]{2,3}$"},{"type":"boolean"},{"const":{"x":[1,2]}}]})",
};

TEST(GrammarMasks, MatchTheFullWalkOnASmallVocabulary) {
  const auto vocab = small_vocab();
  std::mt19937 rng(7);
  std::vector<std::shared_ptr<const Grammar>> grammars{any_json_grammar(false), any_json_grammar(true)};
  for (const char* s : kSchemas) grammars.push_back(json_schema_grammar(ojson::parse(s)));
  for (const auto& g : grammars) {
    const auto cg = std::make_shared<CompiledGrammar>(g, vocab);
    for (int walk = 0; walk < 40; ++walk) {
      bool ended = false;
      const std::string text = random_walk(cg, rng, 60, true, ended);
      if (ended) {
        EXPECT_TRUE(matches(g, text)) << text;
      }
    }
  }
}

// Past a few live stacks, allowed() checks their uncertain tokens against all of them in one
// walk (token_masks.cpp, kGroupFrom); the mask must be the same as stack by stack.
TEST(GrammarMasks, ManyLiveStacksMatchTheFullWalk) {
  const auto vocab = small_vocab();
  std::mt19937 rng(11);
  const char* sources[] = {
      R"(root ::= ("a"? "b"?){24} "c")",
      R"(root ::= ("ab"? | "a"? "c"?){12} ("\"name\":" | "n")?)",
      R"(root ::= (x | y){10} "z"
x ::= "a"? ("é" | "e")?
y ::= "ab"* "1"?)",
  };
  for (const char* source : sources) {
    const auto g = parse_gbnf(source);
    const auto cg = std::make_shared<CompiledGrammar>(g, vocab);
    EXPECT_GT(Matcher(g).stacks().size(), 8u) << source;  // grouped from the first step
    for (int walk = 0; walk < 20; ++walk) {
      bool ended = false;
      const std::string text = random_walk(cg, rng, 30, true, ended);
      if (ended) {
        EXPECT_TRUE(matches(g, text)) << text;
      }
    }
  }
}

TEST(GrammarMasks, EndTokensOnlyWhenComplete) {
  const auto cg = std::make_shared<CompiledGrammar>(any_json_grammar(true), small_vocab());
  TokenConstraint c(cg);
  EXPECT_FALSE(test_bit(c.allowed(), 0));
  EXPECT_FALSE(c.accept(0));
  ASSERT_TRUE(c.accept(1));  // {
  ASSERT_TRUE(c.accept(2));  // }
  EXPECT_TRUE(c.complete());
  EXPECT_TRUE(test_bit(c.allowed(), 0));
  EXPECT_EQ(ids_of(c.allowed()).size(), 1u);
  EXPECT_FALSE(c.accept(1));  // nothing may follow the object
}

TEST(GrammarMasks, RealVocabularyQwen3) {
  GGUFD_REQUIRE_SHARED("tokenizer/ggml-vocab-qwen3.gguf");
  const gguf::File file = gguf::File::open(ggufd::test::shared_path("tokenizer/ggml-vocab-qwen3.gguf"));
  const Tokenizer tok = Tokenizer::from_gguf(file);
  const auto vocab = TokenVocab::from_tokenizer(tok);
  std::mt19937 rng(3);
  for (const char* s : {kSchemas[0], kSchemas[2], kSchemas[3]}) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto cg = std::make_shared<CompiledGrammar>(json_schema_grammar(ojson::parse(s)), vocab);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("compiled %zu positions in %.1f ms\n", cg->n_positions(), ms);
    for (int walk = 0; walk < 3; ++walk) {
      bool ended = false;
      const std::string text = random_walk(cg, rng, 25, true, ended);
      if (ended) {
        EXPECT_TRUE(matches(cg->grammar(), text)) << text;
      }
    }
  }
}

// The position walks of one compilation share their state table, which starts over when it fills
// (make_room): a string of maxLength 3,000 has thousands of positions, each meeting the states of
// the positions after it, far more than one table holds. The masks must stay exact across that.
TEST(GrammarMasks, SharedStateTableStaysExactWhenItFills) {
  const auto g = json_schema_grammar(ojson::parse(R"({"type":"string","maxLength":3000})"));
  const auto cg = std::make_shared<CompiledGrammar>(g, small_vocab());
  EXPECT_GT(cg->n_positions(), 8192u);
  std::mt19937 rng(11);
  for (int walk = 0; walk < 3; ++walk) {
    bool ended = false;
    const std::string text = random_walk(cg, rng, 40, true, ended);
    if (ended) {
      EXPECT_TRUE(matches(g, text)) << text;
    }
  }
}

// Found fuzzing (fuzz_request timed out on a forced tool call whose string has maxLength 84): the
// compile budget bounds the work of one grammar; past it the grammar is refused with an error that
// says what to reduce, and within it the same grammar compiles.
TEST(GrammarMasks, CompileBudgetRefusesWithAClearError) {
  GGUFD_REQUIRE_SHARED("tokenizer/ggml-vocab-qwen3.gguf");
  const gguf::File file = gguf::File::open(ggufd::test::shared_path("tokenizer/ggml-vocab-qwen3.gguf"));
  const auto vocab = TokenVocab::from_tokenizer(Tokenizer::from_gguf(file));
  const auto g = json_schema_grammar(ojson::parse(R"({"type":"object","properties":{"city":{"type":"string","maxLength":84}}})"));
  try {
    CompiledGrammar(g, vocab, size_t{1} << 22);
    ADD_FAILURE() << "compiled past its budget";
  } catch (const GrammarError& e) {
    EXPECT_NE(std::string(e.what()).find("too large to prepare for this vocabulary"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("reduce maxLength"), std::string::npos) << e.what();
  }
  EXPECT_GT(CompiledGrammar(g, vocab).n_positions(), 84u);
}

// Found fuzzing: adding a stack to a set compared it with every stack there, so hundreds of live
// parses (("a"?){200} four times over) cost 100 ms per byte in a release build. Past a few stacks
// a set is indexed by hash; it must stay exact through duplicates, copies and clears.
TEST(GrammarMasks, LargeStackSetsStayExact) {
  StackSet s;
  for (int round = 0; round < 3; ++round) {
    for (uint32_t k = 0; k < 1000; ++k) {
      const uint32_t stack[2] = {k % 7, k};
      EXPECT_EQ(s.add(stack, 0), round == 0) << k;
    }
  }
  ASSERT_EQ(s.size(), 1000u);
  const uint32_t first[2] = {0, 0};
  EXPECT_TRUE(s.add(first, 5));  // the same positions inside a character: another stack
  EXPECT_TRUE(s.add(std::span<const uint32_t>(first, 1), 0));
  StackSet copy = s;
  EXPECT_TRUE(copy.same(s));
  EXPECT_EQ(copy.hash(), s.hash());
  EXPECT_FALSE(copy.add(first, 5));
  const uint32_t other[2] = {1, 2};
  EXPECT_TRUE(copy.add(other, 0));
  EXPECT_FALSE(copy.same(s));
  for (int i = 0; i < 30; ++i) {  // past kMaxStacks
    const uint32_t more[3] = {9, 9, static_cast<uint32_t>(i)};
    if (copy.size() == kMaxStacks) {
      EXPECT_THROW(copy.add(more, 0), GrammarError);
      break;
    }
    copy.add(more, 0);
  }
  s.clear();
  EXPECT_TRUE(s.empty());
  for (uint32_t k = 0; k < 40; ++k) {
    const uint32_t stack[1] = {k};
    EXPECT_TRUE(s.add(stack, 0));
    EXPECT_FALSE(s.add(stack, 0));
  }
  EXPECT_EQ(s.size(), 40u);
}

}  // namespace
}  // namespace engine::grammar
