// config/: the router's rows, the scope column, the --models-preset file (parsing, errors with
// file and line, precedence per model) and describe() with a preset.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/preset.h"
#include "config/serve_config.h"
#include "config/settings.h"
#include "tests/config/config_fixture.h"

namespace {

using config::Scope;
using config::ServeConfig;
using ggufd::test::ConfigTest;

using PresetTest = ConfigTest;

// The names of the rows of `scope`, in table order.
std::vector<std::string> names_of(Scope scope) {
  ServeConfig probe;
  std::vector<std::string> out;
  for (const config::Setting& s : config::settings_of(probe)) {
    if (s.scope == scope) out.push_back(s.name);
  }
  return out;
}

// ---- rows ----

TEST_F(PresetTest, EnvironmentNamesAreGgufdNamesUnlessARowNamesItsOwn) {
  ServeConfig probe;
  std::set<std::string> seen;
  for (const config::Setting& s : config::settings_of(probe)) {
    EXPECT_TRUE(seen.insert(s.env_name()).second) << s.env_name() << " twice";
    if (s.name == "hub-cache") {
      EXPECT_EQ(s.env_name(), "GGUFD_CACHE");  // the download cache's variable, shared with ggufd pull
      continue;
    }
    std::string derived = "GGUFD_";
    for (char c : s.name) derived += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_EQ(s.env_name(), derived);
    EXPECT_TRUE(s.env.empty()) << s.name;
  }
  for (const char* name : {"GGUFD_MODELS_DIR", "GGUFD_MODELS_MAX", "GGUFD_MODELS_RAM", "GGUFD_MODELS_AUTOLOAD",
                           "GGUFD_SLEEP_IDLE_SECONDS", "GGUFD_MODELS_PRESET", "GGUFD_MODELS_LOAD_WAIT", "GGUFD_HF",
                           "GGUFD_OFFLINE", "GGUFD_CA_FILE"}) {
    EXPECT_TRUE(seen.count(name)) << name;
  }
}

TEST_F(PresetTest, RouterAndDownloadRows) {
  env("HOME", dir_.string());
  ServeConfig cfg = parse({});
  EXPECT_FALSE(cfg.router.enabled());
  EXPECT_EQ(cfg.router.models_max, 4);
  EXPECT_EQ(cfg.router.models_ram, 0);
  EXPECT_TRUE(cfg.router.autoload);
  EXPECT_EQ(cfg.router.sleep_idle_seconds, 0);
  EXPECT_EQ(cfg.router.load_wait, 60);
  EXPECT_EQ(cfg.download.hub_cache, dir_.string() + "/.cache/ggufd");
  EXPECT_EQ(cfg.sources.at("hub-cache"), "default");
  EXPECT_FALSE(cfg.download.offline);

  env("GGUFD_CACHE", "/srv/models-cache");
  env("GGUFD_MODELS_AUTOLOAD", "false");
  env("GGUFD_MODELS_RAM", "12G");
  cfg = parse({"--models-dir", dir_.string(), "--sleep-idle-seconds", "600"});
  EXPECT_TRUE(cfg.router.enabled());
  EXPECT_EQ(cfg.download.hub_cache, "/srv/models-cache");
  EXPECT_EQ(cfg.sources.at("hub-cache"), "env");
  EXPECT_FALSE(cfg.router.autoload);
  EXPECT_EQ(cfg.router.models_ram, int64_t{12} << 30);
  EXPECT_EQ(cfg.router.sleep_idle_seconds, 600);
  EXPECT_TRUE(parse({"--models-autoload"}).router.autoload) << "the flag beats the variable";
  EXPECT_FALSE(parse({"--no-models-autoload"}).router.autoload);
}

TEST_F(PresetTest, RouterRowErrors) {
  const std::string missing = (dir_ / "missing").string();
  const std::string f = file("f", "x");
  EXPECT_EQ(error({"--models-dir", missing}), "--models-dir: '" + missing + "' is not a directory");
  EXPECT_EQ(error({"--models-dir", f}), "--models-dir: '" + f + "' is not a directory");
  EXPECT_EQ(error({"--models-preset", missing}), "--models-preset " + missing + ": the file does not exist");
  EXPECT_EQ(error({"--ca-file", missing}), "--ca-file: '" + missing + "' does not exist");
  EXPECT_EQ(error({"--models-max", "-1"}), "--models-max: -1 is out of range 0..1024");
  EXPECT_EQ(error({"--models-ram", "lots"}), "--models-ram: 'lots' is not a byte count (e.g. 8388608, 512K, 8M)");
  EXPECT_EQ(error({"--hf", "org/repo", "-m", f}), "--hf: serves one model, as --model does: give one of them");
  for (const char* bad : {"repo", "/repo", "org/", "org/repo/x", "org/repo:", "org/re po"}) {
    EXPECT_EQ(error({"--hf", bad}), "--hf: '" + std::string(bad) + "' is not a repository: expected org/repo[:QUANT]");
  }
  EXPECT_EQ(error({"--hf", "ggml-org/gemma-3-4b-it-GGUF:Q4_K_M"}), "");
}

// The scope column as settings_table.cpp documents it.
TEST_F(PresetTest, ScopeOfEveryRow) {
  EXPECT_EQ(names_of(Scope::kModelId), (std::vector<std::string>{"model", "alias", "hf"}));
  EXPECT_EQ(names_of(Scope::kModel),
            (std::vector<std::string>{"chat-template-file", "pooling", "model-draft", "repack", "mmproj", "mmproj-auto", "threads", "ctx-size", "parallel",
                                      "queue-limit", "prefill-chunk", "kv-type", "cache-ram", "cache-dir",
                                      "cache-dir-size", "spec", "draft-max", "draft-min", "temperature", "top-p",
                                      "top-k", "min-p", "repeat-penalty", "max-tokens", "reasoning-effort"}));
  ServeConfig probe;
  for (const config::Setting& s : config::settings_of(probe)) {
    const bool server_group = s.group == "HTTP" || s.group == "Logging" || s.group == "Router" || s.group == "Download";
    EXPECT_EQ(s.scope == Scope::kServer, server_group) << s.name;
  }
}

// ---- the preset file ----

TEST_F(PresetTest, ParsesSectionsQuotedIdsAliasesAndLoadOnStartup) {
  const config::Presets p = config::parse_presets(
      "version = 1\n"
      "[*]\n"
      "ctx_size = 8192\n"
      "[qwen3-4b]\n"
      "parallel = 2\n"
      "alias = \"qwen\"\n"
      "load-on-startup = true\n"
      "[\"org/name:Q8_0\"]\n"
      "hf = \"org/name:Q8_0\"\n"
      "[qwen3-4b]\n"  // a section may come back
      "top-k = 5\n",
      "p.toml");
  EXPECT_EQ(p.path, "p.toml");
  EXPECT_EQ(p.all.id, "*");
  ASSERT_EQ(p.all.values.count("ctx-size"), 1u);
  EXPECT_EQ(p.all.values.at("ctx-size").values, std::vector<std::string>{"8192"});
  EXPECT_EQ(p.all.values.at("ctx-size").line, 3);
  ASSERT_EQ(p.models.size(), 2u);
  EXPECT_EQ(p.models[0].id, "qwen3-4b");
  EXPECT_EQ(p.models[0].values.size(), 3u);
  EXPECT_TRUE(p.models[0].load_on_startup);
  EXPECT_EQ(p.models[0].load_on_startup_line, 7);
  EXPECT_EQ(p.models[1].id, "org/name:Q8_0");
  EXPECT_FALSE(p.models[1].load_on_startup);
  EXPECT_EQ(p.find("qwen3-4b"), &p.models[0]);
  EXPECT_EQ(p.find("qwen"), &p.models[0]) << "ids match a section's alias too";
  EXPECT_EQ(p.find("org/name:Q8_0"), &p.models[1]);
  EXPECT_EQ(p.find("other"), nullptr);
  EXPECT_EQ(p.find(""), nullptr);
  EXPECT_EQ(config::parse_presets("[\"*\"]\ntop-p = 0.5\n", "q").all.values.count("top-p"), 1u);
}

TEST_F(PresetTest, ErrorsNameFileLineKeyValueAndWhatIsAllowed) {
  const std::string allowed =
      "a preset takes model, alias, chat-template-file, pooling, model-draft, hf, repack, mmproj, mmproj-auto, threads, ctx-size, parallel, "
      "queue-limit, prefill-chunk, kv-type, cache-ram, cache-dir, cache-dir-size, spec, draft-max, draft-min, "
      "temperature, top-p, top-k, min-p, repeat-penalty, max-tokens, reasoning-effort, load-on-startup";
  const std::string m = file("m.gguf", "GGUF");
  auto err = [&](const std::string& text) {
    try {
      config::parse_presets(text, "/etc/p.toml");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string at = "--models-preset /etc/p.toml: ";
  EXPECT_EQ(err("[a]\nport = 9000\n"),
            at + "key 'port' (line 2) is a server-wide setting: give it on the command line, in the environment or in "
                 "--config; " + allowed);
  EXPECT_EQ(err("[a]\n\nmodels-max = 2\n").find(at + "key 'models-max' (line 3) is a server-wide setting"), 0u);
  EXPECT_EQ(err("[a]\nfrobnicate = 1\n"), at + "unknown key 'frobnicate' (line 2): " + allowed);
  EXPECT_EQ(err("[a]\nctxsize = 1\n"), at + "unknown key 'ctxsize' (line 2); did you mean 'ctx-size'?");
  EXPECT_EQ(err("[a]\nctx-size = 0\n"), "--ctx-size (from /etc/p.toml line 2, [a]): 0 is not allowed: expected 16..1048576");
  EXPECT_EQ(err("[*]\nkv-type = \"q4\"\n"), "--kv-type (from /etc/p.toml line 2, [*]): 'q4' is not one of f16, f32, q8_0");
  EXPECT_EQ(err("[a]\ntemperature = \"hot\"\n"), "--temperature (from /etc/p.toml line 2, [a]): 'hot' is not a number");
  EXPECT_EQ(err("[a]\nload-on-startup = \"maybe\"\n"),
            "--load-on-startup (from /etc/p.toml line 2, [a]): 'maybe' is not a boolean (true/false, 1/0, yes/no, on/off)");
  EXPECT_EQ(err("[*]\nmodel = \"" + m + "\"\n"), at + "key 'model' (line 2) names one model: not allowed in [\"*\"]");
  EXPECT_EQ(err("[*]\nalias = \"x\"\n"), at + "key 'alias' (line 2) names one model: not allowed in [\"*\"]");
  EXPECT_EQ(err("ctx-size = 8192\n"),
            at + "key 'ctx-size' (line 1) is outside a section: put it under [id] for one model or [\"*\"] for every model");
  EXPECT_EQ(err("[a]\nctx-size = 64\nctx_size = 128\n"), at + "'ctx-size' is set twice in [a] (lines 2 and 3)");
  EXPECT_EQ(err("[a]\nload-on-startup = true\n[a]\nload-on-startup = false\n"),
            at + "'load-on-startup' is set twice in [a] (lines 2 and 4)");
  EXPECT_EQ(err("[a]\nctx-size = [1, 2]\n"), at + "key 'ctx-size' (line 2) takes one value, not an array");
  EXPECT_EQ(err("[a]\nmodel = \"" + m + "\"\nhf = \"o/r\"\n"),
            at + "[a] sets both model (line 2) and hf (line 3): one file or one Hub repository");
  EXPECT_EQ(err("[a]\nalias = \"b\"\n[b]\ntop-k = 1\n"), at + "alias 'b' of [a] (line 2) is also the id or alias of [b]");
  EXPECT_EQ(err("[org/name]\n"),
            at + "line 1: expected ']' after section name 'org' (quote a name with other characters: [\"org/name\"])");
  EXPECT_EQ(err("[qwen3.5-4b]\n"),
            at + "line 1: expected ']' after section name 'qwen3' (quote a name with other characters: [\"org/name\"])");
  EXPECT_EQ(err("[]\n"), at + "line 1: expected a section name, found ']'");
  EXPECT_EQ(err("[a]\nctx-size = 8192 x\n"), at + "line 2: unexpected 'x' after the value");
  EXPECT_EQ(err("[\"qwen3.5-4b\"]\nctx-size = 64\n"), "");
}

TEST_F(PresetTest, FinalizeChecksEveryModelOfThePreset) {
  const std::string missing = (dir_ / "nope.gguf").string();
  const std::string p1 = file("p1.toml", "[a]\nmodel = \"" + missing + "\"\n");
  EXPECT_EQ(error({"--models-preset", p1}), "--model (from " + p1 + " line 2, [a]): '" + missing + "' does not exist");
  const std::string p2 = file("p2.toml", "[*]\nspec = \"draft\"\n");
  EXPECT_EQ(error({"--models-preset", p2}), "--spec (from " + p2 + " line 2, [*]): 'draft' needs a draft model: --model-draft FILE");
  const std::string p3 = file("p3.toml", "[a]\ndraft-min = 20\n");
  EXPECT_EQ(error({"--models-preset", p3, "--draft-max", "8"}),
            "--draft-min (from " + p3 + " line 2, [a]): 20 is more than --draft-max (8)");
  const std::string p4 = file("p4.toml", "[a]\nchat-template-file = \"" + missing + "\"\n");
  EXPECT_EQ(error({"--models-preset", p4}),
            "--chat-template-file (from " + p4 + " line 2, [a]): '" + missing + "' does not exist");
}

// flags > preset [id] > preset ["*"] > env > config file > defaults, for every combination.
TEST_F(PresetTest, PrecedenceForOneModel) {
  for (int mask = 0; mask < 32; ++mask) {
    const bool in_file = mask & 1, in_env = mask & 2, in_all = mask & 4, in_own = mask & 8, in_flag = mask & 16;
    std::string preset = "version = 1\n";
    if (in_all) preset += "[\"*\"]\nctx-size = 3000\n";
    if (in_own) preset += "[m]\nctx-size = 4000\n";
    std::vector<std::string> args = {"--models-preset", file("p.toml", preset)};
    if (in_file) args.insert(args.end(), {"--config", file("c.toml", "ctx-size = 1000\n")});
    if (in_env) env("GGUFD_CTX_SIZE", "2000");
    if (in_flag) args.insert(args.end(), {"--ctx-size", "5000"});
    const ServeConfig base = parse(args);
    const ServeConfig m = config::apply_preset(base, "m");
    const ServeConfig other = config::apply_preset(base, "other");
    const int want = in_flag ? 5000 : in_own ? 4000 : in_all ? 3000 : in_env ? 2000 : in_file ? 1000 : 4096;
    const char* source = in_flag ? "flag" : in_own ? "preset" : in_all ? "preset *" : in_env ? "env" : in_file ? "file" : "default";
    EXPECT_EQ(m.engine.ctx_size, want) << "mask " << mask;
    EXPECT_EQ(m.sources.at("ctx-size"), source) << "mask " << mask;
    const int want_other = in_flag ? 5000 : in_all ? 3000 : in_env ? 2000 : in_file ? 1000 : 4096;
    EXPECT_EQ(other.engine.ctx_size, want_other) << "mask " << mask << ": a model without a section";
    EXPECT_EQ(base.engine.ctx_size, in_flag ? 5000 : in_env ? 2000 : in_file ? 1000 : 4096) << "the command line's";
    unsetenv("GGUFD_CTX_SIZE");
  }
}

TEST_F(PresetTest, ModelIdSettingsAreNotInheritedFromTheCommandLine) {
  const std::string cli_model = file("cli.gguf", "GGUF");
  const std::string preset_model = file("p.gguf", "GGUF");
  const std::string p = file("p.toml",
                             "[*]\ntemperature = 0.5\nload-on-startup = true\n"
                             "[named]\nmodel = \"" + preset_model + "\"\nalias = \"nick\"\ntop-k = 3\n"
                             "[quiet]\nload-on-startup = false\n");
  const ServeConfig base = parse({"--models-preset", p, "-m", cli_model, "--alias", "cli", "--top-k", "9"});
  EXPECT_EQ(base.model.path, cli_model);
  const ServeConfig named = config::apply_preset(base, "nick");  // by alias
  EXPECT_EQ(named.model.path, preset_model);
  EXPECT_EQ(named.model.alias, "nick");
  EXPECT_EQ(named.sources.at("model"), "preset");
  EXPECT_EQ(named.sampling.top_k, 9) << "the flag wins over [named]";
  EXPECT_DOUBLE_EQ(named.sampling.temperature, 0.5);
  EXPECT_EQ(named.sources.at("temperature"), "preset *");
  EXPECT_TRUE(named.model.load_on_startup) << "from [*]";
  const ServeConfig dir_model = config::apply_preset(base, "sub/other");
  EXPECT_EQ(dir_model.model.path, "") << "--model is the command line's model, not this one";
  EXPECT_EQ(dir_model.model.alias, "");
  EXPECT_EQ(dir_model.sources.at("model"), "default");
  EXPECT_TRUE(dir_model.model.load_on_startup);
  EXPECT_FALSE(config::apply_preset(base, "quiet").model.load_on_startup) << "[quiet] over [*]";
  EXPECT_FALSE(base.model.load_on_startup);
}

TEST_F(PresetTest, DescribeShowsWhatEachSectionChanges) {
  const std::string m = file("m.gguf", "GGUF");
  const std::string p = file("p.toml",
                             "[*]\nctx-size = 8192\n"
                             "[a]\nmodel = \"" + m + "\"\nparallel = 2\nload-on-startup = true\n"
                             "[b]\n");
  const std::string text = config::describe(parse({"--models-preset", p, "--parallel", "3"}));
  EXPECT_NE(text.find("models-preset = " + p + "  (flag)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("preset [*]: ctx-size = 8192 (line 2)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("preset [a]: model = " + m + " (line 4), parallel = 2 (line 5; the flag wins), "
                      "load-on-startup = true (line 6)\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("preset [b]"), std::string::npos) << "an empty section sets nothing:\n" << text;
  EXPECT_EQ(config::describe(parse({})).find("preset ["), std::string::npos);
}

}  // namespace
