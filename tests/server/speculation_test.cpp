// Speculative decoding over HTTP: a server drafting with n-grams or with a draft model answers
// exactly what a server without drafting answers -- greedy with logprobs, seeded sampling, n > 1,
// stop strings, max_tokens, streaming, response_format and forced tool calls -- and /metrics
// counts the drafts; so does a qwen35 file drafting with its own NextN block (--spec mtp, auto: which
// stops drafting for the steps where drafts are not accepted, counted too);
// a draft model that is not a model, or of another vocabulary, and mtp for a model without NextN
// layers stop the server from loading, saying why.
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/server/fixture.h"

namespace ggufd::test {
namespace {

using nlohmann::json;

// A sample of /metrics (-1 when absent).
const std::string kStory = "Lily had a red ball. Lily had a red ball. Lily had a red ball. Lily had";
const json kPerson = json::parse(R"({"type": "object", "additionalProperties": false, "required": ["name", "age"],
  "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer", "minimum": 1}}})");
const json kCityWeather = json::parse(R"({"type": "function", "function": {"name": "get_weather",
  "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}},
  "required": ["city"]}}})");

// Every request of the comparison: (endpoint, body).
std::vector<std::pair<std::string, json>> requests() {
  return {
      {"/v1/completions", {{"prompt", kStory}, {"max_tokens", 40}, {"temperature", 0}, {"logprobs", 2}}},
      {"/v1/completions", {{"prompt", kStory}, {"max_tokens", 40}, {"temperature", 0.9}, {"seed", 7}, {"logprobs", 2}}},
      {"/v1/completions", {{"prompt", kStory}, {"max_tokens", 30}, {"temperature", 0.8}, {"seed", 3}, {"n", 3}}},
      {"/v1/completions", {{"prompt", kStory}, {"max_tokens", 3}, {"temperature", 0}}},
      {"/v1/completions", {{"prompt", kStory}, {"max_tokens", 60}, {"temperature", 0}, {"stop", {"play with"}}}},
      {"/v1/completions", {{"prompt", kStory}, {"max_tokens", 40}, {"temperature", 0}, {"stream", true}}},
      {"/v1/chat/completions",
       {{"messages", one_user_message("Tell me about Lily.")}, {"max_tokens", 80}, {"temperature", 0},
        {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "p"}, {"schema", kPerson}}}}}}},
      {"/v1/chat/completions",
       {{"messages", one_user_message("Tell me about Lily.")}, {"max_tokens", 80}, {"seed", 2}, {"n", 2},
        {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "p"}, {"schema", kPerson}}}}}}},
      {"/v1/chat/completions",
       {{"messages", one_user_message("Weather in Oslo?")}, {"tools", {kCityWeather}}, {"tool_choice", "required"},
        {"max_tokens", 200}, {"temperature", 0}}},
  };
}

// The answer without what differs between two servers (ids, times); a stream as its chunks' texts
// and finish reasons, in order.
json answer(uint16_t port, const std::string& endpoint, const json& body) {
  const HttpReply r = post_json(port, endpoint, body);
  EXPECT_EQ(r.status, 200) << r.body;
  if (body.value("stream", false)) {
    json chunks = json::array();
    for (const std::string& e : r.events()) {
      if (e == "[DONE]") break;
      const json chunk = json::parse(e);
      for (const json& c : chunk["choices"]) chunks.push_back({c.value("text", ""), c["finish_reason"]});
    }
    return chunks;
  }
  json j = r.json();
  j.erase("id");
  j.erase("created");
  j.erase("system_fingerprint");
  j.erase("timings");
  for (json& c : j["choices"]) {  // tool call ids are made up per call
    if (c.contains("message") && c["message"].contains("tool_calls")) {
      for (json& t : c["message"]["tool_calls"]) t.erase("id");
    }
  }
  return j;
}

std::unique_ptr<RunningService> serve(engine::SpecMode mode, const std::string& draft = "") {
  auto s = start_service([&](server::ServiceOptions& o) {
    o.model.engine.n_ctx = 1024;
    o.model.engine.spec = mode;
    o.model.draft_model_path = draft;
  });
  EXPECT_TRUE(s->ready()) << s->service().load_error();
  return s;
}

TEST(SpeculationHttp, AnswersAreTheSameWithNgramOrDraftModelDrafts) {
  GGUFD_REQUIRE_SHARED(kStories);
  std::vector<json> plain;
  {
    auto s = serve(engine::SpecMode::kNone);
    for (const auto& [endpoint, body] : requests()) plain.push_back(answer(s->port(), endpoint, body));
    EXPECT_EQ(metric(s->port(), "ggufd_spec_draft_tokens_total"), 0);
  }
  ASSERT_EQ(plain[3]["choices"][0]["finish_reason"], "length");
  ASSERT_EQ(plain[4]["choices"][0]["finish_reason"], "stop") << plain[4].dump() << ": the stop string is met";
  ASSERT_EQ(plain[8]["choices"][0]["finish_reason"], "tool_calls") << plain[8].dump();
  for (const auto& [mode, draft] : {std::pair{engine::SpecMode::kNgram, std::string()},
                                    std::pair{engine::SpecMode::kDraft, shared_path(kStories)}}) {
    auto s = serve(mode, draft);
    const auto reqs = requests();
    for (size_t i = 0; i < reqs.size(); ++i) {
      EXPECT_EQ(answer(s->port(), reqs[i].first, reqs[i].second), plain[i])
          << engine::spec_mode_name(mode) << ", request " << i << ": " << reqs[i].second.dump();
    }
    EXPECT_GT(metric(s->port(), "ggufd_spec_draft_tokens_total"), 0) << engine::spec_mode_name(mode);
    EXPECT_GT(metric(s->port(), "ggufd_spec_accepted_tokens_total"), 0) << engine::spec_mode_name(mode);
  }
}

