// The --models-preset file: per-model settings for the router, in the config-file format
// (config/toml_lite.h).
//
//   version = 1                  # optional; the only key allowed outside a section
//   ["*"]                        # every model (also written [*])
//   ctx-size = 8192
//   [qwen3-4b]                   # the model of that id (a file below --models-dir, or named here)
//   parallel = 2
//   ["org/name"]                 # ids with other characters than A-Z a-z 0-9 _ - are quoted
//   model = "/models/x.gguf"     # or hf = "org/repo:Q4_K_M": a model of its own
//   load-on-startup = true       # preset-only: load when the server starts
//
// Keys are the names of per-model settings (Scope kModel or kModelId in settings.h), with '-' or
// '_'. model, alias and hf name one model, so they are refused in ["*"]. Relative paths are
// relative to the working directory, as on the command line (and as llama-server does).
// Precedence for one model: flags > its [id] section > ["*"] > env > config file > defaults.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace config {

struct PresetValue {
  std::vector<std::string> values;  // one item for a scalar
  int line = 0;
};

// One [id] section (or ["*"]).
struct PresetSection {
  std::string id;                              // "*": every model
  std::map<std::string, PresetValue> values;   // setting name ("ctx-size") -> value
  bool load_on_startup = false;
  int load_on_startup_line = 0;                // 0: not set
  // The section's alias (its "alias" value), or "".
  std::string alias() const;
};

// A parsed preset file. Value type; empty when there is no --models-preset.
struct Presets {
  std::string path;                    // the file, for messages; "" when there is none
  std::vector<PresetSection> models;   // [id] sections in file order (not ["*"])
  PresetSection all;                   // ["*"] (empty when absent)
  // The section of `id`: the one named `id`, else the one whose alias is `id`; nullptr if none.
  const PresetSection* find(const std::string& id) const;
};

// Parses `text` against the settings table (settings_of): a server-wide key, an unknown key, a key set twice, a
// model / alias / hf key in ["*"] or a bad value (type, range, choices: checked with the row) is an
// error. Throws std::invalid_argument starting "--models-preset <path>: line N: ..." or, for a bad
// value, "--ctx-size (from <path> line N, [id]): 0 is not allowed: expected 16..1048576".
Presets parse_presets(const std::string& text, const std::string& path);

// Reads `path` and parses it (parse_presets). Throws std::invalid_argument when it can't be read.
Presets load_presets(const std::string& path);

// The label of a preset value in messages and sources: "<path> line N, [id]".
std::string preset_label(const Presets& presets, const PresetSection& section, const PresetValue& value);

}  // namespace config
