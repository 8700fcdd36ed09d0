// The --config TOML file mapped onto the settings table.
//
// File format (a TOML subset, see toml_lite.h). Keys are the flag names without dashes, written
// with '-' or '_' (ctx-size or ctx_size). Keys may be flat at the top level, or inside the section
// of their row (Setting::section, in --help order: [model] [http] [engine] [sampling] [log]
// [router] [download]; `ggufd serve --help` groups the keys the same way).
// A key in another section, an unknown section, an unknown key or a key set twice is an error.
// List settings (api-key, cors-origin) take an array or a single string. Relative paths are
// relative to the working directory, as on the command line.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "config/settings.h"

namespace config {

struct FileValue {
  std::vector<std::string> values;  // one item for a scalar
  int line = 0;
};

// Setting name ("ctx-size") -> its value in the file.
using FileSettings = std::map<std::string, FileValue>;

// Reads and checks `path` against `table`. Throws std::invalid_argument with a message that
// starts with "--config <path>: ", e.g. "--config /x.toml: unknown key 'ctxsize' (line 3)".
FileSettings load_config_file(const std::string& path, const std::vector<Setting>& table);

// The whole file `path` as text; throws std::invalid_argument "<label>: the file does not exist" etc.
std::string read_settings_file(const std::string& path, const std::string& label);

// A key as the table names it: '_' -> '-' ("ctx_size" -> "ctx-size").
std::string normalized_key(std::string key);

// "unknown key 'ctxsize' (line 3); did you mean 'ctx-size'?" (the hint only for a close name in `table`).
std::string unknown_key_message(const std::string& key, int line, const std::vector<Setting>& table);

// Parses file text (what load_config_file does after reading); `label` prefixes the errors.
FileSettings parse_config_text(const std::string& text, const std::vector<Setting>& table,
                               const std::string& label);

}  // namespace config
