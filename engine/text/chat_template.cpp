#include "engine/text/chat_template.h"

#include <utility>
#include <vector>

#include "engine/text/jinja/ast.h"
#include "engine/text/jinja/eval.h"
#include "engine/text/jinja/parser.h"

namespace engine {

ChatTemplate::ChatTemplate(std::shared_ptr<const jinja::Template> tmpl,
                           const ChatTemplateOptions& options)
    : template_(std::move(tmpl)), options_(options) {}

ChatTemplate ChatTemplate::parse(std::string_view source, const ChatTemplateOptions& options) {
  jinja::LexerOptions lexer;
  lexer.trim_blocks = options.trim_blocks;
  lexer.lstrip_blocks = options.lstrip_blocks;
  std::shared_ptr<const jinja::Template> tmpl = jinja::parse_template(source, lexer);
  return ChatTemplate(std::move(tmpl), options);
}

const std::string& ChatTemplate::source() const { return template_->source; }

std::string ChatTemplate::render(const ChatInput& input) const {
  std::vector<std::pair<std::string, jinja::Value>> variables;
  if (input.extra_variables.is_object()) {
    for (const auto& [name, value] : input.extra_variables.as_object().entries()) {
      variables.emplace_back(name, value);
    }
  }
  // Hugging Face passes documents=None when there are none.
  if (!input.extra_variables.get("documents"))
    variables.emplace_back("documents", jinja::Value::none());
  variables.emplace_back("messages", input.messages);
  variables.emplace_back("add_generation_prompt", jinja::Value(input.add_generation_prompt));
  variables.emplace_back("bos_token", jinja::Value(input.bos_token));
  variables.emplace_back("eos_token", jinja::Value(input.eos_token));
  // No tools: `tools` stays undefined (unless extra_variables sets it), as when a request
  // without tools reaches Jinja2: `tools is defined` is false and `for t in tools` is empty.
  if (input.tools) variables.emplace_back("tools", *input.tools);
  jinja::Interpreter interpreter(*template_, options_.limits, input.clock);
  return interpreter.render(variables);
}

}  // namespace engine
