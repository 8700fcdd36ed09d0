// POST /tokenize and /detokenize: body in, response body out. Coroutine-free (work pool, fuzzer).
// The response is written straight into one string (never a JSON tree of one object per token),
// so memory stays a small multiple of the response; the route's body limit bounds the work.
#pragma once

#include <string>
#include <string_view>

#include "server/api/app.h"

namespace server {

// {"content", "add_special"?, "parse_special"?, "with_pieces"?} -> {"tokens": [...]}.
std::string tokenize_response(const App& app, std::string_view body);

// {"tokens": [ids]} -> {"content": "..."}.
std::string detokenize_response(const App& app, std::string_view body);

}  // namespace server
