// Rendering a chat request's messages into prompt tokens through the model's chat template.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "engine/jinja/value.h"
#include "server/app.h"

namespace server {

// Validates `messages` (roles, content strings or text parts), renders them with the template
// (add_generation_prompt on), drops a leading BOS text the template wrote (the tokenizer adds
// BOS itself), and tokenizes. `extra` (e.g. chat_template_kwargs) become template variables.
// Throws ApiError 400 for invalid messages and for template errors such as raise_exception().
std::vector<int32_t> chat_prompt_tokens(const App& app, const nlohmann::json& messages,
                                        const nlohmann::json& extra);

// A JSON value as a template value (objects keep their key order).
engine::jinja::Value to_jinja(const nlohmann::json& j);

// The rendered prompt text (what chat_prompt_tokens tokenizes).
std::string render_chat(const App& app, const nlohmann::json& messages, const nlohmann::json& extra);

}  // namespace server
