#include "server/api/chat_request.h"

#include <set>

#include "engine/text/grammar/grammar_cache.h"
#include "engine/text/reasoning.h"
#include "engine/text/tools/tool_grammar.h"
#include "server/api/api_error.h"
#include "server/api/chat_prompt.h"
#include "server/api/output_constraint.h"
#include "server/api/request_fields.h"
#include "server/api/request_json.h"

namespace server {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

const std::set<std::string> kKnown = {
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
const std::set<std::string> kUnsupported = {"audio", "web_search_options", "verbosity"};

// The grammar of a request's tool calls (forced for "required" or a named function, lazy for
// "auto"), or nothing when the client constrains the output itself (response_format) under "auto".
void constrain_tool_calls(const App& app, ChatRequest& r) {
  const ToolRequest& t = r.tools;
  if (!t.calls_tools() || app.grammars == nullptr) return;
  const bool forced = t.choice == ToolRequest::Choice::kRequired || t.choice == ToolRequest::Choice::kNamed;
  if (!forced && r.params.grammar) return;
  engine::tools::ToolGrammarOptions o;
  o.syntax = app.chat_features.syntax;
  o.tools = t.callable();
  o.parallel = t.parallel();
  o.lazy = !forced;
  if (r.answer.starts_in_think) o.think = engine::tools::ToolGrammarOptions::Think::kInside;
  std::string key = std::string("tools\n") + engine::tools::tool_syntax_name(o.syntax) + (o.parallel ? "|p" : "|1") +
                    (o.lazy ? "|lazy" : "|forced") + "|" + std::to_string(static_cast<int>(o.think)) + "\n";
  for (const auto& def : o.tools) key += def.name + "\n" + def.parameters.dump(-1, ' ', false, ojson::error_handler_t::replace) + "\n";
  try {
    r.params.grammar = app.grammars->get(key, [&] { return engine::tools::tool_grammar(o).grammar; });
  } catch (const engine::grammar::GrammarError& e) {
    throw invalid_field("tools", std::string("the tools' parameter schemas cannot be enforced: ") + e.what());
  }
  if (o.lazy) r.params.grammar_triggers = engine::tools::lazy_triggers(o.syntax);
}

// The conversation rendered through the template (tools and reasoning variables included), and
// how the model's answer to it is to be read (r.answer).
RenderedChat render_conversation(const App& app, const ojson& body, ChatRequest& r) {
  const ChatFeatures& features = app.chat_features;
  static const ojson kAbsent;
  const auto messages = body.find("messages");
  check_messages(messages == body.end() ? kAbsent : *messages);
  const ojson conversation = template_messages(*messages, r.tools, features);
  const bool template_tools = engine::tools::template_renders_tools(features.syntax) && !r.tools.tools.empty();
  RenderedChat chat = render_chat(app, conversation, template_variables(body, app.settings.reasoning_effort),
                                  template_tools ? &r.tools.tools_json : nullptr);
  engine::tools::AnswerOptions& a = r.answer;
  if (features.syntax == engine::tools::ToolSyntax::kHarmony) a.reasoning = engine::tools::AnswerOptions::Reasoning::kHarmony;
  else if (features.thinks) a.reasoning = engine::tools::AnswerOptions::Reasoning::kThink;
  a.starts_in_think = features.thinks && engine::prompt_opens_thinking(chat.text);
  a.parse_calls = r.tools.calls_tools();
  a.syntax = features.syntax;
  a.names = r.tools.callable_names();
  return chat;
}

}  // namespace

ojson template_variables(const ojson& body, const std::string& default_effort) {
  ojson vars = ojson::object();
  if (auto k = body.find("chat_template_kwargs"); k != body.end() && !k->is_null()) {
    if (!k->is_object()) {
      throw invalid_field("chat_template_kwargs", "'chat_template_kwargs' must be an object, found " + json_type_name(*k));
    }
    vars = *k;
  }
  std::string effort = default_effort;
  if (auto e = body.find("reasoning_effort"); e != body.end() && !e->is_null()) {
    static const std::set<std::string> kEfforts = {"none", "minimal", "low", "medium", "high"};
    if (!e->is_string() || kEfforts.count(e->get<std::string>()) == 0) {
      throw invalid_field("reasoning_effort", "'reasoning_effort' must be one of none, minimal, low, medium, high");
    }
    effort = e->get<std::string>();
  }
  if (effort.empty()) return vars;
  if (!vars.contains("reasoning_effort")) vars["reasoning_effort"] = effort == "none" || effort == "minimal" ? "low" : effort;
  if (effort == "none" && !vars.contains("enable_thinking")) vars["enable_thinking"] = false;
  return vars;
}

ChatRequest prepare_chat(const App& app, std::string_view text) {
  json body = parse_object(text, app.settings.max_json_depth);
  // the same body with its keys in the order sent, for what the template renders (the text was
  // just parsed within the depth limit, so this parse is too)
  const ojson ordered = ojson::parse(text);
  ChatRequest r;
  r.ignored_fields = check_fields(body, kKnown, kUnsupported, app.settings.strict_api);
  check_text_modalities(body);
  check_request_model(body, app);
  r.params = parse_generation_params(body, app, {{"max_completion_tokens", "max_tokens", "n_predict"}, -1, 1});
  r.params.grammar = parse_output_constraint(body, text, app);
  if (get_bool(body, "logprobs").value_or(false)) {
    r.params.n_logprobs = static_cast<int>(get_int(body, "top_logprobs", 0, 20).value_or(0));
  } else if (body.contains("top_logprobs") && !body["top_logprobs"].is_null()) {
    throw invalid_field("top_logprobs", "'top_logprobs' requires 'logprobs': true");
  }
  r.tools = parse_tool_request(ordered);
  r.prompts.push_back(tokenize_chat(app, render_conversation(app, ordered, r)));
  constrain_tool_calls(app, r);
  // the markers' control tokens are text wherever the parser or a grammar may look for them
  if (r.answer.parse_calls || r.params.grammar) r.params.shown_tokens = app.chat_features.marker_tokens;
  check_generation(r.params, r.prompts, app);
  return r;
}

}  // namespace server
