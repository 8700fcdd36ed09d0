// Helpers for the chat template case files (../shared/templates/README.md's format): JSON to
// template values (keeping key order), the fixed clock, file reading.
#pragma once

#include <cstdint>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "engine/text/chat_template.h"
#include "engine/text/jinja/value.h"

namespace ggufd::test {

// A JSON value as a (host-owned, read-only) template value. Objects keep the key order of `j`,
// which is why case files are parsed as ordered_json: templates print tools and arguments with
// tojson, and json.dumps keeps insertion order.
inline engine::jinja::Value to_value(const nlohmann::ordered_json& j) {
  using engine::jinja::Value;
  using Type = nlohmann::ordered_json::value_t;
  switch (j.type()) {
    case Type::null: return Value::none();
    case Type::boolean: return Value(j.get<bool>());
    case Type::number_integer: return Value(j.get<int64_t>());
    case Type::number_unsigned: return Value(j.get<uint64_t>());
    case Type::number_float: return Value(j.get<double>());
    case Type::string: return Value(j.get<std::string>());
    case Type::array: {
      Value out = Value::array();
      for (const auto& item : j) out.push_back(to_value(item));
      return out;
    }
    case Type::object: {
      Value out = Value::object();
      for (const auto& [key, item] : j.items()) out.set(key, to_value(item));
      return out;
    }
    default: return Value();
  }
}

// "2026-11-22T12:00:00" (UTC) as a broken-down time with weekday and day of year filled in.
inline std::tm parse_time(const std::string& iso) {
  std::tm tm{};
  std::istringstream in(iso);
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  const time_t t = timegm(&tm);
  std::tm normalized{};
  gmtime_r(&t, &normalized);
  return normalized;
}

// The whole file as bytes ("" if it cannot be read).
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Renders `input` and checks it against case `c`: its "expected" text byte for byte, or the
// raise_exception() message of its "expected_error".
template <class Json>
void expect_case_renders(const engine::ChatTemplate& tmpl, const engine::ChatInput& input, const Json& c) {
  if (c.contains("expected_error")) {
    try {
      const std::string out = tmpl.render(input);
      ADD_FAILURE() << "expected raise_exception, got output:\n" << out;
    } catch (const engine::TemplateRaise& e) {
      EXPECT_EQ(std::string(e.what()), c.at("expected_error").template get<std::string>());
    }
  } else {
    EXPECT_EQ(tmpl.render(input), c.at("expected").template get<std::string>());
  }
}

}  // namespace ggufd::test
