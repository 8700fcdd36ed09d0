// The settings table and the typed assignment of text values to ServeConfig fields.
#include "config/settings.h"

#include <cctype>
#include <stdexcept>

#include "config/values.h"

namespace config {

namespace {

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

// Throws "<label>: 0 is not allowed: expected 16..1048576" / "<label>: 70000 is out of range 0..65535".
void check_range(const Setting& s, double v, const std::string& shown, const std::string& label) {
  if (v >= s.min && v <= s.max) return;
  const std::string range = format_real(s.min) + ".." + format_real(s.max);
  throw std::invalid_argument(label + ": " + shown +
                              (v == 0 ? " is not allowed: expected " : " is out of range ") + range);
}

void check_choice(const Setting& s, const std::string& v, const std::string& label) {
  if (s.choices.empty()) return;
  for (const std::string& c : s.choices) {
    if (v == c) return;
  }
  throw std::invalid_argument(label + ": '" + v + "' is not one of " + join(s.choices, ", "));
}

void assign_list(std::vector<std::string>& field, const std::vector<std::string>& values,
                 const std::string& label) {
  field.clear();
  for (const std::string& v : values) {
    std::string item = trim(v);
    if (item.empty()) throw std::invalid_argument(label + ": an empty value is not allowed");
    field.push_back(std::move(item));
  }
}

void assign_scalar(const Setting& s, const std::string& v, const std::string& label) {
  if (auto* text = std::get_if<std::string*>(&s.target)) {
    check_choice(s, v, label);
    **text = v;
  } else if (auto* i = std::get_if<int*>(&s.target)) {
    const int64_t n = parse_integer(label, v);
    check_range(s, static_cast<double>(n), v, label);
    **i = static_cast<int>(n);
  } else if (auto* bytes = std::get_if<int64_t*>(&s.target)) {
    const int64_t n = parse_bytes(label, v);
    check_range(s, static_cast<double>(n), v, label);
    **bytes = n;
  } else if (auto* real = std::get_if<double*>(&s.target)) {
    const double x = parse_real(label, v);
    check_range(s, x, v, label);
    **real = x;
  } else if (auto* flag = std::get_if<bool*>(&s.target)) {
    **flag = parse_bool(label, v);
  }
}

}  // namespace

std::string Setting::env_name() const {
  if (!env.empty()) return env;
  std::string out = "GGUFD_";
  for (char c : name) out.push_back(c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  return out;
}

std::string Setting::type_name() const {
  if (!choices.empty()) return join(choices, "|");
  if (std::holds_alternative<int*>(target)) return "INT";
  if (std::holds_alternative<int64_t*>(target)) return "BYTES";
  if (std::holds_alternative<double*>(target)) return "NUMBER";
  if (is_flag()) return "";
  const bool path = name == "model" || name == "model-draft" || name.ends_with("-file") || name.ends_with("-dir") ||
                    name == "models-preset" || name == "hub-cache";
  return path ? "PATH" : "TEXT";
}

const Setting* find_setting(const std::vector<Setting>& table, const std::string& name) {
  for (const Setting& s : table) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

void assign(const Setting& s, const std::vector<std::string>& values, const std::string& label) {
  if (auto* list = std::get_if<std::vector<std::string>*>(&s.target)) {
    assign_list(**list, values, label);
    return;
  }
  if (values.size() != 1) {
    throw std::invalid_argument(label + ": expected one value, got a list of " + std::to_string(values.size()));
  }
  assign_scalar(s, trim(values[0]), label);
}

std::string current_text(const Setting& s) {
  if (auto* text = std::get_if<std::string*>(&s.target)) return **text;
  if (auto* i = std::get_if<int*>(&s.target)) return std::to_string(**i);
  if (auto* bytes = std::get_if<int64_t*>(&s.target)) return std::to_string(**bytes);
  if (auto* real = std::get_if<double*>(&s.target)) return format_real(**real);
  if (auto* flag = std::get_if<bool*>(&s.target)) return **flag ? "true" : "false";
  return join(**std::get_if<std::vector<std::string>*>(&s.target), ", ");
}

}  // namespace config
