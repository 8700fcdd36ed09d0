// A reader for the small TOML subset that ggufd config files use:
//   # comments, [section] headers (also [*], which TOML would spell ["*"]), key = value with bare (A-Za-z0-9_-) or quoted keys,
//   values: "basic strings" (escapes \" \\ \n \t \r \uXXXX), 'literal strings', integers
//   (underscores allowed), floats, true/false, and arrays of those (may span lines, trailing comma ok).
// Not supported (reported as errors): dotted keys, inline tables, [[arrays of tables]], multi-line
// strings, dates.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace config {

struct TomlEntry {
  std::string section;              // "" before the first [section] header
  std::string key;
  std::vector<std::string> values;  // scalar: one item; array: its items (strings unquoted)
  bool array = false;
  int line = 0;                     // 1-based line of the key
};

// Parses `text`; throws std::invalid_argument("line N: what is wrong") on a syntax error.
std::vector<TomlEntry> parse_toml(std::string_view text);

}  // namespace config
