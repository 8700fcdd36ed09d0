// Settings of `ggufd serve`: plain structs filled from flags, GGUFD_* environment variables and a
// config file (precedence: flags > env > file > defaults), validated with messages that name the
// setting, the value and what is allowed. With --models-preset, each model's settings are these
// with its preset applied (config/preset.h: flags > preset [id] > preset ["*"] > env > file).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "config/preset.h"

namespace CLI {
class App;
}

namespace config {

struct ModelConfig {
  std::string path;                 // --model; empty: the bundled demo model
  std::string alias;                // --alias; the id in /v1/models (default: file name)
  std::string chat_template_file;   // --chat-template-file: overrides the model's template
  std::string pooling;              // --pooling: embeddings' pooling; "": the model's pooling_type
  std::string draft;                // --model-draft: a small model of the same vocabulary drafting tokens
  std::string hf;                   // --hf org/repo[:QUANT]: a model from the Hugging Face Hub (server/hub)
  bool repack = true;               // --repack / --no-repack: weights copied into the kernels' packed layout
  std::string mmproj;               // --mmproj: the vision projector file
  bool mmproj_auto = true;          // --no-mmproj: no projector found beside the model
  bool load_on_startup = false;     // preset-only load-on-startup: the router loads it at start
};

struct HttpConfig {
  std::string host = "127.0.0.1";
  int port = 8080;
  int64_t body_limit = 8 << 20;     // bytes
  int64_t header_limit = 16 << 10;  // bytes
  int64_t tokenize_limit = 1 << 20; // bytes: the largest /tokenize or /detokenize body
  int max_json_depth = 64;          // nesting of request JSON (objects and arrays)
  int64_t image_max_bytes = 20 << 20;  // an image's encoded bytes
  int64_t image_max_pixels = 1 << 25;  // an image's width x height
  int image_max_count = 8;             // images in one request
  bool allow_remote_media = false;     // fetch http(s) image URLs (server/remote_media.h)
  int remote_media_timeout = 10;       // seconds one image URL's transfer may take
  bool remote_media_private = false;   // image URLs may also reach loopback, private and link-local addresses
  int header_timeout = 10;          // seconds for a new connection to send its request head
  int read_timeout = 30;            // seconds to receive a request body
  int idle_timeout = 60;            // keep-alive seconds
  int request_timeout = 600;        // seconds a generation may run
  int max_connections = 512;
  std::vector<std::string> api_keys;
  std::string api_key_file;         // one key per line, merged into api_keys
  std::vector<std::string> cors_origins;
  int shutdown_grace = 30;          // seconds in-flight requests get on SIGTERM
  bool strict_api = false;          // unknown request fields and other model ids: errors, not ignored
  bool keep_billing_header = false; // /v1/messages: keep Claude Code's nonce block in the system prompt
  bool webui = true;                // the chat page at / (webui/)
  std::string ollama_listen;        // HOST:PORT of a second listener (Ollama's port); "": none
};

// "HOST:PORT" ("[::1]:11434" too) -> its parts. Throws std::invalid_argument "<label>: ..." saying
// what is wrong.
struct HostPort {
  std::string host;
  uint16_t port = 0;
};
HostPort parse_host_port(const std::string& text, const std::string& label);

struct EngineConfig {
  int threads = 0;                  // 0: physical cores
  int ctx_size = 4096;              // context per slot (capped by the model's training context)
  int parallel = 4;                 // slots
  int queue_limit = 64;             // waiting requests beyond the slots
  int prefill_chunk = 512;          // prompt tokens per step
  std::string kv_type = "f16";      // f16 | f32 | q8_0 (engine::kv_type_names)
  int cache_ram = 256;              // MiB of KV cache beyond the slots' for prompt prefixes all slots share; 0: no sharing
  std::string cache_dir;            // the prefix cache on disk as well ("": memory only)
  int cache_dir_size = 10240;       // MiB of block files per model in cache_dir (LRU beyond)
  std::string spec = "auto";        // speculative decoding: auto | none | ngram | mtp | draft
  int draft_max = 16;               // drafts verified per slot and step at most
  int draft_min = 0;                // a shorter proposal is not verified
};

struct SamplingDefaults {
  double temperature = 0.8;
  double top_p = 0.95;
  int top_k = 40;
  double min_p = 0.05;
  double repeat_penalty = 1.0;
  int max_tokens = 0;               // cap and default of generated tokens per request (0: none; /v1/completions then 16)
  std::string reasoning_effort;     // chat requests without reasoning_effort: none | low | ...; "": the template's
};

// Many models in one server: on when models_dir or models_preset is set.
struct RouterConfig {
  std::string models_dir;           // --models-dir: GGUF files below it are models
  std::string models_preset;        // --models-preset: per-model settings (config/preset.h)
  int models_max = 4;               // models loaded at once (0: no limit)
  int64_t models_ram = 0;           // bytes of loaded models' weights, KV caches and states (0: no limit)
  bool autoload = true;             // a request for an unloaded model loads it
  int sleep_idle_seconds = 0;       // unload a model idle this long (0: never)
  int load_wait = 60;               // seconds a request waits for its model to load, then 503
  bool pull = true;                 // clients may download Hub models (POST /models/load, /api/pull)
  bool enabled() const { return !models_dir.empty() || !models_preset.empty(); }
};

// The download cache and the Hub client (server/hub) that --hf and the router use.
struct DownloadConfig {
  std::string hub_cache;            // --hub-cache / GGUFD_CACHE; finalize(): default $HOME/.cache/ggufd
  bool offline = false;             // the cache only, no network
  std::string ca_file;              // PEM CAs trusted for downloads (private mirrors, tests)
};

struct LogConfig {
  std::string level = "info";       // trace | debug | info | warn | error | off
  std::string format = "text";      // text | json
  bool metrics = true;              // expose /metrics
};

struct ServeConfig {
  ModelConfig model;
  HttpConfig http;
  EngineConfig engine;
  SamplingDefaults sampling;
  LogConfig log;
  RouterConfig router;
  DownloadConfig download;
  Presets presets;                  // the --models-preset file, read by finalize()
  std::string config_file;          // --config FILE (TOML)
  bool print_config = false;        // --print-config
  // Where each setting's value came from: "default", "file", "env" or "flag" (after
  // apply_preset(): also "preset" or "preset *"), keyed by the setting's flag name without dashes
  // (e.g. "ctx-size"); "config" says where --config came from.
  std::map<std::string, std::string> sources;
};

// Registers every setting on `app` (grouped: Model, HTTP, Engine, Sampling defaults, Logging),
// each with its GGUFD_<NAME> environment variable, and --config / --print-config.
void add_serve_options(CLI::App& app, ServeConfig& cfg);

// After CLI11 parsed: reads the config file (unknown keys are an error), applies it under env and
// flags, reads the API key file, fills `sources`, validates, and reads and checks the
// --models-preset file (every section applied and validated as its model would be). Throws
// std::invalid_argument with a one-line message naming setting, value and what is allowed.
void finalize(CLI::App& app, ServeConfig& cfg);

// The effective configuration, one "name = value  (source)" line per setting, keys redacted;
// then, with a preset file, one line per preset section saying what it changes.
std::string describe(const ServeConfig& cfg);

// The configuration of model `id`: `base` with the preset's ["*"] section and then the section of
// `id` (or the one whose alias is `id`) applied to the per-model settings no flag set; kModelId
// settings (model, alias, hf) come only from the section, never from `base`. sources of applied
// settings become "preset" / "preset *". Checks the result as finalize() does (model file exists,
// draft settings agree); throws std::invalid_argument naming the preset file and line.
ServeConfig apply_preset(const ServeConfig& base, const std::string& id);

}  // namespace config
