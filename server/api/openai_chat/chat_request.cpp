#include "server/api/openai_chat/chat_request.h"

#include <set>

#include "server/api/api_error.h"
#include "server/api/chat_prompt.h"
#include "server/api/prompt_images.h"
#include "server/api/output_constraint.h"
#include "server/api/request_fields.h"
#include "server/api/request_json.h"

namespace server {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

const std::set<std::string> kChatFields = {
    "model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k",
    "min_p", "n", "stop", "seed", "presence_penalty", "frequency_penalty", "repetition_penalty",
    "repeat_penalty", "repeat_last_n", "logit_bias", "logprobs", "top_logprobs", "stream",
    "stream_options", "user", "ignore_eos", "response_format", "chat_template_kwargs",
    "parallel_tool_calls", "store", "metadata", "cache_prompt", "n_predict", "json_schema", "grammar",
    // documented OpenAI fields that cannot change the output: accepted and ignored
    "service_tier", "prediction", "safety_identifier", "prompt_cache_key",
    "modalities",  // ["text"] only (check_text_modalities)
    // tool calling and reasoning (tool_request.h)
    "tools", "tool_choice", "functions", "function_call", "reasoning_effort"};
const std::set<std::string> kChatUnsupported = {"audio", "web_search_options", "verbosity"};

// `reasoning_effort` and `chat_template_kwargs` (the server's default applies in the core).
void read_chat_reasoning(const json& body, CoreRequest& r) {
  if (auto k = body.find("chat_template_kwargs"); k != body.end() && !k->is_null()) {
    if (!k->is_object()) {
      throw invalid_field("chat_template_kwargs", "'chat_template_kwargs' must be an object, found " + json_type_name(*k));
    }
  }
  if (auto e = body.find("reasoning_effort"); e != body.end() && !e->is_null()) {
    static const std::set<std::string> kEfforts = {"none", "minimal", "low", "medium", "high"};
    if (!e->is_string() || kEfforts.count(e->get<std::string>()) == 0) {
      throw invalid_field("reasoning_effort", "'reasoning_effort' must be one of none, minimal, low, medium, high");
    }
    r.reasoning.effort = e->get<std::string>();
  }
}

// An assistant turn's tool_calls, each function.arguments parsed from the JSON text OpenAI returned.
std::vector<CallRecord> parsed_calls(const ojson& calls, size_t i) {
  const std::string where = "messages[" + std::to_string(i) + "].tool_calls";
  if (!calls.is_array()) throw invalid_field("messages", where + " must be an array");
  std::vector<CallRecord> out;
  for (size_t k = 0; k < calls.size(); ++k) {
    const ojson& call = calls[k];
    const std::string at = where + "[" + std::to_string(k) + "]";
    if (!call.is_object() || !call.contains("function") || !call["function"].is_object() ||
        !call["function"].contains("name") || !call["function"]["name"].is_string()) {
      throw invalid_field("messages", at + " must be {\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\"}}");
    }
    const ojson& fn = call["function"];
    CallRecord c;
    if (auto id = call.find("id"); id != call.end() && id->is_string()) c.id = id->get<std::string>();
    c.name = fn["name"].get<std::string>();
    if (auto a = fn.find("arguments"); a != fn.end() && a->is_string()) {
      c.arguments = ojson::parse(a->get<std::string>(), nullptr, false);
      if (c.arguments.is_discarded() || !c.arguments.is_object()) {
        throw invalid_field("messages", at + ".function.arguments must be a JSON object in a string");
      }
    } else if (a != fn.end() && !a->is_null()) {
      c.arguments = *a;
    }
    out.push_back(std::move(c));
  }
  return out;
}

Message chat_message(const App& app, const ojson& m, size_t i) {
  Message out;
  out.role = m["role"].get<std::string>();
  const auto content = m.find("content");
  if (content == m.end() || content->is_null()) {
    out.form = Message::Content::kNone;
  } else if (content->is_string()) {
    out.texts.push_back(content->get<std::string>());
  } else {
    out.form = Message::Content::kParts;
    for (size_t k = 0; k < content->size(); ++k) {  // (check_messages: text and image_url parts)
      const ojson& part = (*content)[k];
      if (part["type"] == "text") {
        out.texts.push_back(part["text"].get<std::string>());
        continue;
      }
      const ojson& url = part["image_url"];
      const std::string where = "messages[" + std::to_string(i) + "].content[" + std::to_string(k) + "]";
      out.add_image(image_from_url(app, url.is_string() ? url.get<std::string>() : url["url"].get<std::string>(), where));
    }
  }
  for (const auto& [key, value] : m.items()) {
    if (key == "role" || key == "content") continue;
    if (key == "tool_calls") {
      if (!value.is_null()) out.calls = parsed_calls(value, i);
    } else if (key == "tool_call_id" && value.is_string()) {
      out.call_id = value.get<std::string>();
    } else if (key == "name" && value.is_string()) {
      out.name = value.get<std::string>();
    } else {
      out.extra[key] = value;
    }
  }
  for (const char* key : {"reasoning_content", "reasoning", "thinking"}) {
    if (auto r = m.find(key); r != m.end() && r->is_string()) {
      out.reasoning = r->get<std::string>();
      break;
    }
  }
  return out;
}

}  // namespace

std::vector<Message> chat_conversation(const App& app, const ojson& messages) {
  check_messages(messages);
  std::vector<Message> out;
  for (size_t i = 0; i < messages.size(); ++i) out.push_back(chat_message(app, messages[i], i));
  return out;
}

CoreRequest translate_chat(const App& app, std::string_view text, ChatRequest&) {
  json body = parse_object(text, app.settings.max_json_depth);
  // the same body with its keys in the order sent, for what the template renders (the text was
  // just parsed within the depth limit, so this parse is too)
  const ojson ordered = ojson::parse(text);
  CoreRequest core;
  core.ignored_fields = check_fields(body, kChatFields, kChatUnsupported, app.settings.strict_api);
  check_text_modalities(body);
  check_request_model(body, app);
  core.params = parse_generation_params(body, app, {{"max_completion_tokens", "max_tokens", "n_predict"}, -1, 1});
  core.params.grammar = parse_output_constraint(body, text, app);
  if (get_bool(body, "logprobs").value_or(false)) {
    core.params.n_logprobs = static_cast<int>(get_int(body, "top_logprobs", 0, 20).value_or(0));
  } else if (body.contains("top_logprobs") && !body["top_logprobs"].is_null()) {
    throw invalid_field("top_logprobs", "'top_logprobs' requires 'logprobs': true");
  }
  read_chat_reasoning(body, core);
  if (auto k = ordered.find("chat_template_kwargs"); k != ordered.end() && k->is_object()) core.template_kwargs = *k;
  core.tools = parse_tool_request(ordered);
  static const ojson kAbsent;
  const auto messages = ordered.find("messages");
  core.conversation = chat_conversation(app, messages == ordered.end() ? kAbsent : *messages);
  return core;
}

ChatRequest prepare_chat(const App& app, std::string_view text) {
  ChatRequest r;
  prepare_generation(app, translate_chat(app, text, r), r);
  return r;
}

}  // namespace server
