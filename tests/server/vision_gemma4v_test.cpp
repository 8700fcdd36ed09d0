// An image chat through the server with Gemma 4's projector (gemma4v: the image keeps its aspect,
// its token count follows its size): the shared gemma4 text model with the random-weight projector
// kept in tests/data/reference/models/vision, against libmtmd's prompt and greedy answer for the
// test image (tests/data/reference/golden/vision, see tests/data/reference/README.md).
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/server/fixture.h"

namespace ggufd::test::vision_gemma4v {  // (named: the unity build joins test files)
namespace {

using nlohmann::json;

constexpr const char* kGemma4 = "models/synth/synth-gemma4-F32.gguf";
constexpr const char* kImage = "models/vision/test-image-1.png";

std::string reference(const std::string& rel) { return std::string(GGUFD_TEST_DATA_DIR) + "/reference/" + rel; }

// Gemma 4's turns, with content parts' text as it is (libmtmd's prompt keeps its space before the image).
const char* const kTemplate =
    "{{ bos_token }}{% for m in messages %}{{ '<|turn>' + ('model' if m.role == 'assistant' else m.role) + '\\n' }}"
    "{% if m.content is string %}{{ m.content }}{% else %}{% for p in m.content %}{% if p.type == 'text' %}"
    "{{ p.text }}{% endif %}{% endfor %}{% endif %}{{ '<turn|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|turn>model\\n' }}{% endif %}";

std::string base64(const std::string& bytes) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    acc = acc << 8 | c;
    bits += 8;
    while (bits >= 6) out += k[(acc >> (bits -= 6)) & 63];
  }
  if (bits > 0) out += k[(acc << (6 - bits)) & 63];
  while (out.size() % 4) out += '=';
  return out;
}

TEST(VisionHttpGemma4v, ChatGivesLibmtmdsPromptAndGreedyAnswer) {
  GGUFD_REQUIRE_SHARED(kGemma4);
  GGUFD_REQUIRE_SHARED(kImage);
  std::ifstream gin(reference("golden/vision/synth-gemma4-F32+mmproj-gemma4v.json"));
  ASSERT_TRUE(gin);
  const json g = json::parse(gin);
  server::ServiceOptions o = test_options(kGemma4);
  o.model.alias = "gemma4";
  o.model.mmproj_path = reference("models/vision/synth-mmproj-gemma4v-F32.gguf");
  o.model.chat_template = kTemplate;
  o.model.engine.n_ctx = 512;
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
  // 96 x 72 pixels fitted to 192 x 144: 48 image tokens between <|image> and <image|>, as libmtmd
  EXPECT_EQ(r.json()["usage"]["prompt_tokens"].get<int64_t>(), g["n_past"].get<int64_t>()) << r.body;
  const HttpReply answer = post_json(s.port(), "/detokenize", {{"tokens", g["greedy"]}});
  ASSERT_EQ(answer.status, 200) << answer.body;
  // (/detokenize drops the space SentencePiece puts before a text's first word; the answer goes on
  // after the prompt, so it keeps it)
  EXPECT_EQ(r.json()["choices"][0]["message"]["content"], " " + answer.json()["content"].get<std::string>());
}

}  // namespace
}  // namespace ggufd::test::vision_gemma4v
