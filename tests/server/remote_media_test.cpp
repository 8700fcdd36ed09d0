// Remote images (--allow-remote-media) end to end: a local origin (tests/support/media_origin.h)
// serves the test image, error pages, oversized and lying bodies, a trickle and redirects; the
// gemma3 vision service fetches them. A remote image answers as the same image sent inline, in
// every dialect that takes URLs; each failure is a 400 in the route's error shape naming the part,
// the URL and what went wrong; a slow URL holds up no other request, and a client that leaves ends
// its fetch.
#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/server/vision_fixture.h"
#include "tests/support/media_origin.h"
#include "tests/support/raw_connection.h"

namespace ggufd::test {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr size_t kMaxBytes = 64 << 10;  // --image-max-bytes of this suite (the test image has 16 KB)
constexpr int kTimeout = 2;             // --remote-media-timeout of this suite

// Streams `chunk` after `head` until the client hangs up or `limit` bytes are out.
void stream_until_gone(MediaOrigin::Connection& c, const std::string& head, const std::string& chunk, size_t limit) {
  if (!c.send(head)) return;
  while (c.sent < limit && c.send(chunk)) {
  }
}

void add_routes(MediaOrigin& o, const std::string& png) {
  o.reply("/image.png", 200, png, {{"Content-Type", "image/png"}});
  o.reply("/image.png?count", 200, png, {{"Content-Type", "image/png"}});
  o.reply("/image-redirect", 302, "", {{"Location", "/image.png"}});
  o.reply("/missing.png", 404, "no such image", {{"Content-Type", "text/plain"}});
  o.reply("/page.html", 200, "<html><body>a cat</body></html>", {{"Content-Type", "text/html; charset=utf-8"}});
  o.reply("/empty.png", 200, "", {{"Content-Type", "image/png"}});
  o.reply("/to-ftp", 302, "", {{"Location", "ftp://127.0.0.1:21/cat.png"}});
  o.reply("/to-file", 302, "", {{"Location", "file:///etc/passwd"}});
  o.reply("/loop", 302, "", {{"Location", "/loop"}});
  const std::string chunk = png.substr(0, 8) + std::string(16 << 10, '\0');
  // announces 100 MiB, then sends until the client hangs up
  o.route("/announced.png", [chunk](MediaOrigin::Connection& c) {
    stream_until_gone(c, MediaOrigin::head(200, {{"Content-Type", "image/png"}}, 100 << 20), chunk, 100 << 20);
  });
  // no length: the body ends when the connection closes (256 MiB unless the client hangs up)
  o.route("/endless.png", [chunk](MediaOrigin::Connection& c) {
    stream_until_gone(c, MediaOrigin::head(200, {{"Content-Type", "image/png"}}, -1), chunk, size_t{256} << 20);
  });
  // chunked, no length
  o.route("/chunked.png", [chunk](MediaOrigin::Connection& c) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", chunk.size());
    stream_until_gone(c, MediaOrigin::head(200, {{"Content-Type", "image/png"}, {"Transfer-Encoding", "chunked"}}, -1),
                      size + chunk + "\r\n", size_t{64} << 20);
  });
  // claims 1000 bytes and sends the whole image: only the claimed bytes are read
  o.route("/short-length.png", [png](MediaOrigin::Connection& c) {
    c.send(MediaOrigin::head(200, {{"Content-Type", "image/png"}}, 1000) + png);
  });
  // the image, one byte every 100 ms
  for (const char* path : {"/slow.png", "/slow-2.png", "/slow-left.png"}) {
    o.route(path, [png](MediaOrigin::Connection& c) {
      if (!c.send(MediaOrigin::head(200, {{"Content-Type", "image/png"}}, static_cast<int64_t>(png.size())))) return;
      for (char b : png) {
        if (!c.pause(std::chrono::milliseconds(100)) || !c.send(std::string(1, b))) return;
      }
    });
  }
}

