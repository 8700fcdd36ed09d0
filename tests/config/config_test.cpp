// config/: precedence (flags > env > file > defaults), validation messages, the config file
// format, list settings, describe() and --help.
#include <gtest/gtest.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/serve_config.h"
#include "config/settings.h"
#include "config/toml_lite.h"
#include "tests/config/config_fixture.h"

namespace {

namespace fs = std::filesystem;
using config::ServeConfig;
using ggufd::test::ConfigTest;

// ---- defaults and precedence ----

TEST_F(ConfigTest, DefaultsWithoutAnySource) {
  const ServeConfig cfg = parse({});
  const ServeConfig plain;
  EXPECT_EQ(cfg.engine.ctx_size, plain.engine.ctx_size);
  EXPECT_EQ(cfg.http.host, "127.0.0.1");
  EXPECT_EQ(cfg.http.port, 8080);
  EXPECT_EQ(cfg.http.body_limit, 8 << 20);
  EXPECT_DOUBLE_EQ(cfg.sampling.top_p, 0.95);
  EXPECT_TRUE(cfg.log.metrics);
  EXPECT_TRUE(cfg.model.path.empty());  // demo model
  ServeConfig copy = cfg;
  for (const config::Setting& s : config::settings_of(copy)) {
    EXPECT_EQ(cfg.sources.at(s.name), "default") << s.name;
  }
  EXPECT_EQ(cfg.sources.at("config"), "default");
}

// Every combination of file / env / flag for a few settings of different types.
TEST_F(ConfigTest, PrecedenceMatrix) {
  struct Case {
    std::string name, file_value, env_value, flag_value;
  };
  const std::vector<Case> cases = {
      {"ctx-size", "1000", "2000", "3000"},
      {"kv-type", "\"f32\"", "f16", "f32"},
      {"temperature", "0.1", "0.2", "0.3"},
      {"host", "\"10.0.0.1\"", "10.0.0.2", "10.0.0.3"},
      {"body-limit", "\"1M\"", "2M", "3M"},
  };
  for (const Case& c : cases) {
    for (int mask = 0; mask < 8; ++mask) {
      const bool in_file = mask & 1, in_env = mask & 2, in_flag = mask & 4;
      std::vector<std::string> args;
      if (in_file) args = {"--config", file("c.toml", c.name + " = " + c.file_value + "\n")};
      const std::string env_name = "GGUFD_" + std::string(c.name == "ctx-size"      ? "CTX_SIZE"
                                                           : c.name == "kv-type"    ? "KV_TYPE"
                                                           : c.name == "body-limit" ? "BODY_LIMIT"
                                                           : c.name == "host"       ? "HOST"
                                                                                    : "TEMPERATURE");
      if (in_env) env(env_name, c.env_value);
      if (in_flag) args.insert(args.end(), {"--" + c.name, c.flag_value});
      const ServeConfig cfg = parse(args);
      const std::string expected = in_flag ? "flag" : in_env ? "env" : in_file ? "file" : "default";
      EXPECT_EQ(cfg.sources.at(c.name), expected) << c.name << " mask " << mask;
      const std::string shown = config::describe(cfg);
      std::string want_value = in_flag ? c.flag_value : in_env ? c.env_value : in_file ? c.file_value : "";
      if (!want_value.empty() && want_value.front() == '"') want_value = want_value.substr(1, want_value.size() - 2);
      if (c.name == "body-limit" && !want_value.empty()) {
        want_value = std::to_string(int64_t{want_value[0] - '0'} << 20);
      }
      if (!want_value.empty()) {
        EXPECT_NE(shown.find(c.name + " = " + want_value + "  (" + expected + ")\n"), std::string::npos)
            << c.name << " mask " << mask << "\n" << shown;
      }
      unsetenv(env_name.c_str());
    }
  }
}

TEST_F(ConfigTest, EnvBeatsFileEvenThoughCli11WouldNot) {
  // CLI11 2.1 lets its own config file shadow environment variables; ours must not.
  env("GGUFD_PORT", "9001");
  const ServeConfig cfg = parse({"--config", file("c.toml", "port = 9002\nparallel = 2\n")});
  EXPECT_EQ(cfg.http.port, 9001);
  EXPECT_EQ(cfg.sources.at("port"), "env");
  EXPECT_EQ(cfg.engine.parallel, 2);
  EXPECT_EQ(cfg.sources.at("parallel"), "file");
}

TEST_F(ConfigTest, ConfigFileFromEnvironment) {
  env("GGUFD_CONFIG", file("c.toml", "top-k = 7\n"));
  const ServeConfig cfg = parse({});
  EXPECT_EQ(cfg.sampling.top_k, 7);
  EXPECT_EQ(cfg.sources.at("top-k"), "file");
  EXPECT_EQ(cfg.sources.at("config"), "env");
}

TEST_F(ConfigTest, MetricsFlagEnvAndFile) {
  EXPECT_FALSE(parse({"--no-metrics"}).log.metrics);
  EXPECT_FALSE(parse({"--metrics=false"}).log.metrics);
  EXPECT_TRUE(parse({"--no-metrics", "--metrics"}).log.metrics);  // last wins
  env("GGUFD_METRICS", "off");
  ServeConfig cfg = parse({});
  EXPECT_FALSE(cfg.log.metrics);
  EXPECT_EQ(cfg.sources.at("metrics"), "env");
  EXPECT_TRUE(parse({"--metrics"}).log.metrics);
  unsetenv("GGUFD_METRICS");
  cfg = parse({"--config", file("c.toml", "[log]\nmetrics = false\n")});
  EXPECT_FALSE(cfg.log.metrics);
  EXPECT_EQ(cfg.sources.at("metrics"), "file");
}

TEST_F(ConfigTest, StrictApiFlagEnvAndFile) {
  EXPECT_FALSE(parse({}).http.strict_api);
  EXPECT_TRUE(parse({"--strict-api"}).http.strict_api);
  env("GGUFD_STRICT_API", "1");
  ServeConfig cfg = parse({});
  EXPECT_TRUE(cfg.http.strict_api);
  EXPECT_EQ(cfg.sources.at("strict-api"), "env");
  unsetenv("GGUFD_STRICT_API");
  cfg = parse({"--config", file("c.toml", "[http]\nstrict-api = true\n")});
  EXPECT_TRUE(cfg.http.strict_api);
  EXPECT_EQ(cfg.sources.at("strict-api"), "file");
}

TEST_F(ConfigTest, ReasoningEffortIsOneOfOpenAIsLevels) {
  EXPECT_EQ(parse({}).sampling.reasoning_effort, "") << "unset: the chat template's default";
  EXPECT_EQ(parse({"--reasoning-effort", "high"}).sampling.reasoning_effort, "high");
  EXPECT_NE(error({"--reasoning-effort", "extreme"}).find("--reasoning-effort"), std::string::npos);
  EXPECT_EQ(parse({"--pooling", "rank"}).model.pooling, "rank");
  EXPECT_NE(error({"--pooling", "max"}).find("--pooling"), std::string::npos);
}

TEST_F(ConfigTest, LastFlagWinsForScalars) {
  const ServeConfig cfg = parse({"--port", "1", "--port", "2", "-c", "64"});
  EXPECT_EQ(cfg.http.port, 2);
  EXPECT_EQ(cfg.engine.ctx_size, 64);
}

TEST_F(ConfigTest, EveryFieldHasAFlag) {
  const std::string m = file("m.gguf", "GGUF");
  const std::string t = file("t.jinja", "{{ x }}");
  const std::string k = file("keys", "k3\n");
  const ServeConfig cfg = parse({"-m", m, "--alias", "a", "--chat-template-file", t, "--pooling", "mean", "--host", "0.0.0.0",
                                 "--port", "1", "--ollama-listen", "127.0.0.1:11434", "--api-key", "k1", "--api-key-file", k, "--cors-origin", "*",
                                 "--body-limit", "2048", "--header-limit", "4K", "--tokenize-limit", "3K",
                                 "--max-json-depth", "16", "--image-max-bytes", "2M", "--image-max-pixels", "4000000",
                                 "--image-max-count", "3", "--allow-remote-media", "--remote-media-private", "--remote-media-timeout", "7",
                                 "--header-timeout", "4", "--read-timeout", "5",
                                 "--idle-timeout", "6", "--request-timeout", "7", "--max-connections", "8",
                                 "--shutdown-grace", "9", "--strict-api", "--no-webui", "--keep-billing-header", "--threads", "2", "--ctx-size", "128", "--parallel", "3",
                                 "--queue-limit", "4", "--prefill-chunk", "32", "--kv-type", "f32", "--cache-ram", "64",
                                 "--cache-dir", "/tmp/kv", "--cache-dir-size", "512", "--model-draft", m, "--no-repack", "--mmproj", m, "--no-mmproj", "--spec", "draft", "--draft-max", "8", "--draft-min", "2",
                                 "--temperature", "0", "--top-p", "0.5", "--top-k", "5", "--min-p", "0.1",
                                 "--repeat-penalty", "1.1", "--max-tokens", "99", "--reasoning-effort", "none", "--log-level", "debug",
                                 "--log-format", "json", "--no-metrics", "--models-dir", dir_.string(),
                                 "--models-preset", file("p.toml", "version = 1\n"), "--models-max", "2",
                                 "--models-ram", "1G", "--no-models-autoload", "--sleep-idle-seconds", "300",
                                 "--models-load-wait", "5", "--no-models-pull", "--hub-cache", "/tmp/hc", "--offline", "--ca-file", k});
  EXPECT_EQ(cfg.model.path, m);
  EXPECT_EQ(cfg.model.alias, "a");
  EXPECT_EQ(cfg.model.chat_template_file, t);
  EXPECT_FALSE(cfg.model.repack);
  EXPECT_EQ(cfg.model.mmproj, m);
  EXPECT_FALSE(cfg.model.mmproj_auto);
  EXPECT_EQ(cfg.http.image_max_bytes, 2 << 20);
  EXPECT_EQ(cfg.http.image_max_pixels, 4000000);
  EXPECT_EQ(cfg.http.image_max_count, 3);
  EXPECT_TRUE(cfg.http.allow_remote_media);
  EXPECT_TRUE(cfg.http.remote_media_private);
  EXPECT_EQ(cfg.http.remote_media_timeout, 7);
  EXPECT_EQ(cfg.http.host, "0.0.0.0");
  EXPECT_EQ(cfg.http.port, 1);
  EXPECT_EQ(cfg.http.ollama_listen, "127.0.0.1:11434");
  EXPECT_EQ(cfg.http.api_keys, (std::vector<std::string>{"k1", "k3"}));
  EXPECT_EQ(cfg.http.cors_origins, std::vector<std::string>{"*"});
  EXPECT_EQ(cfg.http.body_limit, 2048);
  EXPECT_EQ(cfg.http.header_limit, 4096);
  EXPECT_EQ(cfg.http.tokenize_limit, 3072);
  EXPECT_EQ(cfg.http.max_json_depth, 16);
  EXPECT_EQ(cfg.http.header_timeout, 4);
  EXPECT_EQ(cfg.http.read_timeout, 5);
  EXPECT_EQ(cfg.http.idle_timeout, 6);
  EXPECT_EQ(cfg.http.request_timeout, 7);
  EXPECT_EQ(cfg.http.max_connections, 8);
  EXPECT_EQ(cfg.http.shutdown_grace, 9);
  EXPECT_TRUE(cfg.http.strict_api);
  EXPECT_FALSE(cfg.http.webui);
  EXPECT_TRUE(cfg.http.keep_billing_header);
  EXPECT_EQ(cfg.sampling.reasoning_effort, "none");
  EXPECT_EQ(cfg.model.pooling, "mean");
  EXPECT_EQ(cfg.engine.threads, 2);
  EXPECT_EQ(cfg.engine.ctx_size, 128);
  EXPECT_EQ(cfg.engine.parallel, 3);
  EXPECT_EQ(cfg.engine.queue_limit, 4);
  EXPECT_EQ(cfg.engine.prefill_chunk, 32);
  EXPECT_EQ(cfg.engine.kv_type, "f32");
  EXPECT_EQ(cfg.engine.cache_ram, 64);
  EXPECT_EQ(cfg.engine.cache_dir, "/tmp/kv");
  EXPECT_EQ(cfg.engine.cache_dir_size, 512);
  EXPECT_EQ(cfg.model.draft, m);
  EXPECT_EQ(cfg.engine.spec, "draft");
  EXPECT_EQ(cfg.engine.draft_max, 8);
  EXPECT_EQ(cfg.engine.draft_min, 2);
  EXPECT_DOUBLE_EQ(cfg.sampling.temperature, 0);
  EXPECT_DOUBLE_EQ(cfg.sampling.top_p, 0.5);
  EXPECT_EQ(cfg.sampling.top_k, 5);
  EXPECT_DOUBLE_EQ(cfg.sampling.min_p, 0.1);
  EXPECT_DOUBLE_EQ(cfg.sampling.repeat_penalty, 1.1);
  EXPECT_EQ(cfg.sampling.max_tokens, 99);
  EXPECT_EQ(cfg.log.level, "debug");
  EXPECT_EQ(cfg.log.format, "json");
  EXPECT_FALSE(cfg.log.metrics);
  EXPECT_EQ(cfg.router.models_dir, dir_.string());
  EXPECT_TRUE(cfg.router.enabled());
  EXPECT_EQ(cfg.router.models_max, 2);
  EXPECT_EQ(cfg.router.models_ram, int64_t{1} << 30);
  EXPECT_FALSE(cfg.router.autoload);
  EXPECT_EQ(cfg.router.sleep_idle_seconds, 300);
  EXPECT_EQ(cfg.router.load_wait, 5);
  EXPECT_FALSE(cfg.router.pull);
  EXPECT_EQ(cfg.download.hub_cache, "/tmp/hc");
  EXPECT_TRUE(cfg.download.offline);
  EXPECT_EQ(cfg.download.ca_file, k);
  for (const auto& [name, source] : cfg.sources) {
    if (name != "config" && name != "hf") {  // --hf serves one model as --model does: not both
      EXPECT_EQ(source, "flag") << name;
    }
  }
  EXPECT_EQ(parse({"--hf", "org/repo:Q8_0"}).model.hf, "org/repo:Q8_0");
}

TEST_F(ConfigTest, EveryFieldHasAnEnvironmentVariable) {
  ServeConfig probe;
  for (const config::Setting& s : config::settings_of(probe)) {
    EXPECT_EQ(s.env_name().rfind("GGUFD_", 0), 0u);
    const std::string value = s.name == "model" || s.name == "chat-template-file" || s.name == "model-draft"
                                  ? file("f", "x")
                              : s.name == "api-key-file" || s.name == "ca-file"   ? file("keys", "k\n")
                              : s.name == "models-dir"                            ? dir_.string()
                              : s.name == "models-preset"                         ? file("p.toml", "version = 1\n")
                              : s.name == "cors-origin"                           ? "*"
                              : s.name == "ollama-listen"                         ? "[::1]:11434"
                              : s.choices.empty()                                 ? config::current_text(s)
                                                                                  : s.choices.back();
    if (s.name != "hf") env(s.env_name(), value.empty() ? "1" : value);  // hf: not with model
  }
  const ServeConfig cfg = parse({});
  for (const auto& [name, source] : cfg.sources) {
    if (name != "config" && name != "hf") {
      EXPECT_EQ(source, "env") << name;
    }
  }
  EXPECT_EQ(cfg.engine.ctx_size, 4096);
  EXPECT_EQ(cfg.log.level, "off");
}

// ---- lists ----

TEST_F(ConfigTest, ListsFromEnvAreCommaSeparated) {
  env("GGUFD_API_KEY", "alpha, beta,,gamma ");
  env("GGUFD_CORS_ORIGIN", "https://a.example,http://b.example:8080");
  const ServeConfig cfg = parse({});
  EXPECT_EQ(cfg.http.api_keys, (std::vector<std::string>{"alpha", "beta", "gamma"}));
  EXPECT_EQ(cfg.http.cors_origins, (std::vector<std::string>{"https://a.example", "http://b.example:8080"}));
  EXPECT_EQ(cfg.sources.at("api-key"), "env");
}

TEST_F(ConfigTest, ListsFromRepeatedFlagsReplaceEnv) {
  env("GGUFD_API_KEY", "from-env");
  const ServeConfig cfg = parse({"--api-key", "k1", "--api-key", "k2", "--cors-origin", "*"});
  EXPECT_EQ(cfg.http.api_keys, (std::vector<std::string>{"k1", "k2"}));
  EXPECT_EQ(cfg.http.cors_origins, std::vector<std::string>{"*"});
  EXPECT_EQ(cfg.sources.at("api-key"), "flag");
}

TEST_F(ConfigTest, ListsFromFileArraysOrSingleStrings) {
  const std::string path = file("c.toml",
                                "[http]\n"
                                "api_key = [\n"
                                "  \"k1\",  # first\n"
                                "  'k2',\n"
                                "]\n"
                                "cors-origin = \"https://x.example\"\n");
  const ServeConfig cfg = parse({"--config", path});
  EXPECT_EQ(cfg.http.api_keys, (std::vector<std::string>{"k1", "k2"}));
  EXPECT_EQ(cfg.http.cors_origins, std::vector<std::string>{"https://x.example"});
  EXPECT_EQ(cfg.sources.at("api-key"), "file");
}

TEST_F(ConfigTest, ApiKeyFileMergesWithoutDuplicates) {
  const std::string keys = file("keys", "# team keys\n k2 \n\nk3\r\nk2\n");
  const ServeConfig cfg = parse({"--api-key", "k1", "--api-key", "k2", "--api-key-file", keys});
  EXPECT_EQ(cfg.http.api_keys, (std::vector<std::string>{"k1", "k2", "k3"}));
  EXPECT_EQ(cfg.sources.at("api-key"), "flag");
  env("GGUFD_API_KEY_FILE", keys);
  const ServeConfig only_file = parse({});
  EXPECT_EQ(only_file.http.api_keys, (std::vector<std::string>{"k2", "k3"}));
  EXPECT_EQ(only_file.sources.at("api-key"), "env");  // where the key file was named
}

// ---- the config file ----

TEST_F(ConfigTest, FileWithSectionsFlatKeysAndUnderscores) {
  const std::string path = file("c.toml",
                                "# ggufd\n"
                                "log-level = \"warn\"   # flat key\n"
                                "\n"
                                "[engine]\n"
                                "ctx_size = 8_192\n"
                                "kv-type = 'f32'\n"
                                "[sampling]\r\n"
                                "temperature = 0.25\r\n"
                                "[http]\n"
                                "body-limit = \"16M\"\n"
                                "host = \"0.0.0.0\"\n");
  const ServeConfig cfg = parse({"--config", path});
  EXPECT_EQ(cfg.log.level, "warn");
  EXPECT_EQ(cfg.engine.ctx_size, 8192);
  EXPECT_EQ(cfg.engine.kv_type, "f32");
  EXPECT_DOUBLE_EQ(cfg.sampling.temperature, 0.25);
  EXPECT_EQ(cfg.http.body_limit, 16 << 20);
  EXPECT_EQ(cfg.http.host, "0.0.0.0");
  EXPECT_EQ(cfg.sources.at("ctx-size"), "file");
  EXPECT_EQ(cfg.sources.at("config"), "flag");
}

// The prefix cache's budget: MiB, 0 turns sharing off; flag, GGUFD_CACHE_RAM and [engine] cache-ram.
TEST_F(ConfigTest, CacheRamFromEverySource) {
  EXPECT_EQ(parse({}).engine.cache_ram, 256);
  EXPECT_EQ(parse({"--config", file("c.toml", "[engine]\ncache_ram = 1024\n")}).engine.cache_ram, 1024);
  env("GGUFD_CACHE_RAM", "0");
  const ServeConfig off = parse({"--config", file("c.toml", "[engine]\ncache-ram = 1024\n")});
  EXPECT_EQ(off.engine.cache_ram, 0);
  EXPECT_EQ(off.sources.at("cache-ram"), "env");
  EXPECT_EQ(parse({"--cache-ram", "8"}).engine.cache_ram, 8);
  unsetenv("GGUFD_CACHE_RAM");
  const std::string p = file("c.toml", "[http]\ncache-ram = 1\n");
  EXPECT_EQ(error({"--config", p}),
            "--config " + p + ": key 'cache-ram' (line 2) belongs in [engine] or at the top level, not in [http]");
  EXPECT_EQ(error({"--cache-ram", "1048577"}), "--cache-ram: 1048577 is out of range 0..1048576");
}

// Speculative decoding: --spec, --draft-max, --draft-min in [engine], --model-draft in [model];
// every source, and the combinations that cannot work.
TEST_F(ConfigTest, SpeculationFromEverySource) {
  const ServeConfig plain = parse({});
  EXPECT_EQ(plain.engine.spec, "auto");
  EXPECT_EQ(plain.engine.draft_max, 16);
  EXPECT_EQ(plain.engine.draft_min, 0);
  EXPECT_EQ(plain.model.draft, "");
  const std::string d = file("draft.gguf", "GGUF");
  const ServeConfig f = parse({"--config", file("c.toml", "[model]\nmodel-draft = '" + d +
                                                              "'\n[engine]\nspec = 'draft'\ndraft_max = 4\ndraft-min = 2\n")});
  EXPECT_EQ(f.model.draft, d);
  EXPECT_EQ(f.engine.spec, "draft");
  EXPECT_EQ(f.engine.draft_max, 4);
  EXPECT_EQ(f.engine.draft_min, 2);
  EXPECT_EQ(f.sources.at("model-draft"), "file");
  env("GGUFD_SPEC", "none");
  env("GGUFD_DRAFT_MAX", "32");
  const ServeConfig e = parse({});
  EXPECT_EQ(e.engine.spec, "none");
  EXPECT_EQ(e.engine.draft_max, 32);
  EXPECT_EQ(e.sources.at("spec"), "env");
  EXPECT_EQ(parse({"--spec", "ngram", "--draft-min", "3"}).engine.spec, "ngram");
  EXPECT_EQ(parse({"--spec", "mtp"}).engine.spec, "mtp");
  unsetenv("GGUFD_SPEC");
  env("GGUFD_MODEL_DRAFT", d);
  EXPECT_EQ(parse({}).model.draft, d) << "auto uses it";
  unsetenv("GGUFD_MODEL_DRAFT");

  EXPECT_EQ(error({"--spec", "draft"}), "--spec: 'draft' needs a draft model: --model-draft FILE");
  EXPECT_EQ(error({"--spec", "ngram", "--model-draft", d}),
            "--model-draft: a draft model is used by --spec draft (or auto), not --spec ngram");
  EXPECT_EQ(error({"--model-draft", d + ".missing"}), "--model-draft: '" + d + ".missing' does not exist");
  EXPECT_EQ(error({"--spec", "medusa"}), "--spec: 'medusa' is not one of auto, none, ngram, mtp, draft");
  EXPECT_EQ(error({"--draft-max", "0"}), "--draft-max: 0 is not allowed: expected 1..64");
  EXPECT_EQ(error({"--draft-max", "65"}), "--draft-max: 65 is out of range 1..64");
  EXPECT_EQ(error({"--draft-max", "4", "--draft-min", "5"}), "--draft-min: 5 is more than --draft-max (4)");
  const std::string p = file("c.toml", "[model]\ndraft-max = 4\n");
  EXPECT_EQ(error({"--config", p}),
            "--config " + p + ": key 'draft-max' (line 2) belongs in [engine] or at the top level, not in [model]");
}

TEST_F(ConfigTest, EmptyConfigFileIsFine) {
  EXPECT_EQ(error({"--config", file("c.toml", "")}), "");
  EXPECT_EQ(error({"--config", file("c.toml", "# nothing\n\n")}), "");
}

TEST_F(ConfigTest, FileErrors) {
  const std::string p = (dir_ / "c.toml").string();
  auto with = [&](const std::string& text) { return error({"--config", file("c.toml", text)}); };
  EXPECT_EQ(with("port = 1\n\nctxsize = 5\n"),
            "--config " + p + ": unknown key 'ctxsize' (line 3); did you mean 'ctx-size'?");
  EXPECT_EQ(with("frobnicate = 1\n"), "--config " + p + ": unknown key 'frobnicate' (line 1)");
  EXPECT_EQ(with("config = \"x\"\n"), "--config " + p + ": unknown key 'config' (line 1)");
  EXPECT_EQ(with("[server]\nport = 1\n"),
            "--config " + p + ": unknown section [server] (line 2): expected model, http, engine, sampling, log, router or download");
  EXPECT_EQ(with("[http]\nctx-size = 64\n"),
            "--config " + p + ": key 'ctx-size' (line 2) belongs in [engine] or at the top level, not in [http]");
  EXPECT_EQ(with("port = 1\n[http]\nport = 2\n"), "--config " + p + ": 'port' is set twice (lines 1 and 3)");
  EXPECT_EQ(with("ctx-size = 1\nctx_size = 2\n"), "--config " + p + ": 'ctx-size' is set twice (lines 1 and 2)");
  EXPECT_EQ(with("port = [1, 2]\n"), "--config " + p + ": key 'port' (line 1) takes one value, not an array");
  EXPECT_EQ(with("port 8080\n"), "--config " + p + ": line 1: expected '=' after key 'port'");
  EXPECT_EQ(with("host = localhost\n"), "--config " + p + ": line 1: value 'localhost' must be quoted");
  EXPECT_EQ(with("host = \"x\" y\n"), "--config " + p + ": line 1: unexpected 'y' after the value");
  EXPECT_EQ(with("host = \"x\n"), "--config " + p + ": line 1: unterminated string");
  EXPECT_EQ(with("api-key = [\"a\",\n  \"b\"\n"), "--config " + p + ": line 1: unterminated array");
  EXPECT_EQ(with("api-key = [\"a\" \"b\"]\n"), "--config " + p + ": line 1: expected ',' or ']' in array");
  EXPECT_EQ(with("http.port = 1\n"), "--config " + p + ": line 1: dotted keys are not supported");
  EXPECT_EQ(with("[[http]]\n"), "--config " + p + ": line 1: arrays of tables ([[...]]) are not supported");
  EXPECT_EQ(with("\n\nctx-size = \"big\"\n"), "--ctx-size (from " + p + " line 3): 'big' is not an integer");
  EXPECT_EQ(with("[engine]\nctx-size = 0\n"), "--ctx-size (from " + p + " line 2): 0 is not allowed: expected 16..1048576");
  const std::string missing = (dir_ / "missing.toml").string();
  EXPECT_EQ(error({"--config", missing}), "--config " + missing + ": the file does not exist");
  EXPECT_EQ(error({"--config", dir_.string()}), "--config " + dir_.string() + ": not a regular file");
}

TEST(TomlLite, StringsEscapesAndNumbers) {
  const auto entries = config::parse_toml(
      "a = \"q\\\"b\\\\s\\tt\\u00e9\"\nb = 'C:\\path'\nc = -1_000\nd = 1.5e3\ne = true\n\"quoted key\" = []\n");
  ASSERT_EQ(entries.size(), 6u);
  EXPECT_EQ(entries[0].values[0], "q\"b\\s\tt\xc3\xa9");
  EXPECT_EQ(entries[1].values[0], "C:\\path");
  EXPECT_EQ(entries[2].values[0], "-1000");
  EXPECT_EQ(entries[3].values[0], "1.5e3");
  EXPECT_EQ(entries[4].values[0], "true");
  EXPECT_EQ(entries[5].key, "quoted key");
  EXPECT_TRUE(entries[5].array);
  EXPECT_TRUE(entries[5].values.empty());
  EXPECT_EQ(entries[4].line, 5);
}

// ---- validation messages ----

TEST_F(ConfigTest, RangeAndChoiceMessages) {
  EXPECT_EQ(error({"--ctx-size", "0"}), "--ctx-size: 0 is not allowed: expected 16..1048576");
  EXPECT_EQ(error({"--kv-type", "q4"}), "--kv-type: 'q4' is not one of f16, f32, q8_0");
  EXPECT_EQ(error({"--port", "70000"}), "--port: 70000 is out of range 0..65535");
  EXPECT_EQ(error({"--port", "-1"}), "--port: -1 is out of range 0..65535");
  EXPECT_EQ(error({"--temperature", "2.5"}), "--temperature: 2.5 is out of range 0..2");
  EXPECT_EQ(error({"--top-p", "1.01"}), "--top-p: 1.01 is out of range 0..1");
  EXPECT_EQ(error({"--min-p", "-0.1"}), "--min-p: -0.1 is out of range 0..1");
  // Sampling ranges are the engine's (engine/runtime/sampling_rules.h), the ones requests are held to.
  EXPECT_EQ(error({"--top-k", "-5"}), "--top-k: -5 is out of range 0..1073741824");
  EXPECT_EQ(error({"--repeat-penalty", "0"}), "--repeat-penalty: 0 is not allowed: expected 0.01..10");
  EXPECT_EQ(error({"--max-json-depth", "1"}), "--max-json-depth: 1 is out of range 2..1024");
  EXPECT_EQ(error({"--max-tokens", "-1"}), "--max-tokens: -1 is out of range 0..1048576");
  EXPECT_EQ(error({"--parallel", "0"}), "--parallel: 0 is not allowed: expected 1..256");
  EXPECT_EQ(error({"--threads", "5000"}), "--threads: 5000 is out of range 0..1024");
  EXPECT_EQ(error({"--queue-limit", "-1"}), "--queue-limit: -1 is out of range 0..65536");
  EXPECT_EQ(error({"--prefill-chunk", "0"}), "--prefill-chunk: 0 is not allowed: expected 1..65536");
  // llama-server's -1 (no limit) has no meaning here: the cells are allocated at start.
  EXPECT_EQ(error({"--cache-ram", "-1"}), "--cache-ram: -1 is out of range 0..1048576");
  EXPECT_EQ(error({"--cache-ram", "1T"}), "--cache-ram: '1T' is not an integer");
  EXPECT_EQ(error({"--body-limit", "2G"}), "--body-limit: 2G is out of range 1024..1073741824");
  EXPECT_EQ(error({"--header-limit", "100"}), "--header-limit: 100 is out of range 1024..1048576");
  EXPECT_EQ(error({"--read-timeout", "0"}), "--read-timeout: 0 is not allowed: expected 1..3600");
  EXPECT_EQ(error({"--idle-timeout", "3601"}), "--idle-timeout: 3601 is out of range 0..3600");
  EXPECT_EQ(error({"--request-timeout", "0"}), "--request-timeout: 0 is not allowed: expected 1..86400");
  EXPECT_EQ(error({"--max-connections", "0"}), "--max-connections: 0 is not allowed: expected 1..65536");
  EXPECT_EQ(error({"--shutdown-grace", "-2"}), "--shutdown-grace: -2 is out of range 0..3600");
  EXPECT_EQ(error({"--log-level", "verbose"}),
            "--log-level: 'verbose' is not one of trace, debug, info, warn, error, off");
  EXPECT_EQ(error({"--log-format", "xml"}), "--log-format: 'xml' is not one of text, json");
}

// Every numeric setting rejects a value just outside its range, naming itself.
TEST_F(ConfigTest, EveryNumericSettingChecksItsRange) {
  ServeConfig probe;
  for (const config::Setting& s : config::settings_of(probe)) {
    if (s.min == s.max) continue;  // text, flags, lists
    const bool integral = !std::holds_alternative<double*>(s.target);
    const double step = integral ? 1 : 0.5;
    for (double v : {s.min - step, s.max + step}) {
      const std::string text = integral ? std::to_string(static_cast<int64_t>(v)) : std::to_string(v);
      const std::string msg = error({"--" + s.name, text});
      EXPECT_EQ(msg.rfind("--" + s.name + ": ", 0), 0u) << s.name << " " << text << ": " << msg;
      EXPECT_NE(msg.find(" is out of range ") + msg.find(" is not allowed: expected "), 2 * std::string::npos) << msg;
    }
  }
}

TEST_F(ConfigTest, NonNumericValuesNameTheSetting) {
  EXPECT_EQ(error({"--port", "http"}), "--port: 'http' is not an integer");
  EXPECT_EQ(error({"--port", "80.5"}), "--port: '80.5' is not an integer");
  EXPECT_EQ(error({"--temperature", "hot"}), "--temperature: 'hot' is not a number");
  EXPECT_EQ(error({"--temperature", "nan"}), "--temperature: 'nan' is not a number");
  EXPECT_EQ(error({"--body-limit", "8X"}), "--body-limit: '8X' is not a byte count (e.g. 8388608, 512K, 8M)");
  EXPECT_EQ(error({"--metrics=maybe"}),
            "--metrics: 'maybe' is not a boolean (true/false, 1/0, yes/no, on/off)");
  env("GGUFD_CTX_SIZE", "abc");
  EXPECT_EQ(error({}), "--ctx-size (from GGUFD_CTX_SIZE): 'abc' is not an integer");
  EXPECT_EQ(error({"--ctx-size", "64"}), "");  // the flag shadows the bad variable
  unsetenv("GGUFD_CTX_SIZE");
  env("GGUFD_TOP_P", "2");
  EXPECT_EQ(error({}), "--top-p (from GGUFD_TOP_P): 2 is out of range 0..1");
  unsetenv("GGUFD_TOP_P");
  env("GGUFD_METRICS", "maybe");
  EXPECT_EQ(error({}), "--metrics (from GGUFD_METRICS): 'maybe' is not a boolean (true/false, 1/0, yes/no, on/off)");
  unsetenv("GGUFD_METRICS");
  env("GGUFD_API_KEY", " , ");
  EXPECT_EQ(error({}), "--api-key (from GGUFD_API_KEY): ' , ' holds no values");
}

TEST_F(ConfigTest, FileAndTextChecks) {
  const std::string missing = (dir_ / "nope.gguf").string();
  EXPECT_EQ(error({"-m", missing}), "--model: '" + missing + "' does not exist");
  EXPECT_EQ(error({"--model", dir_.string()}), "--model: '" + dir_.string() + "' is not a regular file");
  EXPECT_EQ(error({"--chat-template-file", missing}), "--chat-template-file: '" + missing + "' does not exist");
  EXPECT_EQ(error({"--api-key-file", missing}), "--api-key-file: '" + missing + "' does not exist");
  const std::string empty_keys = file("keys", "# no keys yet\n\n");
  EXPECT_EQ(error({"--api-key-file", empty_keys}), "--api-key-file: '" + empty_keys + "' holds no keys");
  const std::string spaced = file("spaced", "has space\n");
  EXPECT_EQ(error({"--api-key-file", spaced}),
            "--api-key-file: a key must be non-empty, without blanks or control characters");
  EXPECT_EQ(error({"--api-key", "secret key"}),
            "--api-key: a key must be non-empty, without blanks or control characters");
  EXPECT_EQ(error({"--api-key", ""}), "--api-key: an empty value is not allowed");
  EXPECT_EQ(error({"--host", ""}), "--host: '' is not allowed: expected an address such as 127.0.0.1");
  EXPECT_EQ(error({"--cors-origin", "example.com"}),
            "--cors-origin: 'example.com' is not an origin: expected * or http(s)://host[:port]");
  EXPECT_EQ(error({"--cors-origin", "https://a.example/path"}),
            "--cors-origin: 'https://a.example/path' is not an origin: expected * or http(s)://host[:port]");
  for (const std::string bad : {"11434", ":11434", "localhost", "localhost:", "host:99999", "host:x1", "a b:1"}) {
    EXPECT_NE(error({"--ollama-listen", bad}).find("--ollama-listen: '" + bad + "' has"), std::string::npos) << bad;
  }
  EXPECT_EQ(error({"--ollama-listen", "0.0.0.0:11434"}), "");
  env("GGUFD_MODEL", missing);
  EXPECT_EQ(error({}), "--model (from GGUFD_MODEL): '" + missing + "' does not exist");
  EXPECT_EQ(error({"--model", ""}), "");  // empty: the demo model
}

TEST_F(ConfigTest, Cli11ErrorsStillComeFromCli11) {
  EXPECT_THROW(parse({"--ctx-size"}), CLI::ParseError);
  EXPECT_THROW(parse({"--no-such-flag"}), CLI::ParseError);
}

// ---- describe and help ----

TEST_F(ConfigTest, DescribeListsEverySettingAndRedactsKeys) {
  env("GGUFD_PORT", "9000");
  const std::string keys = file("keys", "file-secret\n");
  const ServeConfig cfg =
      parse({"--api-key", "flag-secret", "--api-key-file", keys, "--ctx-size", "2048", "--cors-origin", "*"});
  const std::string text = config::describe(cfg);
  EXPECT_EQ(text.find("secret"), std::string::npos) << text;
  EXPECT_NE(text.find("api-key = *** (2 keys)  (flag)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("ctx-size = 2048  (flag)\n"), std::string::npos);
  EXPECT_NE(text.find("port = 9000  (env)\n"), std::string::npos);
  EXPECT_NE(text.find("kv-type = f16  (default)\n"), std::string::npos);
  EXPECT_NE(text.find("temperature = 0.8  (default)\n"), std::string::npos);
  EXPECT_NE(text.find("model = \"\"  (default)\n"), std::string::npos);
  EXPECT_NE(text.find("metrics = true  (default)\n"), std::string::npos);
  EXPECT_NE(text.find("cors-origin = *  (flag)\n"), std::string::npos);
  size_t lines = 0;
  for (char c : text) lines += c == '\n';
  EXPECT_EQ(lines, cfg.sources.size());  // one per setting, plus config
  EXPECT_NE(config::describe(parse({})).find("api-key = (none)  (default)\n"), std::string::npos);
}

TEST_F(ConfigTest, HelpIsGrouped) {
  ServeConfig cfg;
  CLI::App app{"serve"};
  config::add_serve_options(app, cfg);
  const std::string help = app.help();
  size_t last = 0;
  for (const char* group :
       {"Model:", "HTTP:", "Engine:", "Sampling defaults:", "Logging:", "Router:", "Download:", "Configuration:"}) {
    const size_t at = help.find(std::string("\n") + group + "\n");
    ASSERT_NE(at, std::string::npos) << group << "\n" << help;
    EXPECT_GT(at, last) << group;
    last = at;
  }
  EXPECT_NE(help.find("GGUFD_CTX_SIZE"), std::string::npos);
  EXPECT_NE(help.find("--ctx-size INT=4096"), std::string::npos) << help;
  EXPECT_NE(help.find("--no-metrics"), std::string::npos);
}

}  // namespace
