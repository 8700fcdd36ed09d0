// The image tests' service (vision_test.cpp, remote_media_test.cpp): the shared gemma3 text model
// with its random-weight projector (../shared/models/vision), Gemma's turns as the template, and
// helpers for image parts (the test image, data URIs, libmtmd's golden prompt; base64 is
// fixture.h's).
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/server/fixture.h"

namespace ggufd::test {

inline constexpr const char* kGemma3 = "models/synth/synth-gemma3-F32.gguf";
inline constexpr const char* kProjector = "models/vision/synth-mmproj-gemma3-F32.gguf";
inline constexpr const char* kImage = "models/vision/test-image-1.png";
inline constexpr const char* kGolden = "golden/vision/synth-gemma3-F32+mmproj-gemma3.json";

// Gemma's turns, with content parts' text as it is (the golden prompt keeps its space before the image).
inline constexpr const char* kGemmaTemplate =
    "{{ bos_token }}{% for m in messages %}{{ '<start_of_turn>' + ('model' if m.role == 'assistant' else m.role) + "
    "'\\n' }}{% if m.content is string %}{{ m.content }}{% else %}{% for p in m.content %}{% if p.type == 'text' %}"
    "{{ p.text }}{% endif %}{% endfor %}{% endif %}{{ '<end_of_turn>\\n' }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<start_of_turn>model' }}{% endif %}";  // (libmtmd's prompt ends there)

// The test image's PNG bytes.
inline std::string image_bytes() {
  std::ifstream in(shared_path(kImage), std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

inline std::string data_uri(const std::string& bytes) { return "data:image/png;base64," + base64(bytes); }

// A chat request of one user message with `content`, greedy, `max_tokens` long whatever the model says.
inline nlohmann::json image_chat_body(const nlohmann::json& content, int max_tokens = 16) {
  return {{"messages", {{{"role", "user"}, {"content", content}}}},
          {"max_tokens", max_tokens},
          {"temperature", 0},
          {"ignore_eos", true}};
}

// An image_url part: the bytes as a data URI, or a URL as it is.
inline nlohmann::json image_url_part(const std::string& url) {
  return {{"type", "image_url"}, {"image_url", {{"url", url}}}};
}
inline nlohmann::json image_part(const std::string& bytes) { return image_url_part(data_uri(bytes)); }

// The golden prompt's text around the image, as content parts.
inline nlohmann::json golden_content(const std::string& bytes) {
  return nlohmann::json::array({{{"type", "text"}, {"text", "What is in this picture? "}}, image_part(bytes)});
}

// The service on the gemma3 model and projector, changed by Suite::edit(ServiceOptions&), shared
// by the suite's tests (skipped without ../shared's vision files).
template <class Suite>
class VisionServerTest : public testing::Test {
 public:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(shared_path(kProjector))) return;
    server::ServiceOptions o = test_options(kGemma3);
    o.model.alias = "gemma3";
    o.model.mmproj_path = shared_path(kProjector);
    o.model.chat_template = kGemmaTemplate;
    o.model.engine.n_slots = 2;
    o.model.engine.n_ctx = 512;
    o.max_images = 3;
    Suite::edit(o);
    running_ = new RunningService(std::move(o));
  }
  static void TearDownTestSuite() {
    delete running_;
    running_ = nullptr;
  }
  void SetUp() override {
    GGUFD_REQUIRE_SHARED(kProjector);
    GGUFD_REQUIRE_SHARED(kGolden);
    ASSERT_NE(running_, nullptr);
    ASSERT_TRUE(running_->ready()) << running_->service().load_error();
  }
  static uint16_t port() { return running_->port(); }
  static inline RunningService* running_ = nullptr;
};

}  // namespace ggufd::test
