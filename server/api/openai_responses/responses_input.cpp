#include "server/api/openai_responses/responses_input.h"

#include <algorithm>
#include <set>

#include "server/api/api_error.h"
#include "server/api/prompt_images.h"
#include "server/api/request_json.h"

namespace server {

using ojson = nlohmann::ordered_json;

namespace {

// Content parts (input_text, output_text, refusal; input_image into `m`'s images when `m` is
// given, by `app`'s rules: image_from_url) as texts; `where` names them in errors.
std::vector<std::string> part_texts(const ojson& content, const std::string& where, std::vector<std::string>& ignored,
                                    const App* app = nullptr, Message* m = nullptr) {
  std::vector<std::string> out;
  if (content.is_string()) {
    out.push_back(content.get<std::string>());
    return out;
  }
  if (!content.is_array()) throw invalid_field("input", where + " must be a string or an array of content parts");
  for (size_t j = 0; j < content.size(); ++j) {
    const ojson& part = content[j];
    const std::string at = where + "[" + std::to_string(j) + "]";
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
      throw invalid_field("input", at + " must be an object with a 'type'");
    }
    const std::string type = part["type"].get<std::string>();
    if (type == "input_image" && m != nullptr) {
      const auto url = part.find("image_url");
      if (url == part.end() || !url->is_string()) {
        throw invalid_field("input", at + ".image_url must be a data URI or URL string (file_id images are not supported)");
      }
      out.push_back(image_placeholder());
      m->images.push_back(image_from_url(*app, url->get<std::string>(), at));
      continue;
    }
    static const std::set<std::string> kUnsupportedParts = {"input_image", "input_file", "input_audio"};
    if (kUnsupportedParts.count(type) != 0) {
      throw invalid_field("input", at + ": '" + type + "' is not supported here" +
                                       (type == "input_image" ? "" : ": this server takes text and image input only"));
    }
    const char* key = type == "refusal" ? "refusal" : "text";
    if (type != "input_text" && type != "output_text" && type != "refusal") {
      ignored.push_back("input:" + type);
      continue;
    }
    if (!part.contains(key) || !part[key].is_string()) throw invalid_field("input", at + "." + key + " must be a string");
    out.push_back(part[key].get<std::string>());
  }
  return out;
}

std::string required_string(const ojson& item, const char* key, const std::string& where) {
  const auto it = item.find(key);
  if (it == item.end() || !it->is_string()) throw invalid_field("input", where + "." + key + " must be a string");
  return it->get<std::string>();
}

// Reads input items one by one; see read_input.
class InputReader {
 public:
  InputReader(const App& app, std::vector<Message>& out, std::vector<std::string>& ignored)
      : app_(app), out_(out), ignored_(ignored) {}

  void item(const ojson& item, size_t i) {
    const std::string where = "input[" + std::to_string(i) + "]";
    if (!item.is_object()) throw invalid_field("input", where + " must be an object");
    std::string type = "message";
    if (auto t = item.find("type"); t != item.end() && !t->is_null()) {
      if (!t->is_string()) throw invalid_field("input", where + ".type must be a string");
      type = t->get<std::string>();
    }
    if (type == "message") message(item, where);
    else if (type == "function_call") function_call(item, where);
    else if (type == "function_call_output") function_output(item, where);
    else if (type == "reasoning") reasoning(item);
    else ignored_.push_back("input:" + type);
  }

 private:
  void message(const ojson& item, const std::string& where) {
    const std::string role = required_string(item, "role", where);
    static const std::set<std::string> kRoles = {"user", "assistant", "system", "developer"};
    if (kRoles.count(role) == 0) {
      throw invalid_field("input", where + ".role '" + excerpt(role) + "' is not one of user, assistant, system, developer");
    }
    const auto content = item.find("content");
    if (content == item.end()) throw invalid_field("input", where + ".content is required");
    Message m;
    m.role = role;
    m.texts = part_texts(*content, where + ".content", ignored_, &app_, &m);
    if (!m.images.empty()) m.form = Message::Content::kParts;
    if (m.texts.empty()) m.texts.emplace_back();
    if (role == "assistant") take_reasoning(m);
    out_.push_back(std::move(m));
  }

  void function_call(const ojson& item, const std::string& where) {
    CallRecord c;
    c.id = required_string(item, "call_id", where);
    c.name = required_string(item, "name", where);
    if (auto a = item.find("arguments"); a != item.end() && !a->is_null()) {
      if (!a->is_string()) throw invalid_field("input", where + ".arguments must be a JSON object in a string");
      const std::string text = a->get<std::string>();
      if (text.find_first_not_of(" \t\r\n") != std::string::npos) {
        c.arguments = ojson::parse(text, nullptr, false);
        if (c.arguments.is_discarded() || !c.arguments.is_object()) {
          throw invalid_field("input", where + ".arguments must be a JSON object in a string");
        }
      }
    }
    if (out_.empty() || out_.back().role != "assistant") {
      Message m;
      m.role = "assistant";
      m.form = Message::Content::kNone;
      out_.push_back(std::move(m));
    }
    take_reasoning(out_.back());
    out_.back().calls.push_back(std::move(c));
  }

  void function_output(const ojson& item, const std::string& where) {
    Message m;
    m.role = "tool";
    m.call_id = required_string(item, "call_id", where);
    const auto output = item.find("output");
    if (output == item.end() || output->is_null()) throw invalid_field("input", where + ".output is required");
    std::string text;
    for (const std::string& t : part_texts(*output, where + ".output", ignored_)) text += t;
    m.texts = {std::move(text)};
    out_.push_back(std::move(m));
  }

