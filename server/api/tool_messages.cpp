// template_messages() (tool_request.h): a client's conversation as chat templates expect it.
#include <algorithm>

#include "server/api/api_error.h"
#include "server/api/tool_request.h"

namespace server {

namespace tools = engine::tools;

namespace {

// A message's content as text: a string, or its text parts joined.
std::string content_text(const ojson& m) {
  const auto c = m.find("content");
  if (c == m.end() || c->is_null()) return "";
  if (c->is_string()) return c->get<std::string>();
  std::string out;
  if (c->is_array()) {
    for (const ojson& part : *c) {
      if (part.is_object() && part.contains("text") && part["text"].is_string()) out += part["text"].get<std::string>();
    }
  }
  return out;
}

// An assistant turn's tool_calls with each function.arguments as an object (clients send the
// JSON text OpenAI returned; a template renders the object).
ojson checked_calls(const ojson& calls, size_t i) {
  const std::string where = "messages[" + std::to_string(i) + "].tool_calls";
  if (!calls.is_array()) throw invalid_field("messages", where + " must be an array");
  ojson out = ojson::array();
  for (size_t k = 0; k < calls.size(); ++k) {
    ojson call = calls[k];
    const std::string at = where + "[" + std::to_string(k) + "]";
    if (!call.is_object() || !call.contains("function") || !call["function"].is_object() ||
        !call["function"].contains("name") || !call["function"]["name"].is_string()) {
      throw invalid_field("messages", at + " must be {\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\"}}");
    }
    ojson& fn = call["function"];
    if (auto a = fn.find("arguments"); a != fn.end() && a->is_string()) {
      ojson parsed = ojson::parse(a->get<std::string>(), nullptr, false);
      if (parsed.is_discarded() || !parsed.is_object()) {
        throw invalid_field("messages", at + ".function.arguments must be a JSON object in a string");
      }
      *a = std::move(parsed);
    } else if (a == fn.end() || a->is_null()) {
      fn["arguments"] = ojson::object();
    }
    out.push_back(std::move(call));
  }
  return out;
}

// A message with the fields templates read filled in.
ojson for_template(const ojson& m, size_t i) {
  if (!m.is_object()) return m;  // check_message refuses it with a clear message
  ojson out = m;
  if (auto c = out.find("content"); c == out.end() || c->is_null()) out["content"] = "";
  if (auto calls = out.find("tool_calls"); calls != out.end()) {
    if (calls->is_null()) out.erase("tool_calls");
    else *calls = checked_calls(*calls, i);
  }
  // earlier reasoning, under both names templates read (Qwen3: reasoning_content, gpt-oss: thinking)
  const ojson* reasoning = nullptr;
  for (const char* key : {"reasoning_content", "reasoning", "thinking"}) {
    if (auto r = m.find(key); r != m.end() && r->is_string()) {
      reasoning = &*r;
      break;
    }
  }
  if (reasoning != nullptr) {
    if (!out.contains("reasoning_content")) out["reasoning_content"] = *reasoning;
    if (!out.contains("thinking")) out["thinking"] = *reasoning;
  }
  return out;
}

// The generic syntax: calls as the envelope the tools prompt asks for, results as user turns.
ojson generic_conversation(const ojson& messages, const ToolRequest& r, const ChatFeatures& f) {
  ojson out = ojson::array();
  std::string system = r.tools.empty() ? "" : tools::generic_tools_prompt(r.tools, r.parallel());
  size_t first = 0;
  if (!system.empty() && !messages.empty() && messages[0].is_object() &&
      (messages[0].value("role", "") == "system" || messages[0].value("role", "") == "developer")) {
    system = content_text(messages[0]) + "\n\n" + system;
    first = 1;
  }
  if (f.system_role && !system.empty()) out.push_back({{"role", "system"}, {"content", system}});
  for (size_t i = first; i < messages.size(); ++i) {
    ojson m = for_template(messages[i], i);
    const std::string role = m.is_object() ? m.value("role", "") : "";
    if (role == "assistant" && m.contains("tool_calls")) {
      ojson envelope = {{"tool_calls", ojson::array()}};
      for (const ojson& c : m["tool_calls"]) {
        envelope["tool_calls"].push_back({{"name", c["function"]["name"]}, {"arguments", c["function"]["arguments"]}});
      }
      std::string text = content_text(m);
      m["content"] = (text.empty() ? "" : text + "\n") + envelope.dump(-1, ' ', false, ojson::error_handler_t::replace);
      m.erase("tool_calls");
    } else if (role == "tool") {
      ojson result = {{"tool_call_id", m.value("tool_call_id", "")}, {"content", content_text(m)}};
      const std::string line = ojson{{"tool_result", result}}.dump(-1, ' ', false, ojson::error_handler_t::replace);
      if (!out.empty() && out.back().value("role", "") == "user" && out.back().value("tool_results", false)) {
        out.back()["content"] = out.back()["content"].get<std::string>() + "\n" + line;
        continue;
      }
      m = {{"role", "user"}, {"content", line}, {"tool_results", true}};
    } else if (role == "user" && !f.system_role && !system.empty()) {
      m["content"] = system + "\n\n" + content_text(m);
      system.clear();
    }
    out.push_back(std::move(m));
  }
  for (ojson& m : out) {
    if (m.is_object()) m.erase("tool_results");
  }
  return out;
}

// Whether the conversation has calls or results in it.
bool has_tool_turns(const ojson& messages) {
  return std::any_of(messages.begin(), messages.end(), [](const ojson& m) {
    return m.is_object() && (m.value("role", "") == "tool" || (m.contains("tool_calls") && !m["tool_calls"].is_null()));
  });
}

}  // namespace

ojson template_messages(const ojson& messages, const ToolRequest& r, const ChatFeatures& f) {
  if (!messages.is_array()) return messages;  // check_message refuses it
  if (f.syntax == tools::ToolSyntax::kGeneric && (!r.tools.empty() || has_tool_turns(messages))) {
    return generic_conversation(messages, r, f);
  }
  ojson out = ojson::array();
  for (size_t i = 0; i < messages.size(); ++i) out.push_back(for_template(messages[i], i));
  return out;
}

}  // namespace server
