// JSON Schema (and "any JSON") to Grammar: what `response_format` json_object / json_schema and
// llama-server's `json_schema` field constrain generation with.
//
// Output is compact JSON (no whitespace), properties in the order the schema declares them.
// Supported: type (also arrays of types and "null"), nullable, enum, const, properties, required,
// additionalProperties (false, true or a schema; absent: no extra properties), items, prefixItems,
// minItems, maxItems, anyOf, oneOf (as anyOf), allOf of object schemas, $ref into the schema
// (#, #/$defs/..., #/definitions/..., any JSON pointer; recursion allowed), string minLength /
// maxLength / pattern / format (date, time, date-time, uuid, email, ipv4, hostname, uri), length
// bounds together with a pattern or a format, minimum / maximum / exclusiveMinimum /
// exclusiveMaximum (draft 4 booleans too) and multipleOf, alone or together. Annotations (title,
// description, default, examples, ...) and unknown keywords are ignored; a known keyword that
// cannot be enforced (not, if/then/else, uniqueItems, minProperties, pattern with format, ...) is
// an error, never silently dropped. A schema no value satisfies (exclusiveMinimum 1 with
// exclusiveMaximum 1, a required property of such a schema) is an error naming the keywords.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>

#include "engine/text/grammar/grammar.h"

namespace engine::grammar {

// Throws GrammarError whose message starts with the JSON pointer of the offending schema
// ("#/properties/age: 'minimum' must be a number").
std::shared_ptr<const Grammar> json_schema_grammar(const nlohmann::ordered_json& schema, GrammarLimits limits = {});

class JsonRules;

// For grammars that embed JSON values (tool calls): the values `schema` admits, as an expression
// over rules added to `b` (helper rules shared through `rules`, which must be built on `b`).
// The schema's $refs resolve within `schema` itself. Throws GrammarError as above.
Expr json_schema_expr(const nlohmann::ordered_json& schema, GrammarBuilder& b, JsonRules& rules);

// Any JSON value, or (object_only) any JSON object.
std::shared_ptr<const Grammar> any_json_grammar(bool object_only);

}  // namespace engine::grammar
