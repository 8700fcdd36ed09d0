// Filter dispatch plus the text, number and conversion filters.
#include "engine/text/jinja/filters.h"

#include <charconv>
#include <cmath>
#include <optional>
#include <system_error>
#include <unordered_map>

#include "engine/text/jinja/error.h"
#include "engine/text/jinja/text.h"

namespace engine::jinja::filters {
namespace {

// ---- Parsing numbers the way Python's int() and float() accept them ------------------------

std::string without_underscores(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool between_digits = i > 0 && i + 1 < s.size() &&
                                std::isxdigit(static_cast<unsigned char>(s[i - 1])) &&
                                std::isxdigit(static_cast<unsigned char>(s[i + 1]));
    if (s[i] == '_' && between_digits) continue;
    out += s[i];
  }
  return out;
}

std::optional<int64_t> parse_int(std::string_view s, int base) {
  std::string t = without_underscores(text::strip_space(s, true, true));
  bool negative = false;
  size_t i = 0;
  if (i < t.size() && (t[i] == '+' || t[i] == '-')) negative = t[i++] == '-';
  if (base == 16 && t.size() > i + 1 && t[i] == '0' && (t[i + 1] | 0x20) == 'x') i += 2;
  if (base == 8 && t.size() > i + 1 && t[i] == '0' && (t[i + 1] | 0x20) == 'o') i += 2;
  if (base == 2 && t.size() > i + 1 && t[i] == '0' && (t[i + 1] | 0x20) == 'b') i += 2;
  uint64_t magnitude = 0;
  const auto res = std::from_chars(t.data() + i, t.data() + t.size(), magnitude, base);
  if (res.ec != std::errc() || res.ptr != t.data() + t.size() || i == t.size()) return std::nullopt;
  if (magnitude > static_cast<uint64_t>(INT64_MAX) + (negative ? 1 : 0)) return std::nullopt;
  return negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
}

std::optional<double> parse_float(std::string_view s) {
  std::string t = without_underscores(text::strip_space(s, true, true));
  size_t i = 0;
  bool negative = false;
  if (i < t.size() && (t[i] == '+' || t[i] == '-')) negative = t[i++] == '-';
  if (t.size() > i + 1 && t[i] == '0' && (t[i + 1] | 0x20) == 'x') return std::nullopt;  // no hex
  double d = 0;
  const auto res = std::from_chars(t.data() + i, t.data() + t.size(), d);
  if (res.ptr != t.data() + t.size() || i == t.size()) return std::nullopt;
  if (res.ec == std::errc::result_out_of_range) {
    d = t.find_first_of("eE") != std::string::npos &&
                t.find("-", t.find_first_of("eE")) != std::string::npos
            ? 0.0
            : HUGE_VAL;
  } else if (res.ec != std::errc()) {
    return std::nullopt;
  }
  return negative ? -d : d;
}

std::optional<int64_t> float_to_int(double d) {
  if (!std::isfinite(d) || d >= 9223372036854775808.0 || d < -9223372036854775808.0)
    return std::nullopt;
  return static_cast<int64_t>(d);  // truncates toward zero, like int()
}

// ---- Conversions --------------------------------------------------------------------------

Value to_int(Interpreter&, const Value& v, CallArgs& args) {
  ArgReader a("int", args, {"default", "base"});
  const Value fallback = a.get_or(0, Value(0));
  const Value base_arg = a.get_or(1, Value(10));
  const int64_t base = is_integer(base_arg) ? int_of(base_arg) : 10;
  if (is_integer(v)) return Value(int_of(v));
  if (v.is_float()) {
    auto i = float_to_int(v.as_float());
    return i ? Value(*i) : fallback;
  }
  if (v.is_string() && base >= 2 && base <= 36) {
    if (auto i = parse_int(v.as_string(), static_cast<int>(base))) return Value(*i);
    if (auto d = parse_float(v.as_string())) {
      if (auto i = float_to_int(*d)) return Value(*i);
    }
  }
  return fallback;
}

Value to_float(Interpreter&, const Value& v, CallArgs& args) {
  ArgReader a("float", args, {"default"});
  const Value fallback = a.get_or(0, Value(0.0));
  if (v.is_number()) return Value(v.as_number());
  if (v.is_string()) {
    if (auto d = parse_float(v.as_string())) return Value(*d);
  }
  return fallback;
}

Value to_string(Interpreter& in, const Value& v, CallArgs& args) {
  ArgReader a("string", args, {});
  return Value(in.str(v));
}

Value to_json(Interpreter& in, const Value& v, CallArgs& args) {
  // HF chat templates use json.dumps(x, ensure_ascii=False) semantics, keys unsorted.
  ArgReader a("tojson", args, {"indent", "ensure_ascii", "separators", "sort_keys"});
  JsonOptions opt;
  if (const Value* indent = a.get(0); indent && !indent->is_none() && !indent->is_undefined()) {
    opt.pretty = true;
    opt.item_separator = ",";
    if (indent->is_string()) {
      opt.indent = indent->as_string();
    } else if (is_integer(*indent)) {
      const int64_t n = int_of(*indent);
      if (n > 64) throw RuntimeError("tojson indent too large");
      opt.indent.assign(static_cast<size_t>(std::max<int64_t>(n, 0)), ' ');
    } else {
      throw RuntimeError("tojson indent must be an integer or a string");
    }
  }
  if (const Value* ascii = a.get(1)) opt.ensure_ascii = truthy(*ascii);
  if (const Value* seps = a.get(2); seps && !seps->is_none()) {
    const std::vector<Value> parts = in.iterate(*seps);
    if (parts.size() != 2 || !parts[0].is_string() || !parts[1].is_string()) {
      throw RuntimeError("tojson separators must be two strings");
    }
    opt.item_separator = parts[0].as_string();
    opt.key_separator = parts[1].as_string();
  }
  if (const Value* sort = a.get(3)) opt.sort_keys = truthy(*sort);
  return Value(jinja::to_json(v, opt, in.budget()));
}

Value default_value(Interpreter&, const Value& v, CallArgs& args) {
  ArgReader a("default", args, {"default_value", "boolean"});
  const bool boolean = a.get(1) && truthy(*a.get(1));
  if (v.is_undefined() || (boolean && !truthy(v))) return a.get_or(0, Value(""));
  return v;
}

// ---- Text ---------------------------------------------------------------------------------

Value lower(Interpreter& in, const Value& v, CallArgs&) { return Value(text::to_lower(in.str(v))); }
Value upper(Interpreter& in, const Value& v, CallArgs&) { return Value(text::to_upper(in.str(v))); }
Value title(Interpreter& in, const Value& v, CallArgs&) { return Value(text::title(in.str(v))); }
Value capitalize(Interpreter& in, const Value& v, CallArgs&) {
  return Value(text::capitalize(in.str(v)));
}
Value escape(Interpreter& in, const Value& v, CallArgs&) {
  return Value(text::html_escape(in.str(v)));
}
Value safe(Interpreter& in, const Value& v, CallArgs&) { return Value(in.str(v)); }
Value pprint(Interpreter& in, const Value& v, CallArgs&) { return Value(to_repr(v, in.budget())); }

Value trim(Interpreter& in, const Value& v, CallArgs& args) {
  ArgReader a("trim", args, {"chars"});
  const std::string s = in.str(v);
  const Value* chars = a.get(0);
  if (chars && chars->is_string())
    return Value(text::strip_chars(s, chars->as_string(), true, true));
  return Value(text::strip_space(s, true, true));
}

Value replace(Interpreter& in, const Value& v, CallArgs& args) {
  ArgReader a("replace", args, {"old", "new", "count"});
  if (!a.get(0) || !a.get(1)) throw RuntimeError("replace() needs 'old' and 'new'");
  const Value count = a.get_or(2, Value::none());
  const std::string s = in.str(v);
  const std::string from = in.str(*a.get(0));
  const std::string to = in.str(*a.get(1));
  if (from.empty() || to.size() > from.size()) {  // output may grow: bound it first
    const size_t pieces = from.empty() ? text::count_code_points(s) + 1 : s.size() / from.size();
    in.budget().check_size(s.size() + pieces * to.size());
  }
  std::string out = text::replace(s, from, to, is_integer(count) ? int_of(count) : -1);
  in.budget().charge_bytes(out.size());
  return Value(std::move(out));
}

Value indent(Interpreter& in, const Value& v, CallArgs& args) {
  ArgReader a("indent", args, {"width", "first", "blank"});
  const Value width = a.get_or(0, Value(4));
  std::string pad;
  if (width.is_string()) {
    pad = width.as_string();
  } else if (is_integer(width)) {
    in.budget().check_size(static_cast<size_t>(std::clamp<int64_t>(int_of(width), 0, INT32_MAX)));
    pad.assign(static_cast<size_t>(std::max<int64_t>(int_of(width), 0)), ' ');
  } else {
    throw RuntimeError("indent width must be an integer or a string");
  }
  const bool first = a.get(1) && truthy(*a.get(1));
  const bool blank = a.get(2) && truthy(*a.get(2));
  const std::vector<std::string> lines = text::split_lines(in.str(v) + "\n", false);
  in.budget().check_size(lines.size() * (pad.size() + 1));
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += "\n";
    if (i > 0 && (blank || !lines[i].empty())) out += pad;
    out += lines[i];
  }
  if (first) out = pad + out;
  in.budget().check_size(out.size());
  return Value(std::move(out));
}

