// The HTTP layer under hostile clients (issue 13): held bodies, idle sockets, half-closes,
// pipelining, Expect, content types, model ids with '/', stalls of the IO thread, log forging.
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <future>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "server/api/url.h"
#include "tests/server/fixture.h"
#include "tests/support/raw_connection.h"

namespace ggufd::test {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

std::string completion(int max_tokens) {
  return json{{"prompt", "Once upon a time"}, {"max_tokens", max_tokens}, {"ignore_eos", true}}.dump();
}

// The status of the first response in `raw` (0 if none).
int status_of(const std::string& raw) {
  if (raw.rfind("HTTP/1.1 ", 0) != 0 && raw.rfind("HTTP/1.0 ", 0) != 0) return 0;
  return std::stoi(raw.substr(9, 3));
}

// 12. The API key was checked after the whole body was read: unauthenticated clients could make
// the server hold 8 MB each. Now the head alone gets the 401, and the connection is closed.
TEST(HardeningHttp, ApiKeyIsCheckedBeforeTheBodyIsRead) {
  GGUFD_REQUIRE_SHARED(kStories);
  auto s = start_service([](server::ServiceOptions& o) {
    o.http.api_keys = {"sekrit"};
  });
  ASSERT_TRUE(s->ready());
  RawConnection c(s->port());
  c.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
         "Content-Length: 8000000\r\n\r\n{\"prompt\":");
  EXPECT_TRUE(c.read_to_close(3s)) << "answered and closed without waiting for the body";
  EXPECT_EQ(status_of(c.received()), 401) << c.received();
  EXPECT_NE(c.received().find("invalid_api_key"), std::string::npos);
}

