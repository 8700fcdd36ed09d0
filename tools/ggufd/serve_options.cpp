// ServeConfig -> ServiceOptions: the model part (per-model rows) and the server part.
#include "tools/ggufd/serve_options.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <memory>

#include "config/settings.h"
#include "engine/model/kv_cache.h"
#include "tools/ggufd/files.h"

namespace ggufd {

namespace {

void set_speculation(const config::ServeConfig& c, server::ModelOptions& o) {
  o.draft_model_path = c.model.draft;
  const std::string& spec = c.engine.spec;
  if (spec == "none") {
    o.engine.spec = engine::SpecMode::kNone;
  } else if (spec == "ngram") {
    o.engine.spec = engine::SpecMode::kNgram;
  } else if (spec == "mtp") {
    o.engine.spec = engine::SpecMode::kMtp;
  } else if (spec == "draft" || !c.model.draft.empty()) {
    o.engine.spec = engine::SpecMode::kDraft;
  } else {
    o.spec_auto = true;  // auto without a draft model: mtp when the model has NextN layers, else none
  }
  const auto source = c.sources.find("draft-max");
  o.draft_max_default = source == c.sources.end() || source->second == "default";
  o.engine.draft_max = c.engine.draft_max;
  o.engine.draft_min = c.engine.draft_min;
}

void set_engine(const config::EngineConfig& e, engine::SchedulerOptions& o) {
  o.n_threads = e.threads;
  o.n_ctx = e.ctx_size;
  o.n_slots = e.parallel;
  o.max_queue = e.queue_limit;
  o.prefill_chunk = e.prefill_chunk;
  o.kv_type = engine::kv_type_from_name(e.kv_type);
  o.prefix_cache_bytes = int64_t{e.cache_ram} << 20;
  o.prefix_store.dir = e.cache_dir;
  o.prefix_store.max_bytes = uint64_t(e.cache_dir_size) << 20;
  o.prefix_store.warn = [](const std::string& what) { spdlog::warn("{}", what); };
}

void set_sampling(const config::SamplingDefaults& s, server::ModelOptions& o) {
  o.sampling_defaults.temperature = static_cast<float>(s.temperature);
  o.sampling_defaults.top_p = static_cast<float>(s.top_p);
  o.sampling_defaults.top_k = s.top_k;
  o.sampling_defaults.min_p = static_cast<float>(s.min_p);
  o.sampling_defaults.repeat_penalty = static_cast<float>(s.repeat_penalty);
  o.max_tokens = s.max_tokens;
  o.reasoning_effort = s.reasoning_effort;
}

// The per-model rows as /props shows them.
std::vector<std::pair<std::string, std::string>> model_rows(const config::ServeConfig& c) {
  config::ServeConfig copy = c;  // settings_of() needs mutable fields
  std::vector<std::pair<std::string, std::string>> out;
  for (const config::Setting& s : config::settings_of(copy)) {
    if (s.per_model()) out.emplace_back(s.name, config::current_text(s));
  }
  return out;
}

void set_http(const config::HttpConfig& h, server::ServiceOptions& o) {
  o.http.host = h.host;
  o.http.port = static_cast<uint16_t>(h.port);
  if (!h.ollama_listen.empty()) {
    const config::HostPort second = config::parse_host_port(h.ollama_listen, "--ollama-listen");
    o.second_host = second.host;
    o.second_port = second.port;
  }
  o.http.body_limit = static_cast<size_t>(h.body_limit);
  o.http.header_limit = static_cast<size_t>(h.header_limit);
  o.http.header_timeout = std::chrono::seconds(h.header_timeout);
  o.http.read_timeout = std::chrono::seconds(h.read_timeout);
  o.http.idle_timeout = std::chrono::seconds(h.idle_timeout);
  o.http.max_connections = h.max_connections;
  o.http.api_keys = h.api_keys;
  o.http.cors_origins = h.cors_origins;
  o.tokenize_limit = static_cast<size_t>(h.tokenize_limit);
  o.max_json_depth = h.max_json_depth;
  o.image_limits.max_bytes = h.image_max_bytes;
  o.image_limits.max_pixels = h.image_max_pixels;
  o.max_images = h.image_max_count;
  o.allow_remote_media = h.allow_remote_media;
  o.remote_media_timeout_s = h.remote_media_timeout;
  o.remote_media_private = h.remote_media_private;
  o.strict_api = h.strict_api;
  o.keep_billing_header = h.keep_billing_header;
  o.request_timeout_s = h.request_timeout;
  o.shutdown_grace_s = h.shutdown_grace;
}

void set_router(const config::ServeConfig& c, server::ServiceOptions& o) {
  const config::RouterConfig& r = c.router;
  o.router.enabled = r.enabled();
  o.router.models_dir = r.models_dir;
  o.router.models_max = r.models_max;
  o.router.models_ram = r.models_ram;
  o.router.autoload = r.autoload;
  o.router.sleep_idle_s = r.sleep_idle_seconds;
  o.router.load_wait_s = r.load_wait;
  o.router.pull = r.pull;
  o.router.hub = pull_options(c);
  if (!o.router.enabled) return;
  auto base = std::make_shared<const config::ServeConfig>(c);
  o.router.options_for = [base](const std::string& id, const std::string& path) {
    return model_options_for(*base, id, path);
  };
  if (!c.model.path.empty()) o.model = model_options_for(c, command_line_model_id(c), c.model.path);
  for (const config::PresetSection& sec : c.presets.models) {
    const auto file = sec.values.find("model");
    if (file != sec.values.end()) o.preset_models.push_back(model_options_for(c, sec.id, file->second.values.at(0)));
  }
}

}  // namespace

hub::PullOptions pull_options(const config::ServeConfig& c) {
  hub::PullOptions o;
  o.cache_dir = c.download.hub_cache;
  o.offline = c.download.offline;
  o.ca_file = c.download.ca_file;
  return o;
}

server::ModelOptions model_options(const config::ServeConfig& c) {
  server::ModelOptions o;
  o.path = c.model.path;
  o.alias = c.model.alias;
  if (!c.model.chat_template_file.empty()) {
    o.chat_template = read_text_file(c.model.chat_template_file);
    o.chat_template_origin = "file " + c.model.chat_template_file;
  }
  o.pooling = c.model.pooling;
  o.repack = c.model.repack;
  o.mmproj_path = c.model.mmproj;
  o.mmproj_auto = c.model.mmproj_auto;
  set_engine(c.engine, o.engine);
  set_speculation(c, o);
  set_sampling(c.sampling, o);
  o.load_on_startup = c.model.load_on_startup;
  o.settings = model_rows(c);
  return o;
}

server::ModelOptions model_options_for(const config::ServeConfig& cfg, const std::string& id,
                                       const std::string& path) {
  config::ServeConfig c = config::apply_preset(cfg, id);
  c.model.path = path;
  if (c.model.alias.empty()) c.model.alias = id;
  return model_options(c);
}

std::string command_line_model_id(const config::ServeConfig& cfg) {
  if (!cfg.model.alias.empty()) return cfg.model.alias;
  std::filesystem::path p(cfg.model.path);
  return p.extension() == ".gguf" ? p.stem().string() : p.filename().string();
}

server::ServiceOptions service_options(const config::ServeConfig& c) {
  server::ServiceOptions o;
  o.model = model_options(c);
  set_http(c.http, o);
  o.metrics = c.log.metrics;
  o.webui = c.http.webui;
  set_router(c, o);
  return o;
}

std::vector<HubModel> hub_models(const config::ServeConfig& cfg) {
  std::vector<HubModel> out;
  if (!cfg.model.hf.empty()) out.push_back({cfg.model.alias.empty() ? cfg.model.hf : cfg.model.alias, cfg.model.hf});
  for (const config::PresetSection& sec : cfg.presets.models) {
    const auto hf = sec.values.find("hf");
    if (hf != sec.values.end()) out.push_back({sec.id, hf->second.values.at(0)});
  }
  return out;
}

}  // namespace ggufd
