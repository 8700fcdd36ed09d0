#include "server/api/core/conversation.h"

#include "server/api/prompt_images.h"

#include <algorithm>

namespace server {

using ojson = nlohmann::ordered_json;

namespace {

bool mistral_id(const std::string& id) {
  return id.size() == 9 && std::all_of(id.begin(), id.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)); });
}

// 9 letters and digits from the id's FNV-1a hash: the same id always gives the same one.
std::string mistral_id_of(const std::string& id) {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : id) h = (h ^ c) * 1099511628211ull;
  std::string out;
  for (int i = 0; i < 9; ++i, h /= 62) out += kAlphabet[h % 62];
  return out;
}

std::string call_id_for(const std::string& id, const ChatFeatures& f) {
  if (f.syntax == engine::tools::ToolSyntax::kMistral && !mistral_id(id)) return mistral_id_of(id);
  return id;
}

ojson content_json(const Message& m) {
  switch (m.form) {
    case Message::Content::kNone: return nullptr;
    case Message::Content::kText: return m.joined();
    case Message::Content::kParts: {
      ojson parts = ojson::array();
      for (const std::string& t : m.texts) parts.push_back({{"type", "text"}, {"text", t}});
      return parts;
    }
  }
  return nullptr;
}

ojson message_json(const Message& m, const ChatFeatures& f) {
  ojson out = {{"role", m.role}, {"content", content_json(m)}};
  if (!m.calls.empty()) {
    ojson calls = ojson::array();
    for (const CallRecord& c : m.calls) {
      ojson call = ojson::object();
      if (c.id) call["id"] = call_id_for(*c.id, f);
      call["type"] = "function";
      call["function"] = {{"name", c.name}, {"arguments", c.arguments}};
      calls.push_back(std::move(call));
    }
    out["tool_calls"] = std::move(calls);
  }
  if (m.call_id) out["tool_call_id"] = call_id_for(*m.call_id, f);
  if (m.name) out["name"] = *m.name;
  for (const auto& [key, value] : m.extra.items()) {
    if (!out.contains(key)) out[key] = value;
  }
  if (!m.reasoning.empty() && !out.contains("reasoning_content")) out["reasoning_content"] = m.reasoning;
  return out;
}

}  // namespace

void Message::add_image(ImageInput image) {
  if (form != Content::kParts) {
    if (form == Content::kNone) texts.clear();
    form = Content::kParts;
  }
  texts.push_back(image_placeholder());
  images.push_back(std::move(image));
}

std::string Message::joined() const {
  std::string out;
  for (const std::string& t : texts) out += t;
  return out;
}

void merge_system_messages(std::vector<Message>& messages) {
  auto system_like = [](const Message& m) { return m.role == "system" || m.role == "developer"; };
  std::vector<Message> out;
  size_t i = 0;
  if (!messages.empty() && system_like(messages[0])) {
    Message system = Message::text("system", "");
    std::string& text = system.texts[0];
    for (; i < messages.size() && system_like(messages[i]); ++i) {
      const std::string t = messages[i].joined();
      if (t.empty()) continue;
      text += (text.empty() ? "" : "\n\n") + t;
    }
    if (!text.empty()) out.push_back(std::move(system));
  }
  for (; i < messages.size(); ++i) {
    out.push_back(std::move(messages[i]));
    if (system_like(out.back())) {
      const std::string t = out.back().joined();
      out.back() = Message::text("user", t);
    }
  }
  messages = std::move(out);
}

ojson template_conversation(const std::vector<Message>& messages, const ToolRequest& tools,
                            const ChatFeatures& features) {
  ojson out = ojson::array();
  for (const Message& m : messages) out.push_back(message_json(m, features));
  return template_messages(out, tools, features);
}

}  // namespace server
