#include "engine/text/harmony.h"

#include <array>

#include "engine/text/tokenizer/tokenizer.h"

namespace engine {

namespace {

constexpr std::array<std::string_view, 5> kMarkers = {"<|channel|>", "<|message|>", "<|constrain|>", "<|start|>",
                                                      "<|end|>"};

// Whether `s` (starting with '<') is the start of a marker, whole or cut off.
bool marker_prefix(std::string_view s) {
  for (std::string_view m : kMarkers) {
    if (m.substr(0, s.size()) == s.substr(0, m.size())) return true;
  }
  return false;
}

}  // namespace

bool HarmonyParser::applies_to(const Tokenizer& tok) {
  for (std::string_view m : {"<|start|>", "<|channel|>", "<|message|>", "<|end|>"}) {
    if (tok.find_token(m) < 0) return false;
  }
  return true;
}

void HarmonyParser::emit(std::string_view text, Delta& d) {
  switch (state_) {
    case State::kBody:
      if (!call_.empty()) call_body_.append(text);
      else (reasoning_channel_ ? d.reasoning : d.content).append(text);
      break;
    case State::kChannel: header_.append(text); break;
    case State::kHeader: role_.append(text); break;  // "assistant", or "assistant to=functions.f"
    case State::kConstrain: break;  // the content type: not needed
  }
}

// The recipient of a header: "functions.f" of "commentary to=functions.f", or "".
static std::string_view recipient(std::string_view header) {
  const size_t to = header.find("to=");
  if (to == std::string_view::npos) return {};
  const std::string_view r = header.substr(to + 3);
  return r.substr(0, r.find_first_of(" \t\n<"));
}

void HarmonyParser::end_body(Delta& d) {
  if (!call_.empty()) d.calls.push_back({std::move(call_), std::move(call_body_)});
  call_.clear();
  call_body_.clear();
}

void HarmonyParser::on_marker(std::string_view marker, Delta& d) {
  if (state_ == State::kBody) end_body(d);
  if (marker == "<|channel|>") {
    if (state_ != State::kHeader) role_.clear();  // a channel without a role header before it
    header_.clear();
    state_ = State::kChannel;
  } else if (marker == "<|constrain|>") {
    if (state_ == State::kChannel) state_ = State::kConstrain;
  } else if (marker == "<|message|>") {
    // "analysis", "final", "commentary to=functions.f": the channel is the first word
    const std::string_view h = header_;
    const size_t b = h.find_first_not_of(" \t\n");
    const std::string_view name = b == std::string_view::npos ? "" : h.substr(b, h.find_first_of(" \t\n", b) - b);
    reasoning_channel_ = name == "analysis";
    std::string_view to = recipient(h);
    if (to.empty()) to = recipient(role_);
    if (read_calls_ && to.substr(0, 10) == "functions.") call_ = std::string(to.substr(10));
    state_ = State::kBody;
  } else {  // <|start|>, <|end|>
    state_ = State::kHeader;
    role_.clear();
  }
}

HarmonyParser::Delta HarmonyParser::push(std::string_view text) {
  Delta d;
  pending_.append(text);
  std::string_view rest = pending_;
  while (!rest.empty()) {
    const size_t lt = rest.find('<');
    emit(rest.substr(0, lt), d);
    if (lt == std::string_view::npos) {
      rest = {};
      break;
    }
    rest.remove_prefix(lt);
    std::string_view whole;
    for (std::string_view m : kMarkers) {
      if (rest.substr(0, m.size()) == m) whole = m;
    }
    if (!whole.empty()) {
      on_marker(whole, d);
      rest.remove_prefix(whole.size());
    } else if (marker_prefix(rest)) {
      break;  // "<|chan": wait for the rest
    } else {
      emit(rest.substr(0, 1), d);  // a '<' that starts no marker
      rest.remove_prefix(1);
    }
  }
  pending_.erase(0, pending_.size() - rest.size());
  return d;
}

HarmonyParser::Delta HarmonyParser::flush() {
  Delta d;
  emit(pending_, d);
  pending_.clear();
  if (state_ == State::kBody) end_body(d);  // a call's body ends with <|call|>, never output
  return d;
}

}  // namespace engine
