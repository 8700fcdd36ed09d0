// Image chats end to end on the shared gemma3 text model with its random-weight projector
// (../shared/models/vision): the prompt and greedy answer libmtmd gives for the test image
// (../shared/golden/vision), the same image through every dialect (OpenAI chat, Responses,
// Anthropic Messages, Ollama chat and generate), the cache of an image across turns, and the
// 400s of broken, oversized and misplaced images and of remote ones while they are off
// (remote_media_test.cpp: with --allow-remote-media).
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/server/vision_fixture.h"

namespace ggufd::test {
namespace {

using nlohmann::json;

class VisionHttp : public VisionServerTest<VisionHttp> {
 public:
  static void edit(server::ServiceOptions&) {}
};

std::string golden_answer(uint16_t port) {
  std::ifstream in(shared_path(kGolden));
  const json g = json::parse(in);
  const HttpReply r = post_json(port, "/detokenize", {{"tokens", g["greedy"]}});
  EXPECT_EQ(r.status, 200) << r.body;
  return r.json()["content"];
}

TEST_F(VisionHttp, ModelListsImageInput) {
  const json models = json::parse(http_request(port(), "GET", "/v1/models").body);
  EXPECT_EQ(models["data"][0]["input_modalities"], json({"text", "image"})) << models.dump();
  const json props = json::parse(http_request(port(), "GET", "/props").body);
  EXPECT_TRUE(props["modalities"]["vision"].get<bool>());
  const HttpReply show = post_json(port(), "/api/show", {{"model", "gemma3"}});
  ASSERT_EQ(show.status, 200) << show.body;
  const auto caps = show.json()["capabilities"];
  EXPECT_NE(std::find(caps.begin(), caps.end(), "vision"), caps.end()) << caps.dump();
}

TEST_F(VisionHttp, ChatGivesLibmtmdsPromptAndGreedyAnswer) {
  std::ifstream in(shared_path(kGolden));
  const json g = json::parse(in);
  const HttpReply r = post_json(port(), "/v1/chat/completions", image_chat_body(golden_content(image_bytes())));
  ASSERT_EQ(r.status, 200) << r.body;
  const json reply = r.json();
  EXPECT_EQ(reply["usage"]["prompt_tokens"].get<int64_t>(), g["n_past"].get<int64_t>());
  EXPECT_EQ(reply["choices"][0]["message"]["content"], golden_answer(port()));
}

TEST_F(VisionHttp, EveryDialectTakesTheImage) {
  const std::string bytes = image_bytes();
  const std::string expected = golden_answer(port());
  // Responses: input_image
  const json responses = {
      {"input", {{{"role", "user"},
                  {"content", {{{"type", "input_text"}, {"text", "What is in this picture? "}},
                               {{"type", "input_image"}, {"image_url", data_uri(bytes)}}}}}}},
      {"max_output_tokens", 16},
      {"temperature", 0},
      {"ignore_eos", true}};
  HttpReply r = post_json(port(), "/v1/responses", responses);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["output"].back()["content"][0]["text"], expected);
  // Anthropic Messages: an image block
  const json messages = {
      {"model", "gemma3"},
      {"max_tokens", 16},
      {"temperature", 0},
      {"ignore_eos", true},
      {"messages", {{{"role", "user"},
                     {"content", {{{"type", "text"}, {"text", "What is in this picture? "}},
                                  {{"type", "image"},
                                   {"source", {{"type", "base64"}, {"media_type", "image/png"}, {"data", base64(bytes)}}}}}}}}}};
  r = post_json(port(), "/v1/messages", messages);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["content"][0]["text"], expected);
  // Ollama: images before the text; the same prompt tokens as the chat puts the image after
  const json ollama = {{"model", "gemma3"},
                       {"stream", false},
                       {"options", {{"temperature", 0}, {"num_predict", 4}}},
                       {"messages", {{{"role", "user"}, {"content", "What is this?"}, {"images", {base64(bytes)}}}}}};
  r = post_json(port(), "/api/chat", ollama);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_GT(r.json()["prompt_eval_count"].get<int64_t>(), 16);
  const json generate = {{"model", "gemma3"}, {"stream", false}, {"prompt", "What is this?"},
                         {"images", {base64(bytes)}}, {"options", {{"temperature", 0}, {"num_predict", 4}}}};
  r = post_json(port(), "/api/generate", generate);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_GT(r.json()["prompt_eval_count"].get<int64_t>(), 16);
}

