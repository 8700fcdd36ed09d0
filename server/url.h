// Percent-decoding of request targets.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace server {

// Decodes %XX escapes (and '+' as space when `plus_is_space`); malformed escapes stay as they are.
std::string url_decode(std::string_view s, bool plus_is_space);

// "a=1&b=x%20y" -> {a: "1", b: "x y"}; a key without '=' maps to "".
std::map<std::string, std::string> parse_query(std::string_view query);

}  // namespace server
