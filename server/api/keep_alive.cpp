#include "server/api/keep_alive.h"

#include <charconv>
#include <cmath>
#include <optional>
#include <string>

#include "server/api/api_error.h"
#include "server/api/request_json.h"

namespace server {

namespace {

constexpr double kForeverMs = 10.0 * 365 * 24 * 3600 * 1000;

// Go's time.ParseDuration: [-+]? then one or more of (decimal number, unit); or "0". Milliseconds
// (negative allowed), nullopt when malformed.
std::optional<double> parse_go_duration(std::string_view s) {
  double sign = 1;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    if (s[0] == '-') sign = -1;
    s.remove_prefix(1);
  }
  if (s == "0") return 0.0;
  if (s.empty()) return std::nullopt;
  double total = 0;
  while (!s.empty()) {
    size_t n = 0;
    while (n < s.size() && ((s[n] >= '0' && s[n] <= '9') || s[n] == '.')) ++n;
    if (n == 0 || n > 32) return std::nullopt;
    double value = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + n, value);
    if (ec != std::errc() || end != s.data() + n) return std::nullopt;
    s.remove_prefix(n);
    size_t u = 0;
    while (u < s.size() && !((s[u] >= '0' && s[u] <= '9') || s[u] == '.')) ++u;
    const std::string_view unit = s.substr(0, u);
    s.remove_prefix(u);
    double ms = 0;
    if (unit == "ns") ms = 1e-6;
    else if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") ms = 1e-3;
    else if (unit == "ms") ms = 1;
    else if (unit == "s") ms = 1e3;
    else if (unit == "m") ms = 60e3;
    else if (unit == "h") ms = 3600e3;
    else return std::nullopt;  // a missing or unknown unit
    total += value * ms;
  }
  return sign * total;
}

std::chrono::milliseconds from_ms(double ms) {
  if (ms < 0 || ms >= kForeverMs) return std::chrono::milliseconds(-1);
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(ms)));
}

[[noreturn]] void refuse(const std::string& found) {
  throw invalid_field("keep_alive", "'keep_alive' must be a number of seconds or a duration such as \"5m\", "
                                    "\"1h30m\" or \"0\" (negative: keep loaded); found " + found);
}

}  // namespace

std::chrono::milliseconds parse_keep_alive(const nlohmann::json& v) {
  if (v.is_number()) {
    const double seconds = v.get<double>();
    if (!std::isfinite(seconds)) refuse(dump_json(v));
    return from_ms(seconds * 1000);
  }
  if (!v.is_string()) refuse(json_type_name(v));
  const std::string& s = v.get_ref<const std::string&>();
  double seconds = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), seconds);
  if (!s.empty() && ec == std::errc() && end == s.data() + s.size() && std::isfinite(seconds)) {
    return from_ms(seconds * 1000);
  }
  const std::optional<double> ms = parse_go_duration(s);
  if (!ms) refuse("\"" + excerpt(s) + "\"");
  return from_ms(*ms);
}

}  // namespace server
