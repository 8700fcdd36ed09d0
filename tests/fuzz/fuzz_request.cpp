// libFuzzer target: the whole request path of the HTTP API short of the scheduler, as a request
// body goes through it: the router's pass (model id and keep_alive) -> JSON with the nesting
// limit -> field validation -> chat template rendering with marked user strings -> tokenization
// -> context and capacity checks (or the /tokenize and /detokenize responses), and the output
// constraint (response_format, json_schema, grammar) compiled against the model's vocabulary. The first byte picks the endpoint (bits 0-1;
// bit 4 turns completions and chat into embeddings and rerank, bit 5 into /v1/responses and
// /v1/messages; bit 5 turns tokenize and detokenize into Ollama's /api/chat and /api/generate, or
// with bit 4 into /api/embed and /api/embeddings), the model (bits 2+) and --strict-api (bit 7);
// the rest is the body. The x-ggufd-ignored-fields value made of a request's unknown fields must be
// printable ASCII of bounded length, and an error of /v1/messages must make Anthropic's error
// object, one of /api/* Ollama's.
//
// The only acceptable failure is a 4xx ApiError (what the router turns into a client error).
// A 5xx, any other exception, a crash, a hang or a sanitizer report is a bug: a request that
// makes the server answer 500 or die.
//
// Models: the shared Qwen3 vocabulary (byte-level BPE with control tokens) with the real Qwen3
// chat template (Hermes tool calls), and stories260K (SentencePiece) with the ChatML fallback (the
// generic tool syntax), Llama 3.1's and Mistral Nemo's templates; without ../shared,
// our own built-in BPE vocabulary (engine/synth) with ChatML. The first model compiles output
// constraints through a GrammarCache of its vocabulary, as the server does (building the trie of
// 151k tokens for every input would be too slow); the others without one (App::grammars null).
// Images: the second model has the shared gemma3 projector (a fixed square), the third the
// repository's pixtral one (the image's aspect, rows and breaks), so image parts go through
// decoding, fitting, the count and context checks and tokenization around them; the others have
// none (the "no projector" 400).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "engine/text/chat_template.h"
#include "engine/text/grammar/grammar_cache.h"
#include "engine/runtime/image_prompt.h"
#include "engine/text/tokenizer/tokenizer.h"
#include "engine/vision/projector.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "server/api/anthropic_messages/messages_request.h"
#include "server/api/anthropic_messages/messages_response.h"
#include "server/api/api_error.h"
#include "server/api/app.h"
#include "server/api/openai_chat/chat_request.h"
#include "server/api/openai_completions/completion_request.h"
#include "server/api/openai_responses/response_store.h"
#include "server/api/openai_responses/responses_request.h"
#include "server/api/embedding_request.h"
#include "server/api/keep_alive.h"
#include "server/api/ollama/ollama_request.h"
#include "server/api/request_json.h"
#include "server/api/request_fields.h"
#include "server/api/tokenize_request.h"
#include "tools/synth/synth.h"

