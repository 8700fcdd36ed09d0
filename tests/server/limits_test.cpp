// Services with their own settings: queue limits, API keys, CORS, graceful shutdown.
#include <future>
#include <nlohmann/json.hpp>

#include "tests/server/fixture.h"

namespace ggufd::test {
namespace {

using nlohmann::json;

TEST(Limits, QueueFullIs429WithRetryAfter) {
  GGUFD_REQUIRE_SHARED(kStories);
  auto s = start_service([](server::ServiceOptions& o) {
    o.model.engine.n_slots = 1;
    o.model.engine.max_queue = 0;
    o.model.engine.n_ctx = 2048;
  });
  ASSERT_TRUE(s->ready());
  const json long_body = {{"prompt", "Once"}, {"max_tokens", 2000}, {"ignore_eos", true}};
  auto first = std::async(std::launch::async, [&] { return post_json(s->port(), "/v1/completions", long_body); });
  for (int i = 0; i < 400; ++i) {  // until the first occupies the only slot
    if (http_request(s->port(), "GET", "/metrics").body.find("ggufd_slots_active{model=\"stories\"} 1\n") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const HttpReply second = post_json(s->port(), "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 1}});
  EXPECT_EQ(second.status, 429) << second.body;
  EXPECT_EQ(second.headers.at("retry-after"), "1");
  EXPECT_EQ(second.json()["error"]["code"], "queue_full");
  EXPECT_EQ(first.get().status, 200);
}

TEST(Limits, ApiKeysAndPublicHealth) {
  GGUFD_REQUIRE_SHARED(kStories);
  auto s = start_service([](server::ServiceOptions& o) {
    o.http.api_keys = {"sekrit"};
  });
  ASSERT_TRUE(s->ready());
  EXPECT_EQ(http_request(s->port(), "GET", "/health").status, 200);
  const HttpReply denied = http_request(s->port(), "GET", "/v1/models");
  EXPECT_EQ(denied.status, 401);
  EXPECT_EQ(denied.json()["error"]["code"], "invalid_api_key");
  EXPECT_EQ(http_request(s->port(), "GET", "/v1/models", "", {{"Authorization", "Bearer wrong"}}).status, 401);
  EXPECT_EQ(http_request(s->port(), "GET", "/v1/models", "", {{"Authorization", "Bearer sekrit"}}).status, 200);
}

TEST(Limits, CorsHeadersAndPreflight) {
  GGUFD_REQUIRE_SHARED(kStories);
  auto s = start_service([](server::ServiceOptions& o) {
    o.http.cors_origins = {"https://app.example"};
  });
  ASSERT_TRUE(s->ready());
  HttpReply r = http_request(s->port(), "GET", "/v1/models", "", {{"Origin", "https://app.example"}});
  EXPECT_EQ(r.headers["access-control-allow-origin"], "https://app.example");
  const HttpReply other = http_request(s->port(), "GET", "/v1/models", "", {{"Origin", "https://evil.example"}});
  EXPECT_EQ(other.headers.count("access-control-allow-origin"), 0u);
  HttpReply pre = http_request(s->port(), "OPTIONS", "/v1/chat/completions", "",
                                     {{"Origin", "https://app.example"}});
  EXPECT_EQ(pre.status, 204);
  EXPECT_NE(pre.headers["access-control-allow-methods"].find("POST"), std::string::npos);
}

TEST(Limits, ShutdownLetsInFlightRequestsFinish) {
  GGUFD_REQUIRE_SHARED(kStories);
  // (a generous grace: on a loaded CI machine 40 tokens may take seconds)
  auto s = start_service([](server::ServiceOptions& o) { o.shutdown_grace_s = 60; });
  ASSERT_TRUE(s->ready());
  const uint16_t port = s->port();
  auto inflight = std::async(std::launch::async, [port] {
    return post_json(port, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 40}, {"ignore_eos", true}});
  });
  for (int i = 0; i < 2000; ++i) {  // until the request is in its slot (in flight, not refused) or done
    if (inflight.wait_for(std::chrono::seconds(0)) == std::future_status::ready) break;
    if (http_request(port, "GET", "/metrics").body.find("ggufd_slots_active{model=\"stories\"} 1\n") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  s.reset();  // shutdown() + wait()
  const HttpReply r = inflight.get();
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["usage"]["completion_tokens"], 40);
}

TEST(Limits, MissingModelFailsToLoad) {
  server::ServiceOptions o = test_options();
  o.model.path = "/nonexistent/model.gguf";
  server::Service s(o);
  s.start();
  EXPECT_FALSE(s.wait_ready());
  EXPECT_NE(s.load_error().find("/nonexistent/model.gguf"), std::string::npos);
  EXPECT_EQ(s.wait(), 1);
}

}  // namespace
}  // namespace ggufd::test
