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
#include "tools/ggufd/files.h"

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

server::ServiceOptions to_options(const config::ServeConfig& c) {
  server::ServiceOptions o;
  o.model.path = c.model.path;
  o.model.alias = c.model.alias;
  if (!c.model.chat_template_file.empty()) {
    o.model.chat_template = read_text_file(c.model.chat_template_file);
    o.model.chat_template_origin = "file " + c.model.chat_template_file;
  }
  o.model.pooling = c.model.pooling;
  o.http.host = c.http.host;
  o.http.port = static_cast<uint16_t>(c.http.port);
  o.http.body_limit = static_cast<size_t>(c.http.body_limit);
  o.http.header_limit = static_cast<size_t>(c.http.header_limit);
  o.http.header_timeout = std::chrono::seconds(c.http.header_timeout);
  o.http.read_timeout = std::chrono::seconds(c.http.read_timeout);
  o.tokenize_limit = static_cast<size_t>(c.http.tokenize_limit);
  o.max_json_depth = c.http.max_json_depth;
  o.strict_api = c.http.strict_api;
  o.keep_billing_header = c.http.keep_billing_header;
  o.http.idle_timeout = std::chrono::seconds(c.http.idle_timeout);
  o.http.max_connections = c.http.max_connections;
  o.http.api_keys = c.http.api_keys;
  o.http.cors_origins = c.http.cors_origins;
  o.request_timeout_s = c.http.request_timeout;
  o.shutdown_grace_s = c.http.shutdown_grace;
  o.model.engine.n_threads = c.engine.threads;
  o.model.engine.n_ctx = c.engine.ctx_size;
  o.model.engine.n_slots = c.engine.parallel;
  o.model.engine.max_queue = c.engine.queue_limit;
  o.model.engine.prefill_chunk = c.engine.prefill_chunk;
  o.model.engine.kv_type = engine::kv_type_from_name(c.engine.kv_type);
  o.model.engine.prefix_cache_bytes = int64_t{c.engine.cache_ram} << 20;
  o.model.engine.prefix_store.dir = c.engine.cache_dir;
  o.model.engine.prefix_store.max_bytes = uint64_t(c.engine.cache_dir_size) << 20;
  o.model.engine.prefix_store.warn = [](const std::string& what) { spdlog::warn("{}", what); };
  o.model.draft_model_path = c.model.draft;
  if (c.engine.spec == "none") {
    o.model.engine.spec = engine::SpecMode::kNone;
  } else if (c.engine.spec == "ngram") {
    o.model.engine.spec = engine::SpecMode::kNgram;
  } else if (c.engine.spec == "mtp") {
    o.model.engine.spec = engine::SpecMode::kMtp;
  } else if (c.engine.spec == "draft" || !c.model.draft.empty()) {
    o.model.engine.spec = engine::SpecMode::kDraft;
  } else {
    o.model.spec_auto = true;  // auto without a draft model: mtp when the model has NextN layers, else none
  }
  o.model.draft_max_default = c.sources.count("draft-max") == 0 || c.sources.at("draft-max") == "default";
  o.model.engine.draft_max = c.engine.draft_max;
  o.model.engine.draft_min = c.engine.draft_min;
  o.model.sampling_defaults.temperature = static_cast<float>(c.sampling.temperature);
  o.model.sampling_defaults.top_p = static_cast<float>(c.sampling.top_p);
  o.model.sampling_defaults.top_k = c.sampling.top_k;
  o.model.sampling_defaults.min_p = static_cast<float>(c.sampling.min_p);
  o.model.sampling_defaults.repeat_penalty = static_cast<float>(c.sampling.repeat_penalty);
  o.model.max_tokens = c.sampling.max_tokens;
  o.model.reasoning_effort = c.sampling.reasoning_effort;
  o.metrics = c.log.metrics;
  return o;
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
    if (cfg->model.path.empty()) {
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
    server::Service service(to_options(*cfg));
    service.start();
    service.handle_signals();
    return service.wait();
  };
}

}  // namespace ggufd
