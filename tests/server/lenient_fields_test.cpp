// Lenient where clients need it (issue 17): documented OpenAI fields that cannot change the output
// are accepted, unknown fields are ignored and named in x-ggufd-ignored-fields, any model id is
// served under the real id; --strict-api restores the 400s and 404s.
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "server/api/api_error.h"
#include "server/api/request_fields.h"
#include "tests/server/fixture.h"

namespace ggufd::test {
namespace {

using nlohmann::json;

constexpr const char* kHeader = "x-ggufd-ignored-fields";

json chat(json extra = json::object()) {
  json body = {{"messages", {{{"role", "user"}, {"content", "Tell a story"}}}}, {"max_tokens", 4}, {"temperature", 0}};
  body.update(extra);
  return body;
}

json completion(json extra = json::object()) {
  json body = {{"prompt", "Once upon a time"}, {"max_tokens", 4}, {"temperature", 0}};
  body.update(extra);
  return body;
}

// The documented OpenAI chat fields that are accepted and ignored, with values clients send.
json documented_chat_fields() {
  return {{"store", false},
          {"metadata", {{"session", "abc"}}},
          {"service_tier", "auto"},
          {"prediction", {{"type", "content"}, {"content", "Once upon a time"}}},
          {"modalities", {"text"}},
          {"user", "user-1"},
          {"safety_identifier", "hash-1"},
          {"prompt_cache_key", "key-1"},
          {"stream_options", {{"include_usage", true}}},
          {"parallel_tool_calls", true}};
}

std::string header_of(const HttpReply& r) {
  const auto it = r.headers.find(kHeader);
  return it == r.headers.end() ? "(absent)" : it->second;
}

void expect_error(const HttpReply& r, int status, const std::string& param, const std::string& in_message = "") {
  EXPECT_EQ(r.status, status) << r.body;
  const json j = json::parse(r.body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error")) << r.body;
  if (!param.empty()) {
    EXPECT_EQ(j["error"]["param"], param) << r.body;
  }
  EXPECT_NE(j["error"]["message"].get<std::string>().find(in_message), std::string::npos) << r.body;
}

// --- the pieces, without a server ---

TEST(IgnoredFieldsHeader, SortedDistinctAndPrintable) {
  EXPECT_EQ(server::ignored_fields_header({"zeta", "alpha", "mid", "alpha"}), "alpha, mid, zeta");
  // Control characters, the separator, the escape character and non-ASCII bytes are percent-encoded.
  EXPECT_EQ(server::ignored_fields_header({std::string("a\r\nb"), "c,d", "50%", "t\xc3\xa9", "sp ace"}),
            "50%25, a%0D%0Ab, c%2Cd, sp%20ace, t%C3%A9");
  const std::string value = server::ignored_fields_header({std::string("\x01\x7f\0x", 4)});
  EXPECT_EQ(value, "%01%7F%00x");
  // the empty key (found by fuzz_request): named, never an empty header value
  EXPECT_EQ(server::ignored_fields_header({""}), "\"\"");
}

TEST(IgnoredFieldsHeader, LongNamesAreCutAndLongListsEnd) {
  const std::string cut = server::ignored_fields_header({std::string(1000, 'n')});
  EXPECT_EQ(cut, std::string(40, 'n') + "...");
  std::vector<std::string> many;
  for (int i = 0; i < 50; ++i) many.push_back("f" + std::to_string(100 + i));
  const std::string listed = server::ignored_fields_header(many);
  EXPECT_EQ(listed.rfind("f100, f101, ", 0), 0u) << listed;
  EXPECT_NE(listed.find("f119, ..."), std::string::npos) << listed;
  EXPECT_EQ(listed.find("f120"), std::string::npos) << listed;
}

TEST(CheckFields, UnknownFieldsAreReturnedOrRefusedWhenStrict) {
  const std::set<std::string> known = {"model", "prompt"};
  const std::set<std::string> unsupported = {"suffix"};
  const json body = {{"prompt", "x"}, {"zz", 1}, {"aa", 2}, {"suffix", nullptr}};
  EXPECT_EQ(server::check_fields(body, known, unsupported, false), (std::vector<std::string>{"aa", "zz"}));
  try {
    server::check_fields(body, known, unsupported, true);
    ADD_FAILURE() << "strict mode accepted an unknown field";
  } catch (const server::ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.param(), "aa");
  }
  // An unsupported field is a 400 in both modes (null means absent).
  for (const bool strict : {false, true}) {
    EXPECT_THROW(server::check_fields({{"suffix", "y"}}, known, unsupported, strict), server::ApiError);
  }
}

TEST(CheckTextModalities, OnlyTextOutput) {
  EXPECT_NO_THROW(server::check_text_modalities({{"modalities", {"text"}}}));
  EXPECT_NO_THROW(server::check_text_modalities({{"modalities", nullptr}}));
  EXPECT_NO_THROW(server::check_text_modalities(json::object()));
  for (const json& bad : {json{"text", "audio"}, json{"image"}, json("text"), json{1}}) {
    try {
      server::check_text_modalities({{"modalities", bad}});
      ADD_FAILURE() << "accepted modalities " << bad;
    } catch (const server::ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      EXPECT_EQ(e.param(), "modalities");
    }
  }
}

// --- over HTTP, on the default (lenient) server ---

class Lenient : public ServerTest {};

TEST_F(Lenient, DocumentedFieldsAreAcceptedSilently) {
  const HttpReply r = post_json(port(), "/v1/chat/completions", chat(documented_chat_fields()));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers.count(kHeader), 0u) << header_of(r);
  // They do not change the output.
  const HttpReply plain = post_json(port(), "/v1/chat/completions", chat());
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_EQ(r.json()["choices"], plain.json()["choices"]);

