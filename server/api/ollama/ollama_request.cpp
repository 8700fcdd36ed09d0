#include "server/api/ollama/ollama_request.h"

#include <set>

#include "engine/text/tokenizer/tokenizer.h"
#include "engine/text/tokenizer/vocab.h"
#include "server/api/generation_params.h"
#include "server/api/output_constraint.h"
#include "server/api/prompt_images.h"
#include "server/api/request_fields.h"
#include "server/api/request_json.h"

namespace server {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

const std::set<std::string> kOllamaChatFields = {"model", "messages", "tools", "tool_choice", "format", "options", "stream",
                                           "keep_alive", "think", "truncate", "shift", "logprobs", "top_logprobs",
                                           "temperature", "top_p", "max_output_tokens"};
const std::set<std::string> kOllamaGenerateFields = {"model",  "prompt", "suffix",     "images", "format",
                                               "options", "system", "template",  "context", "stream",
                                               "raw",    "keep_alive", "think", "truncate", "shift",
                                               "logprobs", "top_logprobs", "temperature", "top_p",
                                               "max_output_tokens"};
// options the core maps (sampling, stop, num_predict)
const std::set<std::string> kOllamaMappedOptions = {"temperature", "top_k", "top_p", "min_p", "seed", "repeat_penalty",
                                              "repeat_last_n", "presence_penalty", "frequency_penalty", "stop",
                                              "num_predict"};
// options of Ollama's runtime, fixed here when the model loads (or samplers it does not have):
// accepted and named back as ignored
const std::set<std::string> kOllamaRuntimeOptions = {
    "num_ctx", "num_keep", "num_batch", "num_gpu", "main_gpu", "num_thread", "use_mmap", "use_mlock", "numa",
    "low_vram", "f16_kv", "vocab_only", "logits_all", "penalize_newline", "typical_p", "mirostat", "mirostat_tau",
    "mirostat_eta", "tfs_z"};
constexpr size_t kOllamaMaxStops = 16;

// `options`: sampling, stop strings and num_predict (negative: no limit) onto the core's params.
// Top-level temperature, top_p and max_output_tokens (which ollama-ai-provider-v2 sends there,
// and Ollama ignores) count as those options when `options` does not set them.
void read_ollama_options(const json& body, const App& app, CoreRequest& r) {
  const auto it = body.find("options");
  json o = it == body.end() || it->is_null() ? json::object() : *it;
  if (!o.is_object()) throw invalid_field("options", "'options' must be an object, found " + json_type_name(o));
  for (const auto& [top, option] : {std::pair{"temperature", "temperature"}, std::pair{"top_p", "top_p"},
                                    std::pair{"max_output_tokens", "num_predict"}}) {
    if (auto v = body.find(top); v != body.end() && !v->is_null() && !o.contains(option)) o[option] = *v;
  }
  std::set<std::string> known = kOllamaMappedOptions;
  known.insert(kOllamaRuntimeOptions.begin(), kOllamaRuntimeOptions.end());
  for (const std::string& name : check_fields(o, known, {}, app.settings.strict_api)) {
    r.ignored_fields.push_back("options." + name);
  }
  for (const auto& [key, value] : o.items()) {
    if (kOllamaRuntimeOptions.count(key) != 0 && !value.is_null()) r.ignored_fields.push_back("options." + key);
  }
  r.params.sampling = parse_sampling(o, app);
  r.params.stop = get_strings(o, "stop").value_or(std::vector<std::string>{});
  if (r.params.stop.size() > kOllamaMaxStops) {
    throw invalid_field("options", "'options.stop' may hold at most " + std::to_string(kOllamaMaxStops) + " strings");
  }
  const int64_t n = get_int(o, "num_predict", INT32_MIN, INT32_MAX).value_or(-1);
  r.params.max_tokens = n < 0 ? -1 : n;
}

// `format`: "json" (any JSON object) or a JSON schema, through the grammar engine.
void read_ollama_format(const json& body, std::string_view text, const App& app, CoreRequest& r) {
  const auto f = body.find("format");
  if (f == body.end() || f->is_null() || (f->is_string() && f->get<std::string>().empty())) return;
  if (f->is_string() && f->get<std::string>() == "json") {
    r.params.grammar = json_object_constraint(app, "format");
  } else if (f->is_object()) {
    r.params.grammar = schema_constraint(app, "format", text, "/format");
  } else {
    throw invalid_field("format", "'format' must be \"json\" or a JSON schema object");
  }
}

// `think`: true / false, or an effort (low, medium, high) that also turns thinking on.
void read_ollama_think(const json& body, const App& app, const std::string& model, CoreRequest& r) {
  const auto t = body.find("think");
  if (t == body.end() || t->is_null()) return;
  if (t->is_boolean()) {
    r.reasoning.thinking = t->get<bool>();
  } else if (t->is_string() && (*t == "low" || *t == "medium" || *t == "high")) {
    r.reasoning.thinking = true;
    r.reasoning.effort = t->get<std::string>();
  } else {
    throw invalid_field("think", "'think' must be true, false, \"low\", \"medium\" or \"high\"");
  }
  const bool can_think = app.chat_features.thinks || app.chat_features.syntax == engine::tools::ToolSyntax::kHarmony;
  if (*r.reasoning.thinking && !can_think) {
    throw invalid_field("think", "\"" + excerpt(model) + "\" does not support thinking: its chat template has no thinking");
  }
}

// Fields this server cannot honour: a 400 naming them when they ask for something.
void refuse_ollama_unsupported(const json& body) {
  if (auto t = body.find("template"); t != body.end() && !t->is_null() && !(t->is_string() && t->get<std::string>().empty())) {
    throw invalid_field("template", "'template' is not supported: the prompt is built with the model's chat template "
                                    "(send \"raw\": true with a prompt you formatted yourself)");
  }
  if (auto c = body.find("context"); c != body.end() && !c->is_null() && !(c->is_array() && c->empty())) {
    throw invalid_field("context", "'context' is not supported: send the conversation to /api/chat instead");
  }
  if (get_bool(body, "logprobs").value_or(false)) throw invalid_field("logprobs", "'logprobs' is not supported on the Ollama API");
}

// The fields both endpoints share (options, format, think, stream, unsupported ones).
CoreRequest translate_ollama_common(const App& app, const json& body, std::string_view text, const std::set<std::string>& fields,
                             OllamaRequest& out) {
  CoreRequest core;
  core.ignored_fields = check_fields(body, fields, {}, app.settings.strict_api);
  check_request_model(body, app);
  out.model = ollama_model_name(app, body);
  refuse_ollama_unsupported(body);
  (void)get_bool(body, "truncate");
  (void)get_bool(body, "shift");
  read_ollama_options(body, app, core);
  read_ollama_format(body, text, app, core);
  read_ollama_think(body, app, out.model, core);
  core.params.stream = get_bool(body, "stream").value_or(true);
  return core;
}

std::string ollama_message_at(size_t i) { return "messages[" + std::to_string(i) + "]"; }

// An assistant message's tool_calls: [{"function": {"name", "arguments": {...}}}] (arguments as
// an object, or a JSON object in a string).
std::vector<CallRecord> read_ollama_calls(const ojson& calls, size_t i) {
  if (!calls.is_array()) throw invalid_field("messages", ollama_message_at(i) + ".tool_calls must be an array");
  std::vector<CallRecord> out;
  for (size_t k = 0; k < calls.size(); ++k) {
    const ojson& c = calls[k];
    const std::string at = ollama_message_at(i) + ".tool_calls[" + std::to_string(k) + "]";
    if (!c.is_object() || !c.contains("function") || !c["function"].is_object() || !c["function"].contains("name") ||
        !c["function"]["name"].is_string()) {
      throw invalid_field("messages", at + " must be {\"function\": {\"name\", \"arguments\"}}");
    }
    const ojson& fn = c["function"];
    CallRecord call;
    call.name = fn["name"].get<std::string>();
    if (auto id = c.find("id"); id != c.end() && id->is_string()) call.id = id->get<std::string>();
    if (auto a = fn.find("arguments"); a != fn.end() && !a->is_null()) {
      call.arguments = a->is_string() ? ojson::parse(a->get<std::string>(), nullptr, false) : *a;
      if (call.arguments.is_discarded() || !call.arguments.is_object()) {
        throw invalid_field("messages", at + ".function.arguments must be an object");
      }
    }
    out.push_back(std::move(call));
  }
  return out;
}

// `images`: base64 strings (no data: prefix; a data URI is taken too), into msg's image parts.
template <class Json>
void read_ollama_images(const Json& holder, const std::string& where, Message& msg) {
  const auto im = holder.find("images");
  if (im == holder.end() || im->is_null()) return;
  if (!im->is_array()) throw invalid_field("images", where + " must be an array of base64 strings");
  for (size_t k = 0; k < im->size(); ++k) {
    const std::string at = where + "[" + std::to_string(k) + "]";
    if (!(*im)[k].is_string()) throw invalid_field("images", at + " must be a base64 string");
    const std::string data = (*im)[k].template get<std::string>();
    msg.add_image({data.rfind("data:", 0) == 0 ? data_uri_bytes(data, at) : decode_base64(data, at), at, ""});
  }
}

Message read_ollama_message(const ojson& m, size_t i) {
  static const std::set<std::string> kRoles = {"system", "user", "assistant", "tool"};
  if (!m.is_object()) throw invalid_field("messages", ollama_message_at(i) + " must be an object");
  const std::string role = string_or(m, "role");
  if (kRoles.count(role) == 0) throw invalid_field("messages", ollama_message_at(i) + ".role must be system, user, assistant or tool");
  Message out;
  out.role = role;
  const auto content = m.find("content");
  if (content != m.end() && !content->is_null() && !content->is_string()) {
    throw invalid_field("messages", ollama_message_at(i) + ".content must be a string");
  }
  const std::string text = content == m.end() || content->is_null() ? "" : content->get<std::string>();
  if (auto t = m.find("thinking"); t != m.end() && t->is_string() && role == "assistant") out.reasoning = t->get<std::string>();
  if (auto c = m.find("tool_calls"); c != m.end() && !c->is_null() && role == "assistant") out.calls = read_ollama_calls(*c, i);
  if (auto n = m.find("tool_name"); n != m.end() && n->is_string()) out.name = n->get<std::string>();
  if (auto id = m.find("tool_call_id"); id != m.end() && id->is_string()) out.call_id = id->get<std::string>();
  if (text.empty() && !out.calls.empty()) {
    out.form = Message::Content::kNone;
  } else {
    // (images first, then the text, as Ollama renders them)
    read_ollama_images(m, ollama_message_at(i) + ".images", out);
    out.texts.push_back(text);
  }
  return out;
}

}  // namespace