Value center(Interpreter& in, const Value& v, CallArgs& args) {
  ArgReader a("center", args, {"width"});
  const Value width = a.get_or(0, Value(80));
  const std::string s = in.str(v);
  const auto len = static_cast<int64_t>(text::count_code_points(s));
  const int64_t w = is_integer(width) ? int_of(width) : 80;
  if (w <= len) return Value(s);
  in.budget().check_size(static_cast<size_t>(std::min<int64_t>(w, INT32_MAX)));
  const int64_t pad = w - len;
  const int64_t left = pad / 2 + (pad & w & 1);  // CPython's split of odd padding
  return Value(std::string(static_cast<size_t>(left), ' ') + s +
               std::string(static_cast<size_t>(pad - left), ' '));
}

Value wordcount(Interpreter& in, const Value& v, CallArgs&) {
  return Value(static_cast<int64_t>(text::split_space(in.str(v), -1, false).size()));
}

Value format(Interpreter& in, const Value& v, CallArgs& args) {
  return Value(percent_format(in, in.str(v), args.positional));
}

// ---- Numbers ------------------------------------------------------------------------------

Value absolute(Interpreter&, const Value& v, CallArgs&) {
  if (v.is_float()) return Value(std::fabs(v.as_float()));
  if (is_integer(v)) {
    if (int_of(v) == INT64_MIN) throw RuntimeError("integer overflow (result exceeds 64 bits)");
    return Value(int_of(v) < 0 ? -int_of(v) : int_of(v));
  }
  throw RuntimeError("bad operand type for abs(): '" + type_name(v) + "'");
}

