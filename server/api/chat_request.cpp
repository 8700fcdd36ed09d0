#include "server/api/chat_request.h"

#include <set>

#include "server/api/api_error.h"
#include "server/api/chat_prompt.h"
#include "server/api/output_constraint.h"
#include "server/api/request_json.h"

namespace server {

using nlohmann::json;

namespace {

const std::set<std::string> kKnown = {
    "model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k",
    "min_p", "n", "stop", "seed", "presence_penalty", "frequency_penalty", "repetition_penalty",
    "repeat_penalty", "repeat_last_n", "logit_bias", "logprobs", "top_logprobs", "stream",
    "stream_options", "user", "ignore_eos", "response_format", "chat_template_kwargs",
    "parallel_tool_calls", "store", "metadata", "cache_prompt", "n_predict", "json_schema", "grammar"};
const std::set<std::string> kUnsupported = {"tools", "tool_choice", "functions", "function_call",
                                            "audio", "modalities", "prediction"};

void check_unsupported(const json& body) {
  for (const char* key : {"tools", "functions"}) {
    if (body.contains(key) && body[key].is_array() && body[key].empty()) continue;  // "no tools"
    if (body.contains(key) && !body[key].is_null()) {
      throw invalid_field(key, std::string("'") + key + "' (tool calling) is not supported by this server yet");
    }
  }
}

}  // namespace

ChatRequest prepare_chat(const App& app, std::string_view text) {
  json body = parse_object(text, app.settings.max_json_depth);
  check_unsupported(body);
  for (const char* key : {"tools", "functions"}) body.erase(key);  // empty lists, checked above
  check_fields(body, kKnown, kUnsupported);
  if (auto model = get_string(body, "model")) require_model(app, *model);
  ChatRequest r;
  r.params = parse_generation_params(body, app, {{"max_completion_tokens", "max_tokens", "n_predict"}, -1, 1});
  r.params.grammar = parse_output_constraint(body, text, app);
  if (get_bool(body, "logprobs").value_or(false)) {
    r.params.n_logprobs = static_cast<int>(get_int(body, "top_logprobs", 0, 20).value_or(0));
  } else if (body.contains("top_logprobs") && !body["top_logprobs"].is_null()) {
    throw invalid_field("top_logprobs", "'top_logprobs' requires 'logprobs': true");
  }
  static const json kAbsent;
  const auto messages = body.find("messages");
  const auto extra = body.find("chat_template_kwargs");
  r.prompts.push_back(chat_prompt_tokens(app, messages == body.end() ? kAbsent : *messages,
                                        extra == body.end() ? kAbsent : *extra));
  check_generation(r.params, r.prompts, app);
  return r;
}

}  // namespace server