namespace {

std::string shared_dir() {
  const char* env = std::getenv("GGUFD_SHARED_DIR");
  return env != nullptr ? env : GGUFD_SHARED_DIR;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One served model: its tokenizer, template and the App the request code reads.
struct Model {
  engine::Tokenizer tokenizer;
  engine::ChatTemplate chat_template;
  std::unique_ptr<engine::grammar::GrammarCache> grammars;
  std::shared_ptr<const engine::VisionModel> vision;
  std::unique_ptr<server::ResponseStore> responses = std::make_unique<server::ResponseStore>();
  std::unique_ptr<server::App> app = std::make_unique<server::App>();

  Model(engine::Tokenizer tok, const std::string& template_source)
      : tokenizer(std::move(tok)), chat_template(engine::ChatTemplate::parse(template_source, options())) {
    server::App& a = *app;
    a.model_id = "fuzz";
    a.tokenizer = &tokenizer;
    a.chat_template = &chat_template;
    a.settings.n_ctx = 512;
    a.settings.n_slots = 4;
    a.settings.max_queue = 8;
    a.settings.max_json_depth = 64;
    a.chat_features = server::detect_chat_features(a);
    a.responses = responses.get();  // empty: every previous_response_id is a 404
    a.n_embd = 64;
    a.n_vocab = tokenizer.n_vocab();
    // images: smaller than the server's limits, so that every input stays fast under the sanitizers
    a.settings.image_limits.max_pixels = 1 << 18;
    a.settings.image_limits.max_bytes = 1 << 20;
    a.settings.max_images = 3;
    a.ready = true;
  }
  Model(const Model&) = delete;  // the App points into it

  // Compiled output constraints shared across inputs, as the server has; a few, to bound memory.
  // The compile budget is the server's / 256: the server's allows tens of seconds of CPU (a JSON
  // string's maxLength of about 3,000 with this vocabulary), which the sanitizers make minutes,
  // past libFuzzer's timeout; this one refuses what would take more than about 0.1 s in a release
  // build (a maxLength of about 12), so inputs still reach the refusal and stay fast under them.
  void use_grammar_cache() {
    grammars = std::make_unique<engine::grammar::GrammarCache>(
        engine::grammar::TokenVocab::from_tokenizer(tokenizer), 8, engine::grammar::CompiledGrammar::kDefaultMaxVisits / 256);
    app->grammars = grammars.get();
  }

  // Image input through the projector at `path`, its layout's tokens looked up as at load.
  void use_vision(const std::string& path) {
    vision = std::make_shared<const engine::VisionModel>(engine::VisionModel::load(path));
    app->vision = vision;
    app->layout_tokens = engine::lookup_tokens(tokenizer, engine::looked_up_texts(vision->traits()));
  }

  // Tighter than the server's budget so every input stays fast under the sanitizers.
  static engine::ChatTemplateOptions options() {
    engine::ChatTemplateOptions o;
    o.limits.max_steps = 200'000;
    o.limits.max_output_bytes = 1u << 20;
    return o;
  }
};

engine::Tokenizer tokenizer_of(const std::string& path) {
  return engine::Tokenizer::from_gguf(gguf::File::open(path));
}

std::vector<std::unique_ptr<Model>> load_models() {
  std::vector<std::unique_ptr<Model>> out;
  const std::string dir = shared_dir();
  try {
    out.push_back(std::make_unique<Model>(tokenizer_of(dir + "/tokenizer/ggml-vocab-qwen3.gguf"),
                                          read_text(dir + "/templates/Qwen-Qwen3-0.6B.jinja")));
    out.push_back(std::make_unique<Model>(tokenizer_of(dir + "/models/stories260K.gguf"),
                                          std::string(engine::kChatMLTemplate)));
    // tool syntaxes of their own: Llama 3.1 (JSON calls) and Mistral Nemo ([TOOL_CALLS])
    out.push_back(std::make_unique<Model>(tokenizer_of(dir + "/models/stories260K.gguf"),
                                          read_text(dir + "/templates/meta-llama-Llama-3.1-8B-Instruct.jinja")));
    out.push_back(std::make_unique<Model>(tokenizer_of(dir + "/models/stories260K.gguf"),
                                          read_text(dir + "/templates/mistralai-Mistral-Nemo-Instruct-2407.jinja")));
    // WordPiece: the embeddings and rerank paths of an encoder
    out.push_back(std::make_unique<Model>(tokenizer_of(dir + "/tokenizer/ggml-vocab-bert-bge.gguf"),
                                          std::string(engine::kChatMLTemplate)));
    out.back()->app->generates = false;
    out[0]->use_grammar_cache();
    out[1]->use_vision(dir + "/models/vision/synth-mmproj-gemma3-F32.gguf");
    out[2]->use_vision(std::string(GGUFD_TEST_DATA_DIR) + "/reference/models/vision/synth-mmproj-pixtral-F32.gguf");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_request: shared models unavailable (%s); using the built-in vocabulary\n", e.what());
    out.clear();
    gguf::Writer w;
    for (auto& [key, value] : engine::synth::builtin_vocabulary(600)) w.set(key, value);
    static const std::vector<uint8_t> bytes = w.to_bytes();
    out.push_back(std::make_unique<Model>(engine::Tokenizer::from_gguf(gguf::File::parse(bytes)),
                                          std::string(engine::kChatMLTemplate)));
  }
  return out;
}

[[noreturn]] void bug(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_request: %s: %s\n", what, detail.c_str());
  std::abort();
}

// The header naming `ignored`: none when nothing was ignored, else printable ASCII, at most 20
// names of at most 40 bytes (3 per byte once encoded) and a cut mark each.
void check_ignored_fields(const std::vector<std::string>& ignored, bool strict) {
  if (ignored.empty()) return;
  if (strict) bug("fields ignored under --strict-api", ignored.front());
  const std::string value = server::ignored_fields_header(ignored);
  constexpr size_t kBound = 20 * (40 * 3 + 3 + 2) + 5;
  if (value.empty() || value.size() > kBound) bug("ignored-fields header of bad length", std::to_string(value.size()));
  for (const char c : value) {
    if (c < 0x20 || c > 0x7e) bug("ignored-fields header has a non-printable byte", value);
  }
}

// Every input non-empty, within the context and the vocabulary.
void check_inputs(const std::vector<std::vector<int32_t>>& inputs, const server::App& app) {
  if (inputs.empty() || inputs.size() > server::kMaxEmbeddingInputs) bug("input count", std::to_string(inputs.size()));
  for (const auto& ids : inputs) {
    if (ids.empty() || static_cast<int64_t>(ids.size()) > app.settings.n_ctx) bug("input length", std::to_string(ids.size()));
    for (int32_t id : ids) {
      if (id < 0 || id >= app.tokenizer->n_vocab()) bug("token id outside the vocabulary", std::to_string(id));
    }
  }
}

void check_embeddings(const server::EmbeddingRequest& r, const server::App& app, bool strict) {
  check_ignored_fields(r.ignored_fields, strict);
  check_inputs(r.inputs, app);
  if (r.dimensions && (*r.dimensions < 1 || *r.dimensions > app.n_embd)) bug("dimensions", std::to_string(*r.dimensions));
}

void check_rerank(const server::RerankRequest& r, const server::App& app, bool strict) {
  check_ignored_fields(r.ignored_fields, strict);
  check_inputs(r.inputs, app);
  if (r.inputs.size() != r.documents.size() || r.top_n == 0) bug("rerank shape", std::to_string(r.top_n));
}

// What the router reads of every POST body before the endpoint does (lease_for_body): the model
// id and keep_alive, in one SAX pass that must never throw; a keep_alive is a duration or a 400.
void route(std::string_view body) {
  const server::RoutingFields f = server::peek_routing(body);
  if (!f.keep_alive) return;
  try {
    (void)server::parse_keep_alive(*f.keep_alive);
  } catch (const server::ApiError& e) {
    if (e.status() != 400) bug("keep_alive refused with a status other than 400", std::to_string(e.status()));
  }
}

// Ollama's endpoints (0 chat, 1 generate, 2 embed, 3 embeddings); an error must make Ollama's
// {"error": "..."} object.
void check_ollama(int endpoint, const server::App& app, std::string_view body, bool strict) {
  try {
    if (endpoint < 2) {
      const server::OllamaRequest r = endpoint == 0 ? server::prepare_ollama_chat(app, body) : server::prepare_ollama_generate(app, body);
      check_ignored_fields(r.ignored_fields, strict);
      if (!r.load_only && r.prompts.size() != 1) bug("Ollama request without its prompt", std::to_string(r.prompts.size()));
      if (r.model.empty()) bug("Ollama request without a model name", "");
      // the router's unload check (a keep_alive 0 request without input) never takes a request
      // that has something to generate
      if (!r.load_only && !server::peek_routing(body, true).has_input) bug("input the router's peek missed", "");
    } else {
      const server::EmbeddingRequest r = server::prepare_ollama_embed(app, body, endpoint == 3);
      check_ignored_fields(r.ignored_fields, strict);
      if (!r.inputs.empty()) check_inputs(r.inputs, app);
    }
  } catch (const server::ApiError& e) {
    const nlohmann::json j = server::ollama_error_json(e);
    if (j.size() != 1 || !j["error"].is_string()) bug("not Ollama's error shape", j.dump());
    throw;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<std::unique_ptr<Model>> models = load_models();
  if (size == 0) return 0;
  const Model& model = *models[(data[0] >> 2) % models.size()];
  const bool strict = (data[0] & 0x80) != 0;
  model.app->settings.strict_api = strict;
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  route(body);
  // bit 0x10 turns the completion and chat cases into embeddings and rerank
  const bool embeddings = (data[0] & 0x10) != 0;
  const bool agents = !embeddings && (data[0] & 0x20) != 0 && (data[0] & 3) < 2;  // the agents' APIs instead
  const bool ollama = (data[0] & 0x20) != 0 && (data[0] & 3) >= 2;                // Ollama's instead of tokenize
  model.app->pooling = !embeddings ? engine::PoolingType::kNone
                       : (data[0] & 3) == 1 ? engine::PoolingType::kRank : engine::PoolingType::kMean;
  try {
    if (ollama) {
      check_ollama(((data[0] & 3) - 2) | (embeddings ? 2 : 0), *model.app, body, strict);
      return 0;
    }
    switch ((data[0] & 3) | (embeddings && (data[0] & 3) < 2 ? 4 : 0) | (agents ? 6 : 0)) {
      case 6: check_ignored_fields(server::prepare_responses(*model.app, body).ignored_fields, strict); break;
      case 7:
        try {
          check_ignored_fields(server::prepare_messages(*model.app, body).ignored_fields, strict);
        } catch (const server::ApiError& e) {
          const nlohmann::json j = server::anthropic_error_json(e);
          if (j["type"] != "error" || !j["error"]["type"].is_string()) bug("not Anthropic's error shape", j.dump());
          throw;
        }
        break;
      case 0: check_ignored_fields(server::prepare_completion(*model.app, body).ignored_fields, strict); break;
      case 1: check_ignored_fields(server::prepare_chat(*model.app, body).ignored_fields, strict); break;
      case 4: check_embeddings(server::prepare_embeddings(*model.app, body), *model.app, strict); break;
      case 5: check_rerank(server::prepare_rerank(*model.app, body), *model.app, strict); break;
      case 2: (void)server::tokenize_response(*model.app, body); break;
      case 3: (void)server::detokenize_response(*model.app, body); break;
    }
  } catch (const server::ApiError& e) {
    if (e.status() < 400 || e.status() >= 500) bug("not a client error", std::to_string(e.status()) + " " + e.what());
  } catch (const std::exception& e) {
    bug("an exception the router would turn into a 500", e.what());
  }
  return 0;
}