class RemoteMediaHttp : public VisionServerTest<RemoteMediaHttp> {
 public:
  static void edit(server::ServiceOptions& o) {
    o.allow_remote_media = true;
    o.remote_media_private = true;  // the origin is on 127.0.0.1
    o.remote_media_timeout_s = kTimeout;
    o.image_limits.max_bytes = kMaxBytes;
  }
  static void SetUpTestSuite() {
    ::setenv("NO_PROXY", "*", 1);  // libcurl must reach 127.0.0.1 itself
    origin_ = new MediaOrigin();
    if (std::filesystem::exists(shared_path(kImage))) add_routes(*origin_, image_bytes());
    VisionServerTest<RemoteMediaHttp>::SetUpTestSuite();
  }
  static void TearDownTestSuite() {
    VisionServerTest<RemoteMediaHttp>::TearDownTestSuite();
    delete origin_;
    origin_ = nullptr;
  }
  static MediaOrigin& origin() { return *origin_; }
  static inline MediaOrigin* origin_ = nullptr;
};

// The golden prompt's text with the image at `url` (a data URI or a remote URL).
json content_with(const std::string& url) {
  return json::array({{{"type", "text"}, {"text", "What is in this picture? "}}, image_url_part(url)});
}

// (answer text, prompt tokens) of a greedy chat.
std::pair<std::string, int64_t> chat_answer(uint16_t port, const std::string& url) {
  const HttpReply r = post_json(port, "/v1/chat/completions", image_chat_body(content_with(url), 8));
  EXPECT_EQ(r.status, 200) << r.body;
  if (r.status != 200) return {"", -1};
  const json j = r.json();
  return {j["choices"][0]["message"]["content"], j["usage"]["prompt_tokens"]};
}

TEST_F(RemoteMediaHttp, ARemoteImageAnswersAsTheSameImageInline) {
  const std::string inline_uri = data_uri(image_bytes());
  const auto expected = chat_answer(port(), inline_uri);
  const HttpReply text_only = post_json(port(), "/v1/chat/completions",
                                        image_chat_body(json::array({{{"type", "text"}, {"text", "What is in this picture? "}}}), 1));
  ASSERT_EQ(text_only.status, 200) << text_only.body;
  ASSERT_GT(expected.second, text_only.json()["usage"]["prompt_tokens"].get<int64_t>() + 16)
      << "the image's tokens are in the prompt";
  const int fetched_before = origin().requests("/image.png");
  EXPECT_EQ(chat_answer(port(), origin().url("/image.png")), expected);
  EXPECT_EQ(chat_answer(port(), origin().url("/image-redirect")), expected) << "a redirect to the image";
  EXPECT_EQ(origin().requests("/image.png"), fetched_before + 2);

  // Responses: input_image with the URL as its image_url
  const auto responses = [&](const std::string& url) {
    const json body = {{"input", {{{"role", "user"},
                                   {"content", {{{"type", "input_text"}, {"text", "What is in this picture? "}},
                                                {{"type", "input_image"}, {"image_url", url}}}}}}},
                       {"max_output_tokens", 8}, {"temperature", 0}, {"ignore_eos", true}};
    const HttpReply r = post_json(port(), "/v1/responses", body);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? std::make_pair(r.json()["output"].back()["content"][0]["text"].get<std::string>(),
                                            r.json()["usage"]["input_tokens"].get<int64_t>())
                           : std::make_pair(std::string(), int64_t{-1});
  };
  EXPECT_EQ(responses(origin().url("/image.png")), responses(inline_uri));
  EXPECT_EQ(responses(origin().url("/image.png")).first, expected.first);

  // Anthropic Messages: an image block whose source is {"type": "url", "url": ...}
  const auto messages = [&](const json& source) {
    const json body = {{"model", "gemma3"}, {"max_tokens", 8}, {"temperature", 0}, {"ignore_eos", true},
                       {"messages", {{{"role", "user"},
                                      {"content", {{{"type", "text"}, {"text", "What is in this picture? "}},
                                                   {{"type", "image"}, {"source", source}}}}}}}};
    const HttpReply r = post_json(port(), "/v1/messages", body);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? std::make_pair(r.json()["content"][0]["text"].get<std::string>(),
                                            r.json()["usage"]["input_tokens"].get<int64_t>())
                           : std::make_pair(std::string(), int64_t{-1});
  };
  const auto by_url = messages({{"type", "url"}, {"url", origin().url("/image.png")}});
  EXPECT_EQ(by_url, messages({{"type", "base64"}, {"media_type", "image/png"}, {"data", base64(image_bytes())}}));
  EXPECT_EQ(by_url.first, expected.first);
}

