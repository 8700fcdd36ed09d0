// The test-support JSON Schema validator (tests/support/json_schema_check.h), keyword by keyword,
// and the random schema generator (tests/support/schema_gen.h) it checks structured output with.
#include "tests/support/json_schema_check.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "tests/support/schema_gen.h"

namespace test_support {
namespace {

using json = nlohmann::json;

::testing::AssertionResult valid(const json& instance, const json& schema) {
  std::string err = schema_violation(instance, schema);
  if (err.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << instance.dump() << " rejected: " << err;
}

// Invalid, and the message names the instance location and the keyword.
::testing::AssertionResult invalid(const json& instance, const json& schema,
                                   const std::string& pointer, const std::string& keyword) {
  std::string err = schema_violation(instance, schema);
  if (err.empty()) return ::testing::AssertionFailure() << instance.dump() << " accepted";
  std::string where = "instance \"" + pointer + "\" fails \"" + keyword + "\"";
  if (err.rfind(where, 0) != 0) {
    return ::testing::AssertionFailure() << "expected message to start with " << where << ", got "
                                         << err;
  }
  return ::testing::AssertionSuccess();
}

TEST(JsonSchemaCheck, Type) {
  json s = {{"type", "string"}};
  EXPECT_TRUE(valid("x", s));
  EXPECT_TRUE(invalid(1, s, "", "type"));
  EXPECT_TRUE(invalid(nullptr, s, "", "type"));
  EXPECT_TRUE(valid(true, {{"type", "boolean"}}));
  EXPECT_TRUE(valid(nullptr, {{"type", "null"}}));
  EXPECT_TRUE(valid(json::array(), {{"type", "array"}}));
  EXPECT_TRUE(invalid(json::array(), {{"type", "object"}}, "", "type"));
  EXPECT_TRUE(valid(2.5, {{"type", "number"}}));
  EXPECT_TRUE(valid(-3, {{"type", "number"}}));
  EXPECT_TRUE(invalid("1", {{"type", "number"}}, "", "type"));
}

TEST(JsonSchemaCheck, IntegerIsANumberWithoutFraction) {
  json s = {{"type", "integer"}};
  EXPECT_TRUE(valid(3, s));
  EXPECT_TRUE(valid(-7, s));
  EXPECT_TRUE(valid(18446744073709551615ull, s));
  EXPECT_TRUE(valid(1.0, s));
  EXPECT_TRUE(valid(json::parse("-2.0e3"), s));
  EXPECT_TRUE(invalid(1.5, s, "", "type"));
  EXPECT_TRUE(invalid(true, s, "", "type"));
  EXPECT_TRUE(invalid("3", s, "", "type"));
}

TEST(JsonSchemaCheck, TypeArray) {
  json s = {{"type", {"string", "null"}}};
  EXPECT_TRUE(valid("x", s));
  EXPECT_TRUE(valid(nullptr, s));
  EXPECT_TRUE(invalid(0, s, "", "type"));
  EXPECT_TRUE(valid(4.0, {{"type", {"integer", "boolean"}}}));
  EXPECT_TRUE(invalid(4.5, {{"type", {"integer", "boolean"}}}, "", "type"));
}

TEST(JsonSchemaCheck, EnumAndConst) {
  json e = {{"enum", {"red", 2, nullptr, {{"a", 1}}}}};
  EXPECT_TRUE(valid("red", e));
  EXPECT_TRUE(valid(2, e));
  EXPECT_TRUE(valid(2.0, e));
  EXPECT_TRUE(valid(nullptr, e));
  EXPECT_TRUE(valid(json{{"a", 1}}, e));
  EXPECT_TRUE(invalid("blue", e, "", "enum"));
  EXPECT_TRUE(invalid(json{{"a", 2}}, e, "", "enum"));
  json c = {{"const", "fixed"}};
  EXPECT_TRUE(valid("fixed", c));
  EXPECT_TRUE(invalid("Fixed", c, "", "const"));
  EXPECT_TRUE(invalid(json::array({1, 2}), {{"const", {2, 1}}}, "", "const"));
}

TEST(JsonSchemaCheck, PropertiesAndRequired) {
  json s = {{"type", "object"},
            {"properties", {{"name", {{"type", "string"}}}, {"age", {{"type", "integer"}}}}},
            {"required", {"name"}}};
  EXPECT_TRUE(valid({{"name", "x"}}, s));
  EXPECT_TRUE(valid({{"name", "x"}, {"age", 3}, {"other", true}}, s));
  EXPECT_TRUE(invalid({{"age", 3}}, s, "", "required"));
  EXPECT_TRUE(invalid({{"name", "x"}, {"age", "3"}}, s, "/age", "type"));
  EXPECT_TRUE(valid("not an object", {{"properties", s["properties"]}, {"required", {"name"}}}));
}

TEST(JsonSchemaCheck, PointerEscapesKeysAndNests) {
  json inner = {{"type", "object"}, {"properties", {{"a/b~c", {{"type", "integer"}}}}}};
  json s = {{"type", "object"}, {"properties", {{"outer", {{"type", "array"}, {"items", inner}}}}}};
  EXPECT_TRUE(invalid({{"outer", {json{{"a/b~c", 1}}, json{{"a/b~c", "x"}}}}}, s,
                      "/outer/1/a~1b~0c", "type"));
  EXPECT_TRUE(invalid({{"ключ \"q\"", 1}}, {{"additionalProperties", false}}, "/ключ \"q\"",
                      "additionalProperties"));
}

TEST(JsonSchemaCheck, AdditionalProperties) {
  json s = {{"properties", {{"a", {{"type", "integer"}}}}}, {"additionalProperties", false}};
  EXPECT_TRUE(valid({{"a", 1}}, s));
  EXPECT_TRUE(valid(json::object(), s));
  EXPECT_TRUE(invalid({{"a", 1}, {"b", 2}}, s, "/b", "additionalProperties"));
  json typed = {{"properties", {{"a", {{"type", "integer"}}}}},
                {"additionalProperties", {{"type", "string"}}}};
  EXPECT_TRUE(valid({{"a", 1}, {"b", "x"}}, typed));
  EXPECT_TRUE(invalid({{"a", 1}, {"b", 2}}, typed, "/b", "type"));
  json patterned = {{"patternProperties", {{"^x-", {{"type", "integer"}}}}},
                    {"additionalProperties", false}};
  EXPECT_TRUE(valid({{"x-a", 1}}, patterned));
  EXPECT_TRUE(invalid({{"x-a", "1"}}, patterned, "/x-a", "type"));
  EXPECT_TRUE(invalid({{"y", 1}}, patterned, "/y", "additionalProperties"));
}

TEST(JsonSchemaCheck, ItemsAndBounds) {
  json s = {{"type", "array"}, {"items", {{"type", "integer"}}}, {"minItems", 1}, {"maxItems", 3}};
  EXPECT_TRUE(valid({1}, s));
  EXPECT_TRUE(valid({1, 2, 3}, s));
  EXPECT_TRUE(invalid(json::array(), s, "", "minItems"));
  EXPECT_TRUE(invalid({1, 2, 3, 4}, s, "", "maxItems"));
  EXPECT_TRUE(invalid({1, "2"}, s, "/1", "type"));
}

TEST(JsonSchemaCheck, PrefixItems) {
  json tuple = {{"prefixItems", {{{"type", "string"}}, {{"type", "integer"}}}}};
  EXPECT_TRUE(valid({"a", 1}, tuple));
  EXPECT_TRUE(valid({"a"}, tuple));
  EXPECT_TRUE(valid({"a", 1, nullptr, true}, tuple));  // nothing said about the rest
  EXPECT_TRUE(invalid({1, 1}, tuple, "/0", "type"));
  json closed = tuple;
  closed["items"] = false;
  EXPECT_TRUE(valid({"a", 1}, closed));
  EXPECT_TRUE(invalid({"a", 1, 2}, closed, "/2", "items"));
  json rest = tuple;
  rest["items"] = {{"type", "boolean"}};
  EXPECT_TRUE(valid({"a", 1, true, false}, rest));
  EXPECT_TRUE(invalid({"a", 1, true, 0}, rest, "/3", "type"));
  // Draft 4-7 tuples: items as an array, additionalItems for the rest.
  json old = {{"items", {{{"type", "string"}}}}, {"additionalItems", false}};
  EXPECT_TRUE(valid({"a"}, old));
  EXPECT_TRUE(invalid({"a", "b"}, old, "/1", "items"));
}

TEST(JsonSchemaCheck, AnyOfOneOfAllOf) {
  json any = {{"anyOf", {{{"type", "string"}}, {{"type", "integer"}, {"minimum", 0}}}}};
  EXPECT_TRUE(valid("x", any));
  EXPECT_TRUE(valid(5, any));
  EXPECT_TRUE(invalid(-5, any, "", "anyOf"));
  json one = {{"oneOf", {{{"type", "integer"}}, {{"type", "number"}, {"maximum", 10}}}}};
  EXPECT_TRUE(valid(20, one));   // an integer above 10: the first branch only
  EXPECT_TRUE(valid(2.5, one));  // a fraction up to 10: the second only
  EXPECT_TRUE(invalid(5, one, "", "oneOf"));
  EXPECT_TRUE(invalid("x", one, "", "oneOf"));
  json all = {{"allOf", {{{"type", "string"}}, {{"maxLength", 2}}}}};
  EXPECT_TRUE(valid("ab", all));
  EXPECT_TRUE(invalid("abc", all, "", "maxLength"));
  EXPECT_TRUE(invalid(1, all, "", "type"));
}

TEST(JsonSchemaCheck, Refs) {
  json s = {{"$defs", {{"pos", {{"type", "integer"}, {"minimum", 1}}}}},
            {"definitions", {{"name", {{"type", "string"}}}}},
            {"properties",
             {{"n", {{"$ref", "#/$defs/pos"}}}, {"s", {{"$ref", "#/definitions/name"}}}}}};
  EXPECT_TRUE(valid({{"n", 1}, {"s", "x"}}, s));
  EXPECT_TRUE(invalid({{"n", 0}}, s, "/n", "minimum"));
  EXPECT_TRUE(invalid({{"s", 0}}, s, "/s", "type"));
  EXPECT_TRUE(invalid(1, {{"$ref", "#/$defs/missing"}}, "", "$ref"));
  EXPECT_TRUE(invalid(1, {{"$ref", "other.json#/x"}}, "", "$ref"));
}

TEST(JsonSchemaCheck, RecursiveRefs) {
  json node = {{"type", "object"},
               {"properties",
                {{"value", {{"type", "integer"}}},
                 {"children", {{"type", "array"}, {"items", {{"$ref", "#"}}}, {"maxItems", 2}}}}},
               {"required", {"value"}},
               {"additionalProperties", false}};
  json tree = json::parse(
      R"({"value":1,"children":[{"value":2},{"value":3,"children":[{"value":4}]}]})");
  EXPECT_TRUE(valid(tree, node));
  tree["children"][1]["children"][0]["value"] = "4";
  EXPECT_TRUE(invalid(tree, node, "/children/1/children/0/value", "type"));
  tree["children"][1]["children"] = {json{{"value", 1}}, json{{"value", 1}}, json{{"value", 1}}};
  EXPECT_TRUE(invalid(tree, node, "/children/1/children", "maxItems"));
  // The same under $defs.
  json defs = {{"$defs", {{"node", node}}}, {"$ref", "#/$defs/node"}};
  defs["$defs"]["node"]["properties"]["children"]["items"]["$ref"] = "#/$defs/node";
  EXPECT_TRUE(valid(json::parse(R"({"value":1,"children":[{"value":2}]})"), defs));
  EXPECT_TRUE(
      invalid(json::parse(R"({"value":1,"children":[{}]})"), defs, "/children/0", "required"));
}

TEST(JsonSchemaCheck, RefLoopsAndDeepNestingStop) {
  EXPECT_TRUE(invalid(1, {{"$ref", "#"}}, "", "$ref"));
  EXPECT_TRUE(invalid(1, {{"anyOf", {{{"$ref", "#"}}}}}, "", "anyOf"));
  json deep = 1;
  for (int i = 0; i < 100; ++i) deep = json::array({deep});
  EXPECT_FALSE(schema_violation(deep, {{"items", {{"$ref", "#"}}}}).empty());
}

TEST(JsonSchemaCheck, Nullable) {
  json s = {{"type", "string"}, {"nullable", true}, {"minLength", 2}};
  EXPECT_TRUE(valid(nullptr, s));
  EXPECT_TRUE(valid("ab", s));
  EXPECT_TRUE(invalid("a", s, "", "minLength"));
  EXPECT_TRUE(invalid(1, s, "", "type"));
  EXPECT_TRUE(invalid(nullptr, {{"type", "string"}, {"nullable", false}}, "", "type"));
}

TEST(JsonSchemaCheck, LengthsCountCodePoints) {
  json s = {{"type", "string"}, {"minLength", 2}, {"maxLength", 3}};
  EXPECT_TRUE(valid("日本", s));       // 6 bytes, 2 code points
  EXPECT_TRUE(valid("😀😀😀", s));    // 12 bytes, 3 code points
  EXPECT_TRUE(valid("a\"\\", s));
  EXPECT_TRUE(invalid("日", s, "", "minLength"));
  EXPECT_TRUE(invalid("ab日本", s, "", "maxLength"));
  EXPECT_TRUE(valid("", {{"maxLength", 0}}));
  EXPECT_TRUE(valid(12345, {{"maxLength", 1}}));  // not a string: length keywords do not apply
}

TEST(JsonSchemaCheck, Pattern) {
  json s = {{"pattern", "^[a-z]{2,5}$"}};
  EXPECT_TRUE(valid("abc", s));
  EXPECT_TRUE(invalid("abcdef", s, "", "pattern"));
  EXPECT_TRUE(invalid("ab1", s, "", "pattern"));
  EXPECT_TRUE(valid("call 555-1234 now", {{"pattern", "\\d{3}-\\d{4}"}}));  // unanchored
  EXPECT_TRUE(invalid("555-123", {{"pattern", "^\\d{3}-\\d{4}$"}}, "", "pattern"));
  EXPECT_TRUE(invalid("x", {{"pattern", "(unclosed"}}, "", "pattern"));
  EXPECT_TRUE(valid(5, s));
}

TEST(JsonSchemaCheck, FormatDate) {
  json s = {{"format", "date"}};
  for (const char* ok : {"2024-02-29", "2000-02-29", "1999-12-31", "2023-04-30"}) {
    EXPECT_TRUE(valid(ok, s)) << ok;
  }
  for (const char* bad : {"2023-02-29", "1900-02-29", "2023-04-31", "2023-13-01", "2023-00-10",
                          "2023-01-00", "2023-1-01", "23-01-01", "2023-01-01T", "2023/01/01"}) {
    EXPECT_TRUE(invalid(bad, s, "", "format")) << bad;
  }
}

TEST(JsonSchemaCheck, FormatTime) {
  json s = {{"format", "time"}};
  for (const char* ok : {"00:00:00", "23:59:59", "12:30:15.123", "08:00:00Z", "08:00:00+05:30",
                         "08:00:00.5-08:00", "23:59:60Z"}) {
    EXPECT_TRUE(valid(ok, s)) << ok;
  }
  for (const char* bad : {"24:00:00", "12:60:00", "12:00:61", "12:00", "12:00:00.", "12:00:00+5:30",
                          "12:00:00+24:00", "12:00:00 Z", "1:00:00", "12:00:00z1"}) {
    EXPECT_TRUE(invalid(bad, s, "", "format")) << bad;
  }
}

TEST(JsonSchemaCheck, FormatDateTime) {
  json s = {{"format", "date-time"}};
  EXPECT_TRUE(valid("2024-02-29T13:45:00Z", s));
  EXPECT_TRUE(valid("2024-02-29T13:45:00.25+01:00", s));
  EXPECT_TRUE(valid("2024-02-29T13:45:00", s));
  EXPECT_TRUE(invalid("2024-02-29 13:45:00Z", s, "", "format"));
  EXPECT_TRUE(invalid("2023-02-29T13:45:00Z", s, "", "format"));
  EXPECT_TRUE(invalid("2024-02-29T25:45:00Z", s, "", "format"));
  EXPECT_TRUE(invalid("2024-02-29", s, "", "format"));
}

TEST(JsonSchemaCheck, FormatUuidAndEmail) {
  json u = {{"format", "uuid"}};
  EXPECT_TRUE(valid("123e4567-e89b-12d3-a456-426614174000", u));
  EXPECT_TRUE(valid("123E4567-E89B-12D3-A456-426614174000", u));
  EXPECT_TRUE(invalid("123e4567e89b12d3a456426614174000", u, "", "format"));
  EXPECT_TRUE(invalid("123e4567-e89b-12d3-a456-42661417400g", u, "", "format"));
  EXPECT_TRUE(invalid("123e4567-e89b-12d3-a456-4266141740001", u, "", "format"));
  json e = {{"format", "email"}};
  EXPECT_TRUE(valid("alice@example.com", e));
  EXPECT_TRUE(valid("bob.smith+tag@mail.co.uk", e));
  for (const char* bad : {"alice", "alice@example", "a b@example.com", "@example.com",
                          "a@b@example.com", "alice@.com", "alice@example.", "al\tice@x.com"}) {
    EXPECT_TRUE(invalid(bad, e, "", "format")) << bad;
  }
  EXPECT_TRUE(valid("anything", {{"format", "hostname"}}));  // unknown formats are not checked
  EXPECT_TRUE(valid(1, u));
}

TEST(JsonSchemaCheck, NumericBounds) {
  json s = {{"minimum", -1.5}, {"maximum", 10}};
  EXPECT_TRUE(valid(-1.5, s));
  EXPECT_TRUE(valid(10, s));
  EXPECT_TRUE(valid(10.0, s));
  EXPECT_TRUE(invalid(-2, s, "", "minimum"));
  EXPECT_TRUE(invalid(10.001, s, "", "maximum"));
  json x = {{"exclusiveMinimum", 0}, {"exclusiveMaximum", 2.5}};
  EXPECT_TRUE(valid(0.001, x));
  EXPECT_TRUE(valid(2.4999, x));
  EXPECT_TRUE(invalid(0, x, "", "exclusiveMinimum"));
  EXPECT_TRUE(invalid(2.5, x, "", "exclusiveMaximum"));
  EXPECT_TRUE(valid("big", {{"maximum", 1}}));
  EXPECT_TRUE(invalid(9223372036854775807LL, {{"maximum", 9223372036854775806LL}}, "", "maximum"));
  EXPECT_TRUE(valid(18446744073709551615ull, {{"minimum", -1}}));
}

TEST(JsonSchemaCheck, Draft4ExclusiveBounds) {
  json s = {{"minimum", 0}, {"exclusiveMinimum", true}, {"maximum", 5}, {"exclusiveMaximum", true}};
  EXPECT_TRUE(valid(0.5, s));
  EXPECT_TRUE(valid(4, s));
  EXPECT_TRUE(invalid(0, s, "", "minimum"));
  EXPECT_TRUE(invalid(5, s, "", "maximum"));
  json inclusive = {{"minimum", 0}, {"exclusiveMinimum", false}};
  EXPECT_TRUE(valid(0, inclusive));
}

TEST(JsonSchemaCheck, IgnoredKeywordsAndBooleanSchemas) {
  json s = {{"$schema", "https://json-schema.org/draft/2020-12/schema"},
            {"title", "T"},
            {"description", "d"},
            {"default", 5},
            {"examples", {1}},
            {"strict", true},
            {"x-vendor", {{"anything", 1}}},
            {"type", "integer"}};
  EXPECT_TRUE(valid(3, s));
  EXPECT_TRUE(invalid("3", s, "", "type"));
  EXPECT_TRUE(valid({1, "a", nullptr}, true));
  EXPECT_TRUE(valid(json::object(), json::object()));
  EXPECT_TRUE(invalid(1, false, "", "false"));
  EXPECT_TRUE(invalid({{"a", 1}}, {{"properties", {{"a", false}}}}, "/a", "false"));
}

TEST(JsonSchemaCheck, MalformedSchemasGiveMessagesNotExceptions) {
  for (const json& s : {json{{"minLength", "two"}}, json{{"type", 5}}, json{{"enum", "x"}},
                        json{{"properties", {1, 2}}}, json{{"required", "a"}},
                        json{{"$ref", 5}}, json{{"anyOf", {}}}, json::array(), json(nullptr)}) {
    EXPECT_NO_THROW(schema_violation({{"a", "xx"}}, s)) << s.dump();
  }
}

// ---- the generator ----

const json kProbes[] = {nullptr, json::object(), json::array(), "x", 1, 2.5, true};

TEST(SchemaGen, SchemasAreWellFormedAndExamplesSatisfyThem) {
  for (unsigned seed = 0; seed < 500; ++seed) {
    std::mt19937 rng(seed);
    json schema = random_schema(rng, static_cast<int>(seed % 5));
    ASSERT_TRUE(schema.is_object()) << seed;
    ASSERT_EQ(json::parse(schema.dump()), schema) << seed;
    for (const json& probe : kProbes) EXPECT_NO_THROW(schema_violation(probe, schema)) << seed;
    for (int i = 0; i < 5; ++i) {
      json example = example_instance(schema, rng);
      EXPECT_TRUE(valid(example, schema)) << "seed " << seed << " schema " << schema.dump();
    }
  }
}

// Breaking a valid example at the top (a required property gone, an unknown one added to a closed
// object, a value of the wrong type) is caught, and reported at the right place.
TEST(SchemaGen, BrokenExamplesAreCaught) {
  int objects = 0;
  for (unsigned seed = 0; seed < 500; ++seed) {
    std::mt19937 rng(seed);
    json schema = random_schema(rng, 3);
    if (schema.value("type", json()) != "object" || schema.contains("nullable")) continue;
    ++objects;
    json example = example_instance(schema, rng);
    if (schema.contains("required")) {
      json missing = example;
      missing.erase(schema["required"][0].get<std::string>());
      EXPECT_TRUE(invalid(missing, schema, "", "required")) << schema.dump();
    }
    if (schema.value("additionalProperties", json()) == false) {
      json extra = example;
      extra["zz extra"] = 1;
      EXPECT_TRUE(invalid(extra, schema, "/zz extra", "additionalProperties")) << schema.dump();
    }
    EXPECT_TRUE(invalid(json::array({example}), schema, "", "type"));
  }
  EXPECT_GT(objects, 100);
}

TEST(SchemaGen, IsDeterministic) {
  for (unsigned seed : {1u, 42u, 1234u}) {
    std::mt19937 a(seed), b(seed);
    EXPECT_EQ(random_schema(a, 4), random_schema(b, 4));
  }
}

// Counts how often each keyword (and a few notable values) occurs in a schema.
void count_keywords(const json& s, std::map<std::string, int>& seen) {
  if (s.is_array()) {
    for (const json& e : s) count_keywords(e, seen);
  }
  if (!s.is_object()) return;
  for (const auto& [key, value] : s.items()) {
    ++seen[key];
    if (key == "type" && value.is_array()) ++seen["type array"];
    if (key == "$ref" && value == "#") ++seen["$ref #"];
    if (key == "additionalProperties" && value == false) ++seen["additionalProperties false"];
    if (key == "items" && value == false) ++seen["items false"];
    if (key == "format") ++seen["format " + value.get<std::string>()];
    if (key != "properties" && key != "$defs" && key != "definitions") count_keywords(value, seen);
  }
  for (const char* map : {"properties", "$defs", "definitions"}) {
    if (s.contains(map) && s[map].is_object()) {
      for (const auto& [name, sub] : s[map].items()) count_keywords(sub, seen);
    }
  }
}

TEST(SchemaGen, CoversTheSubset) {
  std::map<std::string, int> seen;
  for (unsigned seed = 0; seed < 500; ++seed) {
    std::mt19937 rng(seed);
    count_keywords(random_schema(rng, 4), seen);
  }
  for (const char* k :
       {"type", "enum", "const", "properties", "required", "additionalProperties false", "items",
        "prefixItems", "items false", "minItems", "maxItems", "anyOf", "$ref", "$ref #", "$defs",
        "definitions", "nullable", "minLength", "maxLength", "pattern", "format date", "format time",
        "format date-time", "format uuid", "format email", "minimum", "maximum", "exclusiveMinimum",
        "exclusiveMaximum", "type array", "description"}) {
    EXPECT_GT(seen[k], 0) << k;
  }
}

}  // namespace
}  // namespace test_support