std::string ollama_model_name(const App& app, const json& body) {
  for (const char* key : {"model", "name"}) {
    if (auto m = body.find(key); m != body.end() && m->is_string() && !m->get<std::string>().empty()) {
      return m->get<std::string>();
    }
  }
  return app.model_id;
}

OllamaRequest prepare_ollama_chat(const App& app, std::string_view text) {
  const json body = parse_object(text, app.settings.max_json_depth);
  const ojson ordered = ojson::parse(text);
  OllamaRequest r;
  r.chat = true;
  CoreRequest core = translate_ollama_common(app, body, text, kOllamaChatFields, r);
  if (auto t = ordered.find("tools"); t != ordered.end() && !t->is_null()) {
    ojson tools = {{"tools", *t}};
    if (auto c = ordered.find("tool_choice"); c != ordered.end()) tools["tool_choice"] = *c;  // ggufd's extension
    core.tools = parse_tool_request(tools);
  }
  const auto messages = ordered.find("messages");
  if (messages != ordered.end() && !messages->is_null() && !messages->is_array()) {
    throw invalid_field("messages", "'messages' must be an array of messages");
  }
  if (messages == ordered.end() || messages->is_null() || messages->empty()) {
    r.load_only = true;
    return r;
  }
  for (size_t i = 0; i < messages->size(); ++i) core.conversation.push_back(read_ollama_message((*messages)[i], i));
  merge_system_messages(core.conversation);
  prepare_generation(app, std::move(core), r);
  return r;
}

