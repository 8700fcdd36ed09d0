#include "server/api/anthropic_messages/messages_request.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "server/api/api_error.h"
#include "server/api/prompt_images.h"
#include "server/api/core/formatter.h"
#include "server/api/output_constraint.h"
#include "server/api/request_fields.h"
#include "server/api/request_json.h"

namespace server {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

const std::set<std::string> kMessagesFields = {
    "model", "messages", "system", "max_tokens", "stop_sequences", "stream", "temperature", "top_p", "top_k",
    "tools", "tool_choice", "thinking", "output_config", "output_format",
    // accepted; they cannot change the output here
    "metadata", "service_tier", "context_management", "container", "mcp_servers", "inference_geo", "cache_control",
    // llama-server's sampling fields
    "min_p", "seed", "presence_penalty", "frequency_penalty", "repetition_penalty", "repeat_penalty", "repeat_last_n",
    "logit_bias"};
constexpr size_t kMaxStops = 16;
constexpr size_t kMaxToolName = 128;  // Anthropic's limit

[[noreturn]] void unsupported_block(const std::string& where, const std::string& type) {
  throw invalid_field("messages", where + ": '" + type + "' blocks are not supported: this server takes text input only");
}

// A tool_result's content: a string or text blocks.
std::string result_text(const ojson& block, const std::string& where) {
  const auto c = block.find("content");
  if (c == block.end() || c->is_null()) return "";
  if (c->is_string()) return c->get<std::string>();
  if (!c->is_array()) throw invalid_field("messages", where + ".content must be a string or an array of blocks");
  std::string text;
  for (size_t k = 0; k < c->size(); ++k) {
    const ojson& b = (*c)[k];
    const std::string type = string_or(b, "type");
    if (type == "image" || type == "document") unsupported_block(where + ".content[" + std::to_string(k) + "]", type);
    if (type == "text" && b.contains("text") && b["text"].is_string()) text += b["text"].get<std::string>();
  }
  return text;
}

// Reads messages[i] into the conversation; see prepare_messages.
class MessageReader {
 public:
  MessageReader(const App& app, std::vector<Message>& out, std::vector<std::string>& ignored)
      : app_(app), out_(out), ignored_(ignored) {}

  void message(const ojson& m, size_t i) {
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) throw invalid_field("messages", where + " must be an object");
    const std::string role = m.contains("role") && m["role"].is_string() ? m["role"].get<std::string>() : "";
    if (role != "user" && role != "assistant" && role != "system") {
      throw invalid_field("messages", where + ".role must be \"user\" or \"assistant\"");
    }
    const auto content = m.find("content");
    if (content == m.end() || (!content->is_string() && !content->is_array())) {
      throw invalid_field("messages", where + ".content must be a string or an array of content blocks");
    }
    if (content->is_string()) {
      out_.push_back(Message::text(role, content->get<std::string>()));
      return;
    }
    Message msg;
    msg.role = role;
    msg.form = Message::Content::kNone;
    for (size_t k = 0; k < content->size(); ++k) block(msg, (*content)[k], where + ".content[" + std::to_string(k) + "]");
    if (msg.form != Message::Content::kNone || !msg.calls.empty() || !msg.reasoning.empty()) out_.push_back(std::move(msg));
  }

