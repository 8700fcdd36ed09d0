#include "engine/text/harmony.h"

#include "engine/text/tokenizer/tokenizer.h"

namespace engine {

std::optional<HarmonyTokens> HarmonyTokens::find(const Tokenizer& tok) {
  HarmonyTokens t;
  t.start = tok.find_token("<|start|>");
  t.channel = tok.find_token("<|channel|>");
  t.message = tok.find_token("<|message|>");
  t.end = tok.find_token("<|end|>");
  t.constrain = tok.find_token("<|constrain|>");
  if (t.start < 0 || t.channel < 0 || t.message < 0 || t.end < 0) return std::nullopt;
  return t;
}

HarmonyParser::Delta HarmonyParser::push(int32_t token, std::string_view text) {
  Delta d;
  if (!text.empty()) {
    switch (state_) {
      case State::kBody: (reasoning_channel_ ? d.reasoning : d.content).append(text); break;
      case State::kChannel: header_.append(text); break;
      case State::kConstrain:  // the content type: not needed
      case State::kHeader: break;  // the role (assistant)
    }
  }
  if (token < 0) return d;
  if (token == tokens_.channel) {
    state_ = State::kChannel;
    header_.clear();
  } else if (token == tokens_.constrain && state_ == State::kChannel) {
    state_ = State::kConstrain;
  } else if (token == tokens_.message) {
    // "analysis", "final", "commentary to=functions.f": the channel is the first word
    const std::string_view h = header_;
    const size_t b = h.find_first_not_of(" \t\n");
    const std::string_view name = b == std::string_view::npos ? "" : h.substr(b, h.find_first_of(" \t\n", b) - b);
    reasoning_channel_ = name == "analysis";
    state_ = State::kBody;
  } else if (token == tokens_.start || token == tokens_.end) {
    state_ = State::kHeader;
  }
  return d;
}

}  // namespace engine
