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
    case State::kBody: (reasoning_channel_ ? d.reasoning : d.content).append(text); break;
    case State::kChannel: header_.append(text); break;
    case State::kConstrain:  // the content type: not needed
    case State::kHeader: break;  // the role (assistant)
  }
}

void HarmonyParser::on_marker(std::string_view marker) {
  if (marker == "<|channel|>") {
    state_ = State::kChannel;
    header_.clear();
  } else if (marker == "<|constrain|>") {
    if (state_ == State::kChannel) state_ = State::kConstrain;
  } else if (marker == "<|message|>") {
    // "analysis", "final", "commentary to=functions.f": the channel is the first word
    const std::string_view h = header_;
    const size_t b = h.find_first_not_of(" \t\n");
    const std::string_view name = b == std::string_view::npos ? "" : h.substr(b, h.find_first_of(" \t\n", b) - b);
    reasoning_channel_ = name == "analysis";
    state_ = State::kBody;
  } else {  // <|start|>, <|end|>
    state_ = State::kHeader;
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
      on_marker(whole);
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
  return d;
}

}  // namespace engine
