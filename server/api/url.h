// Percent-decoding of request targets.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace server {

// Decodes %XX escapes (and '+' as space when `plus_is_space`); malformed escapes stay as they are.
std::string url_decode(std::string_view s, bool plus_is_space);

// A client's string made safe for a log line: control characters (C0, DEL, and C1 as UTF-8)
// become \xNN escapes, and a backslash becomes "\\", so a client can neither break a line nor
// forge one, nor move the terminal's cursor. At most `max` bytes of `s` are shown ("..." then).
std::string escape_for_log(std::string_view s, size_t max = 2048);

// "a=1&b=x%20y" -> {a: "1", b: "x y"}; a key without '=' maps to "".
std::map<std::string, std::string> parse_query(std::string_view query);

}  // namespace server
