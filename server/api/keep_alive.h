// Ollama's keep_alive: how long a model stays loaded after a request (any dialect may send it; the
// router reads it with the model id, lease_for_body).
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string_view>

namespace server {

// A number of seconds, or a Go duration string ("5m", "1h30m", "1.5h", "90s", "250ms", "0"; a
// plain number in a string counts as seconds, as "-1" is often written). Negative means forever
// and is returned as -1 ms; a duration beyond ten years is forever too. Throws ApiError 400 naming
// the field for anything else.
std::chrono::milliseconds parse_keep_alive(const nlohmann::json& v);

}  // namespace server
