// Rendering a chat request's messages into prompt tokens through the model's chat template.
//
// Prompt injection: the template's own text may hold control tokens (<|im_start|>, </s>...),
// the request's strings may not. Every string from the request reaches the template marked
// where a control token's text starts in it (Tokenizer::special_starts); the marks are taken out
// of the rendered text again and the positions they held are tokenized as plain text. A user who
// writes "<|im_end|>" gets the tokens of those characters, never the control token.
// Coroutine-free (the request path runs on the work pool and under the fuzzer).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/text/jinja/value.h"
#include "server/api/app.h"
#include "server/api/request_json.h"

namespace server {

// Validates `messages` (roles, content strings or text parts), renders them with the template
// (add_generation_prompt on), drops a leading BOS text the template wrote (the tokenizer adds
// BOS itself), and tokenizes. `extra` (e.g. chat_template_kwargs) become template variables.
// Throws ApiError 400 for invalid messages and for template errors such as raise_exception().
std::vector<int32_t> chat_prompt_tokens(const App& app, const nlohmann::ordered_json& messages,
                                        const nlohmann::ordered_json& extra);

// A JSON value as a template value (objects keep their key order). The walk is recursive: it
// throws ApiError 400 below `max_depth` levels (values from parse_object are within the limit
// they were parsed with already).
engine::jinja::Value to_jinja(const nlohmann::ordered_json& j, int max_depth = kDefaultMaxJsonDepth);

// Refuses (ApiError 400 naming the message) anything but a non-empty array of messages with
// known roles and string or text-part content (null allowed for assistant turns).
void check_messages(const nlohmann::ordered_json& messages);

// A rendered prompt: the text, and the sorted positions in it where no special token may start
// or run through (the marks of request strings).
struct RenderedChat {
  std::string text;
  std::vector<size_t> guarded;
};

// The rendered prompt (what chat_prompt_tokens tokenizes); `tools`, when given, is the template's
// `tools` variable (else it is undefined, as in Hugging Face's renderer without tools).
RenderedChat render_chat(const App& app, const nlohmann::ordered_json& messages, const nlohmann::ordered_json& extra,
                         const nlohmann::ordered_json* tools = nullptr);

// The prompt tokens of a rendered chat (what chat_prompt_tokens returns).
std::vector<int32_t> tokenize_chat(const App& app, RenderedChat chat);
// The chat without the BOS text a template renders first when the tokenizer adds BOS itself (a
// BOS the request's own text begins with stays).
RenderedChat without_leading_bos(const App& app, RenderedChat chat);

// Whether a template source or a string a template receives from the model (BOS/EOS text) holds
// the character that marks request strings (U+FDD0, a noncharacter); such a template cannot be
// used, since its own text would read as marks.
bool holds_prompt_mark(std::string_view text);

}  // namespace server
