#include "server/api/chat_prompt.h"

#include <set>

#include "engine/text/chat_template.h"
#include "engine/text/tokenizer/tokenizer.h"
#include "server/api/api_error.h"
#include "server/api/request_json.h"

namespace server {

using json = nlohmann::ordered_json;

namespace {

// U+FDD0, a Unicode noncharacter (reserved for a process's internal use). Inserted into request
// strings before each position Tokenizer::special_starts names; it survives every string
// operation a template does (slicing, trim, concatenation, tojson) and is removed from the
// rendered text, leaving a guarded position. A request's own U+FDD0 characters are dropped
// first, so a client can neither forge nor hide a mark.
constexpr std::string_view kMark = "\xEF\xB7\x90";

std::string without_marks(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t j = s.find(kMark, i);
    out.append(s.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i));
    if (j == std::string_view::npos) break;
    i = j + kMark.size();
  }
  return out;
}

// A request string as the template sees it: marked where a control token could start.
std::string marked(const engine::Tokenizer* tok, std::string_view s) {
  std::string clean = without_marks(s);
  if (tok == nullptr) return clean;
  const std::vector<size_t> starts = tok->special_starts(clean);
  if (starts.empty()) return clean;
  std::string out;
  out.reserve(clean.size() + starts.size() * kMark.size());
  size_t from = 0;
  for (size_t p : starts) {
    out.append(clean, from, p - from);
    out.append(kMark);
    from = p;
  }
  out.append(clean, from);
  return out;
}

// The rendered text without its marks, and where they were.
RenderedChat unmark(std::string_view rendered) {
  RenderedChat out;
  out.text.reserve(rendered.size());
  for (size_t i = 0; i < rendered.size();) {
    const size_t j = rendered.find(kMark, i);
    out.text.append(rendered.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i));
    if (j == std::string_view::npos) break;
    if (out.guarded.empty() || out.guarded.back() != out.text.size()) out.guarded.push_back(out.text.size());
    i = j + kMark.size();
  }
  return out;
}

const std::set<std::string> kRoles = {"system", "developer", "user", "assistant", "tool"};

// `marks`: the tokenizer whose control tokens request strings are marked against, or null.
// `depth` levels are left before the walk refuses to go deeper.
engine::jinja::Value convert(const json& j, const engine::Tokenizer* marks, int depth) {
  using engine::jinja::Value;
  if (depth < 0) {
    throw ApiError(400, "request JSON nests deeper than the server's limit (--max-json-depth)",
                   "invalid_request_error", std::nullopt, "json_too_deep");
  }
  switch (j.type()) {
    case json::value_t::null: return Value::none();
    case json::value_t::boolean: return Value(j.get<bool>());
    case json::value_t::number_integer: return Value(j.get<int64_t>());
    case json::value_t::number_unsigned: return Value(static_cast<int64_t>(j.get<uint64_t>()));
    case json::value_t::number_float: return Value(j.get<double>());
    case json::value_t::string: return Value(marked(marks, j.get_ref<const std::string&>()));
    case json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const json& e : j) items.push_back(convert(e, marks, depth - 1));
      return Value::array(std::move(items));
    }
    case json::value_t::object: {
      std::vector<engine::jinja::Object::Entry> entries;
      entries.reserve(j.size());
      for (const auto& [k, v] : j.items()) {
        // A message's role (checked to be one of five words) is compared with the template's own
        // literals ('tool'): unmarked, though a vocabulary's control tokens may hold the word
        // (Gemma 4's <|tool>, which would mark "tool" where it starts).
        if (k == "role" && v.is_string() && kRoles.count(v.get<std::string>()) != 0) {
          entries.emplace_back(k, Value(v.get<std::string>()));
          continue;
        }
        entries.emplace_back(marked(marks, k), convert(v, marks, depth - 1));
      }
      return Value::object(std::move(entries));
    }
    default: return Value::none();
  }
}

