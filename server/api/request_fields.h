// Which top-level fields a generation request may carry, and what becomes of the others.
//
// Lenient by default, as OpenAI clients need: a field the endpoint does not know is ignored and
// named back to the client in the x-ggufd-ignored-fields response header, and any model id is
// served (one model is loaded; responses name the real id). --strict-api (ServeSettings::strict_api)
// turns both back into errors. Documented OpenAI fields that cannot change the output (store,
// metadata, user, ...) are simply known to the endpoint; documented fields whose effect this
// server cannot produce (audio, tools, ...) stay 400s in both modes.
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "server/api/app.h"

namespace server {

// The response header that names a request's ignored fields.
inline constexpr const char* kIgnoredFieldsHeader = "x-ggufd-ignored-fields";

// Checks the body's top-level fields against the endpoint's lists. A field in `unsupported` that
// is not null is a 400 naming it. A field in neither list is unknown: a 400 naming it when
// `strict`, else ignored. Returns the unknown fields' names, in the body's (sorted) order.
std::vector<std::string> check_fields(const nlohmann::json& body, const std::set<std::string>& known,
                                      const std::set<std::string>& unsupported, bool strict);

// "model", when present, must be a string (400). Any id is served, unless the server runs with
// --strict-api: then an id other than the served model's is a 404 (require_model).
void check_request_model(const nlohmann::json& body, const App& app);

// "modalities" (chat), when present, must be an array of "text": a request for "audio" (or any
// other output this server cannot produce) is a 400 naming the field.
void check_text_modalities(const nlohmann::json& body);

// The x-ggufd-ignored-fields value for `names` (not empty): distinct names, sorted, joined with
// ", ". Each name is cut to 40 bytes ("..." marks a cut) and percent-encoded outside printable
// ASCII and for ',' and '%', so the value is printable ASCII without control characters; after
// 20 names a last "..." stands for the rest.
std::string ignored_fields_header(const std::vector<std::string>& names);

}  // namespace server
