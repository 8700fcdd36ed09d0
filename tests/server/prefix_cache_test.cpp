// The prefix cache over HTTP: a long system prompt computed on one slot serves a request on the
// other (usage.prompt_tokens_details.cached_tokens, /metrics), with the output of a server that
// shares nothing.
#include <utility>  // Boost 1.74 + GCC 12: see server/asio.h

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/server/fixture.h"

namespace ggufd::test {
namespace {

using nlohmann::json;

const char* const kSystem =
    "You are a kind storyteller for small children. Every story you tell is short, happy and simple. "
    "It has a little girl called Lily, her big red ball and her friend the old brown dog, and it ends "
    "with everybody going home for a warm dinner before the sun goes down behind the hill.";

json chat_body(const std::string& system, const std::string& user, bool stream = false) {
  json body = {{"messages", {{{"role", "system"}, {"content", system}}, {{"role", "user"}, {"content", user}}}},
               {"max_tokens", 12},
               {"temperature", 0}};
  if (stream) body.update({{"stream", true}, {"max_tokens", 100000}, {"ignore_eos", true}});
  return body;
}

json chat(uint16_t port, const std::string& user) {
  const HttpReply r = post_json(port, "/v1/chat/completions", chat_body(kSystem, user));
  EXPECT_EQ(r.status, 200) << r.body;
  return r.json();
}

int64_t cached_tokens(const json& reply) { return reply["usage"]["prompt_tokens_details"]["cached_tokens"]; }

// The Gateway API Inference Extension's gauges of the model served as `id` (-1 when absent).
double gateway_metric(uint16_t port, const std::string& name, const std::string& id) {
  return metric(port, name + "{model_name=\"" + id + "\"}");
}

TEST(PrefixCacheHttp, ASystemPromptComputedOnOneSlotServesAnother) {
  GGUFD_REQUIRE_SHARED(kStories);
  auto shared = start_service([](server::ServiceOptions& o) { o.model.engine.n_slots = 2; });
  ASSERT_TRUE(shared->ready()) << shared->service().load_error();
  const uint16_t port = shared->port();
  const json first = chat(port, "Tell me about the cat.");
  EXPECT_EQ(cached_tokens(first), 0);
  const int64_t prompt_tokens = first["usage"]["prompt_tokens"];
  ASSERT_GE(prompt_tokens, 64) << "the system prompt spans blocks of 32 tokens";
  EXPECT_GT(metric(port, "ggufd_prefix_cache_blocks"), 0);
  EXPECT_GT(metric(port, "ggufd_prefix_cache_bytes"), 0);
  // The gateway's picker sees an idle server: the cached blocks hold cells, but no request does.
  const std::string id = http_request(port, "GET", "/v1/models").json()["data"][0]["id"];
  EXPECT_GT(metric(port, "ggufd_kv_cache_used_cells"), 0);
  EXPECT_EQ(gateway_metric(port, "vllm:kv_cache_usage_perc", id), 0);
  EXPECT_EQ(gateway_metric(port, "vllm:num_requests_running", id), 0);
  EXPECT_EQ(gateway_metric(port, "vllm:num_requests_waiting", id), 0);
  // ... and the cache's blocks: 32 tokens each, as many as the KV cache's cells hold
  const double cells = metric(port, "ggufd_kv_cache_total_cells");
  ASSERT_GT(cells, 0);
  EXPECT_EQ(metric(port, "vllm:cache_config_info{model_name=\"" + id + "\",block_size=\"32\",num_gpu_blocks=\"" +
                             std::to_string(static_cast<int64_t>(cells) / 32) + "\"}"),
            1);

  // Another system prompt streams on slot 0 (it shares the template's first tokens with what slot 0
  // holds, so it goes there), and stays there until its client leaves.
  {
    namespace net = boost::asio;
    net::io_context io;
    net::ip::tcp::socket socket(io);
    socket.connect({net::ip::make_address("127.0.0.1"), port});
    const std::string body = chat_body("You are terse.", "Say anything.", true).dump();
    const std::string req = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    net::write(socket, net::buffer(req));
    char buf[512];
    socket.read_some(net::buffer(buf));  // slot 0 is streaming

    // The same system prompt on slot 1, which never held it: its whole blocks come from slot 0's.
    const json second = chat(port, "Tell me about the dog.");
    EXPECT_GE(cached_tokens(second), 32);
    EXPECT_LT(cached_tokens(second), second["usage"]["prompt_tokens"].get<int64_t>());
    EXPECT_GE(metric(port, "ggufd_prefix_cache_hit_tokens_total"), static_cast<double>(cached_tokens(second)));
    EXPECT_GE(metric(port, "ggufd_prefix_cache_lookups_total"), 3);
    // The stream holds a slot and its cells.
    EXPECT_EQ(gateway_metric(port, "vllm:num_requests_running", id), 1);
    EXPECT_EQ(gateway_metric(port, "vllm:num_requests_waiting", id), 0);
    const double usage = gateway_metric(port, "vllm:kv_cache_usage_perc", id);
    EXPECT_GT(usage, 0);
    EXPECT_LE(usage, 1);

    // A server that shares nothing gives the same answer, computing everything.
    auto plain = start_service([](server::ServiceOptions& o) {
      o.model.engine.n_slots = 2;
      o.model.engine.prefix_cache_bytes = 0;
    });
    ASSERT_TRUE(plain->ready()) << plain->service().load_error();
    const json alone = chat(plain->port(), "Tell me about the dog.");
    EXPECT_EQ(cached_tokens(alone), 0);
    EXPECT_EQ(alone["choices"][0]["message"]["content"], second["choices"][0]["message"]["content"]);
    EXPECT_EQ(alone["usage"]["prompt_tokens"], second["usage"]["prompt_tokens"]);
    EXPECT_EQ(metric(plain->port(), "ggufd_prefix_cache_lookups_total"), 0);
  }  // the stream's client leaves
}

}  // namespace
}  // namespace ggufd::test
