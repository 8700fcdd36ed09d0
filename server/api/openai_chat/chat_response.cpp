#include "server/api/openai_chat/chat_response.h"

#include "engine/text/tokenizer/tokenizer.h"
#include "server/api/openai_shapes.h"

namespace server {

using nlohmann::json;

namespace {

// "finish_reason": tool_calls when an answer that ended normally made calls.
const char* finish_name(engine::FinishReason reason, bool has_calls) {
  return has_calls && reason == engine::FinishReason::kStop ? "tool_calls" : engine::finish_reason_name(reason);
}

// The SSE frames of a chunk, an array of chunks, or null (none).
std::string sse_frames(const json& chunks) {
  if (chunks.is_null()) return {};
  if (!chunks.is_array()) return sse_data(chunks);
  std::string out;
  for (const json& c : chunks) out += sse_data(c);
  return out;
}

json token_logprob(const engine::Tokenizer& tok, int32_t id, float logprob) {
  const std::string piece(tok.piece(id));
  json bytes = json::array();
  for (unsigned char c : piece) bytes.push_back(c);
  return {{"token", piece}, {"logprob", logprob}, {"bytes", std::move(bytes)}};
}

}  // namespace

ChatFormatter::ChatFormatter(const App& app, std::shared_ptr<const ChatRequest> request)
    : app_(app),
      request_(std::move(request)),
      id_(make_id("chatcmpl-")),
      created_(unix_now()) {}

json ChatFormatter::logprobs(const std::vector<engine::TokenEvent>& tokens) const {
  const engine::Tokenizer& tok = *app_.tokenizer;
  json content = json::array();
  for (const engine::TokenEvent& t : tokens) {
    json entry = token_logprob(tok, t.token, t.logprob);
    json top = json::array();
    for (const engine::TokenLogprob& alt : t.top) top.push_back(token_logprob(tok, alt.id, alt.logprob));
    entry["top_logprobs"] = std::move(top);
    content.push_back(std::move(entry));
  }
  return {{"content", std::move(content)}, {"refusal", nullptr}};
}

json ChatFormatter::chunk(json choices) const {
  json c = {{"id", id_}, {"object", "chat.completion.chunk"}, {"created", created_}, {"model", app_.model_id},
            {"system_fingerprint", "ggufd"}, {"choices", std::move(choices)}};
  if (request_->params.include_usage) c["usage"] = nullptr;
  return c;
}

json ChatFormatter::delta_choice(int index, json delta, json logprobs, json finish) const {
  return json::array({{{"index", index}, {"delta", std::move(delta)}, {"logprobs", std::move(logprobs)},
                       {"finish_reason", std::move(finish)}}});
}

std::string ChatFormatter::stream_start(int index, const std::vector<engine::TokenEvent>&) const {
  return sse_data(chunk(delta_choice(index, {{"role", "assistant"}, {"content", ""}}, nullptr, nullptr)));
}

AnswerStream& ChatFormatter::streamed(int index) const {
  while (streamed_.size() <= static_cast<size_t>(index)) {
    streamed_.push_back(std::make_unique<AnswerStream>(request_->answer));
  }
  return *streamed_[static_cast<size_t>(index)];
}

json ChatFormatter::tool_call_json(const engine::tools::ToolCall& call) const {
  return {{"id", engine::tools::make_call_id(app_.chat_features.syntax)},
          {"type", "function"},
          {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
}

json ChatFormatter::delta_chunks(int index, AnswerDelta d, json logprobs) const {
  json out = json::array();
  json delta = json::object();
  if (!d.reasoning.empty()) {
    delta["reasoning_content"] = d.reasoning;
    delta["reasoning"] = std::move(d.reasoning);
  }
  if (!d.text.empty()) delta["content"] = std::move(d.text);
  if (!delta.empty() || !logprobs.is_null()) {
    if (delta.empty()) delta["content"] = "";
    out.push_back(chunk(delta_choice(index, std::move(delta), std::move(logprobs), nullptr)));
  }
  // the calls sent before these ones
  int n = streamed(index).calls() - static_cast<int>(d.calls.size());
  for (const engine::tools::ToolCall& call : d.calls) {
    json head = tool_call_json(call);
    head["index"] = n;
    head["function"]["arguments"] = "";
    json args = {{"index", n}, {"function", {{"arguments", call.arguments}}}};
    ++n;
    out.push_back(chunk(delta_choice(index, {{"tool_calls", json::array({std::move(head)})}}, nullptr, nullptr)));
    out.push_back(chunk(delta_choice(index, {{"tool_calls", json::array({std::move(args)})}}, nullptr, nullptr)));
  }
  return out;
}

json ChatFormatter::token_chunk(int index, const engine::TokenEvent& token) const {
  const bool with_logprobs = request_->params.n_logprobs >= 0 && token.token >= 0;
  json lp = with_logprobs ? logprobs({token}) : json(nullptr);
  AnswerStream& s = streamed(index);
  if (s.plain()) {
    if (token.text.empty() && !with_logprobs) return nullptr;
    return chunk(delta_choice(index, {{"content", token.text}}, std::move(lp), nullptr));
  }
  json out = delta_chunks(index, s.push(token), std::move(lp));
  if (out.empty()) return nullptr;
  return out.size() == 1 ? json(std::move(out[0])) : out;
}

json ChatFormatter::message(const ChoiceResult& c, bool& has_calls) const {
  has_calls = false;
  json m = {{"role", "assistant"}, {"content", c.text}, {"refusal", nullptr}};
  if (AnswerStream(request_->answer).plain()) return m;
  Answer all = read_answer(request_->answer, c);
  std::string content = std::move(all.text);
  if (!all.reasoning.empty()) {
    m["reasoning_content"] = all.reasoning;
    m["reasoning"] = std::move(all.reasoning);  // the name newer clients read
  }
  if (!all.calls.empty()) {
    has_calls = true;
    json calls = json::array();
    for (const engine::tools::ToolCall& call : all.calls) calls.push_back(tool_call_json(call));
    m["tool_calls"] = std::move(calls);
  }
  const bool blank = content.find_first_not_of(" \t\r\n") == std::string::npos;
  m["content"] = blank && has_calls ? json(nullptr) : json(std::move(content));
  return m;
}

json ChatFormatter::finish_chunk(int index, engine::FinishReason reason) const {
  AnswerStream& s = streamed(index);
  if (s.plain()) return chunk(delta_choice(index, json::object(), nullptr, engine::finish_reason_name(reason)));
  // what the parsers still hold (a cut marker, a call without its closing tag) goes out first
  json out = delta_chunks(index, s.finish(), nullptr);
  out.push_back(chunk(delta_choice(index, json::object(), nullptr, finish_name(reason, s.calls() > 0))));
  return out.size() == 1 ? json(std::move(out[0])) : out;
}

std::string ChatFormatter::stream_token(int index, const engine::TokenEvent& token) const {
  return sse_frames(token_chunk(index, token));
}

std::string ChatFormatter::stream_finish(int index, engine::FinishReason reason, const engine::Usage&) const {
  return sse_frames(finish_chunk(index, reason));
}

std::string ChatFormatter::stream_fail(const ApiError& error) const { return openai_stream_error(error); }

std::string ChatFormatter::stream_close(const UsageTotals& usage, bool failed) const {
  std::string out;
  if (request_->params.include_usage && !failed) {
    json c = chunk(json::array());
    c["usage"] = openai_usage_json(usage);
    if (const json t = openai_timings_json(usage); !t.is_null()) c["timings"] = t;
    out += sse_data(c);
  }
  return out + "data: [DONE]\n\n";
}

json ChatFormatter::response(const std::vector<ChoiceResult>& choices, const UsageTotals& usage) const {
  json out = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceResult& c = choices[i];
    bool has_calls = false;
    json m = message(c, has_calls);
    out.push_back({{"index", i},
                   {"message", std::move(m)},
                   {"logprobs", request_->params.n_logprobs >= 0 ? logprobs(c.tokens) : json(nullptr)},
                   {"finish_reason", finish_name(c.reason, has_calls)}});
  }
  json body = {{"id", id_}, {"object", "chat.completion"}, {"created", created_}, {"model", app_.model_id},
               {"system_fingerprint", "ggufd"}, {"choices", std::move(out)}, {"usage", openai_usage_json(usage)}};
  if (json t = openai_timings_json(usage); !t.is_null()) body["timings"] = std::move(t);
  return body;
}

}  // namespace server
