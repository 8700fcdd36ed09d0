#include "server/api/openai_responses/responses_request.h"

#include <set>

#include "server/api/core/formatter.h"
#include "server/api/output_constraint.h"
#include "server/api/openai_responses/response_store.h"
#include "server/api/openai_responses/responses_input.h"
#include "server/api/prompt_images.h"
#include "server/api/request_fields.h"
#include "server/api/request_json.h"

namespace server {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

const std::set<std::string> kResponsesFields = {
    "model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "text", "reasoning",
    "max_output_tokens", "temperature", "top_p", "stream", "stream_options", "store", "previous_response_id",
    // accepted; they cannot change the output here
    "include", "metadata", "user", "safety_identifier", "prompt_cache_key", "prompt_cache_retention",
    "service_tier", "truncation", "background", "client_metadata", "top_logprobs", "max_tool_calls",
    // llama-server's sampling fields
    "top_k", "min_p", "seed", "presence_penalty", "frequency_penalty", "repetition_penalty", "repeat_penalty",
    "repeat_last_n", "logit_bias"};
// Server-side state this server does not keep (conversations, stored prompts).
const std::set<std::string> kResponsesUnsupported = {"conversation", "prompt"};

// text.format: text, json_object or json_schema ({"name", "schema", "strict"}).
void read_text_format(const json& body, std::string_view text, const App& app, CoreRequest& r) {
  const auto t = body.find("text");
  if (t == body.end() || t->is_null()) return;
  if (!t->is_object()) throw invalid_field("text", "'text' must be an object");
  const auto f = t->find("format");
  if (f == t->end() || f->is_null()) return;
  if (!f->is_object()) throw invalid_field("text.format", "'text.format' must be an object");
  const std::string type = get_string(*f, "type").value_or("");
  if (type == "text") return;
  if (type == "json_object") {
    r.params.grammar = json_object_constraint(app, "text.format");
  } else if (type == "json_schema") {
    (void)get_string(*f, "name");
    (void)get_bool(*f, "strict");  // every schema is enforced
    if (!f->contains("schema") || !(*f)["schema"].is_object()) {
      throw invalid_field("text.format", "'text.format' of type json_schema needs a 'schema' object");
    }
    r.params.grammar = schema_constraint(app, "text.format", text, "/text/format/schema");
  } else {
    throw invalid_field("text.format", "'text.format.type' must be text, json_object or json_schema");
  }
}

// reasoning: {"effort", "summary"}; returns whether a summary was asked for.
bool read_responses_reasoning(const json& body, CoreRequest& r) {
  const auto it = body.find("reasoning");
  if (it == body.end() || it->is_null()) return false;
  if (!it->is_object()) throw invalid_field("reasoning", "'reasoning' must be an object");
  if (auto e = get_string(*it, "effort")) {
    static const std::set<std::string> kEfforts = {"none", "minimal", "low", "medium", "high", "xhigh"};
    if (kEfforts.count(*e) == 0) throw invalid_field("reasoning", "'reasoning.effort' must be one of none, minimal, low, medium, high, xhigh");
    r.reasoning.effort = *e == "xhigh" ? "high" : *e;
  }
  std::optional<std::string> summary = get_string(*it, "summary");
  if (!summary) summary = get_string(*it, "generate_summary");
  return summary.has_value();
}

// The fields the response object repeats from the request.
json echo_fields(const json& body) {
  json echo = {{"instructions", body.value("instructions", json(nullptr))},
               {"max_output_tokens", body.value("max_output_tokens", json(nullptr))},
               {"metadata", body.value("metadata", json::object())},
               {"parallel_tool_calls", body.value("parallel_tool_calls", json(true))},
               {"previous_response_id", body.value("previous_response_id", json(nullptr))},
               {"reasoning", body.value("reasoning", json{{"effort", nullptr}, {"summary", nullptr}})},
               {"temperature", body.value("temperature", json(nullptr))},
               {"text", body.value("text", json{{"format", {{"type", "text"}}}})},
               {"tool_choice", body.value("tool_choice", json("auto"))},
               {"tools", body.value("tools", json::array())},
               {"top_p", body.value("top_p", json(nullptr))},
               {"truncation", body.value("truncation", json("disabled"))},
               {"user", body.value("user", json(nullptr))}};
  if (echo["metadata"].is_null()) echo["metadata"] = json::object();
  if (echo["tools"].is_null()) echo["tools"] = json::array();
  return echo;
}

}  // namespace

CoreRequest translate_responses(const App& app, std::string_view text, ResponsesRequest& out) {
  out.id = make_id("resp_");
  const json body = parse_object(text, app.settings.max_json_depth);
  const ojson ordered = ojson::parse(text);
  CoreRequest core;
  core.ignored_fields = check_fields(body, kResponsesFields, kResponsesUnsupported, app.settings.strict_api);
  check_request_model(body, app);
  if (get_bool(body, "background").value_or(false)) {
    throw invalid_field("background", "'background': true is not supported: this server answers while it generates");
  }
  core.params.sampling = parse_sampling(body, app);
  core.params.max_tokens = get_int(body, "max_output_tokens", 1, INT32_MAX).value_or(-1);
  core.params.stream = get_bool(body, "stream").value_or(false);
  out.store = get_bool(body, "store").value_or(true);
  out.summary = read_responses_reasoning(body, core);
  read_text_format(body, text, app, core);
  core.tools = read_response_tools(ordered, core.ignored_fields);
  (void)get_strings(body, "include");
  if (auto prev = get_string(body, "previous_response_id")) {
    std::shared_ptr<const StoredResponse> stored = app.responses != nullptr ? app.responses->get(*prev) : nullptr;
    if (!stored) {
      throw ApiError(404, "Previous response with id '" + excerpt(*prev) + "' not found (never stored, deleted, or "
                          "dropped from the server's bounded store).",
                     "invalid_request_error", "previous_response_id", "previous_response_not_found");
    }
    out.conversation = stored->conversation;
  }
  if (auto input = ordered.find("input"); input != ordered.end() && !input->is_null()) {
    read_input(app, *input, out.conversation, core.ignored_fields);
  }
  if (out.conversation.empty()) throw invalid_field("input", "'input' is required (a string or a list of items)");
  if (auto instructions = get_string(body, "instructions"); instructions && !instructions->empty()) {
    core.conversation.push_back(Message::text("system", *instructions));
  }
  core.conversation.insert(core.conversation.end(), out.conversation.begin(), out.conversation.end());
  merge_system_messages(core.conversation);
  out.echo = echo_fields(body);
  return core;
}

void prepare_responses(const App& app, CoreRequest core, ResponsesRequest& r) {
  copy_remote_images(core.conversation, r.conversation);  // the stored conversation keeps the fetched bytes
  const bool stream = core.params.stream;
  try {
    prepare_generation(app, std::move(core), r);
  } catch (const ApiError& e) {
    if (!stream || e.code() != "context_length_exceeded") throw;
    r.failure = e;
    r.params.stream = true;
  }
}

ResponsesRequest prepare_responses(const App& app, std::string_view text) {
  ResponsesRequest r;
  prepare_responses(app, translate_responses(app, text, r), r);
  return r;
}

json count_response_tokens(const App& app, const CoreRequest& core) {
  const std::vector<int32_t> tokens = conversation_tokens(app, core);
  return {{"object", "response.input_tokens"}, {"input_tokens", tokens.size()}};
}

}  // namespace server