// Ollama's `suffix`: the code between `prompt` and `suffix`, written by a model trained to fill in
// the middle, as llama.cpp's infill builds it (prefix, suffix, middle order): [BOS] <fim_pre>
// prompt <fim_suf> suffix <fim_mid>; the user's text is never read for special tokens. A model
// whose vocabulary lacks those tokens cannot: a 400 naming the field.
namespace {
std::vector<int32_t> fill_in_the_middle(const App& app, const std::string& model, const std::string& prompt,
                                        const std::string& suffix) {
  const engine::tokenizer::SpecialIds& special = app.tokenizer->vocab().special();
  const int32_t none = engine::tokenizer::kNoToken;
  if (special.fim_pre == none || special.fim_suf == none || special.fim_mid == none) {
    throw invalid_field("suffix", "\"" + excerpt(model) + "\" cannot fill in the middle: its vocabulary has no "
                                  "fill-in-the-middle tokens (prefix, suffix and middle, as code models have)");
  }
  std::vector<int32_t> ids;
  if (app.tokenizer->add_bos() && app.tokenizer->bos() >= 0) ids.push_back(app.tokenizer->bos());
  ids.push_back(special.fim_pre);
  for (int32_t id : app.tokenizer->encode(prompt, false, false)) ids.push_back(id);
  ids.push_back(special.fim_suf);
  for (int32_t id : app.tokenizer->encode(suffix, false, false)) ids.push_back(id);
  ids.push_back(special.fim_mid);
  return ids;
}
}  // namespace