// A qwen35 file with a NextN / MTP block drafts with it, asked (--spec mtp) or by --spec auto,
// and answers what a server that does not draft answers.
TEST(SpeculationHttp, AnswersAreTheSameWithMtpDrafts) {
  const std::string mtp_file = "models/synth/synth-qwen35mtp-Q8_0.gguf";
  GGUFD_REQUIRE_SHARED(mtp_file);
  auto serve_mtp = [&](engine::SpecMode mode, bool automatic) {
    server::ServiceOptions o = test_options(mtp_file);
    o.model.engine.n_ctx = 1024;
    o.model.engine.spec = mode;
    o.model.spec_auto = automatic;
    auto s = std::make_unique<RunningService>(std::move(o));
    EXPECT_TRUE(s->ready()) << s->service().load_error();
    return s;
  };
  const auto reqs = requests();
  std::vector<json> plain;
  {
    auto s = serve_mtp(engine::SpecMode::kNone, false);
    for (const auto& [endpoint, body] : reqs) plain.push_back(answer(s->port(), endpoint, body));
    EXPECT_EQ(metric(s->port(), "ggufd_spec_draft_tokens_total"), 0);
  }
  for (const bool automatic : {true, false}) {  // (asked: the first requests only, to save time)
    auto s = serve_mtp(automatic ? engine::SpecMode::kNone : engine::SpecMode::kMtp, automatic);
    for (size_t i = 0; i < (automatic ? reqs.size() : 2); ++i) {
      EXPECT_EQ(answer(s->port(), reqs[i].first, reqs[i].second), plain[i])
          << (automatic ? "auto" : "mtp") << ", request " << i << ": " << reqs[i].second.dump();
    }
    EXPECT_GT(metric(s->port(), "ggufd_spec_draft_tokens_total"), 0) << (automatic ? "auto picks mtp" : "mtp");
    EXPECT_GE(metric(s->port(), "ggufd_spec_accepted_tokens_total"), 0);
    // Random weights' drafts are not accepted: auto stops drafting for a while, mtp drafts on.
    if (automatic) {
      EXPECT_GT(metric(s->port(), "ggufd_spec_paused_steps_total"), 0);
    } else {
      EXPECT_EQ(metric(s->port(), "ggufd_spec_paused_steps_total"), 0);
    }
  }
}

TEST(SpeculationHttp, MtpForAModelWithoutNextNLayersIsRefusedAtLoad) {
  GGUFD_REQUIRE_SHARED(kStories);
  auto s = start_service([](server::ServiceOptions& o) { o.model.engine.spec = engine::SpecMode::kMtp; });
  EXPECT_FALSE(s->ready());
  EXPECT_EQ(s->service().load_error(),
            "speculative decoding with mtp needs a model with NextN / MTP layers (nextn_predict_layers); this "
            "llama model has none: use --spec ngram or a draft model");
}

TEST(SpeculationHttp, ADraftModelOfAnotherVocabularyIsRefusedAtLoad) {
  GGUFD_REQUIRE_SHARED(kStories);
  GGUFD_REQUIRE_SHARED("models/llama-2-tiny-random.gguf");
  auto s = start_service([](server::ServiceOptions& o) {
    o.model.engine.spec = engine::SpecMode::kDraft;
    o.model.draft_model_path = shared_path("models/llama-2-tiny-random.gguf");
  });
  EXPECT_FALSE(s->ready());
  EXPECT_EQ(s->service().load_error(),
            "the draft model's vocabulary has 32000 tokens, the model's 512: a draft model must have the same "
            "vocabulary");
}

TEST(SpeculationHttp, ADraftModelThatIsNotAModelIsRefusedAtLoad) {
  GGUFD_REQUIRE_SHARED(kStories);
  const std::string path = (std::filesystem::temp_directory_path() /
                           ("ggufd-spec-test-" + std::to_string(::getpid()) + ".gguf")).string();
  std::ofstream(path) << "GGUF, or so it says";
  for (const std::string& draft : {path, path + ".missing"}) {
    auto s = start_service([&](server::ServiceOptions& o) {
      o.model.engine.spec = engine::SpecMode::kDraft;
      o.model.draft_model_path = draft;
    });
    EXPECT_FALSE(s->ready());
    const std::string error = s->service().load_error();
    EXPECT_EQ(error.rfind("the draft model (--model-draft): ", 0), 0u) << error;
    EXPECT_NE(error.find(draft), std::string::npos) << error;
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ggufd::test
