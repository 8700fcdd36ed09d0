#include "server/api/request_json.h"

#include <cmath>

#include "server/api/api_error.h"

namespace server {

using nlohmann::json;

namespace {

const json* field(const json& j, const std::string& key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

[[noreturn]] void wrong_type(const std::string& key, const char* expected, const json& found) {
  throw invalid_field(key, "'" + key + "' must be " + expected + ", found " + json_type_name(found));
}

}  // namespace

std::string json_type_name(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "boolean";
    case json::value_t::string: return "string";
    case json::value_t::array: return "array";
    case json::value_t::object: return "object";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "integer";
    case json::value_t::number_float: return "number";
    default: return "unknown";
  }
}

json parse_object(std::string_view body, int max_depth) {
  // The callback sees every container as it opens, `depth` containers deep; throwing there ends
  // the parse with at most max_depth levels built.
  const json::parser_callback_t limit = [max_depth](int depth, json::parse_event_t event, json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= max_depth) {
      throw ApiError(400, "request body nests JSON objects and arrays deeper than " + std::to_string(max_depth) +
                              " levels, the server's limit (--max-json-depth)",
                     "invalid_request_error", std::nullopt, "json_too_deep");
    }
    return true;
  };
  json j = json::parse(body.begin(), body.end(), limit, false);
  if (j.is_discarded()) throw ApiError(400, "request body is not valid JSON");
  if (!j.is_object()) throw ApiError(400, "request body must be a JSON object, found " + json_type_name(j));
  return j;
}

std::optional<std::string> get_string(const json& j, const std::string& key) {
  const json* v = field(j, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) wrong_type(key, "a string", *v);
  return v->get<std::string>();
}

std::optional<bool> get_bool(const json& j, const std::string& key) {
  const json* v = field(j, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) wrong_type(key, "a boolean", *v);
  return v->get<bool>();
}

std::optional<int64_t> get_int(const json& j, const std::string& key, int64_t min, int64_t max) {
  const json* v = field(j, key);
  if (v == nullptr) return std::nullopt;
  int64_t x = 0;
  if (v->is_number_integer()) {
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      x = INT64_MAX;
    } else {
      x = v->get<int64_t>();
    }
  } else if (v->is_number_float() && std::floor(v->get<double>()) == v->get<double>() &&
             std::fabs(v->get<double>()) < 9e18) {
    x = static_cast<int64_t>(v->get<double>());
  } else {
    wrong_type(key, "an integer", *v);
  }
  if (x < min || x > max) {
    throw invalid_field(key, "'" + key + "' must be between " + std::to_string(min) + " and " +
                                 std::to_string(max) + ", found " + std::to_string(x));
  }
  return x;
}

std::optional<double> get_number(const json& j, const std::string& key, double min, double max) {
  const json* v = field(j, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) wrong_type(key, "a number", *v);
  const double x = v->get<double>();
  if (!(x >= min && x <= max)) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "'%s' must be between %g and %g, found %g", key.c_str(), min,
                  max, x);
    throw invalid_field(key, buf);
  }
  return x;
}

std::optional<std::vector<int32_t>> get_token_ids(const json& j, const std::string& key,
                                                  int32_t n_vocab) {
  const json* v = field(j, key);
  if (v == nullptr) return std::nullopt;
  return to_token_ids(*v, key, n_vocab);
}

std::vector<int32_t> to_token_ids(const json& array, const std::string& key, int32_t n_vocab) {
  const json* v = &array;
  if (!v->is_array()) wrong_type(key, "an array of token ids", *v);
  std::vector<int32_t> ids;
  ids.reserve(v->size());
  for (const json& e : *v) {
    if (!e.is_number_integer()) wrong_type(key, "an array of integers", e);
    const int64_t id = e.is_number_unsigned() ? static_cast<int64_t>(std::min<uint64_t>(e.get<uint64_t>(), INT32_MAX))
                                              : e.get<int64_t>();
    if (id < 0 || id >= n_vocab) {
      throw invalid_field(key, "'" + key + "' contains token id " + std::to_string(id) +
                                   ", outside the vocabulary [0, " + std::to_string(n_vocab) + ")");
    }
    ids.push_back(static_cast<int32_t>(id));
  }
  return ids;
}

std::optional<std::vector<std::string>> get_strings(const json& j, const std::string& key) {
  const json* v = field(j, key);
  if (v == nullptr) return std::nullopt;
  if (v->is_string()) return std::vector<std::string>{v->get<std::string>()};
  if (!v->is_array()) wrong_type(key, "a string or an array of strings", *v);
  std::vector<std::string> out;
  for (const json& e : *v) {
    if (!e.is_string()) wrong_type(key, "a string or an array of strings", e);
    out.push_back(e.get<std::string>());
  }
  return out;
}

