// Speculative decoding over HTTP: a server drafting with n-grams or with a draft model answers
// exactly what a server without drafting answers (text and logprobs), /metrics counts the drafts,
// and a draft model of another vocabulary stops the server from loading, saying why.
#include <nlohmann/json.hpp>
#include <string>

#include "tests/server/fixture.h"

namespace ggufd::test {
namespace {

using nlohmann::json;

// A sample of /metrics (-1 when absent).
double metric(uint16_t port, const std::string& name) {
  const std::string body = "\n" + http_request(port, "GET", "/metrics").body;
  const size_t at = body.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::stod(body.substr(at + name.size() + 2));
}

// A story that repeats itself, greedy with logprobs, and a seeded sample.
json complete(uint16_t port, double temperature) {
  const json body = {{"prompt", "Lily had a red ball. Lily had a red ball. Lily had a red ball. Lily had"},
                     {"max_tokens", 40},
                     {"temperature", temperature},
                     {"seed", 7},
                     {"logprobs", 2}};
  const HttpReply r = post_json(port, "/v1/completions", body);
  EXPECT_EQ(r.status, 200) << r.body;
  json j = r.json();
  j.erase("id");
  j.erase("created");
  j.erase("system_fingerprint");
  return j;
}

std::unique_ptr<RunningService> serve(engine::SpecMode mode, const std::string& draft = "") {
  auto s = start_service([&](server::ServiceOptions& o) {
    o.engine.spec = mode;
    o.draft_model_path = draft;
  });
  EXPECT_TRUE(s->ready()) << s->service().load_error();
  return s;
}

TEST(SpeculationHttp, AnswersAreTheSameWithNgramOrDraftModelDrafts) {
  GGUFD_REQUIRE_SHARED(kStories);
  json plain_greedy, plain_sampled;
  {
    auto plain = serve(engine::SpecMode::kNone);
    plain_greedy = complete(plain->port(), 0);
    plain_sampled = complete(plain->port(), 0.9);
    EXPECT_EQ(metric(plain->port(), "ggufd_spec_draft_tokens_total"), 0);
  }
  for (const auto& [mode, draft] : {std::pair{engine::SpecMode::kNgram, std::string()},
                                    std::pair{engine::SpecMode::kDraft, shared_path(kStories)}}) {
    auto s = serve(mode, draft);
    EXPECT_EQ(complete(s->port(), 0), plain_greedy) << engine::spec_mode_name(mode);
    EXPECT_EQ(complete(s->port(), 0.9), plain_sampled) << engine::spec_mode_name(mode);
    EXPECT_GT(metric(s->port(), "ggufd_spec_draft_tokens_total"), 0) << engine::spec_mode_name(mode);
    EXPECT_GT(metric(s->port(), "ggufd_spec_accepted_tokens_total"), 0) << engine::spec_mode_name(mode);
  }
}

TEST(SpeculationHttp, ADraftModelOfAnotherVocabularyIsRefusedAtLoad) {
  GGUFD_REQUIRE_SHARED(kStories);
  GGUFD_REQUIRE_SHARED("models/llama-2-tiny-random.gguf");
  auto s = start_service([](server::ServiceOptions& o) {
    o.engine.spec = engine::SpecMode::kDraft;
    o.draft_model_path = shared_path("models/llama-2-tiny-random.gguf");
  });
  EXPECT_FALSE(s->ready());
  EXPECT_EQ(s->service().load_error(),
            "the draft model's vocabulary has 32000 tokens, the model's 512: a draft model must have the same "
            "vocabulary");
}

}  // namespace
}  // namespace ggufd::test
