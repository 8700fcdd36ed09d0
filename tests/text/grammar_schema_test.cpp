// JSON Schema compiler (json_schema.h): schemas found fuzzing that threw something other than a
// GrammarError (which the server would have answered with a 500).
#include "engine/text/grammar/json_schema.h"

#include <gtest/gtest.h>

#include <string>

#include "engine/text/grammar/matcher.h"

namespace engine::grammar {
namespace {

using ojson = nlohmann::ordered_json;

std::string error_of(const char* schema) {
  try {
    (void)json_schema_grammar(ojson::parse(schema));
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "";
}

// nlohmann's value(key, default) throws its type_error when the value has another type.
TEST(GrammarSchema, KeywordsOfTheWrongTypeAreGrammarErrors) {
  EXPECT_EQ(error_of(R"({"type": "string", "nullable": "yes"})"), "#: 'nullable' must be a boolean");
  EXPECT_EQ(error_of(R"({"allOf": [{"type": 1}]})"), "#/allOf/0: 'allOf' is supported for object schemas only");
  EXPECT_EQ(error_of(R"({"allOf": [{"type": ["object"]}]})"), "#/allOf/0: 'allOf' is supported for object schemas only");
  const auto g = json_schema_grammar(ojson::parse(R"({"allOf": [{"type": "object", "properties": {"a": {"const": 1}}},
                                                                {"properties": {"b": true}, "required": ["b"]}],
                                                      "nullable": true})"));
  EXPECT_TRUE(matches(g, R"({"a":1,"b":[]})"));
  EXPECT_TRUE(matches(g, "null"));
}

// A bound beside a (draft 6) numeric exclusive bound was compared through std::stod, which throws
// std::out_of_range for a subnormal value such as 1e-320. Now compared on the digits.
TEST(GrammarSchema, TighterBoundsCompareExactly) {
  const auto g = json_schema_grammar(ojson::parse(R"({"type": "number", "minimum": 0, "exclusiveMinimum": 1e-320})"));
  EXPECT_FALSE(matches(g, "0"));
  EXPECT_TRUE(matches(g, "1"));
  EXPECT_TRUE(matches(g, "0." + std::string(318, '0') + "1"));   // 1e-319
  EXPECT_FALSE(matches(g, "0." + std::string(320, '0') + "1"));  // 1e-321
  // The tighter of two bounds on each side, exclusive on a tie.
  const auto h = json_schema_grammar(ojson::parse(
      R"({"type": "integer", "minimum": 3, "exclusiveMinimum": 3, "maximum": 9, "exclusiveMaximum": 12})"));
  EXPECT_FALSE(matches(h, "3"));
  EXPECT_TRUE(matches(h, "4"));
  EXPECT_TRUE(matches(h, "9"));
  EXPECT_FALSE(matches(h, "10"));
}

}  // namespace
}  // namespace engine::grammar
