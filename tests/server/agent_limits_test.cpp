// What agents need of every generation route: --max-tokens as the default and the cap of generated
// tokens, and keep-alives on streams while a request waits (a long prefill, a full server).
#include <nlohmann/json.hpp>

#include <utility>  // Boost 1.74 + GCC 12: see server/asio.h

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <future>
#include <thread>

#include "tests/server/fixture.h"
#include "tests/server/sse_events.h"

namespace ggufd::test {
namespace {

using nlohmann::json;


TEST(MaxTokens, IsTheDefaultAndTheCapOfEveryRoute) {
  GGUFD_REQUIRE_SHARED(kStories);
  auto s = start_service([](server::ServiceOptions& o) { o.model.max_tokens = 5; });
  ASSERT_TRUE(s->ready());
  const uint16_t port = s->port();
  for (const json& limit : {json(nullptr), json(1000)}) {
    json chat = {{"messages", one_user_message("Tell me a long story")}, {"ignore_eos", true}};
    json completion = {{"prompt", "Once upon a time"}, {"ignore_eos", true}};
    json responses = {{"input", "Tell me a long story"}};
    json messages = {{"messages", one_user_message("Tell me a long story")}, {"max_tokens", 1000}};
    if (!limit.is_null()) {
      chat["max_tokens"] = limit;
      completion["max_tokens"] = limit;
      responses["max_output_tokens"] = limit;
    }
    EXPECT_EQ(post_json(port, "/v1/chat/completions", chat).json()["usage"]["completion_tokens"], 5) << limit;
    EXPECT_EQ(post_json(port, "/v1/completions", completion).json()["usage"]["completion_tokens"], 5) << limit;
    EXPECT_LE(post_json(port, "/v1/responses", responses).json()["usage"]["output_tokens"].get<int>(), 5) << limit;
    EXPECT_LE(post_json(port, "/v1/messages", messages).json()["usage"]["output_tokens"].get<int>(), 5) << limit;
  }
  // a smaller limit of the request still holds
  EXPECT_EQ(post_json(port, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 2}, {"ignore_eos", true}})
                .json()["usage"]["completion_tokens"],
            2);
  // /v1/messages: the server's cap ends the turn (Claude Code retries, then fails, on max_tokens);
  // the request's own limit is max_tokens
  const json capped = post_json(port, "/v1/messages", {{"messages", one_user_message("Hi")}, {"max_tokens", 1000},
                                                       {"stop_sequences", {"zzzz"}}}).json();
  if (capped["usage"]["output_tokens"] == 5) {
    EXPECT_EQ(capped["stop_reason"], "end_turn") << capped.dump();
  }
  const json own = post_json(port, "/v1/messages", {{"messages", one_user_message("Hi")}, {"max_tokens", 2}}).json();
  if (own["usage"]["output_tokens"] == 2) {
    EXPECT_EQ(own["stop_reason"], "max_tokens") << own.dump();
  }
}

// One slot, busy with a long request: a streamed request of each route waits for it and gets
// keep-alives (an SSE comment; a ping event on /v1/messages) before its first token.
TEST(KeepAlive, StreamsThatWaitGetKeepAlives) {
  GGUFD_REQUIRE_SHARED(kStories);
  auto s = start_service([](server::ServiceOptions& o) {
    o.model.engine.n_slots = 1;
    o.model.engine.n_ctx = 4096;
    o.keep_alive_ms = 1;
  });
  ASSERT_TRUE(s->ready());
  const uint16_t port = s->port();
  struct Case {
    std::string target;
    json body;
  };
  const std::vector<Case> cases = {
      {"/v1/chat/completions", {{"messages", one_user_message("Hi")}, {"max_tokens", 2}, {"stream", true}}},
      {"/v1/completions", {{"prompt", "Hi"}, {"max_tokens", 2}, {"stream", true}}},
      {"/v1/responses", {{"input", "Hi"}, {"max_output_tokens", 2}, {"stream", true}}},
      {"/v1/messages", {{"messages", one_user_message("Hi")}, {"max_tokens", 2}, {"stream", true}}},
  };
  for (const Case& c : cases) {
    // The busy slot: a stream that goes on until its client leaves. The request under test waits
    // for that slot, with a keep-alive every millisecond, until the stream's client leaves.
    namespace net = boost::asio;
    net::io_context io;
    net::ip::tcp::socket busy(io);
    busy.connect({net::ip::make_address("127.0.0.1"), port});
    const std::string body =
        json{{"prompt", "Once"}, {"max_tokens", 4000}, {"ignore_eos", true}, {"stream", true}}.dump();
    net::write(busy, net::buffer("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                 "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body));
    char buf[512];
    busy.read_some(net::buffer(buf));  // it holds the slot
    auto waiting = std::async(std::launch::async, [&] { return post_json(port, c.target, c.body); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    boost::system::error_code ec;
    busy.shutdown(net::ip::tcp::socket::shutdown_both, ec);
    busy.close(ec);
    const HttpReply r = waiting.get();
    ASSERT_EQ(r.status, 200) << c.target << ": " << r.body;
    int comments = 0;
    const std::vector<SseEvent> ev = sse_events(r.body, &comments);
    int pings = 0, in_progress = 0;
    for (const SseEvent& e : ev) {
      pings += e.name == "ping" ? 1 : 0;
      in_progress += e.name == "response.in_progress" ? 1 : 0;
    }
    if (c.target == "/v1/messages") {
      EXPECT_GT(pings, 1) << r.body.substr(0, 400);  // one follows message_start anyway
    } else if (c.target == "/v1/responses") {
      EXPECT_GT(in_progress, 1) << r.body.substr(0, 400);  // one follows response.created anyway
    } else {
      EXPECT_GT(comments, 0) << c.target << ": " << r.body.substr(0, 400);
    }
  }
}

}  // namespace
}  // namespace ggufd::test
