// A hybrid stack (qwen35: Gated DeltaNet + gated attention) served end to end: completions and
// chat with several slots at once, a shared system prompt resumed from a recurrent-state snapshot
// (cached_tokens, /metrics), answers equal to a server that shares nothing and to requests run one
// at a time, and the metadata endpoint describing the new hyperparameters.
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/server/fixture.h"

namespace ggufd::test {
namespace {

using nlohmann::json;

constexpr const char* kQwen35 = "models/synth/synth-qwen35-Q8_0.gguf";

const char* const kSystem =
    "You are a kind storyteller for small children. Every story you tell is short, happy and simple. "
    "It has a little girl called Lily, her big red ball and her friend the old brown dog, and it ends "
    "with everybody going home for a warm dinner before the sun goes down behind the hill.";

std::unique_ptr<RunningService> start_qwen35(int64_t prefix_cache_bytes) {
  server::ServiceOptions o = test_options(kQwen35);
  o.model.alias = "qwen35";
  o.model.engine.n_slots = 2;
  o.model.engine.prefix_cache_bytes = prefix_cache_bytes;
  return std::make_unique<RunningService>(std::move(o));
}

json chat(uint16_t port, const std::string& user) {
  const json body = {{"messages", {{{"role", "system"}, {"content", kSystem}}, {{"role", "user"}, {"content", user}}}},
                     {"max_tokens", 12},
                     {"temperature", 0},
                     {"ignore_eos", true}};
  const HttpReply r = post_json(port, "/v1/chat/completions", body);
  EXPECT_EQ(r.status, 200) << r.body;
  return r.json();
}

int64_t cached_tokens(const json& reply) { return reply["usage"]["prompt_tokens_details"]["cached_tokens"]; }

TEST(HybridHttp, ASharedSystemPromptResumesFromASnapshot) {
  GGUFD_REQUIRE_SHARED(kQwen35);
  auto shared = start_qwen35(1 << 20);
  ASSERT_TRUE(shared->ready()) << shared->service().load_error();
  const json first = chat(shared->port(), "Tell me about the cat.");
  EXPECT_EQ(cached_tokens(first), 0);
  ASSERT_GE(first["usage"]["prompt_tokens"].get<int64_t>(), 64);
  EXPECT_GT(metric(shared->port(), "ggufd_prefix_cache_snapshot_blocks"), 0);
  const json second = chat(shared->port(), "Tell me about the dog.");
  // From a snapshot at a block end, or (back on the first request's slot) from that slot's own
  // state rolled back within its last two chunks: not always a whole number of blocks.
  EXPECT_GE(cached_tokens(second), 32) << "at least the first block of the shared system prompt";
  EXPECT_LT(cached_tokens(second), second["usage"]["prompt_tokens"].get<int64_t>());

  auto plain = start_qwen35(0);
  ASSERT_TRUE(plain->ready()) << plain->service().load_error();
  const json alone = chat(plain->port(), "Tell me about the dog.");
  EXPECT_EQ(alone["choices"][0]["message"]["content"], second["choices"][0]["message"]["content"]);
}

// Four completions at once on two slots (prompt chunks and decode steps mixed in the batches) give
// the answers they give one at a time.
TEST(HybridHttp, ConcurrentRequestsAnswerAsAlone) {
  GGUFD_REQUIRE_SHARED(kQwen35);
  auto s = start_qwen35(1 << 20);
  ASSERT_TRUE(s->ready()) << s->service().load_error();
  const std::vector<std::string> prompts = {"Once upon a time", "The little dog ran to the park and saw a big",
                                            "Lily had a red ball.", "One day, a girl named Sue went"};
  auto complete = [&](const std::string& p) {
    const HttpReply r = post_json(s->port(), "/v1/completions",
                                  {{"prompt", p}, {"max_tokens", 16}, {"temperature", 0}, {"ignore_eos", true}});
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json()["choices"][0]["text"].get<std::string>();
  };
  std::vector<std::string> alone;
  for (const std::string& p : prompts) alone.push_back(complete(p));
  std::vector<std::string> together(prompts.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < prompts.size(); ++i) threads.emplace_back([&, i] { together[i] = complete(prompts[i]); });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(together, alone);
}

TEST(HybridHttp, MetadataDescribesTheHybridStack) {
  GGUFD_REQUIRE_SHARED(kQwen35);
  auto s = start_qwen35(1 << 20);
  ASSERT_TRUE(s->ready()) << s->service().load_error();
  const HttpReply r = http_request(s->port(), "GET", "/v1/models/qwen35/metadata");
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string body = r.body;
  for (const char* field : {"delta_net_layers", "attention_layers", "delta_net", "recurrent_state", "rope_sections"}) {
    EXPECT_NE(body.find(field), std::string::npos) << field << " in " << body.substr(0, 400);
  }
}

}  // namespace
}  // namespace ggufd::test