// A conversation that goes on after an image reuses the slot's cache of it (the model's 8-token
// sliding window keeps only a ring, so the reuse is of the whole conversation so far, as a chat
// client's next turn does; a prefix cut inside the ring could not be continued).
TEST_F(VisionHttp, TheNextTurnReusesTheImageFromTheCache) {
  const json user = {{"role", "user"}, {"content", golden_content(image_bytes())}};
  json body = {{"messages", {user}}, {"max_tokens", 4}, {"temperature", 0}, {"ignore_eos", true}};
  const json first = post_json(port(), "/v1/chat/completions", body).json();
  const int64_t n_first = first["usage"]["prompt_tokens"];
  body["messages"].push_back({{"role", "assistant"}, {"content", first["choices"][0]["message"]["content"]}});
  body["messages"].push_back({{"role", "user"}, {"content", "And the colours?"}});
  const json second = post_json(port(), "/v1/chat/completions", body).json();
  EXPECT_GE(second["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>(), n_first - 1) << second.dump();
  EXPECT_GT(second["usage"]["prompt_tokens"].get<int64_t>(), n_first);
}

TEST_F(VisionHttp, BrokenImagesAre400sNamingThePart) {
  const std::string bytes = image_bytes();
  const auto status_and_message = [&](const json& content) {
    const HttpReply r = post_json(port(), "/v1/chat/completions", image_chat_body(content, 1));
    return std::make_pair(r.status, r.status == 200 ? std::string() : r.json()["error"]["message"].get<std::string>());
  };
  auto [s1, m1] = status_and_message(json::array({{{"type", "text"}, {"text", "hi"}},
                                                  {{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64,%%%"}}}}}));
  EXPECT_EQ(s1, 400);
  EXPECT_NE(m1.find("messages[0].content[1]"), std::string::npos) << m1;
  auto [s2, m2] = status_and_message(json::array({image_part(bytes.substr(0, bytes.size() / 2))}));
  EXPECT_EQ(s2, 400);
  EXPECT_NE(m2.find("truncated or corrupt"), std::string::npos) << m2;
  // remote images are off by default: the 400 says how to turn them on
  auto [s3, m3] = status_and_message(json::array({image_url_part("https://example.com/cat.png")}));
  EXPECT_EQ(s3, 400);
  EXPECT_NE(m3.find("messages[0].content[0]: this server fetches remote images"), std::string::npos) << m3;
  EXPECT_NE(m3.find("--allow-remote-media"), std::string::npos) << m3;
  auto [s6, m6] = status_and_message(json::array({image_url_part("file:///etc/passwd")}));
  EXPECT_EQ(s6, 400);
  EXPECT_NE(m6.find("must be a data URI"), std::string::npos) << m6;
  auto [s4, m4] = status_and_message(json::array({image_part("GIF89a\x10\x27\x10\x27")}));
  EXPECT_EQ(s4, 400);
  auto [s5, m5] = status_and_message(json::array({image_part(bytes), image_part(bytes), image_part(bytes), image_part(bytes)}));
  EXPECT_EQ(s5, 400);
  EXPECT_NE(m5.find("--image-max-count"), std::string::npos) << m5;
  // The server goes on serving.
  EXPECT_EQ(post_json(port(), "/v1/chat/completions", image_chat_body(golden_content(bytes), 1)).status, 200);
}

TEST_F(VisionHttp, RemoteImagesAreOffByDefaultInEveryDialect) {
  const json responses = {
      {"input", {{{"role", "user"}, {"content", {{{"type", "input_image"}, {"image_url", "http://127.0.0.1:1/a.png"}}}}}}}};
  HttpReply r = post_json(port(), "/v1/responses", responses);
  ASSERT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json()["error"]["code"], "remote_image_not_allowed") << r.body;
  EXPECT_NE(r.body.find("input[0].content[0]"), std::string::npos) << r.body;
  const json messages = {
      {"model", "gemma3"},
      {"max_tokens", 4},
      {"messages", {{{"role", "user"},
                     {"content", {{{"type", "image"}, {"source", {{"type", "url"}, {"url", "https://example.com/a.png"}}}}}}}}}};
  r = post_json(port(), "/v1/messages", messages);
  ASSERT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json()["type"], "error") << r.body;  // Anthropic's shape
  EXPECT_EQ(r.json()["error"]["type"], "invalid_request_error") << r.body;
  EXPECT_NE(r.json()["error"]["message"].get<std::string>().find("--allow-remote-media"), std::string::npos) << r.body;
}

TEST(VisionHttpNoProjector, ImagesAreRefusedWithTheReason) {
  GGUFD_REQUIRE_SHARED(kStories);
  auto s = start_service();
  ASSERT_TRUE(s->ready()) << s->service().load_error();
  const HttpReply r = post_json(s->port(), "/v1/chat/completions",
                                image_chat_body(json::array({image_part("\x89PNG\r\n\x1a\n")}), 1));
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json()["error"]["code"], "image_input_not_supported") << r.body;
  EXPECT_NE(r.body.find("--mmproj"), std::string::npos) << r.body;
}

}  // namespace
}  // namespace ggufd::test