TEST_F(RemoteMediaHttp, TokenCountsFetchTheImageToo) {
  const auto count = [&](const json& source) {
    const json body = {{"model", "gemma3"},
                       {"messages", {{{"role", "user"}, {"content", {{{"type", "image"}, {"source", source}}}}}}}};
    const HttpReply r = post_json(port(), "/v1/messages/count_tokens", body);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? r.json()["input_tokens"].get<int64_t>() : -1;
  };
  const int64_t inline_count = count({{"type", "base64"}, {"media_type", "image/png"}, {"data", base64(image_bytes())}});
  EXPECT_GT(inline_count, 16) << "the image's tokens";
  EXPECT_EQ(count({{"type", "url"}, {"url", origin().url("/image.png")}}), inline_count);
  const auto input_tokens = [&](const std::string& url) {
    const json body = {{"input", {{{"role", "user"}, {"content", {{{"type", "input_image"}, {"image_url", url}}}}}}}};
    const HttpReply r = post_json(port(), "/v1/responses/input_tokens", body);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? r.json()["input_tokens"].get<int64_t>() : -1;
  };
  EXPECT_EQ(input_tokens(origin().url("/image.png")), input_tokens(data_uri(image_bytes())));
}

// The Responses API stores the conversation with the fetched bytes: a later turn does not fetch again.
TEST_F(RemoteMediaHttp, AStoredResponseKeepsTheFetchedImage) {
  const json first = {{"input", {{{"role", "user"}, {"content", {{{"type", "input_image"}, {"image_url", origin().url("/image.png")}}}}}}},
                      {"max_output_tokens", 2}, {"temperature", 0}};
  const HttpReply r1 = post_json(port(), "/v1/responses", first);
  ASSERT_EQ(r1.status, 200) << r1.body;
  const int fetched = origin().requests("/image.png");
  const json second = {{"previous_response_id", r1.json()["id"]}, {"input", "And the colours?"},
                       {"max_output_tokens", 2}, {"temperature", 0}};
  const HttpReply r2 = post_json(port(), "/v1/responses", second);
  ASSERT_EQ(r2.status, 200) << r2.body;
  EXPECT_GT(r2.json()["usage"]["input_tokens"].get<int64_t>(), r1.json()["usage"]["input_tokens"].get<int64_t>());
  EXPECT_EQ(origin().requests("/image.png"), fetched);
}

