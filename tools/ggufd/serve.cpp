// `ggufd serve`: the composition root. Configuration -> ServiceOptions -> Service.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>

#include <cstdio>

#include "config/serve_config.h"
#include "engine/kernels/cpu_features.h"
#include "engine/kernels/dispatch.h"
#include "server/service.h"
#include "tools/ggufd/commands.h"
#include "tools/ggufd/demo_model.h"
#include "tools/ggufd/serve_options.h"

namespace ggufd {

namespace {

// "%*" in a pattern: the message escaped for a JSON string.
class JsonMessage : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    for (char c : std::string_view(msg.payload.data(), msg.payload.size())) {
      const auto u = static_cast<unsigned char>(c);
      if (c == '"' || c == '\\') {
        dest.push_back('\\');
        dest.push_back(c);
      } else if (u < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", u);
        dest.append(buf, buf + 6);
      } else {
        dest.push_back(c);
      }
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<JsonMessage>(); }
};

void setup_logging(const config::LogConfig& log) {
  auto logger = spdlog::stderr_color_mt("ggufd");
  if (log.format == "json") {
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<JsonMessage>('*').set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%e%z","level":"%l","msg":"%*"})");
    logger->set_formatter(std::move(formatter));
  } else {
    logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");
  }
  logger->set_level(spdlog::level::from_str(log.level));
  spdlog::set_default_logger(logger);
}

// --hf and a preset's hf = ... models: downloaded (or found in the cache) before the server
// starts; the router also lists every model of the download cache. False (logged) when a
// download fails.
bool fetch_hub_models(const config::ServeConfig& cfg, server::ServiceOptions& options) {
  const hub::PullOptions pull = pull_options(cfg);
  for (const HubModel& h : hub_models(cfg)) {
    hub::PullResult r;
    try {
      r = pull_with_progress(h.spec, pull);
    } catch (const std::exception& e) {
      spdlog::error("cannot fetch {} ({}): {}", h.spec, h.id, e.what());
      return false;
    }
    if (!cfg.router.enabled()) {
      options.model.path = r.model_path;  // --hf: the one model (its settings are the command line's)
      if (options.model.alias.empty()) options.model.alias = h.id;
    } else {
      options.preset_models.push_back(model_options_for(cfg, h.id, r.model_path));
    }
  }
  if (cfg.router.enabled()) {
    const std::string cache = pull.cache_dir;
    options.router.cached_models = [cache] {
      std::vector<std::pair<std::string, std::string>> out;
      try {
        for (const hub::CacheEntry& e : hub::Cache(cache).list()) out.emplace_back(e.id, e.path);
      } catch (const std::exception& e) {
        spdlog::warn("download cache {}: {}", cache, e.what());
      }
      return out;
    };
  }
  return true;
}

}  // namespace

Command add_serve(CLI::App& app) {
  auto cfg = std::make_shared<config::ServeConfig>();
  config::add_serve_options(app, *cfg);
  return [cfg, &app] {
    config::finalize(app, *cfg);
    if (cfg->print_config) {
      std::printf("%s", config::describe(*cfg).c_str());
      return 0;
    }
    setup_logging(cfg->log);
    bool demo = false;
    if (cfg->model.path.empty() && cfg->model.hf.empty() && !cfg->router.enabled()) {
      cfg->model.path = demo_model_path();
      demo = true;
    }
    spdlog::info("ggufd {}: cpu features [{}], kernels {}", GGUFD_VERSION, engine::cpu_features().to_string(),
                 engine::kernels::dispatch().name);
    if (demo) {
      spdlog::warn("no --model given: serving the bundled demo model {} (random weights: its answers "
                   "are gibberish). Run a real model with --model FILE.gguf or GGUFD_MODEL.",
                   cfg->model.path);
    }
    server::ServiceOptions options = service_options(*cfg);
    if (!fetch_hub_models(*cfg, options)) return 1;
    server::Service service(std::move(options));
    service.start();
    service.handle_signals();
    return service.wait();
  };
}

}  // namespace ggufd
