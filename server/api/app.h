// Everything the endpoints share: the loaded model, the engine's scheduler, settings, metrics.
#pragma once

#include <atomic>
#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/model.h"
#include "engine/runtime/image_prompt.h"
#include "engine/runtime/sampler.h"
#include "engine/vision/image.h"
#include "server/api/metrics.h"
#include "server/api/tool_request.h"

namespace gguf {
class File;
}
namespace engine {
class Tokenizer;
class ChatTemplate;
class Scheduler;
namespace grammar {
class GrammarCache;
}
}  // namespace engine

namespace server {

class WorkPool;
class RemoteMedia;
class ResponseStore;

// Settings reported by /props and used as request defaults.
struct ServeSettings {
  int64_t n_ctx = 0;                  // context length per sequence
  int n_slots = 0;                    // parallel sequences
  int n_threads = 0;
  int64_t prefill_chunk = 0;
  std::string kv_type;                // "f16" / "f32"
  int64_t max_queue = 0;
  int64_t max_tokens = 0;             // --max-tokens: the limit of requests that set none, and the cap of all (0: none)
  int64_t keep_alive_ms = 10000;      // a stream silent this long gets a keep-alive (0: never)
  bool keep_billing_header = false;   // --keep-billing-header: leave Claude Code's nonce block in the system prompt
  int64_t request_timeout_s = 600;    // a generation still running after this is cancelled
  int max_json_depth = 64;            // request JSON nesting limit (parse_object)
  bool strict_api = false;            // --strict-api: unknown fields and other model ids refused (request_fields.h)
  engine::SamplingParams default_sampling;
  std::string reasoning_effort;       // --reasoning-effort: the default of requests that set none ("": the template's)
  std::string chat_template_source;   // "model", "file", or "chatml (fallback)"
  std::string chat_template;          // the template text in use
  engine::ImageLimits image_limits;   // --image-max-bytes, --image-max-pixels: per image
  int max_images = 8;                 // --image-max-count: per request
  bool allow_remote_media = false;    // --allow-remote-media: http(s) image URLs are fetched (App::media)
  std::string cpu_features;
  std::string kernels;                // the kernel set chosen at start-up
  std::string build_info;
  // The model's effective settings as (name, value) rows of ggufd serve's settings table.
  std::vector<std::pair<std::string, std::string>> model_settings;
};

// State shared by all handlers. Ownership: the composition root (serve command) owns the engine
// objects and the App, and keeps them alive until the HTTP server has stopped.
// Thread-safety: the pointed-to engine objects are thread-safe for what handlers do with them
// (Tokenizer and ChatTemplate are immutable; Scheduler's submit/stats are thread-safe); the
// atomics are read by any session; Metrics locks internally.
struct App {
  std::string model_id;               // alias, or the file name
  std::string model_path;
  int64_t model_created = 0;          // file modification time, Unix seconds
  std::shared_ptr<const gguf::File> file;
  const engine::Tokenizer* tokenizer = nullptr;
  const engine::ChatTemplate* chat_template = nullptr;
  engine::Scheduler* scheduler = nullptr;
  engine::grammar::GrammarCache* grammars = nullptr;  // compiled output constraints (thread-safe)
  ChatFeatures chat_features;         // of chat_template: tool syntax, system role, thinking
  // What the model serves: generation unless it is an encoder; embeddings (or, with rank, relevance
  // scores) when it has a pooling type, from the file or --pooling.
  bool generates = true;
  engine::PoolingType pooling = engine::PoolingType::kNone;
  int64_t n_embd = 0;
  int64_t n_vocab = 0;                // rows of the model's embedding table (image positions take ids past it)
  // The vision projector (--mmproj, or the one found beside the model); null: no image input.
  std::shared_ptr<const engine::VisionModel> vision;
  engine::LookedUpTokens layout_tokens;  // the ids of the texts its image layout looks up (idefics3)
  std::string architecture;           // general.architecture ("bert", "nomic-bert", "qwen3", ...)
  std::function<std::tm()> template_clock;  // strftime_now()'s time; empty: now (tests fix it)
  WorkPool* work = nullptr;           // the CPU work of requests runs here, off the IO threads
  RemoteMedia* media = nullptr;       // fetches remote images (set when settings.allow_remote_media)
  ResponseStore* responses = nullptr; // /v1/responses' stored responses (thread-safe); null: none kept
  ServeSettings settings;
  // This model's counters, kept by the router across its loads (tokens, latencies).
  std::shared_ptr<Metrics> metrics = std::make_shared<Metrics>();
  std::atomic<bool> ready{false};     // model loaded
  std::atomic<bool> draining{false};  // shutting down: refuse new work with 503
};

// What the chat template can do, found by reading and trying it (detect_tool_syntax, a render
// with a system message, <think>, the markers' tokens). Call once the tokenizer and template are
// set, before the grammar vocabulary is built (it includes marker_tokens).
ChatFeatures detect_chat_features(const App& app);
// The same for a template and the model's tokenizer, or none (`ggufd template --template`: the
// syntax is then read from the template alone, and there are no marker tokens), so that the
// command renders as the server does.
ChatFeatures detect_chat_features(const engine::ChatTemplate& tmpl, const engine::Tokenizer* tok);

// Throws a 404 (model_not_found) unless `id` names the served model.
void require_model(const App& app, const std::string& id);

// Throws a 400 when the model cannot generate text (an encoder: embeddings only).
void require_generation(const App& app);

// What the model serves, for /v1/models, /props and the metadata endpoint: "completion", "chat",
// "embeddings", "rerank".
std::vector<std::string> capabilities(const App& app);

// {"capabilities": [...], "pooling": "cls", "n_embd": 384, "architecture": "bert"}: what kind of
// model this is.
nlohmann::json model_kind_json(const App& app);

}  // namespace server