TEST_F(RemoteMediaHttp, FetchFailuresAre400sNamingThePartAndTheUrl) {
  struct Case {
    std::string path, says;
  };
  const std::vector<Case> cases = {
      {"/missing.png", "HTTP 404"},
      {"/page.html", "not a PNG, JPEG, WebP or GIF image (Content-Type: text/html"},
      {"/empty.png", "the answer is empty"},
      {"/announced.png", "announces 104857600 bytes (Content-Length), more than 65536 (--image-max-bytes)"},
      {"/endless.png", "goes on past 65536 bytes (--image-max-bytes)"},
      {"/chunked.png", "goes on past 65536 bytes (--image-max-bytes)"},
      {"/to-ftp", "refused a URL or redirect that is not http or https"},
      {"/to-file", "refused a URL or redirect that is not http or https"},
      {"/loop", "more than 5 redirects"},
      {"/slow.png", "no complete answer within 2 s (--remote-media-timeout)"},
  };
  for (const Case& c : cases) {
    const std::string url = origin().url(c.path);
    const auto start = Clock::now();
    const HttpReply r = post_json(port(), "/v1/chat/completions", image_chat_body(content_with(url), 1));
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    ASSERT_EQ(r.status, 400) << c.path << ": " << r.body;
    const json e = r.json()["error"];
    EXPECT_EQ(e["code"], "image_fetch_failed") << r.body;
    EXPECT_EQ(e["param"], "messages[0].content[1]") << r.body;
    const std::string m = e["message"];
    EXPECT_EQ(m.rfind("messages[0].content[1]: cannot use the image at \"" + url + "\": ", 0), 0u) << m;
    EXPECT_NE(m.find(c.says), std::string::npos) << c.path << ": " << m;
    if (c.path != "/slow.png") {
      EXPECT_LT(seconds, kTimeout) << c.path << ": ended by its limit, not the timeout";
    }
  }
  // The transfers over the size limit were cut off where it was passed, not read to their end.
  EXPECT_LT(origin().sent("/endless.png"), size_t{64} << 20);
  EXPECT_LT(origin().sent("/chunked.png"), size_t{32} << 20);
  EXPECT_LT(origin().sent("/announced.png"), size_t{64} << 20);

  // Only the Content-Length's bytes are read of a longer body: a truncated PNG.
  HttpReply r = post_json(port(), "/v1/chat/completions", image_chat_body(content_with(origin().url("/short-length.png")), 1));
  ASSERT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("messages[0].content[1]: the png image is truncated or corrupt"), std::string::npos) << r.body;
  // Nothing listens there.
  r = post_json(port(), "/v1/chat/completions", image_chat_body(content_with("http://127.0.0.1:1/cat.png"), 1));
  ASSERT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json()["error"]["code"], "image_fetch_failed") << r.body;
  // Schemes other than http and https, and URLs with spaces, are refused before any fetch.
  r = post_json(port(), "/v1/chat/completions", image_chat_body(content_with("ftp://127.0.0.1/cat.png"), 1));
  ASSERT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("must be a data URI (data:image/png;base64,...) or an http or https URL"), std::string::npos);
  r = post_json(port(), "/v1/chat/completions", image_chat_body(content_with(origin().url("/a b.png")), 1));
  ASSERT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("space or control character"), std::string::npos) << r.body;

  // Each route answers in its own error shape.
  const json responses = {{"input", {{{"role", "user"},
                                      {"content", {{{"type", "input_image"}, {"image_url", origin().url("/missing.png")}}}}}}}};
  r = post_json(port(), "/v1/responses", responses);
  ASSERT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.json()["error"]["message"].get<std::string>().find("input[0].content[0]: cannot use the image"),
            std::string::npos) << r.body;
  const json messages = {{"model", "gemma3"}, {"max_tokens", 4},
                         {"messages", {{{"role", "user"},
                                        {"content", {{{"type", "image"},
                                                      {"source", {{"type", "url"}, {"url", origin().url("/page.html")}}}}}}}}}};
  r = post_json(port(), "/v1/messages", messages);
  ASSERT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json()["type"], "error") << r.body;
  EXPECT_EQ(r.json()["error"]["type"], "invalid_request_error") << r.body;
  EXPECT_NE(r.json()["error"]["message"].get<std::string>().find("messages[0].content[0]: cannot use the image"),
            std::string::npos) << r.body;

  // The server goes on serving.
  EXPECT_EQ(chat_answer(port(), origin().url("/image.png")).second, chat_answer(port(), data_uri(image_bytes())).second);
}

// A request the server would refuse anyway fetches nothing.
TEST_F(RemoteMediaHttp, NothingIsFetchedForARequestOverTheImageCount) {
  const std::string url = origin().url("/image.png?count");
  const json content = json::array({image_url_part(url), image_url_part(url), image_url_part(url), image_url_part(url)});
  const HttpReply r = post_json(port(), "/v1/chat/completions", image_chat_body(content, 1));
  ASSERT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("--image-max-count"), std::string::npos) << r.body;
  EXPECT_EQ(origin().requests("/image.png?count"), 0);
}