  const HttpReply c = post_json(port(), "/v1/completions",
                                completion({{"user", "u"}, {"stream_options", {{"include_usage", true}}}, {"best_of", 1}}));
  ASSERT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(c.headers.count(kHeader), 0u) << header_of(c);
}

TEST_F(Lenient, UnknownFieldsAreIgnoredAndNamed) {
  const json unknown = {{"frobnicate", 1}, {"x_client_trace", {{"id", "t"}}}, {"top_a", 0.5}};
  const HttpReply r = post_json(port(), "/v1/chat/completions", chat(unknown));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(header_of(r), "frobnicate, top_a, x_client_trace");
  EXPECT_EQ(r.json()["choices"], post_json(port(), "/v1/chat/completions", chat()).json()["choices"]);

  const HttpReply c = post_json(port(), "/v1/completions", completion(unknown));
  ASSERT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(header_of(c), "frobnicate, top_a, x_client_trace");
  // Documented fields are not named next to unknown ones.
  json mixed = documented_chat_fields();
  mixed["frobnicate"] = true;
  EXPECT_EQ(header_of(post_json(port(), "/v1/chat/completions", chat(mixed))), "frobnicate");
}

TEST_F(Lenient, StreamsNameIgnoredFieldsToo) {
  for (const char* path : {"/v1/chat/completions", "/v1/completions"}) {
    const json extra = {{"stream", true}, {"frobnicate", 1}};
    const json body = std::string(path) == "/v1/completions" ? completion(extra) : chat(extra);
    const HttpReply r = post_json(port(), path, body);
    ASSERT_EQ(r.status, 200) << path << ": " << r.body;
    EXPECT_EQ(r.headers.at("content-type"), "text/event-stream");
    EXPECT_EQ(header_of(r), "frobnicate") << path;
    EXPECT_FALSE(streamed_text(r).empty()) << path;
    EXPECT_EQ(r.events().back(), "[DONE]");
  }
}

TEST_F(Lenient, UnproducibleFieldsAreStill400s) {
  expect_error(post_json(port(), "/v1/chat/completions", chat({{"modalities", {"text", "audio"}}})), 400,
               "modalities", "audio");
  expect_error(post_json(port(), "/v1/chat/completions", chat({{"audio", {{"voice", "alloy"}, {"format", "wav"}}}})),
               400, "audio");
  expect_error(post_json(port(), "/v1/chat/completions", chat({{"web_search_options", json::object()}})), 400,
               "web_search_options");
  expect_error(post_json(port(), "/v1/chat/completions", chat({{"verbosity", "low"}})), 400, "verbosity");
  expect_error(post_json(port(), "/v1/completions", completion({{"suffix", "The end."}})), 400, "suffix");
  // Known fields keep their checks; a streamed request's stream_options too.
  expect_error(post_json(port(), "/v1/chat/completions", chat({{"temperature", "hot"}})), 400, "temperature");
  expect_error(post_json(port(), "/v1/chat/completions", chat({{"stream", true}, {"stream_options", 5}})), 400,
               "stream_options");
  expect_error(post_json(port(), "/v1/chat/completions", chat({{"model", 5}})), 400, "model");
}

TEST_F(Lenient, AnyModelIdIsServedUnderTheRealId) {
  const HttpReply r = post_json(port(), "/v1/chat/completions", chat({{"model", "gpt-4o"}}));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["model"], "stories");
  EXPECT_EQ(r.headers.count(kHeader), 0u) << header_of(r);
  const HttpReply s = post_json(port(), "/v1/completions", completion({{"model", "llama3:8b"}, {"stream", true}}));
  ASSERT_EQ(s.status, 200) << s.body;
  const auto events = s.events();
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(json::parse(events.front())["model"], "stories");
  // Looking a model up is not a request to generate: /v1/models names only the real id.
  expect_error(http_request(port(), "GET", "/v1/models/gpt-4o"), 404, "model");
}

// --- --strict-api ---

TEST(StrictApi, UnknownFieldsAndOtherModelIdsAreRefused) {
  GGUFD_REQUIRE_SHARED(kStories);
  auto s = start_service([](server::ServiceOptions& o) { o.strict_api = true; });
  ASSERT_TRUE(s->ready());
  expect_error(post_json(s->port(), "/v1/chat/completions", chat({{"frobnicate", 1}})), 400, "frobnicate",
               "Unrecognized request argument supplied: frobnicate");
  expect_error(post_json(s->port(), "/v1/completions", completion({{"frobnicate", 1}, {"stream", true}})), 400,
               "frobnicate");
  const HttpReply other = post_json(s->port(), "/v1/completions", completion({{"model", "gpt-4"}}));
  expect_error(other, 404, "model", "gpt-4");
  EXPECT_EQ(other.json()["error"]["code"], "model_not_found");
  // The served id and the documented fields are still fine.
  json fine = documented_chat_fields();
  fine["model"] = "stories";
  const HttpReply ok = post_json(s->port(), "/v1/chat/completions", chat(fine));
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(ok.headers.count(kHeader), 0u);
}

TEST(LenientCors, BrowserPagesMayReadTheHeader) {
  GGUFD_REQUIRE_SHARED(kStories);
  auto s = start_service([](server::ServiceOptions& o) { o.http.cors_origins = {"https://app.example"}; });
  ASSERT_TRUE(s->ready());
  const HttpReply r = post_json(s->port(), "/v1/completions", completion({{"frobnicate", 1}}),
                                {{"Origin", "https://app.example"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(header_of(r), "frobnicate");
  EXPECT_EQ(r.headers.at("access-control-expose-headers"), kHeader);
}

}  // namespace
}  // namespace ggufd::test
