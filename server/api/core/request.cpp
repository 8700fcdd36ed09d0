#include "server/api/core/request.h"

#include "server/api/prompt_images.h"

#include <algorithm>

#include "engine/text/grammar/grammar_cache.h"
#include "engine/text/reasoning.h"
#include "engine/text/tools/tool_grammar.h"
#include "server/api/api_error.h"
#include "server/api/chat_prompt.h"

namespace server {

using ojson = nlohmann::ordered_json;

namespace {

// The grammar of a request's tool calls (forced for "required" or a named function, lazy for
// "auto"), or nothing when the client constrains the output itself (an output constraint) under "auto".
void constrain_tool_calls(const App& app, PreparedRequest& r) {
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
  o.think_close = std::string(r.answer.think_tags.close);
  std::string key = std::string("tools\n") + engine::tools::tool_syntax_name(o.syntax) + (o.parallel ? "|p" : "|1") +
                    (o.lazy ? "|lazy" : "|forced") + "|" + std::to_string(static_cast<int>(o.think)) + o.think_close + "\n";
  for (const auto& def : o.tools) key += def.name + "\n" + def.parameters.dump(-1, ' ', false, ojson::error_handler_t::replace) + "\n";
  try {
    r.params.grammar = app.grammars->get(key, [&] { return engine::tools::tool_grammar(o).grammar; });
  } catch (const engine::grammar::GrammarError& e) {
    throw invalid_field("tools", std::string("the tools' parameter schemas cannot be enforced: ") + e.what());
  }
  if (o.lazy) r.params.grammar_triggers = engine::tools::lazy_triggers(o.syntax);
}

// The conversation rendered through the template (tools and reasoning variables included).
RenderedChat render(const App& app, const CoreRequest& request) {
  const ChatFeatures& features = app.chat_features;
  const ojson conversation = template_conversation(request.conversation, request.tools, features);
  const bool template_tools = engine::tools::template_renders_tools(features.syntax) && !request.tools.tools.empty();
  return render_chat(app, conversation, template_variables(request.reasoning, request.template_kwargs, app),
                     template_tools ? &request.tools.tools_json : nullptr);
}

// How the model's answer to `prompt` is to be read.
engine::tools::AnswerOptions answer_options(const App& app, const ToolRequest& tools, const std::string& prompt) {
  const ChatFeatures& features = app.chat_features;
  engine::tools::AnswerOptions a;
  if (features.syntax == engine::tools::ToolSyntax::kHarmony) a.reasoning = engine::tools::AnswerOptions::Reasoning::kHarmony;
  else if (features.thinks) a.reasoning = engine::tools::AnswerOptions::Reasoning::kThink;
  a.think_tags = features.think_tags;
  a.starts_in_think = features.thinks && engine::prompt_opens_thinking(prompt, features.think_tags);
  a.parse_calls = tools.calls_tools();
  a.syntax = features.syntax;
  a.names = tools.callable_names();
  a.tools = tools.callable();
  return a;
}

// --max-tokens: the limit of a request that gives none, and the most any request gets.
void apply_token_cap(const App& app, PreparedRequest& r) {
  const int64_t cap = app.settings.max_tokens;
  GenerationParams& p = r.params;
  if (cap <= 0 || (p.max_tokens >= 0 && p.max_tokens <= cap)) return;
  p.max_tokens = cap;
  r.capped = true;
}

}  // namespace

ojson template_variables(const ReasoningOptions& reasoning, ojson vars, const App& app) {
  return template_variables(reasoning, std::move(vars), app.settings.reasoning_effort);
}

ojson template_variables(const ReasoningOptions& reasoning, ojson vars, const std::string& default_effort) {
  if (!vars.is_object()) vars = ojson::object();
  const std::string effort = reasoning.effort.empty() ? default_effort : reasoning.effort;
  if (!effort.empty() && !vars.contains("reasoning_effort")) {
    vars["reasoning_effort"] = effort == "none" || effort == "minimal" ? "low" : effort;
  }
  std::optional<bool> thinking = reasoning.thinking;
  if (!thinking && effort == "none") thinking = false;
  if (thinking && !vars.contains("enable_thinking")) vars["enable_thinking"] = *thinking;
  return vars;
}

namespace {

// Every message's images, in conversation order (the order the template renders them in).
std::vector<ImageInput> conversation_images(const std::vector<Message>& conversation) {
  std::vector<ImageInput> images;
  for (const Message& m : conversation) images.insert(images.end(), m.images.begin(), m.images.end());
  return images;
}

}  // namespace

void prepare_generation(const App& app, CoreRequest request, PreparedRequest& out) {
  out.params = std::move(request.params);
  out.ignored_fields = std::move(request.ignored_fields);
  if (request.conversation.empty() && request.raw_prompts.empty()) {  // (merging leaves out empty system messages)
    throw invalid_field("messages", "the messages have nothing to answer: none of them has content (empty system messages are left out)");
  }
  if (!request.conversation.empty()) {
    RenderedChat chat = render(app, request);
    out.answer = answer_options(app, request.tools, chat.text);
    const std::vector<ImageInput> images = conversation_images(request.conversation);
    out.prompts.push_back(images.empty() ? tokenize_chat(app, std::move(chat))
                                         : tokenize_with_images(app, std::move(chat), images, out.params.images));
    out.tools = std::move(request.tools);
    constrain_tool_calls(app, out);
    // the markers' control tokens are text wherever the parser or a grammar may look for them
    if (out.answer.parse_calls || out.params.grammar) out.params.shown_tokens = app.chat_features.marker_tokens;
    if (out.answer.reasoning == engine::tools::AnswerOptions::Reasoning::kThink) {
      std::vector<int32_t>& shown = out.params.shown_tokens;
      shown.insert(shown.end(), app.chat_features.reasoning_tokens.begin(), app.chat_features.reasoning_tokens.end());
      std::sort(shown.begin(), shown.end());
      shown.erase(std::unique(shown.begin(), shown.end()), shown.end());
    }
  } else {
    out.prompts = std::move(request.raw_prompts);
    if (out.params.grammar) out.params.shown_tokens = app.chat_features.marker_tokens;  // in the grammar vocabulary too
  }
  apply_token_cap(app, out);
  check_generation(out.params, out.prompts, app);
}

std::vector<int32_t> conversation_tokens(const App& app, const CoreRequest& request) {
  if (request.conversation.empty()) return {};
  const std::vector<ImageInput> images = conversation_images(request.conversation);
  if (images.empty()) return tokenize_chat(app, render(app, request));
  std::vector<engine::PromptImage> placed;
  return tokenize_with_images(app, render(app, request), images, placed);
}

}  // namespace server
