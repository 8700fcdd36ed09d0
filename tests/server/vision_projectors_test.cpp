// Image chats through the server with the projectors whose references are kept in the repository
// (tests/data/reference, see its README): gemma4v (Gemma 4: the image keeps its aspect, its token
// count follows its size) on the shared gemma4 text model, and pixtral (Mistral Small 3.1: a patch
// merger and [IMG_BREAK] rows) on tiny-mistral3, qwen3vl_merger (Qwen3.5's vision: its tokens take
// M-RoPE positions) on the shared qwen35 text model, and with deepstack (Qwen3-VL) on synth-qwen3vl and
// synth-qwen3vlmoe,
// each against libmtmd's prompt and greedy answer for the shared test image.
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/server/fixture.h"

namespace ggufd::test::vision_projectors {  // (named: the unity build joins test files)
namespace {

using nlohmann::json;

constexpr const char* kImage = "models/vision/test-image-1.png";

std::string reference(const std::string& rel) { return std::string(GGUFD_TEST_DATA_DIR) + "/reference/" + rel; }

// The user's content parts' text as it is (libmtmd's prompts keep their space before the image).
#define GGUFD_PARTS "{% for p in m.content %}{% if p.type == 'text' %}{{ p.text }}{% endif %}{% endfor %}"

struct Case {
  const char* name;
  const char* text_model;  // "shared:" ../shared/..., else tests/data/reference/...
  const char* projector;   // in tests/data/reference/models/vision
  const char* golden;      // in tests/data/reference/golden/vision
  const char* chat_template;
  int image_tokens;        // what the test image becomes (libmtmd)
};

const Case kCases[] = {
    {"gemma4v", "shared:models/synth/synth-gemma4-F32.gguf", "synth-mmproj-gemma4v-F32.gguf",
     "synth-gemma4-F32+mmproj-gemma4v.json",
     "{{ bos_token }}{% for m in messages %}{{ '<|turn>' + m.role + '\\n' }}" GGUFD_PARTS
     "{{ '<turn|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|turn>model\\n' }}{% endif %}",
     48},  // 96 x 72 fitted to 192 x 144, 3 x 3 pooling of 8-pixel patches: 8 x 6
    {"pixtral", "models/tiny-mistral3-F32.gguf", "synth-mmproj-pixtral-F32.gguf",
     "tiny-mistral3-F32+mmproj-pixtral.json",
     "{{ bos_token }}{% for m in messages %}{{ '[INST]' }}" GGUFD_PARTS "{{ '[/INST]' }}{% endfor %}", 34},
    // 96 x 72 fitted to 96 x 80, 2 x 2 merges of 8-pixel patches: 6 x 5 tokens and 4 [IMG_BREAK]s
    {"qwen3vl", "shared:models/synth/synth-qwen35-F32.gguf", "synth-mmproj-qwen3vl-F32.gguf",
     "synth-qwen35-F32+mmproj-qwen3vl.json",
     "{{ bos_token }}{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' }}" GGUFD_PARTS
     "{{ '<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
     30},  // 96 x 72 fitted to 96 x 80, 2 x 2 merges of 8-pixel patches: 6 x 5, at M-RoPE positions
    {"qwen3vl_deepstack", "models/synth-qwen3vl-F32.gguf", "synth-mmproj-qwen3vl-deepstack-F32.gguf",
     "synth-qwen3vl-F32+mmproj-qwen3vl-deepstack.json",
     "{{ bos_token }}{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' }}" GGUFD_PARTS
     "{{ '<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
     30},  // the same, each row with two deepstack slices (Qwen3-VL's text model adds them after layers 0, 1)
    {"qwen3vlmoe", "models/synth-qwen3vlmoe-F32.gguf", "synth-mmproj-qwen3vl-deepstack-F32.gguf",
     "synth-qwen3vlmoe-F32+mmproj-qwen3vl-deepstack.json",
     "{{ bos_token }}{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' }}" GGUFD_PARTS
     "{{ '<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
     30},  // the same with Qwen3-VL-MoE's text model (qwen3moe's experts)
    {"qwen25vl", "models/synth-qwen2vl-F32.gguf", "synth-mmproj-qwen25vl-F32.gguf",
     "synth-qwen2vl-F32+mmproj-qwen25vl.json",
     "{{ bos_token }}{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' }}" GGUFD_PARTS
     "{{ '<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
     12},  // 28-pixel patches: 96 x 72 fitted to 224 x 168, 4 x 3 tokens at M-RoPE positions; the ViT's
           // layer 0 attends within windows of 2 x 2 tokens (112 pixels)
    {"qwen2vl", "models/synth-qwen2vl-F32.gguf", "synth-mmproj-qwen2vl-F32.gguf",
     "synth-qwen2vl-F32+mmproj-qwen2vl.json",
     "{{ bos_token }}{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' }}" GGUFD_PARTS
     "{{ '<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
     30},  // 6 x 5 tokens at M-RoPE positions (Qwen2-VL: no windows, LayerNorm, quick GELU)
    {"idefics3", "models/synth-smolvlm-F32.gguf", "synth-mmproj-idefics3-F32.gguf",
     "synth-smolvlm-F32+mmproj-idefics3.json",
     "{{ bos_token }}{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' }}" GGUFD_PARTS
     "{{ '<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
     16},  // each of 3 x 2 tiles and the overview: 16 tokens, with the layout's text between them
};


class VisionProjectorHttp : public testing::TestWithParam<Case> {};

TEST_P(VisionProjectorHttp, ChatGivesLibmtmdsPromptAndGreedyAnswer) {
  const Case& c = GetParam();
  const std::string text(c.text_model);
  const bool shared = text.starts_with("shared:");
  if (shared) GGUFD_REQUIRE_SHARED(text.substr(7));
  GGUFD_REQUIRE_SHARED(kImage);
  std::ifstream gin(reference(std::string("golden/vision/") + c.golden));
  ASSERT_TRUE(gin);
  const json g = json::parse(gin);
  server::ServiceOptions o = test_options(shared ? text.substr(7) : text);
  if (!shared) o.model.path = reference(text);
  o.model.alias = c.name;
  o.model.mmproj_path = reference(std::string("models/vision/") + c.projector);
  o.model.chat_template = c.chat_template;
  o.model.engine.n_ctx = 256;
  RunningService s(std::move(o));
  ASSERT_TRUE(s.ready()) << s.service().load_error();

  std::ifstream in(shared_path(kImage), std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), {}};
  const json content = json::array({{{"type", "text"}, {"text", "What is in this picture? "}},
                                    {{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64," + base64(bytes)}}}}});
  const json body = {{"messages", {{{"role", "user"}, {"content", content}}}},
                     {"max_tokens", 16}, {"temperature", 0}, {"ignore_eos", true}};
  const HttpReply r = post_json(s.port(), "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  // prompt_tokens counts the image's tokens (with M-RoPE they take fewer positions: n_past)
  int64_t n_tokens = 0;
  for (const auto& chunk : g["chunks"]) {
    if (chunk["type"] == "image") {
      EXPECT_EQ(chunk["n_tokens"].get<int>(), c.image_tokens);
      n_tokens += chunk["n_tokens"].get<int64_t>();
    } else {
      n_tokens += static_cast<int64_t>(chunk["tokens"].size());
    }
  }
  EXPECT_EQ(r.json()["usage"]["prompt_tokens"].get<int64_t>(), n_tokens) << r.body;
  // The answer is libmtmd's greedy tokens: compared as text, the reference's detokenized after the
  // prompt's last token (so that a SentencePiece space before the first word is kept as in the answer)
  const int32_t last = g["chunks"].back()["tokens"].back().get<int32_t>();
  json tokens = json::array({last});
  for (const auto& t : g["greedy"]) tokens.push_back(t);
  const HttpReply head = post_json(s.port(), "/detokenize", {{"tokens", json::array({last})}});
  const HttpReply answer = post_json(s.port(), "/detokenize", {{"tokens", tokens}});
  ASSERT_EQ(answer.status, 200) << answer.body;
  const std::string whole = answer.json()["content"], prefix = head.json()["content"];
  ASSERT_TRUE(whole.starts_with(prefix)) << whole;
  EXPECT_EQ(r.json()["choices"][0]["message"]["content"], whole.substr(prefix.size()));
}

// idefics3 cuts an image in tiles, each a part of its own: images are refused once their positions
// pass the context, before the images after them are decoded (--image-max-count counts images).
TEST(VisionContext, ImagesPastTheContextAre400sNamingTheImage) {
  const Case& c = kCases[std::size(kCases) - 1];
  ASSERT_EQ(std::string(c.name), "idefics3");
  GGUFD_REQUIRE_SHARED(kImage);
  server::ServiceOptions o = test_options(c.text_model);
  o.model.path = reference(c.text_model);
  o.model.mmproj_path = reference(std::string("models/vision/") + c.projector);
  o.model.chat_template = c.chat_template;
  o.model.engine.n_ctx = 320;  // an image: 7 parts of 16 positions and their layout text
  RunningService s(std::move(o));
  ASSERT_TRUE(s.ready()) << s.service().load_error();
  std::ifstream in(shared_path(kImage), std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), {}};
  json content = json::array({{{"type", "text"}, {"text", "What is in these pictures? "}}});
  const json image = {{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64," + base64(bytes)}}}};
  content.push_back(image);
  content.push_back(image);
  EXPECT_EQ(post_json(s.port(), "/v1/chat/completions",
                      {{"messages", {{{"role", "user"}, {"content", content}}}}, {"max_tokens", 1}}).status, 200);
  content.push_back(image);
  content.push_back(json{{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64,bm90IGFuIGltYWdl"}}}});
  const HttpReply r = post_json(s.port(), "/v1/chat/completions",
                                {{"messages", {{{"role", "user"}, {"content", content}}}}, {"max_tokens", 1}});
  ASSERT_EQ(r.status, 400) << r.body;
  const json e = r.json()["error"];
  EXPECT_EQ(e["code"], "context_length_exceeded") << r.body;
  // the third image passes the context (336 positions); the broken fourth is never decoded
  EXPECT_NE(e["message"].get<std::string>().find("the images up to messages[0].content[3] take 336"), std::string::npos)
      << r.body;
}

INSTANTIATE_TEST_SUITE_P(Projectors, VisionProjectorHttp, testing::ValuesIn(kCases),
                         [](const auto& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace ggufd::test::vision_projectors
