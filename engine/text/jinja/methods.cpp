// Python methods of str, list and dict that chat templates call: "text".strip(), xs.append(x),
// d.items(), ...
#include <algorithm>
#include <array>

#include "engine/text/jinja/error.h"
#include "engine/text/jinja/eval.h"
#include "engine/text/jinja/text.h"

namespace engine::jinja {
namespace {

constexpr std::array<std::string_view, 35> kStringMethods = {
    "strip",     "lstrip",  "rstrip",  "split",   "rsplit",     "splitlines", "startswith",
    "endswith",  "upper",   "lower",   "title",   "capitalize", "casefold",   "swapcase",
    "replace",   "find",    "rfind",   "index",   "rindex",     "count",      "join",
    "isdigit",   "isalpha", "isalnum", "isspace", "isupper",    "islower",    "isnumeric",
    "isdecimal", "format",  "center",  "ljust",   "rjust",      "zfill",      "removeprefix"};
constexpr std::array<std::string_view, 3> kMoreStringMethods = {"removesuffix", "partition",
                                                                "rpartition"};
constexpr std::array<std::string_view, 11> kListMethods = {"append", "extend", "insert", "pop",
                                                           "remove", "index",  "count",  "reverse",
                                                           "sort",   "copy",   "clear"};
constexpr std::array<std::string_view, 9> kDictMethods = {
    "items", "keys", "values", "get", "pop", "setdefault", "update", "copy", "clear"};

template <size_t N>
bool listed(const std::array<std::string_view, N>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

void require_mutable(const Container& c) {
  if (!c.template_owned()) {
    throw RuntimeError(
        "cannot modify data passed in to the template; copy it first "
        "(e.g. with |list or .copy())");
  }
}

const std::string& string_arg(const Value* v, std::string_view method) {
  if (!v || !v->is_string()) {
    throw RuntimeError(std::string(method) + "() argument must be str" +
                       (v ? ", not " + type_name(*v) : std::string()));
  }
  return v->as_string();
}

int64_t code_point_index(const std::string& s, size_t byte_offset) {
  return static_cast<int64_t>(text::count_code_points(std::string_view(s).substr(0, byte_offset)));
}

bool all_code_points(const std::string& s, bool (*pred)(char32_t)) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size();) {
    const text::CodePoint cp = text::decode(s, i);
    if (!cp.valid || !pred(cp.value)) return false;
    i += cp.length;
  }
  return true;
}

bool is_digit_cp(char32_t c) { return c >= '0' && c <= '9'; }
bool is_alpha_cp(char32_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || text::is_upper_cp(c) ||
         text::is_lower_cp(c) || (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3040 && c <= 0x30FF);
}
bool is_alnum_cp(char32_t c) { return is_digit_cp(c) || is_alpha_cp(c); }

Value strings_to_list(Interpreter& in, std::vector<std::string> parts) {
  std::vector<Value> items;
  items.reserve(parts.size());
  for (std::string& p : parts) items.emplace_back(std::move(p));
  in.budget().charge(items.size());
  return in.heap().array(std::move(items));
}

Value pad(Interpreter& in, const std::string& s, const ArgReader& a, int side) {
  const Value width = a.get_or(0, Value(0));
  if (!is_integer(width)) throw RuntimeError("width must be an integer");
  const std::string fill = a.get(1) ? string_arg(a.get(1), "fill") : std::string(" ");
  if (text::count_code_points(fill) != 1)
    throw RuntimeError("the fill character must be exactly one character long");
  const auto len = static_cast<int64_t>(text::count_code_points(s));
  const int64_t w = int_of(width);
  if (w <= len) return Value(s);
  in.budget().check_size(static_cast<size_t>(std::min<int64_t>(w, INT32_MAX)) * fill.size());
  const int64_t total = w - len;
  const int64_t left = side < 0 ? 0 : side > 0 ? total : total / 2 + (total & w & 1);
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += s;
  for (int64_t i = left; i < total; ++i) out += fill;
  return Value(std::move(out));
}

// str.format with "{}", "{0}" and "{name}" fields ("{{" and "}}" escape braces; format specs
// after ':' are ignored).
std::string format_fields(Interpreter& in, const std::string& fmt, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if ((c == '{' || c == '}') && i + 1 < fmt.size() && fmt[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    const size_t close = fmt.find('}', i);
    if (close == std::string::npos) throw RuntimeError("Single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    field = field.substr(0, field.find_first_of(":!"));
    const Value* arg = nullptr;
    if (field.empty()) {
      if (auto_index < args.positional.size()) arg = &args.positional[auto_index++];
    } else if (std::all_of(field.begin(), field.end(),
                           [](char d) { return d >= '0' && d <= '9'; })) {
      const size_t k = field.size() < 9 ? std::stoul(field) : SIZE_MAX;
      if (k < args.positional.size()) arg = &args.positional[k];
    } else {
      for (const auto& kv : args.keyword) {
        if (kv.first == field) arg = &kv.second;
      }
    }
    if (!arg) throw RuntimeError("format(): no argument for field '{" + field + "}'");
    out += in.str(*arg);
    in.budget().check_size(out.size());
    i = close;
  }
  return out;
}

Value string_method(Interpreter& in, const std::string& s, std::string_view name, CallArgs& args);
Value string_method_more(Interpreter& in, const std::string& s, std::string_view name,
                         CallArgs& args);

Value affix_test(const std::string& s, std::string_view name, CallArgs& args) {
  ArgReader a(name, args, {"prefix"});
  if (!a.get(0)) throw RuntimeError(std::string(name) + "() takes at least 1 argument");
  const bool starts = name == "startswith";
  auto matches = [&](const Value& v) {
    const std::string& affix = string_arg(&v, name);
    if (affix.size() > s.size()) return false;
    return starts ? s.compare(0, affix.size(), affix) == 0
                  : s.compare(s.size() - affix.size(), affix.size(), affix) == 0;
  };
  if (a.get(0)->is_array()) {  // a tuple of alternatives
    const auto& options = a.get(0)->as_array().items;
    return Value(std::any_of(options.begin(), options.end(), matches));
  }
  return Value(matches(*a.get(0)));
}

Value string_method(Interpreter& in, const std::string& s, std::string_view name, CallArgs& args) {
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    ArgReader a(name, args, {"chars"});
    const bool left = name != "rstrip";
    const bool right = name != "lstrip";
    const Value* chars = a.get(0);
    if (chars && !chars->is_none())
      return Value(text::strip_chars(s, string_arg(chars, name), left, right));
    return Value(text::strip_space(s, left, right));
  }
  if (name == "split" || name == "rsplit") {
    ArgReader a(name, args, {"sep", "maxsplit"});
    const Value limit = a.get_or(1, Value(-1));
    const int64_t maxsplit = is_integer(limit) ? int_of(limit) : -1;
    const Value* sep = a.get(0);
    if (!sep || sep->is_none())
      return strings_to_list(in, text::split_space(s, maxsplit, name == "rsplit"));
    if (string_arg(sep, name).empty()) throw RuntimeError("empty separator");
    return strings_to_list(in, text::split_sep(s, sep->as_string(), maxsplit, name == "rsplit"));
  }
  if (name == "splitlines") {
    ArgReader a(name, args, {"keepends"});
    return strings_to_list(in, text::split_lines(s, a.get(0) && truthy(*a.get(0))));
  }
  if (name == "startswith" || name == "endswith") return affix_test(s, name, args);
  if (name == "upper") return Value(text::to_upper(s));
  if (name == "lower" || name == "casefold") return Value(text::to_lower(s));
  if (name == "title") return Value(text::title(s));
  if (name == "capitalize") return Value(text::capitalize(s));
  if (name == "replace") {
    ArgReader a(name, args, {"old", "new", "count"});
    const std::string& from = string_arg(a.get(0), name);
    const std::string& to = string_arg(a.get(1), name);
    const Value count = a.get_or(2, Value(-1));
    const size_t pieces = from.empty() ? text::count_code_points(s) + 1 : s.size() / from.size();
    if (to.size() > from.size()) in.budget().check_size(s.size() + pieces * to.size());
    return Value(text::replace(s, from, to, is_integer(count) ? int_of(count) : -1));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    ArgReader a(name, args, {"sub"});
    const std::string& sub = string_arg(a.get(0), name);
    const size_t at = name[0] == 'r' ? s.rfind(sub) : s.find(sub);
    if (at == std::string::npos) {
      if (name == "index" || name == "rindex") throw RuntimeError("substring not found");
      return Value(-1);
    }
    return Value(code_point_index(s, at));
  }
  if (name == "count") {
    ArgReader a(name, args, {"sub"});
    const std::string& sub = string_arg(a.get(0), name);
    if (sub.empty()) return Value(static_cast<int64_t>(text::count_code_points(s)) + 1);
    int64_t n = 0;
    for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
    return Value(n);
  }
  return string_method_more(in, s, name, args);
}

Value string_method_more(Interpreter& in, const std::string& s, std::string_view name,
                         CallArgs& args) {
  if (name == "join") {
    ArgReader a(name, args, {"iterable"});
    if (!a.get(0)) throw RuntimeError("join() takes exactly one argument");
    std::string out;
    size_t i = 0;
    for (const Value& item : in.iterate(*a.get(0))) {
      if (!item.is_string()) {
        throw RuntimeError("sequence item " + std::to_string(i) + ": expected str instance, " +
                           type_name(item) + " found");
      }
      if (i++ > 0) out += s;
      out += item.as_string();
      in.budget().check_size(out.size());
    }
    return Value(std::move(out));
  }
  if (name == "isdigit" || name == "isnumeric" || name == "isdecimal")
    return Value(all_code_points(s, is_digit_cp));
  if (name == "isalpha") return Value(all_code_points(s, is_alpha_cp));
  if (name == "isalnum") return Value(all_code_points(s, is_alnum_cp));
  if (name == "isspace") return Value(all_code_points(s, text::is_space));
  if (name == "isupper" || name == "islower") {
    CallArgs none;
    return Value(in.apply_test(name.substr(2), Value(s), none));
  }
  if (name == "swapcase") {
    std::string out;
    for (size_t i = 0; i < s.size();) {
      const size_t len = text::decode(s, i).length;
      const std::string ch = s.substr(i, len);
      const std::string up = text::to_upper(ch);
      out += up != ch ? up : text::to_lower(ch);
      i += len;
    }
    return Value(std::move(out));
  }
  if (name == "format") return Value(format_fields(in, s, args));
  if (name == "center" || name == "ljust" || name == "rjust") {
    ArgReader a(name, args, {"width", "fillchar"});
    return pad(in, s, a, name == "center" ? 0 : name == "ljust" ? -1 : 1);
  }
  if (name == "zfill") {
    ArgReader a(name, args, {"width"});
    const Value width = a.get_or(0, Value(0));
    const auto len = static_cast<int64_t>(text::count_code_points(s));
    if (!is_integer(width) || int_of(width) <= len) return Value(s);
    in.budget().check_size(static_cast<size_t>(std::min<int64_t>(int_of(width), INT32_MAX)));
    const size_t sign = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
    return Value(s.substr(0, sign) + std::string(static_cast<size_t>(int_of(width) - len), '0') +
                 s.substr(sign));
  }
  if (name == "removeprefix" || name == "removesuffix") {
    ArgReader a(name, args, {"affix"});
    const std::string& affix = string_arg(a.get(0), name);
    if (name == "removeprefix") return Value(s.starts_with(affix) ? s.substr(affix.size()) : s);
    return Value(s.ends_with(affix) ? s.substr(0, s.size() - affix.size()) : s);
  }
  if (name == "partition" || name == "rpartition") {
    ArgReader a(name, args, {"sep"});
    const std::string& sep = string_arg(a.get(0), name);
    if (sep.empty()) throw RuntimeError("empty separator");
    const size_t at = name == "partition" ? s.find(sep) : s.rfind(sep);
    if (at == std::string::npos) {
      return name == "partition" ? strings_to_list(in, {s, "", ""})
                                 : strings_to_list(in, {"", "", s});
    }
    return strings_to_list(in, {s.substr(0, at), sep, s.substr(at + sep.size())});
  }
  throw RuntimeError("'str' object has no method '" + std::string(name) + "'");
}

Value list_method(Interpreter& in, const Value& receiver, std::string_view name, CallArgs& args) {
  Array& array = receiver.as_array();
  auto& items = array.items;
  if (name == "index" || name == "count") {
    ArgReader a(name, args, {"value"});
    if (!a.get(0)) throw RuntimeError(std::string(name) + "() takes exactly one argument");
    int64_t n = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!equals(items[i], *a.get(0), in.budget())) continue;
      if (name == "index") return Value(static_cast<int64_t>(i));
      ++n;
    }
    if (name == "index") throw RuntimeError("list.index(x): x not in list");
    return Value(n);
  }
  if (name == "copy") return in.heap().array(items);
  if (array.is_tuple)
    throw RuntimeError("'tuple' object has no attribute '" + std::string(name) + "'");
  require_mutable(array);
  if (name == "append") {
    ArgReader a(name, args, {"object"});
    if (!a.get(0)) throw RuntimeError("append() takes exactly one argument");
    items.push_back(*a.get(0));
  } else if (name == "extend") {
    ArgReader a(name, args, {"iterable"});
    if (!a.get(0)) throw RuntimeError("extend() takes exactly one argument");
    std::vector<Value> more = in.iterate(*a.get(0));
    items.insert(items.end(), more.begin(), more.end());
  } else if (name == "insert") {
    ArgReader a(name, args, {"index", "object"});
    if (!a.get(0) || !a.get(1) || !is_integer(*a.get(0)))
      throw RuntimeError("insert() takes an index and an object");
    const auto n = static_cast<int64_t>(items.size());
    int64_t i = int_of(*a.get(0));
    i = i < 0 ? std::max<int64_t>(0, i + n) : std::min(i, n);
    items.insert(items.begin() + i, *a.get(1));
  } else if (name == "pop") {
    ArgReader a(name, args, {"index"});
    const Value index = a.get_or(0, Value(-1));
    const auto n = static_cast<int64_t>(items.size());
    int64_t i = is_integer(index) ? int_of(index) : -1;
    if (i < 0) i += n;
    if (i < 0 || i >= n)
      throw RuntimeError(n == 0 ? "pop from empty list" : "pop index out of range");
    Value out = std::move(items[static_cast<size_t>(i)]);
    items.erase(items.begin() + i);
    return out;
  } else if (name == "remove") {
    ArgReader a(name, args, {"value"});
    if (!a.get(0)) throw RuntimeError("remove() takes exactly one argument");
    auto it = std::find_if(items.begin(), items.end(),
                           [&](const Value& v) { return equals(v, *a.get(0), in.budget()); });
    if (it == items.end()) throw RuntimeError("list.remove(x): x not in list");
    items.erase(it);
  } else if (name == "reverse") {
    std::reverse(items.begin(), items.end());
  } else if (name == "sort") {
    CallArgs filter_args = args;
    Value sorted = in.apply_filter("sort", receiver, filter_args);
    items = sorted.as_array().items;
  } else if (name == "clear") {
    items.clear();
  }
  in.budget().charge(1 + items.size() / 64);
  return Value::none();
}

