// The Responses API's `input` items and `tools` in the core's terms. Coroutine-free.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/api/app.h"
#include "server/api/core/conversation.h"
#include "server/api/tool_request.h"

namespace server {

// Appends `input` (a string: one user message; or a list of items) to `conversation`:
// messages (roles user, assistant, system, developer; content a string or input_text /
// output_text / refusal parts) and function_call, function_call_output and reasoning items. A
// function call joins the assistant turn before it (or starts one), reasoning goes to the next
// assistant turn. input_image parts of messages are images (image_url: a data URI, or an http(s)
// URL by `app`'s rules: prompt_images.h image_from_url); input_file and input_audio parts are
// 400s naming them; items of other types (web_search_call, custom tool calls, item_reference, ...)
// are skipped and added to `ignored` as "input:<type>". Throws ApiError 400 naming input[i].
void read_input(const App& app, const nlohmann::ordered_json& input, std::vector<Message>& conversation,
                std::vector<std::string>& ignored);

// `tools` (function tools: {"type": "function", "name", "description", "parameters", "strict"};
// every other type is skipped and added to `ignored` as "tools:<type>"), `tool_choice` ("none",
// "auto", "required", {"type": "function", "name"}, {"type": "allowed_tools", "mode", "tools"};
// a hosted tool's choice counts as "auto" and is named in `ignored`) and `parallel_tool_calls`.
ToolRequest read_response_tools(const nlohmann::ordered_json& body, std::vector<std::string>& ignored);

}  // namespace server