// Two requests wait on trickling URLs (as many as the work pool has threads): health checks and a
// text chat are answered meanwhile.
TEST_F(RemoteMediaHttp, ASlowUrlHoldsUpNoOtherRequest) {
  std::atomic<int> slow_done{0};
  std::vector<std::string> slow_errors(2);
  std::vector<std::thread> slow;
  for (int i = 0; i < 2; ++i) {
    slow.emplace_back([&, i] {
      const std::string url = origin().url(i == 0 ? "/slow.png" : "/slow-2.png");
      const HttpReply r = post_json(port(), "/v1/chat/completions", image_chat_body(content_with(url), 1));
      slow_errors[i] = r.body;
      ++slow_done;
    });
  }
  const auto deadline = Clock::now() + std::chrono::seconds(kTimeout);
  while ((origin().requests("/slow.png") == 0 || origin().requests("/slow-2.png") == 0) && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const auto start = Clock::now();
  EXPECT_EQ(http_request(port(), "GET", "/health").status, 200);
  const HttpReply text = post_json(port(), "/v1/chat/completions", image_chat_body("Say something.", 4));
  EXPECT_EQ(text.status, 200) << text.body;
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(slow_done.load(), 0) << "answered while both slow fetches were still under way (" << seconds << " s)";
  for (std::thread& t : slow) t.join();
  for (const std::string& e : slow_errors) EXPECT_NE(e.find("--remote-media-timeout"), std::string::npos) << e;
}

// A client that hangs up while its image is fetched ends the transfer (well before the timeout).
TEST_F(RemoteMediaHttp, AClientThatLeavesEndsItsFetch) {
  const std::string body = image_chat_body(content_with(origin().url("/slow-left.png")), 1).dump();
  {
    RawConnection c(port());
    c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body);
    const auto deadline = Clock::now() + std::chrono::seconds(kTimeout);
    while (origin().requests("/slow-left.png") == 0 && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_EQ(origin().requests("/slow-left.png"), 1);
  }
  const auto left = Clock::now();
  while (origin().finished("/slow-left.png") == 0 && Clock::now() < left + std::chrono::seconds(2 * kTimeout)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - left).count();
  EXPECT_EQ(origin().finished("/slow-left.png"), 1);
  EXPECT_LT(seconds, kTimeout * 0.75) << "the transfer went on after the client left";
  EXPECT_EQ(http_request(port(), "GET", "/health").status, 200);
}

// Without --remote-media-private the origin's address (127.0.0.1) is refused before any byte is
// sent to it, directly or through a redirect from a name.
class RemoteMediaPublicOnly : public VisionServerTest<RemoteMediaPublicOnly> {
 public:
  static void edit(server::ServiceOptions& o) { o.allow_remote_media = true; }
};

TEST_F(RemoteMediaPublicOnly, ALoopbackOrPrivateAddressIsA400NamingIt) {
  ::setenv("NO_PROXY", "*", 1);
  MediaOrigin origin;
  origin.reply("/image.png", 200, image_bytes(), {{"Content-Type", "image/png"}});
  for (const std::string& url : {origin.url("/image.png"), "http://localhost" + origin.url("/image.png").substr(16),
                                 std::string("http://[::1]:1/x.png"), std::string("http://169.254.169.254/latest/meta-data/"),
                                 std::string("http://10.0.0.1:1/x.png")}) {
    const HttpReply r = post_json(port(), "/v1/chat/completions", image_chat_body(content_with(url), 1));
    ASSERT_EQ(r.status, 400) << url << ": " << r.body;
    const json e = r.json()["error"];
    EXPECT_EQ(e["code"], "image_fetch_failed") << r.body;
    const std::string message = e["message"];
    EXPECT_NE(message.find("refused to connect to "), std::string::npos) << message;
    EXPECT_NE(message.find("(--remote-media-private)"), std::string::npos) << message;
  }
  EXPECT_EQ(origin.requests("/image.png"), 0);
}

}  // namespace
}  // namespace ggufd::test
