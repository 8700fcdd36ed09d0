// Completions and chat completions: exact shapes, streaming, determinism, stops, concurrency.
#include <utility>  // Boost 1.74 + GCC 12: see server/asio.h

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/server/fixture.h"

namespace ggufd::test {
namespace {

using nlohmann::json;

class Generation : public ServerTest {};

json complete(const json& body) {
  const HttpReply r = post_json(ServerTest::port(), "/v1/completions", body);
  EXPECT_EQ(r.status, 200) << r.body;
  return r.json();
}

TEST_F(Generation, CompletionShapeAndUsage) {
  const json j = complete({{"model", "stories"}, {"prompt", "Once upon a time"}, {"max_tokens", 5},
                           {"temperature", 0}});
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  EXPECT_TRUE(j["created"].is_number_integer());
  EXPECT_EQ(j["model"], "stories");
  ASSERT_EQ(j["choices"].size(), 1u);
  const json& c = j["choices"][0];
  EXPECT_EQ(c["index"], 0);
  EXPECT_TRUE(c["logprobs"].is_null());
  EXPECT_EQ(c["finish_reason"], "length");
  EXPECT_FALSE(c["text"].get<std::string>().empty());
  EXPECT_EQ(j["usage"]["completion_tokens"], 5);
  EXPECT_EQ(j["usage"]["prompt_tokens"], 5);  // BOS + 4 words
  EXPECT_EQ(j["usage"]["total_tokens"], 10);
}

TEST_F(Generation, GreedyIsDeterministicAndReusesThePromptCache) {
  const json body = {{"prompt", "The little dog"}, {"max_tokens", 12}, {"temperature", 0}};
  const json a = complete(body);
  const json b = complete(body);
  EXPECT_EQ(a["choices"][0]["text"], b["choices"][0]["text"]);
  EXPECT_GT(b["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 0);
}

// llama-server's cache_prompt: false computes the whole prompt again (same answer, nothing cached);
// a value that is not a boolean is a 400 naming it.
TEST_F(Generation, CachePromptFalseComputesThePromptAgain) {
  json body = {{"prompt", "The little dog ran"}, {"max_tokens", 8}, {"temperature", 0}};
  const json a = complete(body);
  body["cache_prompt"] = false;
  const json b = complete(body);
  EXPECT_EQ(a["choices"][0]["text"], b["choices"][0]["text"]);
  EXPECT_EQ(b["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  body["cache_prompt"] = true;
  EXPECT_GT(complete(body)["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 0);
  body["cache_prompt"] = "no";
  const HttpReply r = post_json(ServerTest::port(), "/v1/completions", body);
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("cache_prompt"), std::string::npos) << r.body;
}

TEST_F(Generation, SameSeedSameTextAcrossRequests) {
  const json body = {{"prompt", "Lily went to"}, {"max_tokens", 16}, {"temperature", 1.0}, {"seed", 42}};
  EXPECT_EQ(complete(body)["choices"][0]["text"], complete(body)["choices"][0]["text"]);
}

TEST_F(Generation, StopStringIsCutAndNotReturned) {
  const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 24}, {"temperature", 0}};
  const std::string full = complete(body)["choices"][0]["text"];
  ASSERT_GT(full.size(), 12u);
  const std::string stop = full.substr(8, 4);  // likely spans tokens
  json with_stop = body;
  with_stop["stop"] = stop;
  const json j = complete(with_stop);
  EXPECT_EQ(j["choices"][0]["text"], full.substr(0, full.find(stop)));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
}

TEST_F(Generation, EchoLogprobsAndChoices) {
  const json echo = complete({{"prompt", "Once upon"}, {"max_tokens", 3}, {"temperature", 0}, {"echo", true}});
  EXPECT_EQ(echo["choices"][0]["text"].get<std::string>().rfind("Once upon", 0), 0u);
  const json lp = complete({{"prompt", "Once upon"}, {"max_tokens", 3}, {"temperature", 0}, {"logprobs", 2}});
  const json& l = lp["choices"][0]["logprobs"];
  ASSERT_EQ(l["tokens"].size(), 3u);
  EXPECT_EQ(l["token_logprobs"].size(), 3u);
  EXPECT_EQ(l["top_logprobs"][0].size(), 2u);
  EXPECT_LE(l["token_logprobs"][0].get<double>(), 0.0);
  const json multi = complete({{"prompt", {"Once upon", "The cat"}}, {"max_tokens", 2}, {"n", 2}});
  ASSERT_EQ(multi["choices"].size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(multi["choices"][i]["index"], i);
  const json ids = complete({{"prompt", {1, 100, 200}}, {"max_tokens", 2}});
  EXPECT_EQ(ids["usage"]["prompt_tokens"], 3);
}

TEST_F(Generation, StreamedCompletionChunksAndUsage) {
  const HttpReply r = post_json(port(), "/v1/completions",
                                {{"prompt", "Once upon a time"}, {"max_tokens", 6}, {"temperature", 0},
                                 {"stream", true}, {"stream_options", {{"include_usage", true}}}});
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.headers.at("content-type"), "text/event-stream");
  const auto events = r.events();
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back(), "[DONE]");
  const json usage = json::parse(events[events.size() - 2]);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 6);
  std::string id;
  for (size_t i = 0; i + 2 < events.size(); ++i) {
    const json j = json::parse(events[i]);
    EXPECT_EQ(j["object"], "text_completion");
    if (id.empty()) id = j["id"];
    EXPECT_EQ(j["id"], id);
    EXPECT_TRUE(j["usage"].is_null());
    const bool last = i + 3 == events.size();
    EXPECT_EQ(j["choices"][0]["finish_reason"].is_null(), !last) << events[i];
  }
  const json plain = complete({{"prompt", "Once upon a time"}, {"max_tokens", 6}, {"temperature", 0}});
  EXPECT_EQ(streamed_text(r), plain["choices"][0]["text"].get<std::string>());
}

// llama-server's `timings` (the web page's tokens/s): on the streamed usage chunk and the whole
// response; predicted_n counts every generated token, the rates match the counts and times.
TEST_F(Generation, ChatCompletionTimings) {
  const json body = {{"messages", {{{"role", "user"}, {"content", "Tell a story"}}}}, {"max_tokens", 8},
                     {"temperature", 0}};
  json streamed = body;
  streamed["stream"] = true;
  streamed["stream_options"] = {{"include_usage", true}};
  const HttpReply r = post_json(port(), "/v1/chat/completions", streamed);
  ASSERT_EQ(r.status, 200) << r.body;
  const auto events = r.events();
  ASSERT_GE(events.size(), 3u);
  const json last = json::parse(events[events.size() - 2]);
  const json whole = post_json(port(), "/v1/chat/completions", body).json();
  for (const json& j : {last, whole}) {
    const json& t = j["timings"];
    ASSERT_TRUE(t.is_object()) << j.dump();
    EXPECT_EQ(t["predicted_n"], 8) << t.dump();
    EXPECT_EQ(t["prompt_n"].get<int64_t>() + t["cache_n"].get<int64_t>(), j["usage"]["prompt_tokens"]) << j.dump();
    EXPECT_GT(t["prompt_ms"].get<double>(), 0) << t.dump();
    EXPECT_GE(t["predicted_ms"].get<double>(), 0) << t.dump();
    if (t["predicted_ms"].get<double>() > 0) {
      EXPECT_NEAR(t["predicted_per_second"].get<double>(), 7 * 1000 / t["predicted_ms"].get<double>(), 1e-6);
    }
    EXPECT_NEAR(t["prompt_per_second"].get<double>(),
                t["prompt_n"].get<double>() * 1000 / t["prompt_ms"].get<double>(), 1e-6);
  }
  for (size_t i = 0; i + 2 < events.size(); ++i) EXPECT_FALSE(json::parse(events[i]).contains("timings")) << events[i];
}

TEST_F(Generation, ChatCompletionWithFallbackTemplate) {
  const HttpReply r = post_json(port(), "/v1/chat/completions",
                                {{"model", "stories"}, {"messages", {{{"role", "user"}, {"content", "Tell a story"}}}},
                                 {"max_completion_tokens", 4}, {"temperature", 0}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = r.json();
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_TRUE(j["choices"][0]["message"]["content"].is_string());
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["completion_tokens"], 4);
}

TEST_F(Generation, StreamedChatChunks) {
  const HttpReply r = post_json(port(), "/v1/chat/completions",
                                {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 5},
                                 {"temperature", 0}, {"stream", true}, {"logprobs", true}, {"top_logprobs", 1}});
  ASSERT_EQ(r.status, 200);
  const auto events = r.events();
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back(), "[DONE]");
  const json first = json::parse(events[0]);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  const json last = json::parse(events[events.size() - 2]);
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(last["choices"][0]["delta"].empty());
  for (size_t i = 0; i + 2 < events.size(); ++i) {
    const json j = json::parse(events[i]);
    EXPECT_EQ(j["id"], first["id"]);
    EXPECT_EQ(j["created"], first["created"]);
    EXPECT_TRUE(j["choices"][0]["finish_reason"].is_null());
    if (i > 0) {
      EXPECT_EQ(j["choices"][0]["logprobs"]["content"][0]["top_logprobs"].size(), 1u);
    }
  }
}

TEST_F(Generation, ConcurrentStreamsMatchEachAlone) {
  auto body = [](int seed) {
    return json{{"prompt", "One day, a girl"}, {"max_tokens", 20}, {"temperature", 0.9}, {"seed", seed},
                {"stream", true}};
  };
  std::vector<std::string> alone;
  for (int s = 0; s < 4; ++s) alone.push_back(streamed_text(post_json(port(), "/v1/completions", body(s))));
  std::vector<std::future<std::string>> together;
  for (int s = 0; s < 4; ++s) {
    together.push_back(std::async(std::launch::async, [&, s] {
      return streamed_text(post_json(port(), "/v1/completions", body(s)));
    }));
  }
  for (int s = 0; s < 4; ++s) EXPECT_EQ(together[static_cast<size_t>(s)].get(), alone[static_cast<size_t>(s)]) << "seed " << s;
}

TEST_F(Generation, DisconnectFreesTheSlot) {
  const std::string body = json{{"prompt", "Once upon a time"}, {"max_tokens", 100000}, {"ignore_eos", true},
                                {"stream", true}}.dump();
  {
    namespace net = boost::asio;
    net::io_context io;
    net::ip::tcp::socket socket(io);
    socket.connect({net::ip::make_address("127.0.0.1"), port()});
    const std::string req = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    net::write(socket, net::buffer(req));
    char buf[512];
    socket.read_some(net::buffer(buf));  // the stream has started
  }  // closed mid-stream
  bool freed = false;
  for (int i = 0; i < 400 && !freed; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::string m = http_request(port(), "GET", "/metrics").body;
    freed = m.find("ggufd_slots_active{model=\"stories\"} 0\n") != std::string::npos;
  }
  EXPECT_TRUE(freed);
}

// --no-repack (ModelOptions::repack false): the weights a packed layout exists for stay in the
// mapped file and matmul reads them there; the model serves as with its packed copies.
TEST(Loading, WithoutRepackingTheModelServesFromTheMappedFile) {
  constexpr const char* kQ4 = "models/synth/synth-llama-Q4_0.gguf";
  GGUFD_REQUIRE_SHARED(kQ4);
  for (const bool repack : {false, true}) {
    server::ServiceOptions o = test_options(kQ4);
    o.model.repack = repack;
    RunningService s(std::move(o));
    ASSERT_TRUE(s.ready()) << s.service().load_error();
    const HttpReply r = post_json(s.port(), "/v1/completions",
                                  {{"prompt", "Once upon a time"}, {"max_tokens", 8}, {"temperature", 0}, {"ignore_eos", true}});
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json()["usage"]["completion_tokens"], 8) << "repack " << repack << ": " << r.body;
  }
}

}  // namespace
}  // namespace ggufd::test