 private:
  void block(Message& msg, const ojson& b, const std::string& where) {
    if (!b.is_object() || !b.contains("type") || !b["type"].is_string()) {
      throw invalid_field("messages", where + " must be a content block with a 'type'");
    }
    const std::string type = b["type"].get<std::string>();
    if (type == "text") {
      if (!b.contains("text") || !b["text"].is_string()) throw invalid_field("messages", where + ".text must be a string");
      if (msg.form == Message::Content::kNone) msg.form = Message::Content::kText;
      msg.texts.push_back(b["text"].get<std::string>());
    } else if (type == "image") {
      image(msg, b, where);
    } else if (type == "document") {
      unsupported_block(where, type);
    } else if (type == "tool_use" && msg.role == "assistant") {
      CallRecord c;
      if (!b.contains("id") || !b["id"].is_string()) throw invalid_field("messages", where + ".id must be a string");
      if (!b.contains("name") || !b["name"].is_string()) throw invalid_field("messages", where + ".name must be a string");
      c.id = b["id"].get<std::string>();
      c.name = b["name"].get<std::string>();
      if (auto input = b.find("input"); input != b.end() && !input->is_null()) {
        if (!input->is_object()) throw invalid_field("messages", where + ".input must be an object");
        c.arguments = *input;
      }
      msg.calls.push_back(std::move(c));
    } else if (type == "tool_result" && msg.role == "user") {
      if (!b.contains("tool_use_id") || !b["tool_use_id"].is_string()) {
        throw invalid_field("messages", where + ".tool_use_id must be a string");
      }
      std::string text = result_text(b, where);
      if (auto e = b.find("is_error"); e != b.end() && e->is_boolean() && e->get<bool>()) text = "Error: " + text;
      Message result = Message::text("tool", std::move(text));
      result.call_id = b["tool_use_id"].get<std::string>();
      out_.push_back(std::move(result));  // before the user's own text, as Anthropic requires them first
    } else if (type == "thinking" && msg.role == "assistant") {
      if (b.contains("thinking") && b["thinking"].is_string()) msg.reasoning += b["thinking"].get<std::string>();
    } else {
      ignored_.push_back("messages:" + type);  // redacted_thinking, server tool blocks, search results, ...
    }
  }

  // {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "..."}}, or
  // "source": {"type": "url", "url": "https://..."} (image_from_url: fetched with --allow-remote-media)
  void image(Message& msg, const ojson& b, const std::string& where) {
    const auto src = b.find("source");
    if (src == b.end() || !src->is_object()) throw invalid_field("messages", where + ".source must be an object");
    const std::string kind = string_or(*src, "type");
    if (kind == "url") {
      if (!src->contains("url") || !(*src)["url"].is_string()) {
        throw invalid_field("messages", where + ".source.url must be a string");
      }
      msg.add_image(image_from_url(app_, (*src)["url"].get<std::string>(), where));
      return;
    }
    if (kind != "base64") {
      throw invalid_field("messages", where + ".source.type '" + excerpt(kind) + "' is not supported: send the image "
                                              "as base64 or a url (this server does not take files)");
    }
    if (!src->contains("data") || !(*src)["data"].is_string()) {
      throw invalid_field("messages", where + ".source.data must be a base64 string");
    }
    msg.add_image({decode_base64((*src)["data"].get<std::string>(), where), where, ""});
  }

  const App& app_;
  std::vector<Message>& out_;
  std::vector<std::string>& ignored_;
};

// `system`: a string or text blocks (cache_control accepted), Claude Code's nonce block dropped.
std::vector<Message> system_messages(const ojson& body, const App& app) {
  std::vector<Message> out;
  const auto s = body.find("system");
  if (s == body.end() || s->is_null()) return out;
  auto add = [&](std::string text) {
    if (!app.settings.keep_billing_header) text = without_billing_header(text);
    if (!text.empty()) out.push_back(Message::text("system", std::move(text)));
  };
  if (s->is_string()) {
    add(s->get<std::string>());
  } else if (s->is_array()) {
    for (size_t i = 0; i < s->size(); ++i) {
      const ojson& b = (*s)[i];
      if (string_or(b, "type") != "text" || !b.contains("text") || !b["text"].is_string()) {
        throw invalid_field("system", "system[" + std::to_string(i) + "] must be {\"type\": \"text\", \"text\": ...}");
      }
      add(b["text"].get<std::string>());
    }
  } else {
    throw invalid_field("system", "'system' must be a string or an array of text blocks");
  }
  return out;
}

