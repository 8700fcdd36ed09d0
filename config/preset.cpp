// --models-preset FILE: TOML sections -> per-model settings, checked against the settings table;
// apply_preset(): one model's configuration.
#include "config/preset.h"

#include <stdexcept>

#include "config/config_file.h"
#include "config/serve_config.h"
#include "config/settings.h"
#include "config/toml_lite.h"
#include "config/validate.h"
#include "config/values.h"

namespace config {

namespace {

constexpr const char* kLoadOnStartup = "load-on-startup";

[[noreturn]] void fail(const Presets& p, const std::string& what) {
  throw std::invalid_argument("--models-preset " + p.path + ": " + what);
}

std::string at_line(int line) { return " (line " + std::to_string(line) + ")"; }

// "model, alias, hf, chat-template-file, ..., load-on-startup": what a preset may set.
std::string preset_keys(const std::vector<Setting>& table) {
  std::string out;
  for (const Setting& s : table) {
    if (s.per_model()) out += s.name + ", ";
  }
  return out + kLoadOnStartup;
}

PresetSection& section_named(Presets& p, const std::string& id) {
  if (id == "*") return p.all;
  for (PresetSection& s : p.models) {
    if (s.id == id) return s;
  }
  p.models.push_back(PresetSection{id, {}, false, 0});
  return p.models.back();
}

void add_load_on_startup(const Presets& p, PresetSection& sec, const TomlEntry& e) {
  if (sec.load_on_startup_line != 0) {
    fail(p, "'" + std::string(kLoadOnStartup) + "' is set twice in [" + sec.id + "] (lines " +
                std::to_string(sec.load_on_startup_line) + " and " + std::to_string(e.line) + ")");
  }
  const std::string label = std::string("--") + kLoadOnStartup + " (from " + p.path + " line " +
                            std::to_string(e.line) + ", [" + sec.id + "])";
  if (e.array) throw std::invalid_argument(label + ": takes one value, not an array");
  sec.load_on_startup = parse_bool(label, e.values.at(0));
  sec.load_on_startup_line = e.line;
}

// Checks one key = value of section `sec` and stores it; `table` points into a scratch config the
// value is assigned to, so a bad value fails here with the row's own message.
void add_entry(const Presets& p, PresetSection& sec, const TomlEntry& e, const std::vector<Setting>& table) {
  const std::string name = normalized_key(e.key);
  if (name == kLoadOnStartup) return add_load_on_startup(p, sec, e);
  const Setting* s = find_setting(table, name);
  if (s == nullptr) {
    const std::string msg = unknown_key_message(e.key, e.line, table);
    fail(p, msg.ends_with("?") ? msg : msg + ": a preset takes " + preset_keys(table));
  }
  if (!s->per_model()) {
    fail(p, "key '" + e.key + "'" + at_line(e.line) +
                " is a server-wide setting: give it on the command line, in the environment or in --config; a "
                "preset takes " + preset_keys(table));
  }
  if (s->scope == Scope::kModelId && sec.id == "*") {
    fail(p, "key '" + e.key + "'" + at_line(e.line) + " names one model: not allowed in [\"*\"]");
  }
  if (e.array && !s->is_list()) fail(p, "key '" + e.key + "'" + at_line(e.line) + " takes one value, not an array");
  const PresetValue value{e.values, e.line};
  assign(*s, value.values, "--" + s->name + " (from " + preset_label(p, sec, value) + ")");
  const auto [it, added] = sec.values.emplace(s->name, value);
  if (!added) {
    fail(p, "'" + s->name + "' is set twice in [" + sec.id + "] (lines " + std::to_string(it->second.line) +
                " and " + std::to_string(e.line) + ")");
  }
}

// A section names its model with one of model and hf; aliases and ids name one section each.
void check_sections(const Presets& p) {
  for (const PresetSection& sec : p.models) {
    const auto model = sec.values.find("model");
    const auto hf = sec.values.find("hf");
    if (model != sec.values.end() && hf != sec.values.end()) {
      fail(p, "[" + sec.id + "] sets both model (line " + std::to_string(model->second.line) + ") and hf (line " +
                  std::to_string(hf->second.line) + "): one file or one Hub repository");
    }
    const std::string alias = sec.alias();
    const PresetSection* other = alias.empty() ? nullptr : p.find(alias);
    if (other != nullptr && other != &sec) {
      fail(p, "alias '" + alias + "' of [" + sec.id + "]" + at_line(sec.values.at("alias").line) +
                  " is also the id or alias of [" + other->id + "]");
    }
  }
}

}  // namespace

std::string PresetSection::alias() const {
  const auto it = values.find("alias");
  return it == values.end() ? "" : it->second.values.at(0);
}

const PresetSection* Presets::find(const std::string& id) const {
  if (id.empty()) return nullptr;
  for (const PresetSection& s : models) {
    if (s.id == id) return &s;
  }
  for (const PresetSection& s : models) {
    if (s.alias() == id) return &s;
  }
  return nullptr;
}

std::string preset_label(const Presets& presets, const PresetSection& section, const PresetValue& value) {
  return presets.path + " line " + std::to_string(value.line) + ", [" + section.id + "]";
}

Presets parse_presets(const std::string& text, const std::string& path) {
  Presets out;
  out.path = path;
  out.all.id = "*";
  std::vector<TomlEntry> entries;
  try {
    entries = parse_toml(text);
  } catch (const std::invalid_argument& e) {
    fail(out, e.what());
  }
  ServeConfig scratch;  // bad values fail on assignment to it, with the row's message
  const std::vector<Setting> table = settings_of(scratch);
  for (const TomlEntry& e : entries) {
    if (e.section.empty()) {
      if (normalized_key(e.key) == "version") continue;  // reserved, as in llama-server's preset files
      fail(out, "key '" + e.key + "'" + at_line(e.line) +
                    " is outside a section: put it under [id] for one model or [\"*\"] for every model");
    }
    add_entry(out, section_named(out, e.section), e, table);
  }
  check_sections(out);
  return out;
}

Presets load_presets(const std::string& path) {
  return parse_presets(read_settings_file(path, "--models-preset " + path), path);
}

namespace {

// Sets `s` from `value` of `section` in `cfg` (whose table `s` belongs to); records the source.
void apply_value(ServeConfig& cfg, const Setting& s, const Presets& p, const PresetSection& section,
                 const PresetValue& value, std::map<std::string, std::string>& labels) {
  labels[s.name] = "--" + s.name + " (from " + preset_label(p, section, value) + ")";
  assign(s, value.values, labels[s.name]);
  cfg.sources[s.name] = section.id == "*" ? "preset *" : "preset";
}

}  // namespace

ServeConfig apply_preset(const ServeConfig& base, const std::string& id) {
  ServeConfig cfg = base;
  const Presets& p = cfg.presets;
  const PresetSection* own = p.find(id);
  std::map<std::string, std::string> labels;
  for (const Setting& s : settings_of(cfg)) {
    labels[s.name] = "--" + s.name;
    if (s.scope == Scope::kModelId) {  // the command line's model is not this one
      assign(s, {""}, labels[s.name]);
      cfg.sources[s.name] = "default";
    }
    if (!s.per_model() || cfg.sources[s.name] == "flag") continue;
    for (const PresetSection* sec : {&p.all, own}) {
      if (sec == nullptr) continue;
      if (const auto it = sec->values.find(s.name); it != sec->values.end()) {
        apply_value(cfg, s, p, *sec, it->second, labels);
      }
    }
  }
  const bool own_sets = own != nullptr && own->load_on_startup_line != 0;
  cfg.model.load_on_startup = own_sets ? own->load_on_startup : p.all.load_on_startup;
  validate(cfg, labels);
  return cfg;
}

}  // namespace config