template <class Json>
static std::string string_or_impl(const Json& j, const std::string& key, const std::string& fallback) {
  if (!j.is_object()) return fallback;
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->template get<std::string>() : fallback;
}

std::string string_or(const nlohmann::ordered_json& j, const std::string& key, const std::string& fallback) {
  return string_or_impl(j, key, fallback);
}

std::string string_or(const json& j, const std::string& key, const std::string& fallback) {
  return string_or_impl(j, key, fallback);
}

std::string excerpt(std::string_view s, size_t max) {
  if (s.size() <= max) return std::string(s);
  return std::string(s.substr(0, max)) + "...";
}

std::string dump_json(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace server

namespace server {

namespace {

// Reads the top-level "model" and "keep_alive" of an object (and, when `want_input`, whether a
// "prompt" or "messages" is there and not empty); stops the parse (returns false) once it has
// them all. keep_alive is kept when it is a number or a string (anything else is for the router
// to refuse: kept as null).
class RoutingPeek : public nlohmann::json::json_sax_t {
 public:
  explicit RoutingPeek(bool want_input) : want_input_(want_input) {}
  RoutingFields fields;

  bool null() override { return scalar(nlohmann::json()); }
  bool boolean(bool b) override { return scalar(b); }
  bool number_integer(number_integer_t v) override { return scalar(v); }
  bool number_unsigned(number_unsigned_t v) override { return scalar(v); }
  bool number_float(number_float_t v, const string_t&) override { return scalar(v); }
  bool binary(binary_t&) override { return scalar(nlohmann::json()); }
  bool string(string_t& s) override {
    if (depth_ == 1 && key_ == Key::kModel) {
      fields.model = s;
      key_ = Key::kOther;
      return !done();
    }
    if (depth_ == 1 && key_ == Key::kPrompt && s.empty()) {  // no prompt
      key_ = Key::kOther;
      return true;
    }
    return scalar(s);
  }
  bool start_object(std::size_t) override { return open(false); }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    key_ = depth_ != 1             ? Key::kOther
           : k == "model"          ? Key::kModel
           : k == "keep_alive"     ? Key::kKeepAlive
           : !want_input_          ? Key::kOther
           : k == "prompt"         ? Key::kPrompt
           : k == "messages"       ? Key::kMessages
                                   : Key::kOther;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  enum class Key { kOther, kModel, kKeepAlive, kPrompt, kMessages };
  bool done() const { return fields.model && fields.keep_alive && (!want_input_ || fields.has_input); }
  // A prompt or messages of any other value than null, "" or [] counts as input: a request to
  // generate from (whose own parse refuses what is not a prompt or a list of messages).
  bool scalar(nlohmann::json v) {
    if (inside_messages()) return !done();
    if (depth_ == 1 && (key_ == Key::kPrompt || key_ == Key::kMessages) && !v.is_null()) {
      fields.has_input = true;
      key_ = Key::kOther;
      return !done();
    }
    if (depth_ == 1 && key_ == Key::kKeepAlive) {
      fields.keep_alive = v.is_number() || v.is_string() ? std::move(v) : nlohmann::json();
      key_ = Key::kOther;
      return !done();
    }
    key_ = Key::kOther;
    return depth_ > 0;  // a top-level scalar: not an object
  }
  bool open(bool array) {
    if (depth_ == 1 && key_ == Key::kKeepAlive) fields.keep_alive = nlohmann::json();  // an object or array
    const bool element = inside_messages();
    if (depth_ == 1 && (key_ == Key::kPrompt || key_ == Key::kMessages)) {
      messages_open_ = key_ == Key::kMessages && array;  // its first element will say it is not empty
      fields.has_input |= !messages_open_;
    }
    key_ = Key::kOther;
    ++depth_;
    return !element || !done();
  }
  bool close() {
    --depth_;
    messages_open_ = false;
    return true;
  }
  // Any value inside the top-level "messages" array (its first element) makes it non-empty.
  bool inside_messages() {
    if (!messages_open_ || depth_ != 2) return false;
    messages_open_ = false;
    fields.has_input = true;
    return true;
  }
  const bool want_input_;
  int depth_ = 0;
  Key key_ = Key::kOther;
  bool messages_open_ = false;  // the top-level "messages" array just opened, nothing in it yet
};

}  // namespace

RoutingFields peek_routing(std::string_view body, bool want_input) {
  RoutingPeek peek(want_input);
  nlohmann::json::sax_parse(body.begin(), body.end(), &peek, nlohmann::json::input_format_t::json, false);
  return peek.fields;
}

}  // namespace server