OllamaRequest prepare_ollama_generate(const App& app, std::string_view text) {
  const json body = parse_object(text, app.settings.max_json_depth);
  OllamaRequest r;
  r.chat = false;
  CoreRequest core = translate_ollama_common(app, body, text, kOllamaGenerateFields, r);
  const std::string prompt = get_string(body, "prompt").value_or("");
  const std::string system = get_string(body, "system").value_or("");
  const bool raw = get_bool(body, "raw").value_or(false);
  if (prompt.empty()) {
    r.load_only = true;
    return r;
  }
  const std::string suffix = get_string(body, "suffix").value_or("");
  if (!suffix.empty()) {
    if (!system.empty()) core.ignored_fields.push_back("system");  // a fill-in-the-middle prompt has no turns
    core.raw_prompts.push_back(fill_in_the_middle(app, r.model, prompt, suffix));
  } else if (raw) {
    if (!system.empty()) core.ignored_fields.push_back("system");  // a raw prompt is sent as it is
    if (auto im = body.find("images"); im != body.end() && im->is_array() && !im->empty()) {
      throw invalid_field("images", "'images' cannot go with \"raw\": true (a raw prompt has no place for them)");
    }
    core.raw_prompts.push_back(app.tokenizer->encode(prompt, true, true));
  } else {
    if (!system.empty()) core.conversation.push_back(Message::text("system", system));
    Message user;
    user.role = "user";
    read_ollama_images(body, "images", user);
    user.texts.push_back(prompt);
    core.conversation.push_back(std::move(user));
  }
  prepare_generation(app, std::move(core), r);
  return r;
}

EmbeddingRequest prepare_ollama_embed(const App& app, std::string_view text, bool legacy) {
  static const std::set<std::string> kEmbedFields = {"model", "input", "truncate", "options", "keep_alive", "dimensions"};
  static const std::set<std::string> kLegacyFields = {"model", "prompt", "options", "keep_alive"};
  const json body = parse_object(text, app.settings.max_json_depth);
  std::vector<std::string> ignored = check_fields(body, legacy ? kLegacyFields : kEmbedFields, {}, app.settings.strict_api);
  check_request_model(body, app);
  if (auto o = body.find("options"); o != body.end() && !o->is_null() && !o->is_object()) {
    throw invalid_field("options", "'options' must be an object, found " + json_type_name(*o));
  }
  json inner = json::object();
  const char* field = legacy ? "prompt" : "input";
  const auto input = body.find(field);
  if (input != body.end() && !input->is_null()) {
    const bool strings = input->is_array() && std::all_of(input->begin(), input->end(), [](const json& v) { return v.is_string(); });
    if (legacy ? !input->is_string() : !(input->is_string() || strings)) {
      throw invalid_field(field, legacy ? "'prompt' must be a string" : "'input' must be a string or an array of strings");
    }
    inner["input"] = *input;
  }
  if (!inner.contains("input") || inner["input"].empty() || inner["input"] == "") {
    EmbeddingRequest empty;  // nothing to embed: the model is loaded, the answer has no vectors
    empty.ignored_fields = std::move(ignored);
    return empty;
  }
  inner["truncate"] = get_bool(body, "truncate").value_or(true);
  if (auto d = body.find("dimensions"); d != body.end() && !d->is_null()) inner["dimensions"] = *d;
  EmbeddingRequest r = prepare_embeddings(app, dump_json(inner));
  r.normalize = !legacy;
  r.ignored_fields = std::move(ignored);
  return r;
}

json ollama_error_json(const ApiError& e) { return {{"error", e.what()}}; }

}  // namespace server
