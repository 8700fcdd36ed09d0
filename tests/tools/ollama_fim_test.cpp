// Ollama's /api/generate with `suffix` (fill in the middle) on a model with a code model's
// vocabulary, written by `ggufd synth` (hence a tools test).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/server/fixture.h"
#include "tests/support/temp_path.h"
#include "tools/synth/synth.h"

namespace ggufd::test {
namespace {

using nlohmann::json;

constexpr const char* kQwen3Vocab = "tokenizer/ggml-vocab-qwen3.gguf";

void expect_fim_error(const HttpReply& r, const std::string& mentions) {
  EXPECT_EQ(r.status, 400) << r.body;
  const json j = json::parse(r.body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error") && j["error"].is_string()) << r.body;
  EXPECT_NE(j["error"].get<std::string>().find(mentions), std::string::npos) << r.body;
}

// `suffix` on a model whose vocabulary has fill-in-the-middle tokens (Qwen's <|fim_prefix|>,
// <|fim_suffix|>, <|fim_middle|>): the prompt is exactly those around the prefix and suffix, the
// user's text never read for special tokens; the model writes the middle. The model: the demo
// shape with Qwen3's vocabulary.
TEST(OllamaFim, SuffixFillsInTheMiddle) {
  GGUFD_REQUIRE_SHARED(kQwen3Vocab);
  TempPath model("ollama-fim");
  engine::synth::Options so = engine::synth::demo_options();
  so.vocab_from = shared_path(kQwen3Vocab);
  engine::synth::write_model(so, model.path);
  server::ServiceOptions o = test_options();
  o.model.path = model.path;
  o.model.alias = "coder";
  o.model.engine.n_ctx = 512;
  RunningService s(std::move(o));
  ASSERT_TRUE(s.ready()) << s.service().load_error();
  auto tokens = [&](const std::string& text, bool special) {
    const json t = post_json(s.port(), "/tokenize", {{"content", text}, {"add_special", false}, {"parse_special", special}}).json();
    return t["tokens"].get<std::vector<int32_t>>();
  };
  const std::string prefix = "def add(a, b):\n    ", suffix = "\n    return c\n";
  const std::vector<int32_t> layout = tokens("<|fim_prefix|>" + prefix + "<|fim_suffix|>" + suffix + "<|fim_middle|>", true);
  ASSERT_EQ(layout.size(), tokens(prefix, false).size() + tokens(suffix, false).size() + 3);
  const HttpReply r = post_json(s.port(), "/api/generate", {{"prompt", prefix}, {"suffix", suffix}, {"stream", false},
                                                            {"options", {{"num_predict", 4}, {"temperature", 0}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["prompt_eval_count"], layout.size()) << r.body;
  EXPECT_TRUE(r.json()["response"].is_string()) << r.body;
  // text that spells a FIM token is text (plain tokens), not the marker
  const HttpReply spelled = post_json(s.port(), "/api/generate", {{"prompt", prefix + "<|fim_suffix|>"}, {"suffix", suffix},
                                                                  {"stream", false}, {"options", {{"num_predict", 1}}}});
  ASSERT_EQ(spelled.status, 200) << spelled.body;
  EXPECT_EQ(spelled.json()["prompt_eval_count"], tokens(prefix + "<|fim_suffix|>", false).size() + tokens(suffix, false).size() + 3) << spelled.body;
  const HttpReply sys = post_json(s.port(), "/api/generate", {{"prompt", prefix}, {"suffix", suffix}, {"system", "Be brief"},
                                                              {"stream", false}, {"options", {{"num_predict", 1}}}});
  ASSERT_EQ(sys.status, 200) << sys.body;
  EXPECT_NE(sys.headers.at("x-ggufd-ignored-fields").find("system"), std::string::npos);
  expect_fim_error(post_json(s.port(), "/api/generate", {{"prompt", prefix}, {"suffix", 5}}), "suffix");
}

}  // namespace
}  // namespace ggufd::test
