// The table of `ggufd serve` settings: one row per ServeConfig field, with its flag name, help
// group, TOML section, scope (per model or server-wide), allowed values and a pointer to the
// field. add_serve_options(), finalize(), the config file, the --models-preset file, describe()
// and the ServiceOptions conversion (tools/ggufd/serve_options.h) all walk this table, so a new
// setting is one new row in settings_table.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "config/serve_config.h"

namespace config {

// The field a setting writes. int64_t fields are byte counts (accept K/M/G suffixes).
using Target = std::variant<std::string*, int*, int64_t*, double*, bool*, std::vector<std::string>*>;

// Where a setting applies.
//   kServer: the whole server (HTTP, keys, logging, the router itself); not allowed in a preset.
//   kModel: each model on its own: a preset's [id] or ["*"] section may set it, and a model without
//     one inherits the command line's (flags > preset [id] > preset ["*"] > env > file > default).
//   kModelId: names one model (model, alias, hf): only in a model's own [id] section; the command
//     line's value is the command line's model, never inherited by the router's other models.
enum class Scope { kServer, kModel, kModelId };

struct Setting {
  std::string name;     // flag name without dashes, also the `sources` key: "ctx-size"
  std::string flags;    // CLI11 option names: "-m,--model"
  std::string group;    // --help group: "Model", "HTTP", "Engine", "Sampling defaults", "Logging"
  std::string section;  // TOML section: model, http, engine, sampling, log
  std::string help;
  Target target;
  double min = 0;       // numbers: inclusive range
  double max = 0;
  std::vector<std::string> choices;  // text: allowed values (empty: anything)
  Scope scope = Scope::kServer;
  std::string env;      // environment variable when GGUFD_<NAME> is not it ("GGUFD_CACHE"); "" derives it

  bool is_list() const { return std::holds_alternative<std::vector<std::string>*>(target); }
  bool is_flag() const { return std::holds_alternative<bool*>(target); }
  bool per_model() const { return scope != Scope::kServer; }
  std::string env_name() const;   // `env`, else "GGUFD_CTX_SIZE" from the name
  std::string type_name() const;  // "INT", "BYTES", "NUMBER", "TEXT", ...
};

// Every setting of `cfg`, in --help order. The rows point into `cfg`.
std::vector<Setting> settings_of(ServeConfig& cfg);

// The row named `name` ("ctx-size"), or nullptr.
const Setting* find_setting(const std::vector<Setting>& table, const std::string& name);

// Parses `values` (one for scalars; any number for lists), checks range / choices and stores the
// result in the setting's field. Throws std::invalid_argument "<label>: ..." (label names the
// setting and the source, e.g. "--port (from GGUFD_PORT)").
void assign(const Setting& s, const std::vector<std::string>& values, const std::string& label);

// The current value of the setting's field as text ("4096", "0.95", "a, b", "true").
std::string current_text(const Setting& s);

}  // namespace config