ToolRequest read_anthropic_tools(const ojson& body, std::vector<std::string>& ignored) {
  ToolRequest r;
  if (auto t = body.find("tools"); t != body.end() && !t->is_null()) {
    if (!t->is_array()) throw invalid_field("tools", "'tools' must be an array");
    for (size_t i = 0; i < t->size(); ++i) {
      const ojson& tool = (*t)[i];
      const std::string where = "tools[" + std::to_string(i) + "]";
      if (!tool.is_object()) throw invalid_field("tools", where + " must be an object");
      const ojson type = tool.value("type", ojson(nullptr));
      if (!type.is_null() && type != "custom") {  // Anthropic's server tools: bash_..., web_search_..., ...
        ignored.push_back("tools:" + (type.is_string() ? type.get<std::string>() : std::string("?")));
        continue;
      }
      ojson def = {{"name", tool.value("name", ojson(nullptr))}};
      if (tool.contains("description")) def["description"] = tool["description"];
      const auto schema = tool.find("input_schema");
      if (schema == tool.end() || !schema->is_object()) throw invalid_field("tools", where + ".input_schema must be a JSON Schema object");
      def["parameters"] = *schema;
      add_function(r, function_def(def, "tools", where, kMaxToolName), "tools", where);
    }
  }
  if (auto c = body.find("tool_choice"); c != body.end() && !c->is_null()) {
    if (!c->is_object() || !c->contains("type") || !(*c)["type"].is_string()) {
      throw invalid_field("tool_choice", "'tool_choice' must be {\"type\": \"auto\" | \"any\" | \"tool\" | \"none\"}");
    }
    const std::string type = (*c)["type"].get<std::string>();
    if (type == "auto") r.choice = ToolRequest::Choice::kAuto;
    else if (type == "any") r.choice = ToolRequest::Choice::kRequired;
    else if (type == "none") r.choice = ToolRequest::Choice::kNone;
    else if (type == "tool") {
      r.choice = ToolRequest::Choice::kNamed;
      r.named = string_or(*c, "name");
      if (std::none_of(r.tools.begin(), r.tools.end(), [&](const auto& t) { return t.name == r.named; })) {
        throw invalid_field("tool_choice", "'tool_choice' names the tool '" + excerpt(r.named) + "', which is not among the request's tools");
      }
    } else {
      throw invalid_field("tool_choice", "'tool_choice.type' must be auto, any, tool or none");
    }
    if (r.choice == ToolRequest::Choice::kRequired && r.tools.empty()) {
      throw invalid_field("tool_choice", "'tool_choice' is \"any\" but the request offers no tools");
    }
    if (auto d = c->find("disable_parallel_tool_use"); d != c->end() && !d->is_null()) {
      if (!d->is_boolean()) throw invalid_field("tool_choice", "'tool_choice.disable_parallel_tool_use' must be a boolean");
      r.parallel_requested = !d->get<bool>();
    }
  }
  return r;
}

// thinking (enabled with budget_tokens, disabled, adaptive) and output_config.effort.
void read_thinking(const json& body, CoreRequest& r) {
  if (auto t = body.find("thinking"); t != body.end() && !t->is_null()) {
    if (!t->is_object()) throw invalid_field("thinking", "'thinking' must be an object");
    const std::string type = get_string(*t, "type").value_or("");
    if (type == "enabled") {
      r.reasoning.thinking = true;
      r.reasoning.budget_tokens = get_int(*t, "budget_tokens", 0, INT32_MAX).value_or(-1);
    } else if (type == "disabled") {
      r.reasoning.thinking = false;
    } else if (type != "adaptive") {
      throw invalid_field("thinking", "'thinking.type' must be enabled, disabled or adaptive");
    }
  }
  if (auto o = body.find("output_config"); o != body.end() && o->is_object()) {
    if (auto e = get_string(*o, "effort")) {
      static const std::set<std::string> kEfforts = {"low", "medium", "high", "xhigh", "max"};
      if (kEfforts.count(*e) == 0) throw invalid_field("output_config", "'output_config.effort' must be low, medium, high, xhigh or max");
      r.reasoning.effort = *e == "low" || *e == "medium" ? *e : "high";
    }
  }
}

