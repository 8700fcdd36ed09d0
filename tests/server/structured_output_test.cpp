// Structured output over HTTP on a real tiny model (stories260K): every constrained reply parses
// and validates, with n > 1, streaming, both endpoints and the three ways to ask; 400s name the
// field and say where the schema or grammar is wrong.
#include <nlohmann/json.hpp>

#include "tests/server/fixture.h"
#include "tests/support/json_schema_check.h"

namespace ggufd::test {
namespace {

using nlohmann::json;

class StructuredOutput : public ServerTest {};

const json kSchema = json::parse(R"({
  "type": "object", "additionalProperties": false, "required": ["name", "age", "tags"],
  "properties": {"name": {"type": "string", "maxLength": 10},
                 "age": {"type": "integer", "minimum": 1, "maximum": 99},
                 "mood": {"enum": ["happy", "sad"]},
                 "tags": {"type": "array", "items": {"type": "string", "maxLength": 6}, "maxItems": 2}}})");

TEST_F(StructuredOutput, ChoicesOfChatAndCompletionsValidate) {
  const json rf = {{"type", "json_schema"}, {"json_schema", {{"name", "person"}, {"schema", kSchema}}}};
  const json replies[] = {
      post_json(port(), "/v1/chat/completions",
                {{"messages", {{{"role", "user"}, {"content", "a person"}}}}, {"n", 3}, {"max_tokens", 120},
                 {"seed", 5}, {"response_format", rf}})
          .json(),
      post_json(port(), "/v1/completions",
                {{"prompt", "Once"}, {"n", 2}, {"max_tokens", 120}, {"seed", 6}, {"json_schema", kSchema}})
          .json()};
  for (const json& reply : replies) {
    ASSERT_TRUE(reply.contains("choices")) << reply.dump();
    for (const json& c : reply["choices"]) {
      const std::string text = c.contains("message") ? c["message"]["content"].get<std::string>() : c["text"].get<std::string>();
      ASSERT_EQ(c["finish_reason"], "stop") << text;
      const json value = json::parse(text, nullptr, false);
      ASSERT_FALSE(value.is_discarded()) << text;
      EXPECT_EQ(test_support::schema_violation(value, kSchema), "") << text;
      EXPECT_EQ(text.find("\": "), std::string::npos) << text;  // compact: no space after a key
    }
  }
}

TEST_F(StructuredOutput, StreamedGrammarOutputMatchesUnstreamed) {
  const json body = {{"prompt", "Once"}, {"max_tokens", 40}, {"temperature", 0},
                     {"grammar", R"(root ::= ("yes" | "no") ", " [a-z]+ ".")"}};
  const json whole = post_json(port(), "/v1/completions", body).json();
  const std::string text = whole["choices"][0]["text"];
  EXPECT_TRUE(text.rfind("yes, ", 0) == 0 || text.rfind("no, ", 0) == 0) << text;
  json streamed_body = body;
  streamed_body["stream"] = true;
  std::string streamed;
  for (const std::string& e : post_json(port(), "/v1/completions", streamed_body).events()) {
    if (e == "[DONE]") break;
    const json chunk = json::parse(e);
    for (const json& c : chunk["choices"]) streamed += c.value("text", "");
  }
  EXPECT_EQ(streamed, text);
}

// Schemas that once answered 500 (a dead end after "1" under exclusiveMaximum 1) or 400 (length
// bounds with a format, multipleOf): every seed, at a high temperature, gives a valid value.
TEST_F(StructuredOutput, CombinedConstraintsValidateOnEverySeed) {
  const json schemas[] = {
      json::parse(R"({"type":"object","properties":{"n":{"type":"integer"},
                      "x":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1}},"required":["n","x"]})"),
      json::parse(R"({"type":"object","properties":{"email":{"type":"string","format":"email","maxLength":30},
                      "qty":{"type":"integer","multipleOf":5,"minimum":0,"maximum":100}},"required":["email","qty"]})")};
  for (const json& schema : schemas) {
    const json rf = {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", schema}}}};
    for (int seed = 0; seed < 6; ++seed) {
      const HttpReply r = post_json(port(), "/v1/chat/completions",
                                    {{"messages", {{{"role", "user"}, {"content", "go"}}}}, {"max_tokens", 200},
                                     {"seed", seed}, {"temperature", 1.5}, {"top_k", 0}, {"response_format", rf}});
      ASSERT_EQ(r.status, 200) << r.body;
      const json c = r.json()["choices"][0];
      const std::string text = c["message"]["content"];
      if (c["finish_reason"] != "stop") continue;  // cut by max_tokens inside a long string
      const json value = json::parse(text, nullptr, false);
      ASSERT_FALSE(value.is_discarded()) << text;
      EXPECT_EQ(test_support::schema_violation(value, schema), "") << text;
    }
  }
}

TEST_F(StructuredOutput, CutByMaxTokensIsLength) {
  const json r = post_json(port(), "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 3}, {"json_schema", kSchema}}).json();
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(r["choices"][0]["text"].get<std::string>().rfind("{\"", 0), 0u);
}

TEST_F(StructuredOutput, InvalidConstraintsAre400sNamingTheField) {
  const json msgs = {{{"role", "user"}, {"content", "x"}}};
  struct Case {
    json body;
    std::string param, says;
  };
  const Case cases[] = {
      {{{"messages", msgs}, {"response_format", {{"type", "json_schema"}, {"json_schema", {{"schema", {{"type", "object"}, {"properties", {{"a", {{"not", json::object()}}}}}}}}}}}},
       "response_format", "#/properties/a: 'not' is not supported"},
      {{{"prompt", "x"}, {"json_schema", {{"type", "integer"}, {"minimum", 5}, {"maximum", "ten"}}}}, "json_schema", "'maximum' must be a number"},
      {{{"prompt", "x"}, {"json_schema", {{"$ref", "#/$defs/missing"}}}}, "json_schema", "does not resolve"},
      {{{"prompt", "x"}, {"grammar", "root ::= \"a\" (b"}}, "grammar", "GBNF line 1, column"},
      {{{"prompt", "x"}, {"grammar", "root ::= x\nx ::= x \"a\""}}, "grammar", "left-recursive"},
      {{{"prompt", "x"}, {"json_schema", {{"type", "string"}, {"pattern", "^(?=a)b$"}}}}, "json_schema", "offset"},
      {{{"prompt", "x"}, {"json_schema", {{"type", "object"}}}, {"grammar", "root ::= \"a\""}}, "grammar", "only one of"},
      {{{"messages", msgs}, {"response_format", {{"type", "json_schema"}}}}, "response_format", "json_schema"},
      {{{"prompt", "x"}, {"json_schema", {{"type", "number"}, {"exclusiveMinimum", 1}, {"exclusiveMaximum", 1}}}},
       "json_schema", "no number satisfies 'exclusiveMinimum' 1, 'exclusiveMaximum' 1"},
  };
  for (const Case& c : cases) {
    const std::string target = c.body.contains("messages") ? "/v1/chat/completions" : "/v1/completions";
    const HttpReply r = post_json(port(), target, c.body);
    EXPECT_EQ(r.status, 400) << c.body.dump() << " -> " << r.body;
    const json j = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(j.contains("error")) << r.body;
    EXPECT_EQ(j["error"]["param"], c.param) << r.body;
    EXPECT_NE(j["error"]["message"].get<std::string>().find(c.says), std::string::npos) << r.body;
  }
}

}  // namespace
}  // namespace ggufd::test
