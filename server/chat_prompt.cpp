#include "server/chat_prompt.h"

#include <set>

#include "engine/chat_template.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/api_error.h"
#include "server/request_json.h"

namespace server {

using nlohmann::json;

engine::jinja::Value to_jinja(const json& j) {
  using engine::jinja::Value;
  switch (j.type()) {
    case json::value_t::null: return Value::none();
    case json::value_t::boolean: return Value(j.get<bool>());
    case json::value_t::number_integer: return Value(j.get<int64_t>());
    case json::value_t::number_unsigned: return Value(static_cast<int64_t>(j.get<uint64_t>()));
    case json::value_t::number_float: return Value(j.get<double>());
    case json::value_t::string: return Value(j.get<std::string>());
    case json::value_t::array: {
      std::vector<Value> items;
      for (const json& e : j) items.push_back(to_jinja(e));
      return Value::array(std::move(items));
    }
    case json::value_t::object: {
      std::vector<engine::jinja::Object::Entry> entries;
      for (const auto& [k, v] : j.items()) entries.emplace_back(k, to_jinja(v));
      return Value::object(std::move(entries));
    }
    default: return Value::none();
  }
}

namespace {

void check_message(const json& m, size_t i) {
  const std::string where = "messages[" + std::to_string(i) + "]";
  if (!m.is_object()) throw invalid_field("messages", where + " must be an object, found " + json_type_name(m));
  const auto role = m.find("role");
  if (role == m.end() || !role->is_string()) throw invalid_field("messages", where + ".role must be a string");
  static const std::set<std::string> kRoles = {"system", "developer", "user", "assistant", "tool"};
  if (kRoles.count(role->get<std::string>()) == 0) {
    throw invalid_field("messages", where + ".role '" + role->get<std::string>() +
                                        "' is not one of system, developer, user, assistant, tool");
  }
  const auto content = m.find("content");
  if (content == m.end() || content->is_null()) {
    if (role->get<std::string>() != "assistant") throw invalid_field("messages", where + ".content is required");
    return;
  }
  if (content->is_string()) return;
  if (!content->is_array()) {
    throw invalid_field("messages", where + ".content must be a string or an array of parts, found " +
                                        json_type_name(*content));
  }
  for (const json& part : *content) {
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string()) {
      throw invalid_field("messages", where + ".content: only {\"type\": \"text\", \"text\": ...} parts are supported");
    }
  }
}

}  // namespace

std::string render_chat(const App& app, const json& messages, const json& extra) {
  if (!messages.is_array() || messages.empty()) {
    throw invalid_field("messages", "'messages' must be a non-empty array");
  }
  for (size_t i = 0; i < messages.size(); ++i) check_message(messages[i], i);
  engine::ChatInput input;
  input.messages = to_jinja(messages);
  input.add_generation_prompt = true;
  const engine::Tokenizer& tok = *app.tokenizer;
  if (tok.bos() >= 0) input.bos_token = std::string(tok.token_text(tok.bos()));
  if (tok.eos() >= 0) input.eos_token = std::string(tok.token_text(tok.eos()));
  if (extra.is_object()) input.extra_variables = to_jinja(extra);
  try {
    return app.chat_template->render(input);
  } catch (const engine::TemplateRaise& e) {
    throw ApiError(400, e.what(), "invalid_request_error", "messages");
  } catch (const engine::TemplateError& e) {
    throw ApiError(400, std::string("the chat template could not render these messages: ") + e.what(),
                   "invalid_request_error", "messages");
  }
}

std::vector<int32_t> chat_prompt_tokens(const App& app, const json& messages, const json& extra) {
  std::string text = render_chat(app, messages, extra);
  const engine::Tokenizer& tok = *app.tokenizer;
  if (tok.bos() >= 0 && tok.add_bos()) {
    const std::string_view bos = tok.token_text(tok.bos());
    if (!bos.empty() && text.rfind(bos, 0) == 0) text.erase(0, bos.size());
  }
  return tok.encode(text, true, true);
}

}  // namespace server
