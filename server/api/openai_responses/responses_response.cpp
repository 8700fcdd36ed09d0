#include "server/api/openai_responses/responses_response.h"

#include "server/api/openai_responses/response_store.h"

namespace server {

using nlohmann::json;
namespace tools = engine::tools;

namespace {

bool blank(const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; }

json merged(json a, const json& b) {
  a.update(b);
  return a;
}

json usage_object(const UsageTotals& u, int64_t reasoning_tokens) {
  return {{"input_tokens", u.prompt_tokens},
          {"input_tokens_details", {{"cached_tokens", u.cached_tokens}}},
          {"output_tokens", u.completion_tokens},
          {"output_tokens_details", {{"reasoning_tokens", reasoning_tokens}}},
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

}  // namespace

ResponsesFormatter::ResponsesFormatter(const App& app, std::shared_ptr<const ResponsesRequest> request)
    : app_(app), request_(std::move(request)), created_(unix_now()), stream_(request_->answer) {
  said_.role = "assistant";
  said_.form = Message::Content::kNone;
}

json ResponsesFormatter::object(const std::string& status, json usage) const {
  json o = {{"id", request_->id},       {"object", "response"},     {"created_at", created_},
            {"status", status},         {"background", false},      {"error", nullptr},
            {"incomplete_details", nullptr}, {"model", app_.model_id}, {"output", output_},
            {"usage", std::move(usage)}, {"store", request_->store}, {"service_tier", "default"}};
  o.update(request_->echo);
  return o;
}

std::string ResponsesFormatter::event(const std::string& type, json data) const {
  data["type"] = type;
  data["sequence_number"] = sequence_++;
  return sse_event(type, data);
}

json ResponsesFormatter::reasoning_item(const std::string& id, const std::string& text, const std::string& status) const {
  json content = json::array();
  json summary = json::array();
  if (status != "in_progress") {
    content.push_back({{"type", "reasoning_text"}, {"text", text}});
    if (request_->summary) summary.push_back({{"type", "summary_text"}, {"text", text}});
  }
  return {{"id", id}, {"type", "reasoning"}, {"summary", std::move(summary)}, {"content", std::move(content)},
          {"status", status}};
}

json ResponsesFormatter::message_item(const std::string& id, const std::string& text, const std::string& status) const {
  json content = json::array();
  if (status != "in_progress") {
    content.push_back({{"type", "output_text"}, {"text", text}, {"annotations", json::array()}, {"logprobs", json::array()}});
  }
  return {{"id", id}, {"type", "message"}, {"role", "assistant"}, {"status", status}, {"content", std::move(content)}};
}

json ResponsesFormatter::call_item(const tools::ToolCall& call, const std::string& call_id) const {
  return {{"id", "fc_" + call_id.substr(call_id.find('_') + 1)},
          {"type", "function_call"},
          {"call_id", call_id},
          {"name", call.name},
          {"arguments", call.arguments},
          {"status", "completed"}};
}

std::string ResponsesFormatter::open(Open kind) const {
  open_ = kind;
  open_text_.clear();
  const int index = static_cast<int>(output_.size());
  std::string out;
  if (kind == Open::kReasoning) {
    open_id_ = make_id("rs_");
    out += event("response.output_item.added", {{"output_index", index}, {"item", reasoning_item(open_id_, "", "in_progress")}});
    out += event("response.content_part.added", {{"item_id", open_id_}, {"output_index", index}, {"content_index", 0},
                                                 {"part", {{"type", "reasoning_text"}, {"text", ""}}}});
    if (request_->summary) {
      out += event("response.reasoning_summary_part.added", {{"item_id", open_id_}, {"output_index", index},
                                                             {"summary_index", 0},
                                                             {"part", {{"type", "summary_text"}, {"text", ""}}}});
    }
  } else {
    open_id_ = make_id("msg_");
    out += event("response.output_item.added", {{"output_index", index}, {"item", message_item(open_id_, "", "in_progress")}});
    out += event("response.content_part.added",
                 {{"item_id", open_id_}, {"output_index", index}, {"content_index", 0},
                  {"part", {{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}, {"logprobs", json::array()}}}});
  }
  return out;
}

std::string ResponsesFormatter::close() const {
  if (open_ == Open::kNone) return {};
  const int index = static_cast<int>(output_.size());
  const json at = {{"item_id", open_id_}, {"output_index", index}};
  std::string out;
  json item;
  if (open_ == Open::kReasoning) {
    json e = at;
    e["content_index"] = 0;
    out += event("response.reasoning_text.done", merged(e, {{"text", open_text_}}));
    out += event("response.content_part.done", merged(e, {{"part", {{"type", "reasoning_text"}, {"text", open_text_}}}}));
    if (request_->summary) {
      json s = at;
      s["summary_index"] = 0;
      out += event("response.reasoning_summary_text.done", merged(s, {{"text", open_text_}}));
      out += event("response.reasoning_summary_part.done",
                   merged(s, {{"part", {{"type", "summary_text"}, {"text", open_text_}}}}));
    }
    item = reasoning_item(open_id_, open_text_, done_status());
    said_.reasoning += open_text_;
  } else {
    json e = at;
    e["content_index"] = 0;
    out += event("response.output_text.done", merged(e, {{"text", open_text_}, {"logprobs", json::array()}}));
    out += event("response.content_part.done",
                 merged(e, {{"part", {{"type", "output_text"}, {"text", open_text_}, {"annotations", json::array()},
                                           {"logprobs", json::array()}}}}));
    item = message_item(open_id_, open_text_, done_status());
    said_.form = Message::Content::kText;
    said_.texts.push_back(open_text_);
  }
  out += event("response.output_item.done", {{"output_index", index}, {"item", item}});
  output_.push_back(std::move(item));
  open_ = Open::kNone;
  return out;
}

const char* ResponsesFormatter::done_status() const {
  return reason_ == engine::FinishReason::kLength ? "incomplete" : "completed";
}

std::string ResponsesFormatter::add_call(const tools::ToolCall& call) const {
  const std::string call_id = tools::make_call_id(app_.chat_features.syntax);
  const int index = static_cast<int>(output_.size());
  json item = call_item(call, call_id);
  json added = item;
  added["arguments"] = "";
  added["status"] = "in_progress";
  std::string out = event("response.output_item.added", {{"output_index", index}, {"item", added}});
  const json at = {{"item_id", item["id"]}, {"output_index", index}};
  out += event("response.function_call_arguments.delta", merged(at, {{"delta", call.arguments}}));
  out += event("response.function_call_arguments.done", merged(at, {{"name", call.name}, {"arguments", call.arguments}}));
  out += event("response.output_item.done", {{"output_index", index}, {"item", item}});
  output_.push_back(std::move(item));
  CallRecord record{call_id, call.name, nlohmann::ordered_json::parse(call.arguments, nullptr, false)};
  if (record.arguments.is_discarded()) record.arguments = nlohmann::ordered_json::object();
  said_.calls.push_back(std::move(record));
  return out;
}

std::string ResponsesFormatter::add(AnswerDelta d) const {
  std::string out;
  if (!d.reasoning.empty()) {
    if (open_ != Open::kReasoning) {
      out += close();
      out += open(Open::kReasoning);
    }
    const int index = static_cast<int>(output_.size());
    out += event("response.reasoning_text.delta",
                 {{"item_id", open_id_}, {"output_index", index}, {"content_index", 0}, {"delta", d.reasoning}});
    if (request_->summary) {
      out += event("response.reasoning_summary_text.delta",
                   {{"item_id", open_id_}, {"output_index", index}, {"summary_index", 0}, {"delta", d.reasoning}});
    }
    open_text_ += d.reasoning;
  }
  if (!d.text.empty()) {
    // white space alone (between a think block and a call) opens no message
    pending_space_ += d.text;
    if (open_ == Open::kMessage || !blank(pending_space_)) {
      if (open_ != Open::kMessage) {
        out += close();
        out += open(Open::kMessage);
      }
      out += event("response.output_text.delta", {{"item_id", open_id_}, {"output_index", static_cast<int>(output_.size())},
                                                  {"content_index", 0}, {"delta", pending_space_},
                                                  {"logprobs", json::array()}});
      open_text_ += pending_space_;
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

std::string ResponsesFormatter::stream_open() const {
  const json response = object("in_progress", nullptr);
  std::string out = event("response.created", {{"response", response}});
  return out + event("response.in_progress", {{"response", response}});  // numbered after it
}

std::string ResponsesFormatter::stream_start(int, const std::vector<engine::TokenEvent>&) const { return {}; }

std::string ResponsesFormatter::stream_token(int, const engine::TokenEvent& token) const {
  return add(stream_.push(token));
}

std::string ResponsesFormatter::stream_finish(int, engine::FinishReason reason, const engine::Usage&) const {
  reason_ = reason;
  std::string out = add(stream_.finish());
  if (output_.empty() && open_ == Open::kNone) out += open(Open::kMessage);  // an empty answer: an empty message
  out += close();
  reasoning_tokens_ = stream_.reasoning_tokens();
  return out;
}

std::string ResponsesFormatter::stream_fail(const ApiError& error) const {
  json o = object("failed", nullptr);
  o["error"] = {{"code", error.code().value_or(error.status() >= 500 ? "server_error" : "invalid_request")},
                {"message", error.what()}};
  return event("response.failed", {{"response", std::move(o)}});
}

std::string ResponsesFormatter::stream_close(const UsageTotals& usage, bool failed) const {
  if (failed) return {};
  // response.completed also for a response cut by its token limit (status "incomplete"): Codex CLI
  // reads only response.completed and would take response.incomplete for a broken stream
  return event("response.completed", {{"response", finished(reason_, usage)}});
}

std::string ResponsesFormatter::keep_alive() const {
  if (!output_.empty() || open_ != Open::kNone) return ": keep-alive\n\n";
  return event("response.in_progress", {{"response", object("in_progress", nullptr)}});
}

void ResponsesFormatter::append_items(const Answer& a) const {
  if (!a.reasoning.empty()) {
    output_.push_back(reasoning_item(make_id("rs_"), a.reasoning, done_status()));
    said_.reasoning = a.reasoning;
  }
  if (!blank(a.text) || (a.calls.empty() && a.reasoning.empty())) {
    output_.push_back(message_item(make_id("msg_"), a.text, done_status()));
    said_.form = Message::Content::kText;
    said_.texts = {a.text};
  }
  for (const tools::ToolCall& call : a.calls) {
    (void)add_call(call);  // the item and the record; the events are not sent
  }
}

json ResponsesFormatter::response(const std::vector<ChoiceResult>& choices, const UsageTotals& usage) const {
  const ChoiceResult& c = choices.at(0);
  const Answer a = read_answer(request_->answer, c);
  reason_ = c.reason;
  append_items(a);
  reasoning_tokens_ = a.reasoning_tokens;
  return finished(c.reason, usage);
}

json ResponsesFormatter::finished(engine::FinishReason reason, const UsageTotals& usage) const {
  const bool cut = reason == engine::FinishReason::kLength;
  json o = object(cut ? "incomplete" : "completed", usage_object(usage, reasoning_tokens_));
  if (cut) o["incomplete_details"] = {{"reason", "max_output_tokens"}};
  else o["completed_at"] = unix_now();
  if (request_->store && app_.responses != nullptr) {
    auto stored = std::make_shared<StoredResponse>();
    stored->object = o;
    stored->conversation = request_->conversation;
    stored->conversation.push_back(said_);
    app_.responses->put(request_->id, std::move(stored));
  }
  return o;
}

std::string responses_failed_stream(const App& app, std::shared_ptr<const ResponsesRequest> request,
                                    const ApiError& error) {
  const ResponsesFormatter f(app, std::move(request));
  std::string out = f.stream_open();
  return out + f.stream_fail(error);
}

}  // namespace server
