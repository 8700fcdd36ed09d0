// --config FILE: TOML entries -> settings, with unknown / misplaced / duplicate keys rejected.
#include "config/config_file.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string_view>

#include "config/toml_lite.h"

namespace config {

namespace {

// Levenshtein distance, for "did you mean" hints.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string unknown_key_message(const std::string& key, int line, const std::vector<Setting>& table) {
  std::string msg = "unknown key '" + key + "' (line " + std::to_string(line) + ")";
  const Setting* best = nullptr;
  size_t best_d = 3;  // suggest only close names
  for (const Setting& s : table) {
    const size_t d = edit_distance(key, s.name);
    if (d < best_d) best = &s, best_d = d;
  }
  return best ? msg + "; did you mean '" + best->name + "'?" : msg;
}

std::string normalized_key(std::string key) {
  std::replace(key.begin(), key.end(), '_', '-');
  return key;
}

namespace {

// The sections of the table's rows, in table order: "model, http, ..., log".
std::vector<std::string> sections_of(const std::vector<Setting>& table) {
  std::vector<std::string> out;
  for (const Setting& s : table) {
    if (std::find(out.begin(), out.end(), s.section) == out.end()) out.push_back(s.section);
  }
  return out;
}

// "a, b or c"
std::string listed(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == items.size() ? " or " : ", ") + items[i];
  }
  return out;
}

// Checks one entry's section and key; throws the message without the "--config <path>: " prefix.
const Setting& checked_setting(const TomlEntry& e, const std::vector<Setting>& table) {
  const std::vector<std::string> sections = sections_of(table);
  if (!e.section.empty() && std::find(sections.begin(), sections.end(), e.section) == sections.end()) {
    throw std::invalid_argument("unknown section [" + e.section + "] (line " + std::to_string(e.line) +
                                "): expected " + listed(sections));
  }
  const Setting* s = find_setting(table, normalized_key(e.key));
  if (!s) throw std::invalid_argument(unknown_key_message(e.key, e.line, table));
  if (!e.section.empty() && e.section != s->section) {
    throw std::invalid_argument("key '" + e.key + "' (line " + std::to_string(e.line) + ") belongs in [" +
                                s->section + "] or at the top level, not in [" + e.section + "]");
  }
  if (e.array && !s->is_list()) {
    throw std::invalid_argument("key '" + e.key + "' (line " + std::to_string(e.line) +
                                ") takes one value, not an array");
  }
  return *s;
}

}  // namespace

FileSettings parse_config_text(const std::string& text, const std::vector<Setting>& table,
                               const std::string& label) {
  FileSettings out;
  try {
    for (TomlEntry& e : parse_toml(text)) {
      const Setting& s = checked_setting(e, table);
      const auto [it, added] = out.emplace(s.name, FileValue{std::move(e.values), e.line});
      if (!added) {
        throw std::invalid_argument("'" + s.name + "' is set twice (lines " + std::to_string(it->second.line) +
                                    " and " + std::to_string(e.line) + ")");
      }
    }
  } catch (const std::invalid_argument& err) {
    throw std::invalid_argument(label + ": " + err.what());
  }
  return out;
}

std::string read_settings_file(const std::string& path, const std::string& label) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw std::invalid_argument(label + ": the file does not exist");
  if (!std::filesystem::is_regular_file(path, ec)) throw std::invalid_argument(label + ": not a regular file");
  std::ifstream in(path, std::ios::binary);
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (!in && !in.eof()) throw std::invalid_argument(label + ": cannot read the file");
  return text;
}

FileSettings load_config_file(const std::string& path, const std::vector<Setting>& table) {
  const std::string label = "--config " + path;
  return parse_config_text(read_settings_file(path, label), table, label);
}

}  // namespace config
