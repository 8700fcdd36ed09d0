#include "server/api/ollama/ollama_response.h"

#include <ctime>
#include <cstdio>

#include "server/api/request_json.h"

namespace server {

using nlohmann::json;
namespace tools = engine::tools;

namespace {

const char* ollama_done_reason(engine::FinishReason reason, const engine::Usage& usage) {
  return stop_kind(reason, usage, false) == StopKind::kLength ? "length" : "stop";
}

int64_t ollama_nanos(std::chrono::steady_clock::duration d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

}  // namespace

std::string ollama_time(std::chrono::system_clock::time_point t) {
  const auto since = t.time_since_epoch();
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(since);
  const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(since - secs).count();
  const std::time_t tt = static_cast<std::time_t>(secs.count());
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%09lldZ", date, static_cast<long long>(ns));
  return out;
}

std::string ollama_time_of(int64_t unix_seconds) {
  return ollama_time(std::chrono::system_clock::time_point(std::chrono::seconds(unix_seconds)));
}

std::string ndjson_line(const json& object) { return dump_json(object) + "\n"; }

OllamaFormatter::OllamaFormatter(std::shared_ptr<const OllamaRequest> request, std::shared_ptr<const double> ttft_ms)
    : request_(std::move(request)), ttft_ms_(std::move(ttft_ms)),
      start_(std::chrono::steady_clock::now()), stream_(request_->answer) {}

json OllamaFormatter::head() const {
  return {{"model", request_->model}, {"created_at", ollama_time(std::chrono::system_clock::now())}};
}

json OllamaFormatter::calls_json(const std::vector<tools::ToolCall>& calls) const {
  json out = json::array();
  for (const tools::ToolCall& c : calls) {
    json args = json::parse(c.arguments, nullptr, false);
    if (!args.is_object()) args = json::object();
    out.push_back({{"id", make_id("call_")},
                   {"function", {{"index", calls_++}, {"name", c.name}, {"arguments", std::move(args)}}}});
  }
  return out;
}

json OllamaFormatter::output(const std::string& text, const std::string& reasoning,
                             const std::vector<tools::ToolCall>& calls) const {
  json o = head();
  if (request_->chat) {
    json message = {{"role", "assistant"}, {"content", text}};
    if (!reasoning.empty()) message["thinking"] = reasoning;
    if (!calls.empty()) message["tool_calls"] = calls_json(calls);
    o["message"] = std::move(message);
  } else {
    o["response"] = text;
    if (!reasoning.empty()) o["thinking"] = reasoning;
  }
  return o;
}

std::string OllamaFormatter::piece(const AnswerDelta& d) const {
  if (d.empty()) return {};
  json o = output(d.text, d.reasoning, d.calls);
  o["done"] = false;
  return ndjson_line(o);
}

std::string OllamaFormatter::stream_start(int, const std::vector<engine::TokenEvent>&) const { return {}; }

std::string OllamaFormatter::stream_token(int, const engine::TokenEvent& token) const {
  return piece(stream_.push(token));
}

std::string OllamaFormatter::stream_finish(int, engine::FinishReason reason, const engine::Usage& usage) const {
  reason_ = ollama_done_reason(reason, usage);
  return piece(stream_.finish());
}

std::string OllamaFormatter::stream_fail(const ApiError& error) const { return ndjson_line(ollama_error_json(error)); }

std::string OllamaFormatter::stream_close(const UsageTotals& usage, bool failed) const {
  if (failed) return {};
  return ndjson_line(final_fields(output("", "", {}), reason_, usage));
}

json OllamaFormatter::final_fields(json o, const char* reason, const UsageTotals& usage) const {
  const int64_t total = ollama_nanos(std::chrono::steady_clock::now() - start_);
  const double ttft = ttft_ms_ ? *ttft_ms_ : -1;
  const int64_t prompt = ttft >= 0 ? std::min(total, static_cast<int64_t>(ttft * 1e6)) : 0;
  o["done"] = true;
  o["done_reason"] = reason;
  o["total_duration"] = total;
  o["load_duration"] = 0;
  o["prompt_eval_count"] = usage.prompt_tokens;
  o["prompt_eval_duration"] = prompt;
  o["eval_count"] = usage.completion_tokens;
  o["eval_duration"] = total - prompt;
  return o;
}

json OllamaFormatter::response(const std::vector<ChoiceResult>& choices, const UsageTotals& usage) const {
  const ChoiceResult& c = choices.at(0);
  const Answer a = read_answer(request_->answer, c);
  return final_fields(output(a.text, a.reasoning, a.calls), ollama_done_reason(c.reason, c.usage), usage);
}

json ollama_done_json(const std::string& model, bool chat, const char* reason) {
  json o = {{"model", model}, {"created_at", ollama_time(std::chrono::system_clock::now())}};
  if (chat) {
    o["message"] = {{"role", "assistant"}, {"content", ""}};
  } else {
    o["response"] = "";
  }
  o["done"] = true;
  o["done_reason"] = reason;
  return o;
}

}  // namespace server
