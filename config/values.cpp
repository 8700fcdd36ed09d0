// Text -> value conversions with one-line, setting-naming error messages.
#include "config/values.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <stdexcept>

namespace config {

namespace {

[[noreturn]] void fail(const std::string& label, std::string_view text, const char* what) {
  throw std::invalid_argument(label + ": '" + std::string(text) + "' is not " + what);
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The multiplier of a byte-count suffix ("" -> 1), or 0 when `suffix` is not one.
int64_t byte_multiplier(std::string_view suffix) {
  const std::string s = lower(suffix);
  if (s.empty() || s == "b") return 1;
  if (s == "k" || s == "kb" || s == "kib") return int64_t{1} << 10;
  if (s == "m" || s == "mb" || s == "mib") return int64_t{1} << 20;
  if (s == "g" || s == "gb" || s == "gib") return int64_t{1} << 30;
  return 0;
}

}  // namespace

std::string trim(std::string_view text) {
  const char* blanks = " \t\r\n";
  const size_t b = text.find_first_not_of(blanks);
  if (b == std::string_view::npos) return {};
  const size_t e = text.find_last_not_of(blanks);
  return std::string(text.substr(b, e - b + 1));
}

int64_t parse_integer(const std::string& label, std::string_view text) {
  std::string_view s = text;
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) fail(label, text, "an integer");
  return v;
}

int64_t parse_bytes(const std::string& label, std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) ||
                                  (digits == 0 && (text[0] == '+' || text[0] == '-')))) {
    ++digits;
  }
  const int64_t mult = byte_multiplier(trim(text.substr(digits)));
  if (digits == 0 || mult == 0) fail(label, text, "a byte count (e.g. 8388608, 512K, 8M)");
  const int64_t n = parse_integer(label, text.substr(0, digits));
  if (n > std::numeric_limits<int64_t>::max() / mult || n < std::numeric_limits<int64_t>::min() / mult) {
    fail(label, text, "a byte count that fits 64 bits");
  }
  return n * mult;
}

double parse_real(const std::string& label, std::string_view text) {
  std::string_view s = text;
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) {
    fail(label, text, "a number");
  }
  return v;
}

bool parse_bool(const std::string& label, std::string_view text) {
  const std::string s = lower(trim(text));
  if (s == "true" || s == "1" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "0" || s == "no" || s == "off") return false;
  fail(label, text, "a boolean (true/false, 1/0, yes/no, on/off)");
}

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string part = trim(text.substr(start, comma - start));
    if (!part.empty()) out.push_back(std::move(part));
    start = comma + 1;
  }
  return out;
}

std::string format_real(double v) {
  char buf[40];
  for (int precision = 6; precision <= 17; ++precision) {  // the shortest text that reads back as v
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

}  // namespace config
