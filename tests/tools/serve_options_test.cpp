// tools/ggufd/serve_options.h: `ggufd serve`'s settings -> server::ServiceOptions, without and
// with the router; options_for and preset models; `ggufd serve --print-config` with a preset.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "config/serve_config.h"
#include "tests/config/config_fixture.h"
#include "tests/support/run.h"
#include "tools/ggufd/serve_options.h"

namespace ggufd::test {
namespace {

namespace fs = std::filesystem;

// config/'s fixture (a clean GGUFD_* environment, scratch files, `ggufd serve`'s parse) with a
// models directory.
class ServeOptionsTest : public ConfigTest {
 protected:
  void SetUp() override {
    ConfigTest::SetUp();
    fs::create_directories(dir_ / "models" / "sub");
  }
  // The value of setting `name` in a model's `settings` rows ("(missing)" when absent).
  static std::string row(const server::ModelOptions& m, const std::string& name) {
    for (const auto& [n, v] : m.settings) {
      if (n == name) return v;
    }
    return "(missing)";
  }
};

TEST_F(ServeOptionsTest, SingleModelIsTheCommandLineAsBefore) {
  const std::string m = file("m.gguf", "GGUF");
  const std::string t = file("t.jinja", "{{ messages }}");
  const server::ServiceOptions o =
      service_options(parse({"-m", m, "--alias", "x", "-c", "2048", "--parallel", "2", "--chat-template-file", t,
                             "--kv-type", "q8_0", "--cache-ram", "64", "--temperature", "0.2", "--max-tokens", "50",
                             "--port", "0", "--api-key", "k", "--no-metrics", "--spec", "ngram", "--image-max-bytes",
                             "1M", "--allow-remote-media", "--remote-media-timeout", "4"}));
  EXPECT_FALSE(o.router.enabled);
  EXPECT_TRUE(o.preset_models.empty());
  EXPECT_EQ(o.model.path, m);
  EXPECT_EQ(o.model.alias, "x");
  EXPECT_EQ(o.model.chat_template, "{{ messages }}");
  EXPECT_EQ(o.model.chat_template_origin, "file " + t);
  EXPECT_EQ(o.model.engine.n_ctx, 2048);
  EXPECT_EQ(o.model.engine.n_slots, 2);
  EXPECT_EQ(o.model.engine.kv_type, engine::KvType::kQ8_0);
  EXPECT_EQ(o.model.engine.prefix_cache_bytes, int64_t{64} << 20);
  EXPECT_EQ(o.model.engine.spec, engine::SpecMode::kNgram);
  EXPECT_FALSE(o.model.spec_auto);
  EXPECT_TRUE(o.model.draft_max_default);
  EXPECT_FLOAT_EQ(o.model.sampling_defaults.temperature, 0.2f);
  EXPECT_EQ(o.model.max_tokens, 50);
  EXPECT_FALSE(o.model.load_on_startup);
  EXPECT_EQ(o.http.port, 0);
  EXPECT_EQ(o.http.api_keys, std::vector<std::string>{"k"});
  EXPECT_EQ(o.image_limits.max_bytes, 1 << 20);
  EXPECT_TRUE(o.allow_remote_media);
  EXPECT_EQ(o.remote_media_timeout_s, 4);
  EXPECT_FALSE(o.metrics);
  // /props' rows: every per-model setting, in table order, as the table prints it.
  EXPECT_EQ(row(o.model, "ctx-size"), "2048");
  EXPECT_EQ(row(o.model, "temperature"), "0.2");
  EXPECT_EQ(row(o.model, "alias"), "x");
  EXPECT_EQ(row(o.model, "port"), "(missing)") << "server-wide rows are not a model's";
  EXPECT_EQ(o.model.settings.front().first, "model");
  EXPECT_EQ(o.model.settings.size(), 28u);
  EXPECT_TRUE(o.model.repack);
  EXPECT_EQ(row(o.model, "repack"), "true");
  EXPECT_TRUE(o.model.mmproj_auto);
  EXPECT_EQ(o.model.mmproj_path, "");
  EXPECT_EQ(row(o.model, "mmproj-auto"), "true");
}

TEST_F(ServeOptionsTest, RouterOptionsFromTheRows) {
  const server::ServiceOptions o =
      service_options(parse({"--models-dir", (dir_ / "models").string(), "--models-max", "2", "--models-ram", "3G",
                             "--no-models-autoload", "--sleep-idle-seconds", "90", "--models-load-wait", "7"}));
  EXPECT_TRUE(o.router.enabled);
  EXPECT_EQ(o.router.models_dir, (dir_ / "models").string());
  EXPECT_EQ(o.router.models_max, 2);
  EXPECT_EQ(o.router.models_ram, int64_t{3} << 30);
  EXPECT_FALSE(o.router.autoload);
  EXPECT_EQ(o.router.sleep_idle_s, 90);
  EXPECT_EQ(o.router.load_wait_s, 7);
  ASSERT_TRUE(o.router.options_for);
  EXPECT_EQ(o.model.path, "") << "no --model: the router's models only";
  const server::ModelOptions m = o.router.options_for("sub/a", "/models/sub/a.gguf");
  EXPECT_EQ(m.path, "/models/sub/a.gguf");
  EXPECT_EQ(m.alias, "sub/a");
  EXPECT_EQ(m.engine.n_ctx, 4096);
  EXPECT_EQ(row(m, "model"), "/models/sub/a.gguf");
}

TEST_F(ServeOptionsTest, OptionsForAppliesThePresetOfTheIdOrItsAlias) {
  const std::string cli = file("cli.gguf", "GGUF");
  const std::string named = file("named.gguf", "GGUF");
  const std::string t = file("t.jinja", "T");
  const std::string preset = file("p.toml",
                                  "[*]\nctx-size = 8192\n"
                                  "[qwen]\nparallel = 2\nalias = \"q\"\nload-on-startup = true\n"
                                  "[\"org/named\"]\nmodel = \"" + named + "\"\nchat-template-file = \"" + t + "\"\n"
                                  "[hubbed]\nhf = \"org/repo:Q8_0\"\ntemperature = 0.1\n");
  const config::ServeConfig cfg = parse({"--models-preset", preset, "-m", cli, "--parallel", "3", "--top-k", "7"});
  const server::ServiceOptions o = service_options(cfg);
  EXPECT_TRUE(o.router.enabled);

  // The command line's model: its id is the file name, its settings the command line's under [*].
  EXPECT_EQ(o.model.path, cli);
  EXPECT_EQ(o.model.alias, "cli");
  EXPECT_EQ(o.model.engine.n_ctx, 8192);
  EXPECT_EQ(o.model.engine.n_slots, 3);

  // [qwen] by id and by alias: flags beat the section, the section beats [*].
  for (const char* id : {"qwen", "q"}) {
    const server::ModelOptions m = o.router.options_for(id, "/m/qwen.gguf");
    EXPECT_EQ(m.path, "/m/qwen.gguf");
    EXPECT_EQ(m.alias, "q") << "the preset's alias";
    EXPECT_EQ(m.engine.n_slots, 3) << "--parallel on the command line wins";
    EXPECT_EQ(m.engine.n_ctx, 8192);
    EXPECT_EQ(m.sampling_defaults.top_k, 7);
    EXPECT_TRUE(m.load_on_startup);
    EXPECT_EQ(row(m, "ctx-size"), "8192");
    EXPECT_EQ(row(m, "alias"), "q");
  }
  const server::ModelOptions plain = o.router.options_for("other", "/m/other.gguf");
  EXPECT_EQ(plain.alias, "other");
  EXPECT_EQ(plain.engine.n_ctx, 8192) << "[*]";
  EXPECT_FALSE(plain.load_on_startup);
  EXPECT_TRUE(plain.chat_template.empty());

  // Sections naming a file are preset models; hf sections are for the caller to download.
  ASSERT_EQ(o.preset_models.size(), 1u);
  EXPECT_EQ(o.preset_models[0].path, named);
  EXPECT_EQ(o.preset_models[0].alias, "org/named");
  EXPECT_EQ(o.preset_models[0].chat_template, "T");
  const std::vector<HubModel> hub = hub_models(cfg);
  ASSERT_EQ(hub.size(), 1u);
  EXPECT_EQ(hub[0].id, "hubbed");
  EXPECT_EQ(hub[0].spec, "org/repo:Q8_0");
  const server::ModelOptions downloaded = model_options_for(cfg, "hubbed", "/cache/x.gguf");
  EXPECT_FLOAT_EQ(downloaded.sampling_defaults.temperature, 0.1f);
  EXPECT_EQ(downloaded.path, "/cache/x.gguf");
  EXPECT_EQ(row(downloaded, "hf"), "org/repo:Q8_0");
}

TEST_F(ServeOptionsTest, CommandLineHfIsAHubModel) {
  const config::ServeConfig cfg = parse({"--hf", "org/repo"});
  const std::vector<HubModel> hub = hub_models(cfg);
  ASSERT_EQ(hub.size(), 1u);
  EXPECT_EQ(hub[0].id, "org/repo");
  EXPECT_EQ(hub[0].spec, "org/repo");
  EXPECT_EQ(hub_models(parse({"--hf", "org/repo", "--alias", "r"}))[0].id, "r");
  EXPECT_TRUE(hub_models(parse({})).empty());
}

TEST_F(ServeOptionsTest, PrintConfigShowsThePreset) {
  const std::string preset = file("p.toml", "[*]\nctx-size = 8192\n[qwen]\nparallel = 2\n");
  const RunResult r = run_ggufd("serve --models-preset " + preset + " --models-max 2 --print-config");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("models-max = 2  (flag)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("models-autoload = true  (default)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("preset [*]: ctx-size = 8192 (line 2)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("preset [qwen]: parallel = 2 (line 4)\n"), std::string::npos) << r.out;

  const std::string bad = file("bad.toml", "[qwen]\nhost = \"0.0.0.0\"\n");
  const RunResult e = run_ggufd("serve --models-preset " + bad + " --print-config");
  EXPECT_NE(e.status, 0);
  EXPECT_NE(e.err.find("--models-preset " + bad + ": key 'host' (line 2) is a server-wide setting"), std::string::npos)
      << e.err;
}

}  // namespace
}  // namespace ggufd::test