  // Earlier reasoning: its reasoning_text content, else its summary.
  void reasoning(const ojson& item) {
    std::string text;
    for (const char* key : {"content", "summary"}) {
      if (auto c = item.find(key); c != item.end() && c->is_array()) {
        for (const ojson& part : *c) {
          if (part.is_object() && part.contains("text") && part["text"].is_string()) {
            text += (text.empty() ? "" : "\n") + part["text"].get<std::string>();
          }
        }
      }
      if (!text.empty()) break;
    }
    pending_reasoning_ += text;
  }

  void take_reasoning(Message& m) {
    if (pending_reasoning_.empty() || !m.reasoning.empty()) return;
    m.reasoning = std::move(pending_reasoning_);
    pending_reasoning_.clear();
  }

  const App& app_;
  std::vector<Message>& out_;
  std::vector<std::string>& ignored_;
  std::string pending_reasoning_;
};

void read_responses_choice(const ojson& body, ToolRequest& r, std::vector<std::string>& ignored) {
  const auto c = body.find("tool_choice");
  if (c == body.end() || c->is_null()) return;
  if (c->is_string()) {
    const std::string s = c->get<std::string>();
    if (s == "none") r.choice = ToolRequest::Choice::kNone;
    else if (s == "auto") r.choice = ToolRequest::Choice::kAuto;
    else if (s == "required") r.choice = ToolRequest::Choice::kRequired;
    else throw invalid_field("tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or an object");
  } else if (c->is_object()) {
    const std::string type = string_or(*c, "type");
    if (type == "function") {
      if (!c->contains("name") || !(*c)["name"].is_string()) {
        throw invalid_field("tool_choice", "'tool_choice' {\"type\": \"function\"} needs a 'name'");
      }
      r.choice = ToolRequest::Choice::kNamed;
      r.named = (*c)["name"].get<std::string>();
    } else if (type == "allowed_tools") {
      const std::string mode = string_or(*c, "mode", "auto");
      if (mode != "auto" && mode != "required") throw invalid_field("tool_choice", "'tool_choice.mode' must be auto or required");
      r.choice = mode == "required" ? ToolRequest::Choice::kRequired : ToolRequest::Choice::kAuto;
      std::vector<std::string> allowed;
      if (auto t = c->find("tools"); t != c->end() && t->is_array()) {
        for (const ojson& tool : *t) {
          if (string_or(tool, "type") == "function" && tool.contains("name") && tool["name"].is_string()) {
            allowed.push_back(tool["name"].get<std::string>());
          }
        }
      }
      r.allowed = std::move(allowed);
    } else {
      ignored.push_back("tool_choice:" + (type.empty() ? std::string("?") : type));  // a hosted tool: the model chooses
    }
  } else {
    throw invalid_field("tool_choice", "'tool_choice' must be a string or an object, found " + json_type_name(*c));
  }
  if (r.choice == ToolRequest::Choice::kNamed) {
    const bool offered = std::any_of(r.tools.begin(), r.tools.end(), [&](const auto& t) { return t.name == r.named; });
    if (!offered) {
      throw invalid_field("tool_choice", "'tool_choice' names the function '" + excerpt(r.named) +
                                             "', which is not among the request's function tools");
    }
  }
  if (r.choice == ToolRequest::Choice::kRequired && r.callable().empty()) {
    throw invalid_field("tool_choice", "'tool_choice' is \"required\" but the request offers no function tools");
  }
}

}  // namespace

void read_input(const App& app, const ojson& input, std::vector<Message>& conversation,
                std::vector<std::string>& ignored) {
  if (input.is_string()) {
    conversation.push_back(Message::text("user", input.get<std::string>()));
    return;
  }
  if (!input.is_array()) throw invalid_field("input", "'input' must be a string or an array of items, found " + json_type_name(input));
  InputReader reader(app, conversation, ignored);
  for (size_t i = 0; i < input.size(); ++i) reader.item(input[i], i);
}

ToolRequest read_response_tools(const ojson& body, std::vector<std::string>& ignored) {
  ToolRequest r;
  if (auto t = body.find("tools"); t != body.end() && !t->is_null()) {
    if (!t->is_array()) throw invalid_field("tools", "'tools' must be an array");
    for (size_t i = 0; i < t->size(); ++i) {
      const ojson& tool = (*t)[i];
      const std::string where = "tools[" + std::to_string(i) + "]";
      if (!tool.is_object() || !tool.contains("type") || !tool["type"].is_string()) {
        throw invalid_field("tools", where + " must be an object with a 'type'");
      }
      const std::string type = tool["type"].get<std::string>();
      if (type != "function") {
        ignored.push_back("tools:" + type);  // web_search, file_search, custom, namespace, mcp, ...
        continue;
      }
      if (auto s = tool.find("strict"); s != tool.end() && !s->is_null() && !s->is_boolean()) {
        throw invalid_field("tools", where + ".strict must be a boolean");
      }
      add_function(r, function_def(tool, "tools", where), "tools", where);
    }
  }
  read_responses_choice(body, r, ignored);
  if (auto p = body.find("parallel_tool_calls"); p != body.end() && !p->is_null()) {
    if (!p->is_boolean()) throw invalid_field("parallel_tool_calls", "'parallel_tool_calls' must be a boolean");
    r.parallel_requested = p->get<bool>();
  }
  return r;
}

}  // namespace server