void check_message(const json& m, size_t i) {
  const std::string where = "messages[" + std::to_string(i) + "]";
  if (!m.is_object()) throw invalid_field("messages", where + " must be an object, found " + json_type_name(m));
  const auto role = m.find("role");
  if (role == m.end() || !role->is_string()) throw invalid_field("messages", where + ".role must be a string");
  if (kRoles.count(role->get<std::string>()) == 0) {
    throw invalid_field("messages", where + ".role '" + excerpt(role->get<std::string>()) +
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
  for (size_t k = 0; k < content->size(); ++k) {
    const json& part = (*content)[k];
    const std::string at = where + ".content[" + std::to_string(k) + "]";
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
      throw invalid_field("messages", at + " must be an object with a string 'type'");
    }
    const std::string type = part["type"].get<std::string>();
    if (type == "text") {
      if (!part.contains("text") || !part["text"].is_string()) throw invalid_field("messages", at + ".text must be a string");
    } else if (type == "image_url") {
      const auto url = part.find("image_url");
      const bool ok = url != part.end() && (url->is_string() || (url->is_object() && url->contains("url") && (*url)["url"].is_string()));
      if (!ok) throw invalid_field("messages", at + ".image_url must be {\"url\": \"data:image/...;base64,...\"}");
    } else {
      throw invalid_field("messages", at + ": parts of type '" + excerpt(type) +
                                          "' are not supported (only text and image_url)");
    }
  }
}

}  // namespace

engine::jinja::Value to_jinja(const json& j, int max_depth) { return convert(j, nullptr, max_depth); }

bool holds_prompt_mark(std::string_view text) { return text.find(kMark) != std::string_view::npos; }

void check_messages(const json& messages) {
  if (!messages.is_array() || messages.empty()) {
    throw invalid_field("messages", "'messages' must be a non-empty array");
  }
  for (size_t i = 0; i < messages.size(); ++i) check_message(messages[i], i);
}

RenderedChat render_chat(const App& app, const json& messages, const json& extra, const json* tools) {
  check_messages(messages);
  if (!extra.is_null() && !extra.is_object()) {
    throw invalid_field("chat_template_kwargs", "'chat_template_kwargs' must be an object, found " +
                                                    json_type_name(extra));
  }
  const engine::Tokenizer& tok = *app.tokenizer;
  engine::ChatInput input;
  const int depth = app.settings.max_json_depth;
  input.messages = convert(messages, &tok, depth);
  input.add_generation_prompt = true;
  if (tok.bos() >= 0) input.bos_token = std::string(tok.token_text(tok.bos()));
  if (tok.eos() >= 0) input.eos_token = std::string(tok.token_text(tok.eos()));
  if (extra.is_object()) input.extra_variables = convert(extra, &tok, depth);
  if (tools != nullptr) input.tools = convert(*tools, &tok, depth);
  input.clock = app.template_clock;
  try {
    return unmark(app.chat_template->render(input));
  } catch (const engine::TemplateRaise& e) {
    throw ApiError(400, without_marks(e.what()), "invalid_request_error", "messages");
  } catch (const engine::TemplateError& e) {
    throw ApiError(400, "the chat template could not render these messages: " + without_marks(e.what()),
                   "invalid_request_error", "messages");
  }
}

std::vector<int32_t> chat_prompt_tokens(const App& app, const json& messages, const json& extra) {
  return tokenize_chat(app, render_chat(app, messages, extra));
}

std::vector<int32_t> tokenize_chat(const App& app, RenderedChat chat) {
  chat = without_leading_bos(app, std::move(chat));
  return app.tokenizer->encode(chat.text, true, true, chat.guarded);
}

RenderedChat without_leading_bos(const App& app, RenderedChat chat) {
  const engine::Tokenizer& tok = *app.tokenizer;
  if (tok.bos() >= 0 && tok.add_bos()) {
    const std::string_view bos = tok.token_text(tok.bos());
    const bool from_request = !chat.guarded.empty() && chat.guarded.front() == 0;
    if (!bos.empty() && !from_request && chat.text.rfind(bos, 0) == 0) {
      chat.text.erase(0, bos.size());
      std::vector<size_t> shifted;
      for (size_t p : chat.guarded) {
        if (p >= bos.size()) shifted.push_back(p - bos.size());
      }
      chat.guarded.swap(shifted);
    }
  }
  return chat;
}

}  // namespace server