Value round(Interpreter&, const Value& v, CallArgs& args) {
  ArgReader a("round", args, {"precision", "method"});
  const Value precision = a.get_or(0, Value(0));
  const Value method = a.get_or(1, Value("common"));
  if (!v.is_number()) throw RuntimeError("round() needs a number, got '" + type_name(v) + "'");
  const int64_t digits =
      is_integer(precision) ? std::clamp<int64_t>(int_of(precision), -300, 300) : 0;
  const std::string how = method.is_string() ? method.as_string() : "common";
  if (how == "common" && is_integer(v) && digits >= 0)
    return Value(int_of(v));  // round(int) is int
  const double scale = std::pow(10.0, static_cast<double>(digits));
  const double x = v.as_number() * scale;
  double r;
  if (how == "ceil")
    r = std::ceil(x);
  else if (how == "floor")
    r = std::floor(x);
  else if (how == "common")
    r = std::nearbyint(x);  // Python rounds half to even
  else
    throw RuntimeError("method must be 'common', 'ceil' or 'floor'");
  return Value(std::isfinite(x) ? r / scale : v.as_number());
}

using Table = std::unordered_map<std::string_view, Filter>;

const Table& scalar_filters() {
  static const Table table = {
      {"int", to_int},
      {"float", to_float},
      {"string", to_string},
      {"tojson", to_json},
      {"default", default_value},
      {"d", default_value},
      {"lower", lower},
      {"upper", upper},
      {"title", title},
      {"capitalize", capitalize},
      {"escape", escape},
      {"e", escape},
      {"forceescape", escape},
      {"safe", safe},
      {"pprint", pprint},
      {"trim", trim},
      {"replace", replace},
      {"indent", indent},
      {"center", center},
      {"wordcount", wordcount},
      {"format", format},
      {"abs", absolute},
      {"round", round},
  };
  return table;
}

}  // namespace
}  // namespace engine::jinja::filters

namespace engine::jinja {

Value apply_filter(Interpreter& in, std::string_view name, const Value& input, CallArgs& args) {
  const auto& table = filters::scalar_filters();
  if (auto it = table.find(name); it != table.end()) return it->second(in, input, args);
  if (auto f = filters::find_sequence_filter(name)) return f(in, input, args);
  throw RuntimeError("no filter named '" + std::string(name) + "'");
}

}  // namespace engine::jinja
