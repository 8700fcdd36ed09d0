// add_serve_options / finalize / describe: the settings table wired to CLI11, the environment
// (through CLI11's envname) and the config file, with precedence flags > env > file > defaults.
//
// CLI11 2.1 applies its own config file (set_config) BEFORE the environment and skips env for
// options the file set, which would make the file beat env. So the options here are untyped
// (CLI11 only collects raw text and reads GGUFD_* variables), the file is read in finalize(), and
// all conversion and validation happens here with messages that name the setting.
#include "config/serve_config.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "config/config_file.h"
#include "config/preset.h"
#include "config/settings.h"
#include "config/validate.h"
#include "config/values.h"

namespace config {

namespace {

void add_setting_option(CLI::App& app, const Setting& s) {
  CLI::Option* opt = s.is_flag() ? app.add_flag(s.flags, s.help) : app.add_option(s.flags, s.help);
  opt->envname(s.env_name())->group(s.group);
  if (s.is_flag()) return;
  opt->type_name(s.type_name());
  opt->multi_option_policy(s.is_list() ? CLI::MultiOptionPolicy::TakeAll : CLI::MultiOptionPolicy::TakeLast);
  const std::string def = current_text(s);
  if (!def.empty()) opt->default_str(def);
}

// A setting's value as given by one source, with the label error messages start with.
struct Given {
  std::string source = "default";  // "default", "file", "env" or "flag"
  std::string label;               // "--ctx-size", "--ctx-size (from GGUFD_CTX_SIZE)", ...
  std::vector<std::string> values;
};

bool on_command_line(const CLI::App& app, const CLI::Option* opt) {
  const auto& order = app.parse_order();
  return std::find(order.begin(), order.end(), opt) != order.end();
}

// Where `s` comes from: a flag, else CLI11's GGUFD_* result, else the file, else its default.
Given given(const CLI::App& app, const Setting& s, const FileSettings& file, const std::string& file_path) {
  const std::string flag = "--" + s.name;
  const CLI::Option* opt = app.get_option(flag);
  const std::vector<std::string>& raw = opt->results();
  if (on_command_line(app, opt)) {
    return {"flag", flag, s.is_list() ? raw : std::vector<std::string>{raw.back()}};
  }
  if (!raw.empty()) {  // CLI11 stored the environment variable
    const std::string label = flag + " (from " + opt->get_envname() + ")";
    if (!s.is_list()) return {"env", label, {raw.back()}};
    std::vector<std::string> items = split_list(raw.back());
    if (items.empty()) throw std::invalid_argument(label + ": '" + raw.back() + "' holds no values");
    return {"env", label, std::move(items)};
  }
  if (const auto it = file.find(s.name); it != file.end()) {
    const std::string label = flag + " (from " + file_path + " line " + std::to_string(it->second.line) + ")";
    return {"file", label, it->second.values};
  }
  return {"default", flag, {}};
}

std::string config_source(const CLI::App& app) {
  const CLI::Option* opt = app.get_option("--config");
  if (on_command_line(app, opt)) return "flag";
  return opt->count() > 0 ? "env" : "default";
}

// --hub-cache left unset: $HOME/.cache/ggufd (GGUFD_CACHE is the row's own variable).
void default_hub_cache(ServeConfig& cfg) {
  if (!cfg.download.hub_cache.empty()) return;
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0') cfg.download.hub_cache = std::string(home) + "/.cache/ggufd";
}

// Reads --models-preset and checks every model's configuration under it: each [id] section's,
// and ["*"]'s alone (the models found in --models-dir or the cache that have no section).
void load_models_preset(ServeConfig& cfg) {
  if (cfg.router.models_preset.empty()) return;
  cfg.presets = load_presets(cfg.router.models_preset);
  apply_preset(cfg, "");
  for (const PresetSection& section : cfg.presets.models) apply_preset(cfg, section.id);
}

// "preset [id]: ctx-size = 8192 (line 3), parallel = 2 (line 4; the flag's 4 wins)"
std::string describe_section(const ServeConfig& cfg, const std::vector<Setting>& table, const PresetSection& sec) {
  std::string out;
  for (const auto& [name, value] : sec.values) {
    const auto src = cfg.sources.find(name);
    const bool flag_wins = src != cfg.sources.end() && src->second == "flag" &&
                           find_setting(table, name)->scope == Scope::kModel;
    std::string text;
    for (const std::string& v : value.values) text += (text.empty() ? "" : ", ") + v;
    out += (out.empty() ? "" : ", ") + name + " = " + (text.empty() ? "\"\"" : text) + " (line " +
           std::to_string(value.line) + (flag_wins ? "; the flag wins" : "") + ")";
  }
  if (sec.load_on_startup_line != 0) {
    out += (out.empty() ? "" : ", ") + std::string("load-on-startup = ") + (sec.load_on_startup ? "true" : "false") +
           " (line " + std::to_string(sec.load_on_startup_line) + ")";
  }
  return "preset [" + sec.id + "]: " + (out.empty() ? "(nothing)" : out) + "\n";
}

}  // namespace

void add_serve_options(CLI::App& app, ServeConfig& cfg) {
  for (const Setting& s : settings_of(cfg)) add_setting_option(app, s);
  app.footer(
      "Every setting can also be set with GGUFD_<NAME> (e.g. GGUFD_CTX_SIZE; lists comma-separated)\n"
      "or in the --config TOML file (keys like the flags: ctx-size or ctx_size, flat or in\n"
      "[model] [http] [engine] [sampling] [log] [router] [download] sections).\n"
      "Precedence: flags > env > file > defaults; with --models-preset, for each model:\n"
      "flags > its [id] section > [\"*\"] > env > file > defaults.");
  app.add_option("--config", cfg.config_file,
                 "TOML file of settings, keys named like the flags (flags > env > file > defaults)")
      ->envname("GGUFD_CONFIG")
      ->type_name("PATH")
      ->group("Configuration");
  app.add_flag("--print-config", cfg.print_config, "print the effective settings and where each came from, then exit")
      ->group("Configuration");
}

void finalize(CLI::App& app, ServeConfig& cfg) {
  const std::vector<Setting> table = settings_of(cfg);
  const FileSettings file = cfg.config_file.empty() ? FileSettings{} : load_config_file(cfg.config_file, table);
  std::map<std::string, std::string> labels;
  for (const Setting& s : table) {
    const Given g = given(app, s, file, cfg.config_file);
    if (g.source != "default") assign(s, g.values, g.label);
    cfg.sources[s.name] = g.source;
    labels[s.name] = g.label;
  }
  cfg.sources["config"] = config_source(app);
  merge_api_key_file(cfg.http, labels.at("api-key-file"));
  if (cfg.sources["api-key"] == "default" && !cfg.http.api_keys.empty()) {
    cfg.sources["api-key"] = cfg.sources["api-key-file"];  // every key came from the key file
  }
  default_hub_cache(cfg);
  validate(cfg, labels);
  load_models_preset(cfg);
}

std::string describe(const ServeConfig& cfg) {
  ServeConfig copy = cfg;  // settings_of() needs mutable fields; describe() changes nothing
  auto line = [&](const std::string& name, const std::string& value) {
    const auto it = cfg.sources.find(name);
    return name + " = " + value + "  (" + (it == cfg.sources.end() ? "default" : it->second) + ")\n";
  };
  std::string out = line("config", cfg.config_file.empty() ? "\"\"" : cfg.config_file);
  const std::vector<Setting> table = settings_of(copy);
  for (const Setting& s : table) {
    std::string value = current_text(s);
    if (s.name == "api-key") {
      const size_t n = cfg.http.api_keys.size();
      value = n == 0 ? "(none)" : "*** (" + std::to_string(n) + (n == 1 ? " key)" : " keys)");
    }
    out += line(s.name, value.empty() ? "\"\"" : value);
  }
  if (!cfg.presets.path.empty()) {
    out += describe_section(cfg, table, cfg.presets.all);
    for (const PresetSection& sec : cfg.presets.models) out += describe_section(cfg, table, sec);
  }
  return out;
}

}  // namespace config