// output_config.format (or the beta's output_format): {"type": "json_schema", "schema"}.
void read_output_format(const json& body, std::string_view text, const App& app, CoreRequest& r) {
  for (const char* field : {"output_config", "output_format"}) {
    const auto it = body.find(field);
    if (it == body.end() || !it->is_object()) continue;
    const json* format = &*it;
    std::string pointer = std::string("/") + field;
    if (std::string(field) == "output_config") {
      if (!it->contains("format") || (*it)["format"].is_null()) continue;
      format = &(*it)["format"];
      pointer += "/format";
    }
    if (!format->is_object() || string_or(*format, "type") != "json_schema" || !format->contains("schema") ||
        !(*format)["schema"].is_object()) {
      throw invalid_field(field, std::string("'") + field + "' format must be {\"type\": \"json_schema\", \"schema\": {...}}");
    }
    r.params.grammar = schema_constraint(app, field, text, pointer + "/schema");
    return;
  }
}

// The body as the core request; max_tokens is required for generation, not for count_tokens.
CoreRequest translate_request(const App& app, std::string_view text, bool need_max_tokens) {
  const json body = parse_object(text, app.settings.max_json_depth);
  const ojson ordered = ojson::parse(text);
  CoreRequest core;
  core.ignored_fields = check_fields(body, kMessagesFields, {}, app.settings.strict_api);
  check_request_model(body, app);
  const std::optional<int64_t> max_tokens = get_int(body, "max_tokens", 1, INT32_MAX);
  if (need_max_tokens && !max_tokens) throw invalid_field("max_tokens", "max_tokens: Field required");
  core.params.max_tokens = max_tokens.value_or(-1);
  core.params.sampling = parse_sampling(body, app);
  core.params.stream = get_bool(body, "stream").value_or(false);
  core.params.stop = get_strings(body, "stop_sequences").value_or(std::vector<std::string>{});
  if (core.params.stop.size() > kMaxStops) {
    throw invalid_field("stop_sequences", "'stop_sequences' may hold at most " + std::to_string(kMaxStops) + " strings");
  }
  read_thinking(body, core);
  read_output_format(body, text, app, core);
  core.tools = read_anthropic_tools(ordered, core.ignored_fields);
  core.conversation = system_messages(ordered, app);
  const auto messages = ordered.find("messages");
  if (messages == ordered.end() || !messages->is_array() || messages->empty()) {
    throw invalid_field("messages", "'messages' must be a non-empty array");
  }
  MessageReader reader(app, core.conversation, core.ignored_fields);
  for (size_t i = 0; i < messages->size(); ++i) reader.message((*messages)[i], i);
  merge_system_messages(core.conversation);
  return core;
}

bool key_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'; }

}  // namespace

std::string without_billing_header(const std::string& text) {
  static const std::string kPrefix = "x-anthropic-billing-header:";
  if (text.rfind(kPrefix, 0) != 0) return text;
  size_t i = kPrefix.size();
  for (int fields = 0;; ++fields) {  // `key=value;` fields, blank-separated
    size_t j = i;
    while (j < text.size() && (text[j] == ' ' || text[j] == '\t')) ++j;
    const size_t key = j;
    while (j < text.size() && key_char(text[j])) ++j;
    if (j == key || j >= text.size() || text[j] != '=') {
      if (fields == 0) {  // no field at all: the header's line is not text of the prompt either
        const size_t eol = text.find('\n', i);
        i = eol == std::string::npos ? text.size() : eol;
      }
      break;
    }
    const size_t semi = text.find(';', j);
    const size_t eol = text.find('\n', j);
    if (semi == std::string::npos || (eol != std::string::npos && eol < semi)) {
      i = eol == std::string::npos ? text.size() : eol;  // a field without its ';': the line ends the header
      break;
    }
    i = semi + 1;
  }
  const size_t rest = text.find_first_not_of(" \t\r\n", i);
  return rest == std::string::npos ? std::string() : text.substr(rest);
}

CoreRequest translate_messages(const App& app, std::string_view text, MessagesRequest& out) {
  out.id = make_id("msg_");
  return translate_request(app, text, true);
}

MessagesRequest prepare_messages(const App& app, std::string_view text) {
  MessagesRequest r;
  prepare_generation(app, translate_messages(app, text, r), r);
  return r;
}

CoreRequest translate_message_count(const App& app, std::string_view text) { return translate_request(app, text, false); }

json count_message_tokens(const App& app, const CoreRequest& core) {
  return {{"input_tokens", conversation_tokens(app, core).size()}};
}

}  // namespace server
