// The rows of the settings table (see settings.h). Ranges are inclusive.
//
// Scope, decided per row (a preset may set the per-model ones):
//   kModelId: model, alias, hf (they name the model).
//   kModel: chat-template-file, pooling, model-draft; every Engine row (threads, ctx-size, parallel,
//     queue-limit, prefill-chunk, kv-type, cache-ram, cache-dir, cache-dir-size, spec, draft-*: each
//     model has its own scheduler, KV cache and prefix store); every Sampling-defaults row.
//   kServer: HTTP (one listener, one set of keys and limits, request-timeout and shutdown-grace
//     are the service's), Logging, Router, Download.
#include "config/settings.h"

#include "engine/runtime/sampling_rules.h"

namespace config {

namespace {

std::vector<Setting> with_scope(std::vector<Setting> rows, Scope scope) {
  for (Setting& s : rows) s.scope = scope;
  return rows;
}

std::vector<Setting> model_settings(ModelConfig& m) {
  const char* g = "Model";
  std::vector<Setting> rows = {
      {"model", "-m,--model", g, "model", "GGUF file to serve (default: the bundled demo model)", &m.path},
      {"alias", "--alias", g, "model", "model id in /v1/models and responses (default: file name)", &m.alias},
      {"chat-template-file", "--chat-template-file", g, "model",
       "Jinja chat template file that overrides the model's own", &m.chat_template_file},
      {"pooling", "--pooling", g, "model",
       "serve /v1/embeddings (or /v1/rerank: rank) with this pooling (default: the model's pooling_type)",
       &m.pooling, 0, 0, {"none", "mean", "cls", "last", "rank"}},
      {"model-draft", "--model-draft", g, "model",
       "small GGUF model of the same vocabulary that drafts tokens for speculative decoding (also -md)", &m.draft},
      {"hf", "--hf", g, "model",
       "serve org/repo[:QUANT] from the Hugging Face Hub (Q4_K_M by default), downloaded into --hub-cache",
       &m.hf},
      {"repack", "--repack,!--no-repack", g, "model",
       "copy the weights of the types the kernels have a faster layout for (Q4_0, Q8_0, Q4_K, Q6_K, ...) into it "
       "at load, reading the file rather than its mapping: faster prompt processing; --no-repack reads every "
       "weight in place from the mapped file, with no copy at load and slower prompt processing (default: on)",
       &m.repack},
      {"mmproj", "--mmproj", g, "model",
       "vision projector GGUF of the model (its mmproj file): image input (default: the one mmproj*.gguf beside "
       "the model whose width fits it)",
       &m.mmproj},
      {"mmproj-auto", "--mmproj-auto,!--no-mmproj", g, "model",
       "use an mmproj*.gguf found beside the model when --mmproj names none (--no-mmproj: no image input)",
       &m.mmproj_auto},
  };
  for (Setting& s : rows) {
    const bool names_model = s.name == "model" || s.name == "alias" || s.name == "hf";
    s.scope = names_model ? Scope::kModelId : Scope::kModel;
  }
  return rows;
}

std::vector<Setting> http_settings(HttpConfig& h) {
  const char* g = "HTTP";
  return {
      {"host", "--host", g, "http", "address to listen on (0.0.0.0: all interfaces)", &h.host},
      {"port", "--port", g, "http", "TCP port (0: any free port)", &h.port, 0, 65535},
      {"ollama-listen", "--ollama-listen", g, "http",
       "also listen on HOST:PORT, for apps that only talk to Ollama's port (127.0.0.1:11434); the same API "
       "there (default: off)",
       &h.ollama_listen},
      {"api-key", "--api-key", g, "http",
       "accepted Bearer key (repeatable; env: comma-separated); none: no authentication", &h.api_keys},
      {"api-key-file", "--api-key-file", g, "http", "file with one accepted key per line (# comments)",
       &h.api_key_file},
      {"cors-origin", "--cors-origin", g, "http", "allowed browser origin, or * (repeatable)", &h.cors_origins},
      {"body-limit", "--body-limit", g, "http", "largest request body (suffix K, M, G allowed)", &h.body_limit,
       1024, 1 << 30},
      {"header-limit", "--header-limit", g, "http", "largest request head (suffix K, M allowed)",
       &h.header_limit, 1024, 1 << 20},
      {"tokenize-limit", "--tokenize-limit", g, "http", "largest /tokenize or /detokenize body (suffix K, M allowed)",
       &h.tokenize_limit, 1024, 1 << 30},
      {"max-json-depth", "--max-json-depth", g, "http", "deepest nesting of objects and arrays in request JSON",
       &h.max_json_depth, 2, 1024},
      {"image-max-bytes", "--image-max-bytes", g, "http", "largest encoded image (suffix K, M allowed)",
       &h.image_max_bytes, 1024, 1 << 30},
      {"image-max-pixels", "--image-max-pixels", g, "http",
       "largest image in pixels (width x height), checked before decoding", &h.image_max_pixels, 1, int64_t{1} << 32},
      {"image-max-count", "--image-max-count", g, "http", "images in one request at most", &h.image_max_count, 0,
       256},
      {"allow-remote-media", "--allow-remote-media", g, "http",
       "fetch the http and https image URLs clients send (each within --image-max-bytes and --remote-media-timeout, "
       "at most 5 redirects, http and https only), from public addresses only unless --remote-media-private "
       "(default: off, such URLs are 400s)",
       &h.allow_remote_media},
      {"remote-media-private", "--remote-media-private", g, "http",
       "let image URLs (--allow-remote-media) also reach loopback, private (10/8, 172.16/12, 192.168/16, fc00::/7), "
       "link-local (169.254/16: cloud metadata, fe80::/10) and other non-public addresses, redirects and a proxy "
       "included: for trusted clients on a trusted network (default: off, a 400 naming the address)",
       &h.remote_media_private},
      {"remote-media-timeout", "--remote-media-timeout", g, "http",
       "seconds the fetch of one image URL may take, redirects included (--allow-remote-media)",
       &h.remote_media_timeout, 1, 600},
      {"header-timeout", "--header-timeout", g, "http", "seconds a new connection has to send its request head",
       &h.header_timeout, 1, 3600},
      {"read-timeout", "--read-timeout", g, "http", "seconds to receive a request body", &h.read_timeout, 1, 3600},
      {"idle-timeout", "--idle-timeout", g, "http", "seconds an idle keep-alive connection stays open",
       &h.idle_timeout, 0, 3600},
      {"request-timeout", "--request-timeout", g, "http", "seconds a generation may run", &h.request_timeout, 1,
       86400},
      {"max-connections", "--max-connections", g, "http", "open connections at most", &h.max_connections, 1,
       65536},
      {"shutdown-grace", "--shutdown-grace", g, "http", "seconds in-flight requests get on SIGTERM",
       &h.shutdown_grace, 0, 3600},
      {"strict-api", "--strict-api", g, "http",
       "refuse unknown request fields (400) and model ids other than the served one (404) instead of ignoring them",
       &h.strict_api},
      {"webui", "--webui,!--no-webui", g, "http",
       "serve the chat page at / to browsers (other clients get Ollama's \"ggufd is running\"; default: on)",
       &h.webui},
      {"keep-billing-header", "--keep-billing-header", g, "http",
       "leave Claude Code's per-request x-anthropic-billing-header block in /v1/messages' system prompt (by default "
       "it is dropped: its nonce would defeat the prefix cache on every turn)",
       &h.keep_billing_header},
  };
}

std::vector<Setting> engine_settings(EngineConfig& e) {
  const char* g = "Engine";
  return with_scope({
      {"threads", "-t,--threads", g, "engine", "compute threads (0: one per physical core)", &e.threads, 0, 1024},
      {"ctx-size", "-c,--ctx-size", g, "engine", "context tokens per slot (capped by the model's)", &e.ctx_size,
       16, 1048576},
      {"parallel", "--parallel", g, "engine", "slots: requests generated at the same time", &e.parallel, 1,
       256},
      {"queue-limit", "--queue-limit", g, "engine", "requests that may wait for a slot (more: HTTP 429)",
       &e.queue_limit, 0, 65536},
      {"prefill-chunk", "--prefill-chunk", g, "engine", "prompt tokens evaluated per step", &e.prefill_chunk, 1,
       65536},
      {"kv-type", "--kv-type", g, "engine", "KV cache element type", &e.kv_type, 0, 0, {"f16", "f32", "q8_0"}},
      {"cache-ram", "--cache-ram", g, "engine",
       "MiB of KV cache added for prompt prefixes shared by all slots (allocated at start; 0: no sharing)",
       &e.cache_ram, 0, 1048576},
      {"cache-dir", "--cache-dir", g, "engine",
       "keep the prefix cache's blocks on disk too, so a new session or a restarted server reuses a computed "
       "system prompt and tools (created if missing; empty: memory only)",
       &e.cache_dir},
      {"cache-dir-size", "--cache-dir-size", g, "engine",
       "MiB of block files per model in --cache-dir (the least recently used are removed beyond)",
       &e.cache_dir_size, 1, 1 << 30},
      {"spec", "--spec", g, "engine",
       "speculative decoding (output unchanged): ngram drafts from the context, draft from --model-draft, "
       "mtp from the model's own NextN / MTP layers; auto: draft with --model-draft, else mtp when the model "
       "has NextN layers (a slot whose drafts are too rarely accepted to pay stops drafting, and tries again "
       "now and then), else none",
       &e.spec, 0, 0, {"auto", "none", "ngram", "mtp", "draft"}},
      // at most the KV cache's window slack (KvCache::kWindowSlack), so rejected drafts can always go
      {"draft-max", "--draft-max", g, "engine",
       "draft tokens verified per slot and step at most (left at the default, mtp starts at 3)", &e.draft_max, 1,
       64},
      {"draft-min", "--draft-min", g, "engine", "fewest draft tokens worth verifying (shorter proposals are dropped)",
       &e.draft_min, 0, 64},
  }, Scope::kModel);
}

std::vector<Setting> sampling_settings(SamplingDefaults& s) {
  namespace rules = engine::sampling_rules;  // the ranges the sampler and requests check too
  const char* g = "Sampling defaults";
  return with_scope({
      {"temperature", "--temperature", g, "sampling", "used when a request sets none (0: greedy)",
       &s.temperature, rules::kTemperature.min, rules::kTemperature.max},
      {"top-p", "--top-p", g, "sampling", "nucleus sampling mass (1: off)", &s.top_p, rules::kTopP.min,
       rules::kTopP.max},
      {"top-k", "--top-k", g, "sampling", "sample from the k likeliest tokens (0: off)", &s.top_k,
       rules::kTopK.min, rules::kTopK.max},
      {"min-p", "--min-p", g, "sampling", "drop tokens below min-p x the top probability (0: off)", &s.min_p,
       rules::kMinP.min, rules::kMinP.max},
      {"repeat-penalty", "--repeat-penalty", g, "sampling", "penalty for repeated tokens (1: off)",
       &s.repeat_penalty, rules::kRepeatPenalty.min, rules::kRepeatPenalty.max},
      {"max-tokens", "--max-tokens", g, "sampling",
       "most tokens a request generates, and the limit of requests that set none (0, the default: no cap; "
       "/v1/completions then 16, the others until the context is full)",
       &s.max_tokens, 0, 1048576},
      {"reasoning-effort", "--reasoning-effort", g, "sampling",
       "chat requests that set none; none turns thinking off (default: the chat template's own)",
       &s.reasoning_effort, 0, 0, {"none", "minimal", "low", "medium", "high"}},
  }, Scope::kModel);
}

std::vector<Setting> log_settings(LogConfig& l) {
  const char* g = "Logging";
  return {
      {"log-level", "--log-level", g, "log", "least severe level logged", &l.level, 0, 0,
       {"trace", "debug", "info", "warn", "error", "off"}},
      {"log-format", "--log-format", g, "log", "text: for people; json: one object per line", &l.format, 0, 0,
       {"text", "json"}},
      {"metrics", "--metrics,!--no-metrics", g, "log", "expose Prometheus metrics at /metrics (default: on)",
       &l.metrics},
  };
}

std::vector<Setting> router_settings(RouterConfig& r) {
  const char* g = "Router";
  return {
      {"models-dir", "--models-dir", g, "router",
       "serve every GGUF file below this directory (id: the path below it without .gguf); turns the router on",
       &r.models_dir},
      {"models-preset", "--models-preset", g, "router",
       "file of per-model settings, one [id] section per model and [\"*\"] for all (see README); turns the "
       "router on",
       &r.models_preset},
      {"models-max", "--models-max", g, "router",
       "models loaded at once; the least recently used idle one is unloaded for another (0: no limit)",
       &r.models_max, 0, 1024},
      {"models-ram", "--models-ram", g, "router",
       "bytes for loaded models' weights, KV caches and states together (suffix K, M, G; 0: no limit)",
       &r.models_ram, 0, 1e15},
      {"models-autoload", "--models-autoload,!--no-models-autoload", g, "router",
       "a request for a model that is not loaded loads it (default: on)", &r.autoload},
      {"sleep-idle-seconds", "--sleep-idle-seconds", g, "router", "unload a model idle this long (0: never)",
       &r.sleep_idle_seconds, 0, 31536000},
      {"models-load-wait", "--models-load-wait", g, "router",
       "seconds a request waits for its model to load before a 503 with Retry-After", &r.load_wait, 0, 86400},
      {"models-pull", "--models-pull,!--no-models-pull", g, "router",
       "clients may download Hugging Face models into --hub-cache (POST /models/load of a Hub name, Ollama's "
       "/api/pull; default: on)",
       &r.pull},
  };
}

std::vector<Setting> download_settings(DownloadConfig& d) {
  const char* g = "Download";
  std::vector<Setting> rows = {
      {"hub-cache", "--hub-cache", g, "download",
       "directory of downloaded models (--hf, ggufd pull; default: ~/.cache/ggufd)", &d.hub_cache},
      {"offline", "--offline", g, "download", "use downloaded models only, never the network", &d.offline},
      {"ca-file", "--ca-file", g, "download",
       "PEM file of the CAs trusted for downloads (a private mirror; certificate checks stay on)", &d.ca_file},
  };
  rows[0].env = "GGUFD_CACHE";  // the cache's variable, shared with ggufd pull
  return rows;
}

}  // namespace

std::vector<Setting> settings_of(ServeConfig& cfg) {
  std::vector<Setting> all;
  for (auto part : {model_settings(cfg.model), http_settings(cfg.http), engine_settings(cfg.engine),
                    sampling_settings(cfg.sampling), log_settings(cfg.log), router_settings(cfg.router),
                    download_settings(cfg.download)}) {
    for (Setting& s : part) all.push_back(std::move(s));
  }
  return all;
}

}  // namespace config