Value dict_method(Interpreter& in, const Value& receiver, std::string_view name, CallArgs& args) {
  Object& object = receiver.as_object();
  if (name == "items" || name == "keys" || name == "values") {
    ArgReader a(name, args, {});
    std::vector<Value> out;
    for (const auto& [k, v] : object.entries()) {
      if (name == "items")
        out.push_back(in.heap().tuple({Value(k), v}));
      else
        out.push_back(name == "keys" ? Value(k) : v);
    }
    in.budget().charge(out.size());
    return in.heap().array(std::move(out));
  }
  if (name == "get") {
    ArgReader a(name, args, {"key", "default"});
    if (!a.get(0)) throw RuntimeError("get() takes at least 1 argument");
    const Value* found = object.find(key_string(*a.get(0), in.budget()));
    return found ? *found : a.get_or(1, Value::none());
  }
  if (name == "copy") {
    Value out = in.heap().object();
    for (const auto& [k, v] : object.entries()) out.as_object().set(k, v);
    return out;
  }
  require_mutable(object);
  if (name == "pop" || name == "setdefault") {
    ArgReader a(name, args, {"key", "default"});
    if (!a.get(0)) throw RuntimeError(std::string(name) + "() takes at least 1 argument");
    const std::string key = key_string(*a.get(0), in.budget());
    const Value* found = object.find(key);
    if (name == "setdefault") {
      if (found) return *found;
      object.set(key, a.get_or(1, Value::none()));
      return a.get_or(1, Value::none());
    }
    if (!found) {
      if (a.get(1)) return *a.get(1);
      throw RuntimeError("KeyError: " + to_repr(*a.get(0), in.budget()));
    }
    Value out = *found;
    object.erase(key);
    return out;
  }
  if (name == "update") {
    for (const Value& src : args.positional) {
      if (!src.is_object()) throw RuntimeError("update() expects a mapping");
      for (const auto& [k, v] : src.as_object().entries()) object.set(k, v);
    }
    for (const auto& [k, v] : args.keyword) object.set(k, v);
    in.budget().charge(1 + object.size() / 64);
    return Value::none();
  }
  object.clear();  // "clear"
  return Value::none();
}

}  // namespace

bool has_method(const Value& receiver, std::string_view name) {
  switch (receiver.kind()) {
    case Kind::kString: return listed(kStringMethods, name) || listed(kMoreStringMethods, name);
    case Kind::kArray: return listed(kListMethods, name);
    case Kind::kObject: return listed(kDictMethods, name);
    default: return false;
  }
}

Value call_method(Interpreter& in, const Value& receiver, std::string_view name, CallArgs& args) {
  in.budget().charge(1);
  switch (receiver.kind()) {
    case Kind::kString: {
      Value out = string_method(in, receiver.as_string(), name, args);
      if (out.is_string()) in.budget().charge_bytes(out.as_string().size());
      return out;
    }
    case Kind::kArray: return list_method(in, receiver, name, args);
    case Kind::kObject: return dict_method(in, receiver, name, args);
    default:
      throw RuntimeError("'" + type_name(receiver) + "' object has no method '" +
                         std::string(name) + "'");
  }
}

}  // namespace engine::jinja
