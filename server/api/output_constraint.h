// The output constraint a request asks for: OpenAI's `response_format` (json_object,
// json_schema), or llama-server's `json_schema` (a schema) and `grammar` (GBNF text).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>

#include "server/api/app.h"

namespace engine::grammar {
class CompiledGrammar;
}

namespace server {

// The compiled grammar for the request's constraint, from the App's cache; null when the request
// has none (or response_format {"type": "text"}). `text` is the raw body: schemas are read from it
// again with their key order kept, since properties are generated in the order declared.
// Throws a 400 naming the field: malformed field, more than one constraint, a schema or grammar
// that is invalid or uses what cannot be enforced (the message says where and why).
std::shared_ptr<const engine::grammar::CompiledGrammar> parse_output_constraint(const nlohmann::json& body,
                                                                                std::string_view text,
                                                                                const App& app);

// The grammar of the JSON schema at `pointer` (a JSON pointer such as "/text/format/schema") in
// the body `text`, read with its key order; a 400 naming `param` when it cannot be enforced.
std::shared_ptr<const engine::grammar::CompiledGrammar> schema_constraint(const App& app, const std::string& param,
                                                                          std::string_view text,
                                                                          const std::string& pointer);
// Any JSON object (json_object); errors name `param`.
std::shared_ptr<const engine::grammar::CompiledGrammar> json_object_constraint(const App& app,
                                                                               const std::string& param);

}  // namespace server