// 13. Idle sockets filled the connection cap and locked everyone out, /health included.
TEST(HardeningHttp, IdleConnectionsMakeRoomAtTheCap) {
  GGUFD_REQUIRE_SHARED(kStories);
  auto s = start_service([](server::ServiceOptions& o) {
    o.http.max_connections = 4;
  });
  ASSERT_TRUE(s->ready());
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 6; ++i) idle.push_back(std::make_unique<RawConnection>(s->port()));
  std::this_thread::sleep_for(100ms);
  const HttpReply health = http_request(s->port(), "GET", "/health");
  EXPECT_EQ(health.status, 200) << health.body;
  EXPECT_EQ(post_json(s->port(), "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 2}}).status, 200);
}

TEST(HardeningHttp, ASilentConnectionIsClosedAfterTheHeaderTimeout) {
  GGUFD_REQUIRE_SHARED(kStories);
  auto s = start_service([](server::ServiceOptions& o) {
    o.http.header_timeout = 1s;
  });
  ASSERT_TRUE(s->ready());
  RawConnection c(s->port());
  EXPECT_TRUE(c.read_to_close(4s)) << "still open after the header timeout";
  RawConnection slow(s->port());
  slow.send("GET /health HTTP/1.1\r\n");  // and never the rest of the head
  EXPECT_TRUE(slow.read_to_close(4s));
}

// 14. A half-close after the request ("I'm done sending") cancelled it.
TEST(HardeningHttp, HalfCloseAfterTheRequestStillGetsTheResponse) {
  GGUFD_REQUIRE_SHARED(kStories);
  auto s = start_service();
  ASSERT_TRUE(s->ready());
  for (const std::string version : {"HTTP/1.1", "HTTP/1.0"}) {
    RawConnection c(s->port());
    const std::string extra = version == "HTTP/1.1" ? "Connection: close\r\n" : "";
    c.send(post_request("/v1/completions", completion(30), extra, version));
    c.shutdown_write();
    ASSERT_TRUE(c.read_to_close(20s)) << version;
    EXPECT_EQ(status_of(c.received()), 200) << c.received();
    EXPECT_NE(c.received().find("\"completion_tokens\":30"), std::string::npos) << c.received();
  }
  // A stream on a keep-alive connection: the writes tell whether the client still reads.
  RawConnection c(s->port());
  const std::string stream = json{{"prompt", "Once upon a time"}, {"max_tokens", 30}, {"ignore_eos", true},
                                  {"stream", true}, {"stream_options", {{"include_usage", true}}}}.dump();
  c.send(post_request("/v1/completions", stream));
  c.shutdown_write();
  ASSERT_TRUE(c.read_until("[DONE]", 20s)) << c.received();
  EXPECT_NE(c.received().find("\"completion_tokens\":30"), std::string::npos) << c.received();
}

// 14. A pipelined request arriving mid-generation switched disconnect detection off: a client
// that then left had its 2000 tokens generated anyway.
TEST(HardeningHttp, PipelinedRequestDoesNotHideADisconnect) {
  GGUFD_REQUIRE_SHARED(kStories);
  auto s = start_service([](server::ServiceOptions& o) {
    o.model.engine.n_ctx = 2048;
  });
  ASSERT_TRUE(s->ready());
  {
    RawConnection c(s->port());
    c.send(post_request("/v1/completions", completion(2000)) + "GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
    for (int i = 0; i < 400 && metric(s->port(), "ggufd_slots_active") != 1; ++i) std::this_thread::sleep_for(5ms);
    std::this_thread::sleep_for(20ms);
  }  // the client leaves mid-generation
  for (int i = 0; i < 1000 && metric(s->port(), "ggufd_slots_active") != 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(metric(s->port(), "ggufd_slots_active"), 0);
  const double generated = metric(s->port(), "ggufd_generated_tokens_total");
  EXPECT_GT(generated, 0);
  EXPECT_LT(generated, 2000) << "the generation went on for a client that had left";

  // Pipelining itself still works: both answers arrive in order on one connection.
  RawConnection c(s->port());
  c.send(post_request("/v1/completions", completion(3)) + "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  ASSERT_TRUE(c.read_to_close(10s));
  const std::string& got = c.received();
  EXPECT_EQ(status_of(got), 200);
  EXPECT_NE(got.find("\"status\":\"ok\""), std::string::npos) << got;
  EXPECT_LT(got.find("text_completion"), got.find("\"status\":\"ok\""));
}

// 15. "Expect: 100-continue" was never answered: curl waited a second before sending bodies > 1 MB.
TEST(HardeningHttp, ExpectContinueIsAnswered) {
  GGUFD_REQUIRE_SHARED(kStories);
  auto s = start_service();
  ASSERT_TRUE(s->ready());
  RawConnection c(s->port());
  const std::string body = completion(2);
  c.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n"
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n");
  ASSERT_TRUE(c.read_until("\r\n\r\n", 2s)) << c.received();
  EXPECT_EQ(c.received().rfind("HTTP/1.1 100 Continue\r\n", 0), 0u) << c.received();
  c.send(body);
  ASSERT_TRUE(c.read_until("\"usage\"", 10s)) << c.received();
  EXPECT_NE(c.received().find("HTTP/1.1 200 OK"), std::string::npos);

  // A refused head gets its final answer instead of 100, and the body is never waited for.
  RawConnection big(s->port());
  big.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n"
           "Content-Length: 99999999\r\n\r\n");
  ASSERT_TRUE(big.read_to_close(3s));
  EXPECT_EQ(status_of(big.received()), 413) << big.received();
}

// 18. text/plain bodies were accepted: any web page could make a visitor's browser POST to a
// local server without a CORS preflight.
TEST(HardeningHttp, JsonRoutesRequireAJsonContentType) {
  GGUFD_REQUIRE_SHARED(kStories);
  auto s = start_service();
  ASSERT_TRUE(s->ready());
  const std::string body = completion(2);
  for (const char* type : {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""}) {
    std::map<std::string, std::string> headers;
    if (*type != '\0') headers["Content-Type"] = type;
    RawConnection c(s->port());
    c.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\n" +
           (*type != '\0' ? "Content-Type: " + std::string(type) + "\r\n" : std::string()) +
           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    ASSERT_TRUE(c.read_until("}}", 3s)) << type;
    EXPECT_EQ(status_of(c.received()), 415) << type << ": " << c.received();
    EXPECT_NE(c.received().find("application/json"), std::string::npos);
  }
  EXPECT_EQ(http_request(s->port(), "POST", "/tokenize", R"({"content":"hi"})",
                         {{"Content-Type", "application/json; charset=utf-8"}}).status,
            200);
}

// 11. /tokenize has its own, smaller body limit (7 MB with pieces once peaked at 2.7 GB).
TEST(HardeningHttp, TokenizeHasItsOwnBodyLimit) {
  GGUFD_REQUIRE_SHARED(kStories);
  auto s = start_service([](server::ServiceOptions& o) {
    o.tokenize_limit = 64 << 10;
  });
  ASSERT_TRUE(s->ready());
  const std::string text(100 << 10, 'a');
  const HttpReply big = post_json(s->port(), "/tokenize", {{"content", text}, {"with_pieces", true}});
  EXPECT_EQ(big.status, 413) << big.body.substr(0, 200);
  const std::string ok_text(32 << 10, 'a');
  const HttpReply ok = post_json(s->port(), "/tokenize", {{"content", ok_text}, {"with_pieces", true}});
  ASSERT_EQ(ok.status, 200);
  const json tokens = ok.json()["tokens"];
  std::string joined;
  for (const json& t : tokens) joined += t["piece"].get<std::string>();
  EXPECT_EQ(joined.size(), ok_text.size() + 1) << "SentencePiece's leading space, then the text";
  // Completions keep the server-wide limit.
  EXPECT_EQ(post_json(s->port(), "/v1/completions", {{"prompt", text}, {"max_tokens", 1}}).status, 400)
      << "too long for the context, but read";
}

// 8. Model ids with '/' (Hugging Face names) could not be looked up.
TEST(HardeningHttp, ModelIdsWithSlashes) {
  GGUFD_REQUIRE_SHARED(kStories);
  auto s = start_service([](server::ServiceOptions& o) {
    o.model.alias = "org/my-model";
  });
  ASSERT_TRUE(s->ready());
  for (const char* path : {"/v1/models/org/my-model", "/v1/models/org%2Fmy-model", "/v1/models/org%2fmy-model"}) {
    const HttpReply r = http_request(s->port(), "GET", path);
    EXPECT_EQ(r.status, 200) << path << ": " << r.body;
    if (r.status == 200) {
      EXPECT_EQ(r.json()["id"], "org/my-model");
    }
  }
  for (const char* path : {"/v1/models/org/my-model/metadata", "/v1/models/org%2Fmy-model/metadata"}) {
    const HttpReply r = http_request(s->port(), "GET", path);
    EXPECT_EQ(r.status, 200) << path << ": " << r.body.substr(0, 200);
  }
  EXPECT_EQ(http_request(s->port(), "GET", "/v1/models/org/other").status, 404);
  EXPECT_EQ(post_json(s->port(), "/v1/completions", {{"model", "org/my-model"}, {"prompt", "a"}, {"max_tokens", 1}}).status,
            200);
}

// 10. Tokenizing, template rendering and big responses ran on the one IO thread: one slow request
// stalled every stream and /health. Now /health answers while a render is still running.
TEST(HardeningHttp, HealthAnswersWhileASlowRequestIsPrepared) {
  GGUFD_REQUIRE_SHARED(kStories);
  auto s = start_service([](server::ServiceOptions& o) {
    // A template that spends half a million steps (a good fraction of a second) on every render.
    o.model.chat_template = "{% for i in range(500) %}{% for j in range(1000) %}{% endfor %}{% endfor %}x";
  });
  ASSERT_TRUE(s->ready());
  auto slow = std::async(std::launch::async, [&] {
    return post_json(s->port(), "/v1/chat/completions",
                     {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"max_tokens", 1}});
  });
  std::this_thread::sleep_for(100ms);
  ASSERT_EQ(slow.wait_for(0ms), std::future_status::timeout) << "the render was expected to take a while";
  EXPECT_EQ(http_request(s->port(), "GET", "/health").status, 200);
  EXPECT_EQ(http_request(s->port(), "GET", "/metrics").status, 200);
  EXPECT_EQ(slow.wait_for(0ms), std::future_status::timeout) << "health was answered while the render went on";
  EXPECT_EQ(slow.get().status, 200);
}

// 17. The text log wrote a %0A from a path as a real newline: clients could forge log lines.
TEST(HardeningHttp, ClientStringsAreEscapedInTheLog) {
  EXPECT_EQ(server::escape_for_log("a\nb\r\x1b[31m\x7f\\"), "a\\x0ab\\x0d\\x1b[31m\\x7f\\\\");
  EXPECT_EQ(server::escape_for_log("\xc2\x9b" "2J"), "\\xc2\\x9b2J") << "C1 CSI";
  EXPECT_EQ(server::escape_for_log("héllo"), "héllo");
  EXPECT_EQ(server::escape_for_log(std::string(10, 'x'), 4), "xxxx...");

  GGUFD_REQUIRE_SHARED(kStories);
  auto previous = spdlog::default_logger();
  std::ostringstream captured;
  auto logger = std::make_shared<spdlog::logger>("capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(captured));
  logger->set_pattern("%v");
  spdlog::set_default_logger(logger);
  {
    auto s = start_service();
    if (s->ready()) {
      http_request(s->port(), "GET", "/v1/x%0A2026-01-01%20INFO%20forged%0D%0A");
    }
  }
  spdlog::set_default_logger(previous);
  const std::string log = captured.str();
  const size_t at = log.find("/v1/x");
  ASSERT_NE(at, std::string::npos) << log;
  const std::string line = log.substr(at, log.find('\n', at) - at);
  EXPECT_NE(line.find("404"), std::string::npos) << "the forged text stayed on the request's own line: " << line;
}

}  // namespace
}  // namespace ggufd::test
