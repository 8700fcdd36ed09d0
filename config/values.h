// Text -> value conversions shared by flags, environment and config file. Every function throws
// std::invalid_argument with a one-line message that starts with `label` (which names the setting
// and where the value came from, e.g. "--ctx-size" or "--ctx-size (from GGUFD_CTX_SIZE)").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace config {

// A whole decimal integer (optional sign). "<label>: 'x' is not an integer".
int64_t parse_integer(const std::string& label, std::string_view text);

// A byte count: an integer with an optional binary suffix K, M or G (also KiB/MiB/GiB, any case).
int64_t parse_bytes(const std::string& label, std::string_view text);

// A finite decimal number. "<label>: 'x' is not a number".
double parse_real(const std::string& label, std::string_view text);

// true/false, 1/0, yes/no, on/off (any case).
bool parse_bool(const std::string& label, std::string_view text);

// `text` without leading and trailing blanks (space, tab, CR, LF).
std::string trim(std::string_view text);

// Splits on commas, trims each part and drops empty parts: " a, b,,c " -> {a, b, c}.
std::vector<std::string> split_list(std::string_view text);

// Shortest readable decimal form: 0.95 -> "0.95", 2 -> "2".
std::string format_real(double v);

}  // namespace config
