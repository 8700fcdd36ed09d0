// Reading request fields with OpenAI-style 400 errors that name the field.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace server {

// How deep a request's JSON may nest (objects and arrays), unless the server sets another limit.
inline constexpr int kDefaultMaxJsonDepth = 64;

// The body as a JSON object, or a 400: malformed JSON, not an object, or nested deeper than
// `max_depth` levels. Depth is checked while parsing (nlohmann's callback parser), so no deeper
// structure is ever built and every later walk over the value stays within the bound.
nlohmann::json parse_object(std::string_view body, int max_depth);

// Each getter returns nullopt when the key is absent or null, and throws a 400 naming the key
// when it has the wrong type or is out of range.
std::optional<std::string> get_string(const nlohmann::json& j, const std::string& key);
std::optional<bool> get_bool(const nlohmann::json& j, const std::string& key);
std::optional<int64_t> get_int(const nlohmann::json& j, const std::string& key, int64_t min,
                               int64_t max);
std::optional<double> get_number(const nlohmann::json& j, const std::string& key, double min,
                                  double max);
// An array of token ids, each in [0, n_vocab).
std::optional<std::vector<int32_t>> get_token_ids(const nlohmann::json& j, const std::string& key,
                                                  int32_t n_vocab);
// The same for a value already found (errors name `key`).
std::vector<int32_t> to_token_ids(const nlohmann::json& v, const std::string& key, int32_t n_vocab);
// A string or an array of strings (e.g. "stop").
std::optional<std::vector<std::string>> get_strings(const nlohmann::json& j, const std::string& key);

// j[key] when `j` is an object holding a string there, else `fallback` (never throws: for
// dispatching on fields such as "type" before they are validated).
std::string string_or(const nlohmann::ordered_json& j, const std::string& key, const std::string& fallback = "");
std::string string_or(const nlohmann::json& j, const std::string& key, const std::string& fallback = "");

// At most `max` bytes of a client's string for an error message, "..." marking a cut.
std::string excerpt(std::string_view s, size_t max = 64);

// What a router reads of a JSON object body before the request is parsed: the top-level "model"
// string and "keep_alive" (Ollama's: a number or a string; null when it is of another type),
// without building the document: the parse stops once both are read. Each is nullopt when the body
// lacks it or is not JSON (the request's own parse then says what is wrong). Iterative: no
// recursion on deep nesting. With `want_input`, it also reads whether the body has something to
// generate from (Ollama's load and unload requests have none): a top-level "prompt" that is a
// non-empty string or "messages" that is a non-empty array; the parse then goes on until it knows.
struct RoutingFields {
  std::optional<std::string> model;
  std::optional<nlohmann::json> keep_alive;
  bool has_input = false;  // read only with want_input
};
RoutingFields peek_routing(std::string_view body, bool want_input = false);

// JSON text with invalid UTF-8 replaced (model output can be any bytes).
std::string dump_json(const nlohmann::json& j);

// The JSON type name as OpenAI's errors spell it ("string", "integer", "number", "array"...).
std::string json_type_name(const nlohmann::json& j);

}  // namespace server
