#include "server/api/anthropic_messages/messages_response.h"

namespace server {

using nlohmann::json;
namespace tools = engine::tools;

namespace {

bool blank_text(const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; }

std::string event(const json& data) { return sse_event(data["type"].get<std::string>(), data); }

// `server_cap`: the answer was cut by the operator's --max-tokens, not by the request's max_tokens or
// the context. Claude Code takes "max_tokens" for its own limit exceeded (it asks the model to go on,
// three times, then fails the turn), so the server's decision to end the answer is "end_turn".
const char* stop_reason(engine::FinishReason reason, const std::string& stop_string, bool calls, bool server_cap) {
  if (reason == engine::FinishReason::kLength && server_cap && !calls) return "end_turn";
  switch (stop_kind(reason, engine::Usage{0, 0, 0, stop_string}, calls)) {
    case StopKind::kToolCalls: return "tool_use";
    case StopKind::kStopSequence: return "stop_sequence";
    case StopKind::kLength: return "max_tokens";
    default: return "end_turn";
  }
}

json input_object(const tools::ToolCall& call) {
  json input = json::parse(call.arguments, nullptr, false);
  return input.is_object() ? input : json::object();
}

}  // namespace

MessagesFormatter::MessagesFormatter(const App& app, std::shared_ptr<const MessagesRequest> request)
    : app_(app), request_(std::move(request)), stream_(request_->answer) {}

json MessagesFormatter::usage_json(const UsageTotals& u) const {
  return {{"input_tokens", u.prompt_tokens - u.cached_tokens},
          {"cache_creation_input_tokens", 0},
          {"cache_read_input_tokens", u.cached_tokens},
          {"output_tokens", u.completion_tokens}};
}

json MessagesFormatter::tool_use(const tools::ToolCall& call) const {
  return {{"type", "tool_use"}, {"id", make_id("toolu_")}, {"name", call.name}, {"input", input_object(call)}};
}

std::string MessagesFormatter::stream_open() const {
  UsageTotals u;
  u.prompt_tokens = request_->prompts.empty() ? 0 : static_cast<int64_t>(request_->prompts[0].size());
  const json message = {{"id", request_->id},      {"type", "message"},      {"role", "assistant"},
                        {"model", app_.model_id},  {"content", json::array()}, {"stop_reason", nullptr},
                        {"stop_sequence", nullptr}, {"usage", usage_json(u)}};
  return event({{"type", "message_start"}, {"message", message}}) + keep_alive();
}

std::string MessagesFormatter::stream_start(int, const std::vector<engine::TokenEvent>&) const { return {}; }

std::string MessagesFormatter::open(Open kind) const {
  open_ = kind;
  const json block = kind == Open::kThinking ? json{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}
                                             : json{{"type", "text"}, {"text", ""}};
  return event({{"type", "content_block_start"}, {"index", blocks_}, {"content_block", block}});
}

std::string MessagesFormatter::close() const {
  if (open_ == Open::kNone) return {};
  open_ = Open::kNone;
  return event({{"type", "content_block_stop"}, {"index", blocks_++}});
}

std::string MessagesFormatter::add_call(const tools::ToolCall& call) const {
  json block = tool_use(call);
  const json input = block["input"];
  block["input"] = json::object();
  std::string out = event({{"type", "content_block_start"}, {"index", blocks_}, {"content_block", block}});
  out += event({{"type", "content_block_delta"}, {"index", blocks_},
                {"delta", {{"type", "input_json_delta"}, {"partial_json", input.dump()}}}});
  out += event({{"type", "content_block_stop"}, {"index", blocks_++}});
  return out;
}

std::string MessagesFormatter::add(AnswerDelta d) const {
  std::string out;
  if (!d.reasoning.empty()) {
    if (open_ != Open::kThinking) {
      out += close();
      out += open(Open::kThinking);
    }
    out += event({{"type", "content_block_delta"}, {"index", blocks_},
                  {"delta", {{"type", "thinking_delta"}, {"thinking", d.reasoning}}}});
  }
  if (!d.text.empty()) {
    pending_space_ += d.text;  // white space alone (between a think block and a call) opens no text block
    if (open_ == Open::kText || !blank_text(pending_space_)) {
      if (open_ != Open::kText) {
        out += close();
        out += open(Open::kText);
      }
      out += event({{"type", "content_block_delta"}, {"index", blocks_},
                    {"delta", {{"type", "text_delta"}, {"text", pending_space_}}}});
      pending_space_.clear();
    }
  }
  for (const tools::ToolCall& call : d.calls) {
    out += close();
    pending_space_.clear();
    out += add_call(call);
  }
  return out;
}

std::string MessagesFormatter::stream_token(int, const engine::TokenEvent& token) const {
  return add(stream_.push(token));
}

std::string MessagesFormatter::stream_finish(int, engine::FinishReason reason, const engine::Usage& usage) const {
  std::string out = add(stream_.finish());
  if (blocks_ == 0 && open_ == Open::kNone) out += open(Open::kText);  // an empty answer: an empty text block
  out += close();
  reason_ = reason;
  stop_string_ = usage.stop_string;
  server_cap_ = cut_by_server(usage);
  return out;
}

std::string MessagesFormatter::stream_fail(const ApiError& error) const { return event(anthropic_error_json(error)); }

std::string MessagesFormatter::stream_close(const UsageTotals& usage, bool failed) const {
  if (failed) return {};
  const char* reason = stop_reason(reason_, stop_string_, stream_.calls() > 0, server_cap_);
  const json delta = {{"stop_reason", reason},
                      {"stop_sequence", stop_string_.empty() ? json(nullptr) : json(stop_string_)}};
  return event({{"type", "message_delta"}, {"delta", delta}, {"usage", usage_json(usage)}}) +
         event({{"type", "message_stop"}});
}

bool MessagesFormatter::cut_by_server(const engine::Usage& usage) const {
  return request_->capped && usage.completion_tokens >= request_->params.max_tokens;
}

std::string MessagesFormatter::keep_alive() const { return event({{"type", "ping"}}); }

json MessagesFormatter::response(const std::vector<ChoiceResult>& choices, const UsageTotals& usage) const {
  const ChoiceResult& c = choices.at(0);
  const Answer a = read_answer(request_->answer, c);
  json content = json::array();
  if (!a.reasoning.empty()) content.push_back({{"type", "thinking"}, {"thinking", a.reasoning}, {"signature", ""}});
  if (!blank_text(a.text) || (a.calls.empty() && a.reasoning.empty())) content.push_back({{"type", "text"}, {"text", a.text}});
  for (const tools::ToolCall& call : a.calls) content.push_back(tool_use(call));
  const std::string& stop = c.usage.stop_string;
  return {{"id", request_->id},
          {"type", "message"},
          {"role", "assistant"},
          {"model", app_.model_id},
          {"content", std::move(content)},
          {"stop_reason", stop_reason(c.reason, stop, !a.calls.empty(), cut_by_server(c.usage))},
          {"stop_sequence", stop.empty() ? json(nullptr) : json(stop)},
          {"usage", usage_json(usage)}};
}

json anthropic_error_json(const ApiError& e) {
  const int s = e.status();
  const char* type = s == 401   ? "authentication_error"
                     : s == 403 ? "permission_error"
                     : s == 404 ? "not_found_error"
                     : s == 413 ? "request_too_large"
                     : s == 429 ? "rate_limit_error"
                     : s == 503 ? "overloaded_error"
                     : s >= 500 ? "api_error"
                                : "invalid_request_error";
  return {{"type", "error"}, {"error", {{"type", type}, {"message", e.what()}}}};
}

}  // namespace server
