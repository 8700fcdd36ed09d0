// Chat templates: turning a conversation into the prompt text a model expects.
//
// A model's GGUF file carries its Hugging Face chat template (tokenizer.chat_template), written in
// Jinja2. This is our own interpreter for the Jinja2 subset those templates use, rendering them
// the way Hugging Face does: trim_blocks and lstrip_blocks on, globals raise_exception() and
// strftime_now(), `tojson` as json.dumps(x, ensure_ascii=False), loop controls (break/continue).
#pragma once

#include <ctime>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "engine/text/jinja/error.h"
#include "engine/text/jinja/limits.h"
#include "engine/text/jinja/value.h"

namespace engine {

namespace jinja {
struct Template;
}

// Everything a render sees. Values are read-only to the template (it may copy and modify them).
struct ChatInput {
  // Array of message objects, e.g. {"role": "user", "content": "Hi"} (plus tool_calls, ...).
  jinja::Value messages = jinja::Value::array();
  bool add_generation_prompt = false;
  std::string bos_token;
  std::string eos_token;
  // Tool schemas (an array), or absent: then `tools` is undefined to the template, as for a
  // request without tools in Jinja2 (`tools is defined`, `tools is none` and `if tools` are all
  // false; `for t in tools` iterates nothing).
  std::optional<jinja::Value> tools;
  // Optional object of further template variables (e.g. {"enable_thinking": false}). The
  // standard variables above take precedence over entries with the same name.
  jinja::Value extra_variables;
  // Time for strftime_now(); empty means the local time now. Injected for reproducible output.
  std::function<std::tm()> clock;
};

struct ChatTemplateOptions {
  bool trim_blocks = true;    // Hugging Face convention
  bool lstrip_blocks = true;  // Hugging Face convention
  jinja::Limits limits;
};

// A parsed chat template.
//
// Errors: parse() throws engine::TemplateError (with line and column) for syntax errors;
// render() throws engine::TemplateRaise when the template calls raise_exception(msg) (what() is
// exactly msg: the request does not fit the model's format, i.e. a client error) and
// engine::TemplateError for any other failure, including an exceeded resource limit.
//
// Ownership and thread-safety: the parsed template is immutable and shared by copies of this
// object; render() is const and may be called concurrently from any number of threads.
class ChatTemplate {
 public:
  static ChatTemplate parse(std::string_view source, const ChatTemplateOptions& options = {});

  std::string render(const ChatInput& input) const;

  // The template source after Jinja's newline normalization (positions in errors refer to it).
  const std::string& source() const;

 private:
  ChatTemplate(std::shared_ptr<const jinja::Template> tmpl, const ChatTemplateOptions& options);

  std::shared_ptr<const jinja::Template> template_;
  ChatTemplateOptions options_;
};

// Fallback for models whose GGUF carries no chat template: ChatML, as introduced by OpenAI and
// used by Qwen, SmolLM and many fine-tunes:
//   <|im_start|>{role}\n{content}<|im_end|>\n ... [<|im_start|>assistant\n]
// Content may be a string or a list of parts, of which the {"type": "text"} ones are used.
inline constexpr std::string_view kChatMLTemplate =
    "{%- for message in messages -%}\n"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}\n"
    "{%- if message['content'] is string -%}\n"
    "{{- message['content'] -}}\n"
    "{%- elif message['content'] is iterable -%}\n"
    "{%- for part in message['content'] if part['type'] == 'text' -%}\n"
    "{{- part['text'] -}}\n"
    "{%- endfor -%}\n"
    "{%- endif -%}\n"
    "{{- '<|im_end|>\\n' -}}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "{{- '<|im_start|>assistant\\n' -}}\n"
    "{%- endif -%}\n";

}  // namespace engine
