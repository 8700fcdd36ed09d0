// The whole server as one object: loads the model, runs the scheduler and the HTTP server, and
// shuts down gracefully. `ggufd serve` and the integration tests both use it.
#pragma once

#include <cstdint>
#include <memory>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "engine/runtime/sampler.h"
#include "engine/runtime/scheduler.h"
#include "engine/vision/image.h"
#include "server/api/openai_responses/response_store.h"
#include "server/http_server.h"
#include "server/hub/hub.h"

namespace server {

// One model the server can serve: where its file is and how to load and run it. ggufd serve
// derives it from the settings table (a preset's rows over the command line's).
struct ModelOptions {
  std::string path;                   // the GGUF file (the first part of a split set)
  std::string alias;                  // model id; default: the file name (router: the path below --models-dir)
  std::string chat_template;          // template text overriding the model's; empty: the model's
  std::string chat_template_origin;   // for /props: where the override came from
  std::string pooling;                // --pooling: mean | cls | last | rank; "": the model's pooling_type
  std::string draft_model_path;       // with engine.spec kDraft: the draft model (same vocabulary)
  bool repack = true;                 // weights copied into the kernels' packed layout at load (engine/model/repack.h)
  std::string mmproj_path;            // the vision projector ("": none, unless mmproj_auto finds one)
  bool mmproj_auto = true;            // look for an mmproj*.gguf beside the model when mmproj_path is empty
  // --spec auto without a draft model (engine.spec kNone): mtp when the model has NextN / MTP
  // layers, else none; with mtp so chosen, each slot drafts only while its drafts pay
  // (engine.spec_auto, engine::DraftGate).
  bool spec_auto = false;
  // --draft-max left at its default: with mtp, drafts per slot and step start at kMtpDraftMax
  // (llama.cpp's default for MTP) rather than engine.draft_max.
  bool draft_max_default = false;
  static constexpr int kMtpDraftMax = 3;
  engine::SchedulerOptions engine;
  engine::SamplingParams sampling_defaults = engine::serve_sampling_defaults();
  int64_t max_tokens = 0;             // --max-tokens: default and cap of generated tokens per request (0: none)
  std::string reasoning_effort;       // default of chat requests' reasoning_effort ("": the template's)
  bool load_on_startup = false;       // router: load when the server starts, not on the first request
  // The model's effective settings as (name, value) rows of the settings table, for /props.
  std::vector<std::pair<std::string, std::string>> settings;
};

// Many models in one server (model_registry.h). Off (enabled false): the one model of
// ServiceOptions::model is loaded at start and serves every request whatever its `model` says.
struct RouterOptions {
  bool enabled = false;
  std::string models_dir;             // GGUF files below it are models (id: the path below, without .gguf)
  int models_max = 4;                 // models loaded at once (0: no limit)
  int64_t models_ram = 0;             // bytes for loaded models' weights, KV caches and states (0: no limit)
  bool autoload = true;               // a request for an unloaded model loads it
  int64_t sleep_idle_s = 0;           // unload a model idle this long (0: never)
  int64_t load_wait_s = 60;           // a request waits this long for its model to load, then 503
  // The options of a model found in models_dir or the download cache (id, path): the command
  // line's model settings under the preset of that id, if any. Empty: `model` with path and alias.
  std::function<ModelOptions(const std::string& id, const std::string& path)> options_for;
  // Models in the download cache: (id, path of the model file). Empty: none.
  std::function<std::vector<std::pair<std::string, std::string>>()> cached_models;
  // Clients may download Hub models into the cache (POST /models/load of a Hub name not on disk,
  // Ollama's /api/pull), with these options (cache, endpoint, CA file, offline).
  bool pull = true;
  hub::PullOptions hub;
};

struct ServiceOptions {
  // --model: single-model mode's model. With the router: one of the models when its path is set,
  // and the settings of every model found in models_dir or the cache (router.options_for).
  ModelOptions model;
  std::vector<ModelOptions> preset_models;  // router: the models a preset names with their file
  RouterOptions router;
  HttpOptions http;
  // --ollama-listen: a second listener with the same routes and limits (Ollama-only apps insist on
  // its port 11434). Empty host: none.
  std::string second_host;
  uint16_t second_port = 0;
  ResponseStoreLimits response_store;  // /v1/responses' stored responses
  int64_t keep_alive_ms = 10000;      // streamed requests silent this long get a keep-alive event (0: never)
  bool keep_billing_header = false;   // --keep-billing-header (anthropic_messages/)
  int64_t request_timeout_s = 600;
  int shutdown_grace_s = 30;
  bool metrics = true;
  bool webui = true;                  // the chat page at / for browsers (--no-webui: off)
  int io_threads = 1;
  int work_threads = 2;               // CPU work of requests (parsing, templates, tokenizing)
  int work_queue = 64;                // requests being prepared at most; more: 503 server_busy
  int max_json_depth = 64;            // request JSON nesting limit
  engine::ImageLimits image_limits;   // per image (ServeSettings)
  int max_images = 8;                 // per request
  // --allow-remote-media: http(s) image URLs are fetched (server/remote_media.h), each within
  // image_limits.max_bytes and remote_media_timeout_s seconds; off: they are 400s.
  bool allow_remote_media = false;
  int remote_media_timeout_s = 10;
  bool remote_media_private = false;  // also loopback, private and link-local addresses
  bool strict_api = false;            // unknown request fields and other model ids refused
  size_t tokenize_limit = 1 << 20;    // largest /tokenize and /detokenize body, bytes
};

// Ownership: owns the io_context and its threads, the loaded model, tokenizer, chat template,
// scheduler and HTTP server. Thread-safety: start/shutdown/wait from one controlling thread;
// shutdown() may also come from a signal (it only posts work to the io_context).
class Service {
 public:
  explicit Service(ServiceOptions options);
  ~Service();

  // Binds the port and starts serving (/health answers 503 while the model loads in the
  // background). Throws std::system_error when the port can't be bound.
  void start();
  // Blocks until the model is loaded (true) or failed to load (false; see load_error()).
  bool wait_ready();
  const std::string& load_error() const;
  uint16_t port() const;
  uint16_t second_port() const;  // the --ollama-listen listener's port (0: none)
  // Stops accepting, lets in-flight requests finish for up to shutdown_grace_s, cancels the rest,
  // then stops. Returns at once; wait() blocks until done.
  void shutdown();
  // SIGINT/SIGTERM call shutdown(); a second one during the drain stops at once.
  void handle_signals();
  // Blocks until the service has stopped; returns 0, 1 if the model failed to load, or 128 + the
  // signal's number when a second signal cut the drain short.
  int wait();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace server
